//! Faults that must never cost an acknowledged ID: clock steps (in-process, with the
//! injected clock, and across restarts), the hour-boundary race, full hours, panics and
//! loading after a start.

use crate::helpers::*;
use crate::wrapped::Wrapped;
use axum::http::StatusCode;
use bloomcast::bloom::{Filter, Key};
use bloomcast::chain::GENESIS;
use bloomcast::clock::ManualClock;
use bloomcast::hour::Hour;
use bloomcast::store::{ChainLink, SealedHour, SqliteStore, Store};
use chrono::Duration;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Every acknowledged ID by the hour its receipt named.
#[derive(Default)]
struct Acked(BTreeMap<String, Vec<String>>);

impl Acked {
    async fn ingest(&mut self, app: &TestApp, ids: &[&str]) -> String {
        let receipt = app.ingest(ids).await;
        let hour = receipt["hour"].as_str().unwrap().to_owned();
        self.0
            .entry(hour.clone())
            .or_default()
            .extend(ids.iter().map(|s| s.to_string()));
        hour
    }

    /// Each receipt's hour is served (never 404) and holds every ID acknowledged into it.
    async fn assert_all_served(&self, app: &TestApp) {
        for (hour, ids) in &self.0 {
            let path = Hour::parse_flexible(hour).unwrap().path();
            let (meta, filter) = app.filter(&path).await;
            let lost: Vec<_> = ids.iter().filter(|id| !filter.contains(id)).collect();
            assert!(lost.is_empty(), "{hour} lost {lost:?}");
            assert!(meta.count >= ids.len() as u64, "{hour}: {meta:?}");
        }
    }
}

/// An app over a store wrapped for fault injection, at 13:10.
async fn spawn_wrapped() -> (TestApp, ManualClock, Arc<Wrapped>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), Duration::minutes(10));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    let settings = settings(dir.path().to_owned());
    let app = TestApp::build_with_store(settings, clock.clone(), wrapped.clone(), Some(dir)).await;
    (app, clock, wrapped)
}

#[tokio::test]
async fn refreshes_do_not_read_back_what_this_node_just_wrote() {
    let (app, _clock, wrapped) = spawn_wrapped().await;
    app.service.wait_loaded().await;
    let before = wrapped.keys_read_back.load(Ordering::SeqCst);
    let ids: Vec<String> = (0..300).map(|i| format!("own-{i}")).collect();
    for batch in ids.chunks(100) {
        let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
        app.ingest(&batch).await;
        // Every read of the open hour refreshes it (refresh_ms is 0 here).
        assert_eq!(app.get("/2008/09/03/13").await.status, StatusCode::OK);
    }
    assert_eq!(
        wrapped.keys_read_back.load(Ordering::SeqCst),
        before,
        "the store was read for keys this node appended"
    );
    // A batch the ledger did not see (written to the store directly, as another
    // process would) is still read by the next refresh, and served.
    wrapped
        .inner
        .append(start_hour(), &[bloomcast::bloom::Key::of("elsewhere")])
        .await
        .unwrap();
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(filter.contains("elsewhere"));
    assert_eq!(meta.count, 301);
    assert!(ids.iter().all(|id| filter.contains(id)));
    assert_eq!(wrapped.keys_read_back.load(Ordering::SeqCst), before + 1);
}

/// The `.bin` bytes and ETag of a closed hour, to check they never change.
async fn sealed_bytes(app: &TestApp, path: &str) -> (Vec<u8>, String) {
    let reply = app.get(&format!("{path}.bin")).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}");
    assert_eq!(reply.header("bloom-complete"), Some("true"), "{path}");
    (reply.body.clone(), reply.header("etag").unwrap().to_owned())
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

