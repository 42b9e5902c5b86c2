//! A node started while its PostgreSQL is down: it listens at once, says `unavailable`
//! on `/healthz`, `bloomcast_store_up 0` on `/metrics` and 503 `store_unavailable` with
//! `Retry-After` to ingest and reads,
//! connects again with backoff, and serves once PostgreSQL is up, with no restart.

use super::load::{assert_ingest_unavailable, get, wait_status};
use crate::common::pg::PrivateCluster;
use crate::common::{fetch, path_of, post_ids, spawn_server};
use std::time::Instant;

pub async fn a_node_started_before_postgres_waits_in_standby_and_serves_once_it_is_up() {
    let cluster = PrivateCluster::init()
        .unwrap_or_else(|why| panic!("initdb prepares a private cluster: {why}"));
    let dir = tempfile::tempdir().unwrap();
    let url = cluster.url();
    let node = spawn_server(
        dir.path(),
        &[
            ("BLOOMCAST_DATABASE_URL", url.as_str()),
            ("BLOOMCAST_REFRESH_MS", "0"),
        ],
    );
    let http = reqwest::Client::new();

    // Until the node has tried to connect again, each attempt refused.
    let retried = || {
        let log = node.log.lock().unwrap();
        log.iter()
            .filter(|line| line.contains("still cannot be reached"))
            .count()
            >= 2
    };
    let (http_ref, node_ref) = (&http, &node);
    crate::common::wait::until("the node tries to connect again", || async move {
        let node = node_ref;
        let http = http_ref;
        let (status, body) = get(http, &format!("{}/healthz", node.base)).await;
        assert_eq!(status, 503, "healthz in standby");
        let report: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(report["status"], "unavailable", "{report}");
        assert!(report["reason"].is_string(), "{report}");

        assert_ingest_unavailable(http, &node.base, "in-standby").await;
        assert_eq!(store_up(http, &node.base).await, "0", "/metrics in standby");
        retried().then_some(())
    })
    .await;
    let log = node.log.lock().unwrap().join("\n");
    assert!(
        log.contains("still cannot be reached"),
        "the node tries again (and says so):\n{log}"
    );

    cluster.start().expect("start the private cluster");
    let up = Instant::now();
    wait_status(&http, &format!("{}/healthz", node.base), 200).await;
    eprintln!(
        "FAULTS test=unreachable_at_start serving_after_ms={}",
        up.elapsed().as_millis()
    );
    assert_eq!(
        store_up(&http, &node.base).await,
        "1",
        "/metrics once connected"
    );
    let ids: Vec<String> = (0..100).map(|i| format!("after-standby-{i}")).collect();
    let hour = post_ids(&http, &node.base, &ids)
        .await
        .expect("ingest once PostgreSQL is up");
    let (_, filter) = fetch(&http, &node.base, &path_of(&hour)).await;
    assert!(ids.iter().all(|id| filter.contains(id)));
    let mut node = node;
    assert!(
        node.child.try_wait().unwrap().is_none(),
        "the same process serves: it never exited"
    );
}

/// `bloomcast_store_up` as `/metrics` answers it (200, Prometheus text), so that a node in
/// standby pages as a store that is down rather than as a failed scrape.
async fn store_up(http: &reqwest::Client, base: &str) -> String {
    let (status, body) = get(http, &format!("{base}/metrics")).await;
    assert_eq!(status, 200, "/metrics answers");
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("# TYPE bloomcast_store_up gauge"), "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("bloomcast_store_up "))
        .unwrap_or_else(|| panic!("bloomcast_store_up in {text}"))
        .to_owned()
}
