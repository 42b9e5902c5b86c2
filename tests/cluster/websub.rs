//! The WebSub hub across a fleet: a subscription made at one node is kept in PostgreSQL,
//! so every node holds it, and each sealed hour is delivered once, by the node that
//! claims it first, whichever nodes seal it.

use super::{drop_schema, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::nodes::node;
use crate::common::post_ids;
use crate::common::websub::{Seen, Subscriber};
use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;

pub async fn a_subscription_is_the_fleets_and_each_seal_is_delivered_once() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let hour = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(hour, Duration::minutes(10));
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let settings = |dir: &tempfile::TempDir| {
        let mut s = node_settings(&url, &schema, dir.path().to_owned());
        s.websub_callback_networks = vec!["127.0.0.0/8".parse().unwrap()];
        s
    };
    let a = node(settings(&dir_a), &clock).await;
    let b = node(settings(&dir_b), &clock).await;
    let http = reqwest::Client::new();
    let mut subscriber = Subscriber::start(true).await;
    let topic = format!("{}/hours.atom", a.base);
    let reply = http
        .post(format!("{}/websub", a.base))
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.callback", subscriber.url.as_str()),
            ("hub.topic", topic.as_str()),
            ("hub.secret", "fleet-secret"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 202);
    assert!(matches!(subscriber.next().await, Seen::Verify(_)));
    // Held by node B too: it is in PostgreSQL.
    crate::common::stats_reach(&http, &b.base, "/websub/subscriptions", 1.into()).await;

    post_ids(&http, &b.base, &["fleet:1".to_owned()])
        .await
        .unwrap();
    clock.advance(Duration::hours(1));
    a.service.tick().await.unwrap();
    b.service.tick().await.unwrap();
    let Seen::Delivery(headers, body) = subscriber.next().await else {
        panic!("a delivery after the seal");
    };
    assert_eq!(
        headers["x-hub-signature"].to_str().unwrap(),
        bloomcast::http::websub_signature("fleet-secret", body.as_bytes())
    );
    assert!(body.contains(":hour/2008-09-03T13</id>"), "{body}");
    // Both nodes sealed and ticked: one delivery in all. The next seal's delivery comes
    // next, and nothing between.
    post_ids(&http, &a.base, &["fleet:2".to_owned()])
        .await
        .unwrap();
    clock.advance(Duration::hours(1));
    b.service.tick().await.unwrap();
    a.service.tick().await.unwrap();
    let Seen::Delivery(_, body) = subscriber.next().await else {
        panic!("the next seal's delivery");
    };
    assert!(
        body.contains(":hour/2008-09-03T14</id>"),
        "the next hour's seal, not the first hour's again: {body}"
    );
    drop((a, b));
    drop_schema(&url, &schema).await;
}