#[tokio::test]
async fn a_clock_stepped_back_two_hours_keeps_ingest_in_the_newest_hour() {
    let app = TestApp::spawn().await;
    let mut acked = Acked::default();
    acked.ingest(&app, &["at-13"]).await;
    app.next_hour().await;
    acked.ingest(&app, &["at-14"]).await;
    app.next_hour().await;
    acked.ingest(&app, &["at-15"]).await;
    let before_13 = sealed_bytes(&app, "/2008/09/03/13").await;
    let before_14 = sealed_bytes(&app, "/2008/09/03/14").await;

    app.clock.advance(Duration::hours(-2)); // 13:10 again
    app.service.tick().await.unwrap();
    let hour = acked.ingest(&app, &["after-step-back"]).await;

    assert_eq!(
        hour, "2008-09-03T15:00:00Z",
        "ingest stays in the newest hour"
    );
    assert_eq!(app.service.current_hour().rfc3339(), hour);
    acked.assert_all_served(&app).await;
    assert_eq!(sealed_bytes(&app, "/2008/09/03/13").await, before_13);
    assert_eq!(sealed_bytes(&app, "/2008/09/03/14").await, before_14);
    let (meta, filter) = app.filter("/since/2008/09/03/14").await;
    assert_eq!(meta.to.as_deref(), Some("2008-09-03T15:00:00Z"));
    assert!(["at-14", "at-15", "after-step-back"]
        .iter()
        .all(|id| filter.contains(id)));
    let index = app.get("/").await.json();
    assert_eq!(index["current"]["hour"], "2008-09-03T15:00:00Z");
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(metric(&metrics, "bloomcast_clock_behind_seconds") > 3600.0);
    let health = app.get("/healthz").await.json();
    assert!(health["clock_behind_seconds"].as_i64().unwrap() > 3600);

    // The same after a restart with the clock still behind, and once it catches up the
    // hour is sealed with everything acknowledged into it.
    let app = app.restart().await;
    app.service.wait_loaded().await;
    assert_eq!(app.service.current_hour().rfc3339(), "2008-09-03T15:00:00Z");
    let hour = acked.ingest(&app, &["after-restart"]).await;
    assert_eq!(hour, "2008-09-03T15:00:00Z");
    app.clock.advance(Duration::hours(3)); // 16:10
    app.service.tick().await.unwrap();
    acked.ingest(&app, &["at-16"]).await;
    acked.assert_all_served(&app).await;
    assert!(app.filter("/2008/09/03/15").await.0.complete);
    assert_eq!(sealed_bytes(&app, "/2008/09/03/14").await, before_14);
}

#[tokio::test]
async fn a_clock_jumping_forward_and_back_never_hides_the_hour_it_opened() {
    let app = TestApp::spawn().await;
    let mut acked = Acked::default();
    acked.ingest(&app, &["at-13"]).await;
    app.clock.advance(Duration::hours(2)); // 15:10
    app.service.tick().await.unwrap();
    acked.ingest(&app, &["at-15"]).await;
    app.clock.advance(Duration::hours(-2)); // back to 13:10

    let hour = acked.ingest(&app, &["back-at-13"]).await;

    assert_eq!(hour, "2008-09-03T15:00:00Z");
    let reply = app.get("/2008/09/03/15").await;
    assert_eq!(reply.status, StatusCode::OK, "never 404 as the future");
    assert!(app.filter("/2008/09/03/13").await.0.complete);
    acked.assert_all_served(&app).await;
    let app = app.restart().await;
    assert_eq!(acked.ingest(&app, &["restarted"]).await, hour);
    acked.assert_all_served(&app).await;
}

#[tokio::test]
async fn a_fresh_store_never_acknowledges_into_an_hour_before_its_first() {
    let app = TestApp::spawn().await; // genesis 13:00
    app.clock.advance(Duration::hours(-2)); // 11:10, before genesis
    let app = app.restart().await;
    let mut acked = Acked::default();

    let hour = acked.ingest(&app, &["behind-genesis"]).await;

    assert_eq!(hour, "2008-09-03T13:00:00Z");
    assert_eq!(app.get("/").await.json()["genesis"], "2008-09-03T13:00:00Z");
    acked.assert_all_served(&app).await;
    app.get("/2008/09/03/11")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn a_reader_racing_the_seal_never_recreates_the_closed_hour() {
    let (app, clock, wrapped) = spawn_wrapped().await;
    app.service.wait_loaded().await;
    app.ingest(&["in-13"]).await;

    // A reader of the open hour stops inside its refresh ...
    wrapped.refresh_gate.arm();
    let router = app.router.clone();
    let reader = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::get("/2008/09/03/13")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(req).await.unwrap();
        let status = response.status();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, body)
    });
    wrapped.refresh_gate.arrived().await;
    // ... while housekeeping closes and seals that hour ...
    clock.advance(Duration::hours(1));
    let service = app.service.clone();
    let housekeeping = tokio::spawn(async move { service.tick().await });
    let store = &wrapped.inner;
    crate::wait::until("housekeeping seals the hour", || async move {
        store.sealed(start_hour()).await.unwrap().map(drop)
    })
    .await;
    // ... and then goes on.
    wrapped.refresh_gate.release();
    let (status, body) = reader.await.unwrap();
    housekeeping.await.unwrap().unwrap();

    assert_eq!(status, StatusCode::OK);
    let (meta, filter) = bloomcast::wire::Document::parse(&body).unwrap();
    assert!(meta.complete, "served as the sealed hour: {meta:?}");
    assert!(meta.count == 1 && filter.contains("in-13"));
    let (again, filter) = app.filter("/2008/09/03/13").await;
    assert!(again.complete && filter.contains("in-13"));
}

