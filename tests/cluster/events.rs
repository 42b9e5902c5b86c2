//! Event streams across a fleet: an ID acknowledged by one node reaches the subscribers
//! of every node (each append notifies the others through PostgreSQL, `pg_notify` and
//! `LISTEN`), and a seal is told by every node with the same digest and header.

use super::{drop_schema, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::nodes::node;
use crate::common::post_ids;
use crate::common::wait::HANG;
use bloomcast::client::{Client, EventStream, ServerEvent};
use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;

/// Events of `stream` until one of `kind` whose data satisfies `want`.
async fn until(
    stream: &mut EventStream,
    kind: &str,
    want: impl Fn(&serde_json::Value) -> bool,
) -> ServerEvent {
    loop {
        let event = tokio::time::timeout(HANG, stream.next())
            .await
            .expect("no event for a minute")
            .expect("the stream reads")
            .expect("the stream goes on");
        if event.kind == kind && want(&event.json().unwrap()) {
            return event;
        }
    }
}

pub async fn a_subscriber_of_one_node_hears_of_ids_another_node_acknowledged() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node(
        node_settings(&url, &schema, dir_a.path().to_owned()),
        &clock,
    )
    .await;
    let b = node(
        node_settings(&url, &schema, dir_b.path().to_owned()),
        &clock,
    )
    .await;
    let http = reqwest::Client::new();

    let mut on_b = Client::new(&b.base)
        .unwrap()
        .events(None)
        .await
        .unwrap()
        .expect("b has a stream");
    let mut on_a = Client::new(&a.base)
        .unwrap()
        .events(None)
        .await
        .unwrap()
        .expect("a has a stream");
    until(&mut on_b, "version", |_| true).await;
    until(&mut on_a, "version", |_| true).await;

    // Acknowledged by a: b's subscriber hears of it, with the count a's store holds.
    let ids: Vec<String> = (0..50).map(|i| format!("fleet:{i}")).collect();
    post_ids(&http, &a.base, &ids).await.unwrap();
    let heard = until(&mut on_b, "version", |d| d["count"] == 50).await;
    assert_eq!(heard.id.as_deref(), Some("2008090313-50"));
    // And the other way round.
    post_ids(&http, &b.base, &["fleet:b".to_owned()])
        .await
        .unwrap();
    until(&mut on_a, "version", |d| d["count"] == 51).await;

    // The seal, told by both nodes alike.
    clock.advance(Duration::hours(1));
    a.service.tick().await.unwrap();
    b.service.tick().await.unwrap();
    let sealed_a = until(&mut on_a, "sealed", |_| true).await.json().unwrap();
    let sealed_b = until(&mut on_b, "sealed", |_| true).await.json().unwrap();
    assert_eq!(sealed_a, sealed_b);
    assert_eq!(sealed_a["count"], 51);
    drop((a, b));
    drop_schema(&url, &schema).await;
}
