//! `/healthz` and failing writes: while writes fail, no check says `ok`, however many
//! heartbeats or small writes squeeze in between the failures; once they stop failing it
//! turns `ok` by itself (the write rule in `src/service/health.rs`). The hold and the
//! heartbeat's once a second are on tokio's clock, which the tests move on
//! (`wait::pass`) instead of waiting.

use crate::helpers::*;
use crate::wrapped::Wrapped;
use axum::http::StatusCode;
use bloomcast::clock::ManualClock;
use bloomcast::service::RECOVERY_HOLD;
use bloomcast::store::{SqliteStore, Store};
use chrono::Duration;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration as Wait;

async fn spawn_wrapped() -> (TestApp, Arc<Wrapped>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), Duration::minutes(10));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    let settings = settings(dir.path().to_owned());
    let app = TestApp::build_with_store(settings, clock, wrapped.clone(), Some(dir)).await;
    app.service.wait_loaded().await;
    (app, wrapped)
}

async fn post(app: &TestApp, id: &str) -> Reply {
    app.post_raw(Some("text/plain"), Some(TOKEN), id.as_bytes().to_vec())
        .await
}

fn assert_unavailable(health: &Reply, context: &str) {
    assert_eq!(
        health.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{context}: {}",
        String::from_utf8_lossy(&health.body)
    );
    let json = health.json();
    assert_eq!(json["status"], "unavailable", "{context}: {json}");
    assert!(
        json["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no space left")),
        "{context}: {json}"
    );
    assert!(
        json["write_failed_seconds_ago"].is_u64(),
        "{context}: {json}"
    );
}

#[tokio::test]
async fn no_check_says_ok_while_ingest_fails_though_heartbeats_and_small_writes_get_through() {
    let (app, wrapped) = spawn_wrapped().await;
    app.ingest(&["before"]).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    assert!(health.json().get("write_failed_seconds_ago").is_none());
    wrapped.fail_appends.store(true, Ordering::SeqCst);
    let pings_before = wrapped.pings.load(Ordering::SeqCst);

    for i in 0..20 {
        post(&app, &format!("refused-{i}"))
            .await
            .assert_error(503, "store_unavailable");
        if i == 10 {
            // A small write gets through between failures, as on a nearly full disk.
            wrapped.fail_appends.store(false, Ordering::SeqCst);
            assert_eq!(post(&app, "squeezed").await.status, StatusCode::OK);
            wrapped.fail_appends.store(true, Ordering::SeqCst);
        }
        if i % 5 == 4 {
            // Past the heartbeat's once a second: this check writes one, which succeeds.
            crate::wait::pass(Wait::from_millis(1050)).await;
        }
        assert_unavailable(&app.get("/healthz").await, &format!("probe {i}"));
    }
    let heartbeats = wrapped.pings.load(Ordering::SeqCst) - pings_before;
    assert!(heartbeats >= 4, "{heartbeats} heartbeats squeezed in");

    // Writes succeed again: still unavailable within the hold (1.05 s after the last
    // failure, then 2.05 s, that check writing a heartbeat that succeeds), then ok by
    // itself once a heartbeat begun past the hold (5.05 s) succeeds.
    wrapped.fail_appends.store(false, Ordering::SeqCst);
    assert_unavailable(&app.get("/healthz").await, "just after the last failure");
    let pings = wrapped.pings.load(Ordering::SeqCst);
    crate::wait::pass(Wait::from_secs(1)).await;
    assert_unavailable(&app.get("/healthz").await, "within the hold");
    assert!(
        wrapped.pings.load(Ordering::SeqCst) > pings,
        "the check within the hold wrote a heartbeat"
    );
    crate::wait::pass(RECOVERY_HOLD - Wait::from_secs(2)).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK, "{:?}", health.json());
    assert_eq!(health.json()["status"], "ok");
    app.ingest(&["after"]).await;
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 3, "before, squeezed and after; nothing refused");
    assert!(["before", "squeezed", "after"]
        .iter()
        .all(|id| filter.contains(id)));
}