#[tokio::test]
async fn an_hour_at_max_hour_ids_refuses_a_batch_whole() {
    let app = TestApp::spawn_with(|s| {
        s.max_hour_ids = 5;
        s.capacity = 5;
    })
    .await;
    app.ingest(&["a", "b", "c"]).await;
    let body = serde_json::to_vec(&serde_json::json!({"ids": ["c", "d", "e", "f"]})).unwrap();

    let refused = app
        .post_raw(Some("application/json"), Some(TOKEN), body)
        .await;

    refused.assert_error(507, "hour_full");
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 3, "nothing of the refused batch was recorded");
    assert!(!filter.contains("f") || !filter.contains("e"));
    app.ingest(&["a", "d", "e"]).await; // two new: exactly at the limit
    assert_eq!(app.filter("/2008/09/03/13").await.0.count, 5);
    app.next_hour().await;
    app.ingest(&["next-hour"]).await; // a new hour starts empty
}

#[tokio::test]
async fn a_panic_in_a_request_is_a_500_and_the_server_keeps_serving() {
    let (app, _clock, wrapped) = spawn_wrapped().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    wrapped
        .panic_on_sealed
        .store(true, std::sync::atomic::Ordering::SeqCst);

    let failed = app.get("/2008/09/03/13").await;

    failed.assert_error(500, "internal");
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(meta.complete && filter.contains("a"));
    app.ingest(&["b"]).await;
    assert!(app.filter("/2008/09/03/14").await.1.contains("b"));
}

#[tokio::test]
async fn while_the_open_hour_loads_health_says_so_and_ingest_waits_without_a_408() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), Duration::minutes(10));
    {
        let store = SqliteStore::open(dir.path(), start_hour()).unwrap();
        store
            .append(start_hour(), &[bloomcast::bloom::Key::of("before")])
            .await
            .unwrap();
    }
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    wrapped.refresh_gate.arm(); // the load stops at its first read of the open hour
    let mut s = settings(dir.path().to_owned());
    s.request_timeout_seconds = 1;
    let app = TestApp::build_with_store(s, clock, wrapped.clone(), Some(dir)).await;
    wrapped.refresh_gate.arrived().await;

    let health = app.get("/healthz").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(health.json()["status"], "loading");
    let router = app.router.clone();
    let ingest = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::post("/updates")
            .header("content-type", "text/plain")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(axum::body::Body::from("after"))
            .unwrap();
        router.oneshot(req).await.unwrap().status()
    });
    crate::wait::pass(std::time::Duration::from_millis(1500)).await; // past the timeout
    wrapped.refresh_gate.release();

    assert_eq!(ingest.await.unwrap(), StatusCode::OK);
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(meta.count == 2 && filter.contains("before") && filter.contains("after"));
}

#[tokio::test]
async fn a_full_union_pool_makes_another_range_wait_its_turn_and_hours_and_ingest_go_on() {
    let (app, _clock, wrapped) = spawn_wrapped().await;
    app.ingest(&["a"]).await;
    app.next_hour().await; // 13:00 sealed
    wrapped.keys_gate.arm(); // the next union build stops reading 13's keys
    let get = |path: &'static str| {
        let router = app.router.clone();
        tokio::spawn(async move {
            use tower::ServiceExt;
            let req = axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap();
            router.oneshot(req).await.unwrap().status()
        })
    };
    let building = get("/since/2008/09/03/13");
    wrapped.keys_gate.arrived().await;
    let same_range = get("/since/2008/09/03/13");
    // Another range needs the pool's one slot: it waits for its turn, not refused.
    let other = get("/since/2008/09/03/14");
    // Queued: `/stats` counts it waiting (no wall-clock wait needed to see it).
    let mut queue = serde_json::Value::Null;
    for _ in 0..10_000 {
        queue = app.get("/stats").await.json()["build_queue"].clone();
        if queue["waiting"] == 1 || other.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(queue["waiting"], 1, "{queue}");
    assert!(
        !other.is_finished(),
        "another range waits while the slot is held"
    );

    // Hours and ingest do not need the pool.
    assert!(app.filter("/2008/09/03/13").await.1.contains("a"));
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
    app.ingest(&["b"]).await;
    wrapped.keys_gate.release();
    assert_eq!(building.await.unwrap(), StatusCode::OK);
    assert_eq!(
        same_range.await.unwrap(),
        StatusCode::OK,
        "one range shares its build"
    );
    assert_eq!(other.await.unwrap(), StatusCode::OK, "built in its turn");
    let (meta, filter) = app.filter("/2008/09/03").await; // the same range as /since/13
    assert!(meta.count == 2 && filter.contains("a") && filter.contains("b"));
}

