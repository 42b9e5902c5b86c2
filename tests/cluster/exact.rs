//! Exact hours on PostgreSQL: the universe is the cluster's (any node adds to it, every
//! node sees it), the IDs a node ingests join it at the seal, and every node serves an
//! hour's exact body with the same bytes, built once whichever node is asked first;
//! and a second build of the same hour (the store's copy lost) gives those bytes again.

use super::{drop_schema, node, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::{post_ids, TOKEN};
use bloomcast::clock::ManualClock;
use bloomcast::exact::Exact;
use bloomcast::hour::hour_of;
use chrono::Duration;

async fn post_universe(http: &reqwest::Client, base: &str, ids: &[String]) -> serde_json::Value {
    let reply = http
        .post(format!("{base}/universe"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "ids": ids }))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    reply.json().await.unwrap()
}

async fn exact_of(http: &reqwest::Client, base: &str, path: &str) -> Vec<u8> {
    let reply = http.get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(reply.status(), 200, "{base}{path}");
    reply.bytes().await.unwrap().to_vec()
}

pub async fn every_node_serves_the_same_exact_bytes_over_the_clusters_universe() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let a = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let b = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let http = reqwest::Client::new();
    let universe: Vec<String> = (0..3000).map(|i| format!("user:{i}")).collect();
    // Half the universe through each node; the count is the cluster's.
    post_universe(&http, &a.base, &universe[..1500]).await;
    let added = post_universe(&http, &b.base, &universe[1000..]).await;
    assert_eq!(added["count"], 3000);
    let changed: Vec<String> = universe.iter().step_by(50).cloned().collect();
    post_ids(&http, &a.base, &changed[..30]).await.unwrap();
    post_ids(&http, &b.base, &changed[30..]).await.unwrap();
    post_ids(&http, &b.base, &["newcomer".to_owned()])
        .await
        .unwrap();
    clock.advance(Duration::hours(1));
    a.service.tick().await.unwrap();
    b.service.tick().await.unwrap();

    let path = "/2008/09/03/13.exact";
    let from_a = exact_of(&http, &a.base, path).await;
    let from_b = exact_of(&http, &b.base, path).await;
    assert_eq!(from_a, from_b, "every node serves the same bytes");
    let exact = Exact::from_bytes(&from_a).unwrap();
    assert_eq!(
        exact.universe(),
        3001,
        "the ingested newcomer joined at the seal"
    );
    for id in &universe {
        assert_eq!(exact.changed_id(id), changed.contains(id), "{id}");
    }
    assert!(exact.changed_id("newcomer"));

    // The stored body lost: a node builds it again, byte for byte, from the universe as
    // it stood when the hour was sealed (later additions left out).
    post_universe(
        &http,
        &a.base,
        &["later:1".to_owned(), "later:2".to_owned()],
    )
    .await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DELETE FROM \"{schema}\".exact_hours"))
        .await
        .unwrap();
    drop(b);
    let c = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    assert_eq!(exact_of(&http, &c.base, path).await, from_a);
    drop_schema(&url, &schema).await;
}

/// The index of a node that served no exact body lists the sizes of the stored ones:
/// a node started after the hours were sealed (as after a restart) reads them from
/// PostgreSQL.
pub async fn a_node_that_served_no_exact_body_lists_the_stored_ones_sizes() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let a = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let http = reqwest::Client::new();
    let universe: Vec<String> = (0..500).map(|i| format!("user:{i}")).collect();
    post_universe(&http, &a.base, &universe).await;
    for changed in [&universe[..3], &universe[3..4]] {
        post_ids(&http, &a.base, changed).await.unwrap();
        clock.advance(Duration::hours(1));
        // Sealing builds and stores each hour's exact body.
        a.service.tick().await.unwrap();
    }
    drop(a);

    let b = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let index: serde_json::Value = http
        .get(format!("{}/", b.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = |hour: &str| {
        index["hours"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["hour"] == hour)
            .unwrap_or_else(|| panic!("{hour}: {index}"))["exact_bytes"]
            .clone()
    };
    let (at_13, at_14) = (
        listed("2008-09-03T13:00:00Z"),
        listed("2008-09-03T14:00:00Z"),
    );
    for (path, listed) in [
        ("/2008/09/03/13.exact", at_13),
        ("/2008/09/03/14.exact", at_14),
    ] {
        assert_eq!(listed, exact_of(&http, &b.base, path).await.len(), "{path}");
    }
    drop_schema(&url, &schema).await;
}
