//! PostgreSQL restarted under load, in pg_ctl's fast and immediate shutdown modes, with
//! two nodes on a private cluster and writers on both: while it is down every ingest is
//! answered 503 `store_unavailable` with `Retry-After` (never the request timeout's 503),
//! `/healthz` says 503, the closed hour held in memory is served byte for byte; an hour
//! boundary passes meanwhile; once PostgreSQL is back both nodes take writes again
//! without a restart, and every acknowledged ID is in its hour's filter on both.

use super::load::{
    acked_by_hour, assert_all_found, assert_ok_or_unavailable, get, report_fault,
    unavailable_by_node, wait_status, Load,
};
use crate::common::nodes::{node, node_settings};
use crate::common::pg::PrivateCluster;
use crate::common::post_ids;
use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;
use std::time::{Duration as Wait, Instant};

/// The nodes' request timeout in these tests: an ingest held this long is answered with
/// the request timeout's error, which fails the checks.
const REQUEST_TIMEOUT: Wait = Wait::from_secs(5);

pub async fn postgres_restarted_fast_under_load_loses_nothing_acknowledged() {
    restart_under_load("fast").await;
}

pub async fn postgres_restarted_immediate_under_load_loses_nothing_acknowledged() {
    restart_under_load("immediate").await;
}

async fn restart_under_load(mode: &str) {
    let test = format!("restart_{mode}");
    let cluster = PrivateCluster::create()
        .unwrap_or_else(|why| panic!("initdb and pg_ctl start a private cluster: {why}"));
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut nodes = Vec::new();
    for dir in &dirs {
        let mut settings = node_settings(&cluster.url(), "bloomcast", dir.path().to_owned());
        settings.request_timeout_seconds = REQUEST_TIMEOUT.as_secs();
        nodes.push(node(settings, &clock).await);
    }
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let http = reqwest::Client::new();

    // 13:00 gets IDs and is sealed; each node then serves it from memory.
    let first: Vec<String> = (0..200).map(|i| format!("{test}-closed-{i}")).collect();
    let first_hour = post_ids(&http, &bases[0], &first).await.unwrap();
    clock.advance(Duration::hours(1));
    for n in &nodes {
        n.service.tick().await.unwrap();
    }
    let mut closed = Vec::new();
    for base in &bases {
        let (status, body) = get(&http, &format!("{base}/2008/09/03/13")).await;
        assert_eq!(status, 200, "{base}");
        closed.push(body);
    }

    let load = Load::start(&bases, 2, &test);
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    cluster.stop_with(mode).expect("stop the private cluster");
    let down = Instant::now();
    eprintln!("{test}: PostgreSQL stopped ({mode})");

    for base in &bases {
        wait_status(&http, &format!("{base}/healthz"), 503).await;
    }
    for (base, before) in bases.iter().zip(&closed) {
        let (status, body) = get(&http, &format!("{base}/2008/09/03/13")).await;
        assert_eq!(
            status, 200,
            "{base}: the closed hour is served while PostgreSQL is down"
        );
        assert_eq!(&body, before, "{base}: the closed hour's bytes changed");
    }
    // An hour boundary passes while PostgreSQL is down: 14:00 closes unsealed.
    clock.advance(Duration::hours(1));
    for n in &nodes {
        assert!(
            n.service.tick().await.is_err(),
            "housekeeping cannot succeed while PostgreSQL is down"
        );
    }
    load.wait_answered_since(&[0, 1], down, 503, 3).await;
    let refused = unavailable_by_node(&load.answers(), 2);
    assert!(
        refused.iter().all(|n| *n > 0),
        "every node answered 503 while PostgreSQL was down: {refused:?}"
    );

    cluster.start().expect("restart the private cluster");
    let up = Instant::now();
    let outage = up - down;
    let recovery = load.wait_acked_since(2, up).await;
    for base in &bases {
        wait_status(&http, &format!("{base}/healthz"), 200).await;
    }
    load.wait_answered_since(&[0, 1], Instant::now(), 200, 10)
        .await;
    let answers = load.finish().await;

    // Answered 503 store_unavailable, never the request timeout's error nor no answer.
    assert_ok_or_unavailable(&answers);
    let mut acked = acked_by_hour(&answers);
    acked.entry(first_hour).or_default().extend(first);
    for hour in ["2008-09-03T14:00:00Z", "2008-09-03T15:00:00Z"] {
        assert!(
            acked.contains_key(hour),
            "ingest acknowledged before and after the outage: {:?}",
            acked.keys().collect::<Vec<_>>()
        );
    }
    // 14:00 closed during the outage: it is sealed now, by whichever node gets there.
    for n in &nodes {
        let what = "housekeeping succeeds after PostgreSQL is back";
        crate::common::wait::until(what, || async move { n.service.tick().await.ok() }).await;
    }
    report_fault(&test, outage, &answers, &recovery);
    assert_all_found(&test, &bases, &acked).await;
}