/// An app past 13:00 with "a" and "b" acknowledged into it, the hour not yet sealed.
async fn hour_ready_to_seal() -> (TestApp, Arc<Wrapped>) {
    let (app, clock, wrapped) = spawn_wrapped().await;
    app.service.wait_loaded().await;
    app.ingest(&["a", "b"]).await;
    clock.advance(Duration::hours(1));
    assert_eq!(wrapped.inner.sealed(start_hour()).await.unwrap(), None);
    (app, wrapped)
}

/// (sealed filters, chain links) the store has been asked to read so far.
fn reads(wrapped: &Wrapped) -> (usize, usize) {
    (
        wrapped.sealed_reads.load(Ordering::SeqCst),
        wrapped.link_reads.load(Ordering::SeqCst),
    )
}

#[tokio::test]
async fn sealing_an_hour_serves_what_it_wrote_without_reading_it_back() {
    let (app, wrapped) = hour_ready_to_seal().await;
    let before = reads(&wrapped);
    let sealed = app.service.hours().seal(start_hour()).await.unwrap();
    let after = reads(&wrapped);
    assert_eq!(
        after.0 - before.0,
        1,
        "one read (was the hour sealed already?), none of the seal just written"
    );
    assert_eq!(
        after.1 - before.1,
        2,
        "the newest link before the hour and the hour's own, not the link just written"
    );
    assert_eq!(sealed.count, 2);
    assert_eq!(
        wrapped.inner.sealed(start_hour()).await.unwrap().as_ref(),
        Some(&sealed),
        "what the service kept is what the store holds"
    );
    let link = wrapped.inner.last_link(start_hour().next()).await.unwrap();
    assert_eq!(
        link,
        Some(ChainLink::new(start_hour(), &sealed.filter, GENESIS))
    );
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 2);
    assert!(filter.contains("a") && filter.contains("b"));
    assert_eq!(app.get("/2008/09/03/13.bin").await.body, sealed.filter);
}

#[tokio::test]
async fn an_hour_another_node_sealed_and_linked_first_is_served_as_stored() {
    let (app, wrapped) = hour_ready_to_seal().await;
    // Another node seals 13:00 with other bytes, and links them, after this node
    // checked and before its own writes land.
    let their_keys = bloomcast::store::distinct(vec![Key::of("theirs")]);
    let theirs = SealedHour::new(
        start_hour(),
        1,
        &Filter::sized_within(&their_keys, 0.01).unwrap(),
    );
    let their_link = ChainLink::new(start_hour(), &theirs.filter, GENESIS);
    *wrapped.seal_first.lock().unwrap() = Some((theirs.clone(), their_keys));
    *wrapped.link_first.lock().unwrap() = Some(their_link);
    let before = reads(&wrapped);

    let sealed = app.service.hours().seal(start_hour()).await.unwrap();
    let after = reads(&wrapped);
    assert!(
        wrapped.seal_first.lock().unwrap().is_none(),
        "theirs went first"
    );
    assert_eq!(sealed, theirs, "the stored seal, not this node's");
    assert_eq!(
        after.0 - before.0,
        2,
        "the stored seal is read back when another was first"
    );
    assert_eq!(
        after.1 - before.1,
        3,
        "the stored link is read back when another was first"
    );
    let signed = app
        .service
        .signing()
        .signed_link(start_hour())
        .await
        .unwrap();
    assert_eq!(signed.map(|s| s.link), Some(their_link));

    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 1);
    assert!(filter.contains("theirs"));
    assert_eq!(app.get("/2008/09/03/13.bin").await.body, theirs.filter);
}

#[tokio::test]
async fn an_hour_whose_stored_link_covers_other_bytes_is_corrupt_not_served_unsigned() {
    let (app, wrapped) = hour_ready_to_seal().await;
    // A link of other bytes than the seal stored: the chain, the record of what was
    // sealed, says the stored filter is not the hour's.
    *wrapped.link_first.lock().unwrap() =
        Some(ChainLink::new(start_hour(), b"other bytes", GENESIS));
    app.service.hours().seal(start_hour()).await.unwrap();
    app.get("/2008/09/03/13").await.assert_error(500, "corrupt");
    app.get("/2008/09/03/13.bin")
        .await
        .assert_error(500, "corrupt");
    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["corrupt_hours"][0], "2008-09-03T13:00:00Z");
}