/// The value of the sample `series` (name and labels as written) in `/metrics`.
async fn metric(app: &TestApp, series: &str) -> Option<f64> {
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn metrics_say_the_store_is_down_and_count_failed_seals_until_writes_succeed_again() {
    let (app, wrapped) = spawn_wrapped().await;
    app.ingest(&["before"]).await;
    assert_eq!(metric(&app, "bloomcast_store_up").await, Some(1.0));
    assert_eq!(
        metric(&app, "bloomcast_chain_head_timestamp_seconds").await,
        None
    );

    wrapped.fail_appends.store(true, Ordering::SeqCst);
    wrapped.fail_seals.store(true, Ordering::SeqCst);
    post(&app, "refused")
        .await
        .assert_error(503, "store_unavailable");
    app.clock.advance(Duration::hours(1));
    assert!(app.service.tick().await.is_err(), "the seal fails");
    assert_eq!(metric(&app, "bloomcast_store_up").await, Some(0.0));
    assert_eq!(
        metric(&app, "bloomcast_seal_failures_total").await,
        Some(1.0)
    );
    let store_unavailable = r#"bloomcast_http_errors_total{code="store_unavailable"}"#;
    assert_eq!(metric(&app, store_unavailable).await, Some(1.0));
    assert_eq!(
        metric(&app, "bloomcast_chain_head_timestamp_seconds").await,
        None
    );

    // Writes succeed again: up once a heartbeat begun after the hold succeeds, and the
    // retried seal moves the chain's head to the hour.
    wrapped.fail_appends.store(false, Ordering::SeqCst);
    wrapped.fail_seals.store(false, Ordering::SeqCst);
    crate::wait::pass(RECOVERY_HOLD + Wait::from_millis(100)).await;
    app.service.tick().await.unwrap();
    assert_eq!(metric(&app, "bloomcast_store_up").await, Some(1.0));
    assert_eq!(
        metric(&app, "bloomcast_seal_failures_total").await,
        Some(1.0)
    );
    assert_eq!(
        metric(&app, "bloomcast_chain_head_timestamp_seconds").await,
        Some(start_hour().start().timestamp() as f64)
    );
}

#[tokio::test]
async fn an_idle_node_nobody_asks_turns_ok_by_itself_with_its_own_heartbeats() {
    let (app, wrapped) = spawn_wrapped().await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.service.clone().run_heartbeats(async move {
        let _ = stopped.await;
    }));
    wrapped.fail_appends.store(true, Ordering::SeqCst);
    post(&app, "refused")
        .await
        .assert_error(503, "store_unavailable");
    let failed_at = tokio::time::Instant::now();
    assert!(!app.service.health().store_takes_writes());
    wrapped.fail_appends.store(false, Ordering::SeqCst);
    let pings = wrapped.pings.load(Ordering::SeqCst);

    // Nothing asks: no request, no /healthz, no /metrics. Second by second, the
    // heartbeat the task writes each second while failing is awaited; ok once one begun
    // past the hold succeeds.
    let mut seconds = 0;
    while !app.service.health().store_takes_writes() {
        assert!(
            seconds <= RECOVERY_HOLD.as_secs() + 2,
            "still unavailable {seconds} s after the failure"
        );
        let written = wrapped.pings.load(Ordering::SeqCst);
        crate::wait::pass(Wait::from_secs(1)).await;
        seconds += 1;
        crate::wait::eventually("the task writes its heartbeat", || {
            wrapped.pings.load(Ordering::SeqCst) > written
        })
        .await;
    }

    // On tokio's clock, less the moment between the failure being noted and its reply.
    assert!(
        failed_at.elapsed() >= RECOVERY_HOLD - Wait::from_millis(50),
        "ok only {:?} after the failure",
        failed_at.elapsed()
    );
    let written = (wrapped.pings.load(Ordering::SeqCst) - pings) as u64;
    assert!(
        written >= seconds,
        "one heartbeat a second while failing: {written} in {seconds} s"
    );
    let _ = stop.send(());
    assert_eq!(app.get("/healthz").await.json()["status"], "ok");
}

#[tokio::test]
async fn keys_are_vouched_for_by_their_filter_when_the_record_of_their_digest_cannot_be_read() {
    let (app, wrapped) = spawn_wrapped().await;
    app.ingest(&["a", "b", "c"]).await;
    app.clock.advance(Duration::hours(1));
    app.service.tick().await.unwrap();
    // The record of the keys' digest is only a shortcut: unreadable, it costs the
    // filter's rebuild, never the answer.
    wrapped.fail_form_reads.store(true, Ordering::SeqCst);
    let path = format!("{}.ribbon2", start_hour().path());
    assert_eq!(app.get(&path).await.status, StatusCode::OK);
    assert!(wrapped.form_reads_failed.load(Ordering::SeqCst) > 0);
    let recorded: i64 = app
        .db()
        .query_row("SELECT count(*) FROM forms WHERE form = 'keys'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(recorded, 1, "recorded once, at the seal");
}
