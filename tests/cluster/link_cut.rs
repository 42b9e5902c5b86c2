//! The link between a node and PostgreSQL cut without a close (a proxy that stops
//! forwarding and keeps its sockets open), under load on two nodes, one behind the
//! proxy: that node's ingest fails with 503 `store_unavailable` by `database_timeout_ms`
//! (not the request timeout's 503), the other carries on; once new connections get through again
//! the node replaces its pooled connections (the cut ones never answer again) and takes
//! writes, and every acknowledged ID is in its hour's filter on both nodes.

use super::load::{
    acked_by_hour, assert_all_found, assert_ok_or_unavailable, report_fault, wait_status, Load,
};
use super::proxy::Proxy;
use crate::common::nodes::{node, node_settings};
use crate::common::pg::PrivateCluster;
use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;
use std::time::{Duration as Wait, Instant};

const DATABASE_TIMEOUT: Wait = Wait::from_millis(1000);

pub async fn a_link_that_stops_answering_fails_ingest_in_time_and_its_connections_are_replaced() {
    let cluster = PrivateCluster::create()
        .unwrap_or_else(|why| panic!("initdb and pg_ctl start a private cluster: {why}"));
    let proxy = Proxy::start(cluster.port()).await;
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let urls = [
        format!("postgres://postgres@127.0.0.1:{}/postgres", proxy.port),
        cluster.url(),
    ];
    let mut nodes = Vec::new();
    for (dir, url) in dirs.iter().zip(&urls) {
        let mut settings = node_settings(url, "bloomcast", dir.path().to_owned());
        settings.database_timeout_ms = DATABASE_TIMEOUT.as_millis() as u64;
        settings.request_timeout_seconds = 5;
        nodes.push(node(settings, &clock).await);
    }
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let http = reqwest::Client::new();

    let load = Load::start(&bases, 2, "cut");
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    proxy.cut();
    let cut = Instant::now();
    wait_status(&http, &format!("{}/healthz", bases[0]), 503).await;
    // Bytes the proxy had in hand as it was cut may still pass: from a moment after.
    let settled = cut + Wait::from_millis(100);
    // Through the cut link, ingest is answered (not left hanging) again and again, while
    // the node with its own link carries on.
    load.wait_answered_since(&[0], settled, 503, 3).await;
    load.wait_answered_since(&[1], settled, 200, 1).await;
    let during: Vec<_> = load
        .answers()
        .into_iter()
        .filter(|a| a.sent > settled)
        .collect();
    let behind_proxy: Vec<u16> = during
        .iter()
        .filter(|a| a.node == 0)
        .map(|a| a.status)
        .collect();
    assert!(
        !behind_proxy.is_empty() && behind_proxy.iter().all(|s| *s == 503),
        "every ingest through the cut link answers 503: {behind_proxy:?}"
    );
    assert!(
        during.iter().any(|a| a.node == 1 && a.status == 200),
        "the node with its own link carries on"
    );

    proxy.restore();
    let restored = Instant::now();
    let recovery = load.wait_acked_since(2, restored).await;
    wait_status(&http, &format!("{}/healthz", bases[0]), 200).await;
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    let answers = load.finish().await;

    // Answered 503 store_unavailable (by the database timeout), never the request
    // timeout's error nor no answer at all.
    assert_ok_or_unavailable(&answers);
    let acked = acked_by_hour(&answers);
    report_fault("link_cut", restored - cut, &answers, &recovery);
    assert_all_found("link_cut", &bases, &acked).await;
}
