//! A wall clock that jumps ahead neither moves acknowledged IDs into a future hour nor
//! prunes an hour: the service runs on the time measured on its monotonic clock until
//! the jump is corrected (or holds for the confirmation period), says so in `/healthz`
//! and `/metrics`, and follows the real time again once the clock is corrected.

use crate::helpers::TestApp;
use axum::http::StatusCode;
use bloomcast::clock::Clock;
use chrono::Duration;

pub(crate) async fn metric(app: &TestApp, name: &str) -> i64 {
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .parse()
        .unwrap()
}

/// Asserts hour `path` is served complete with every one of `ids`.
pub(crate) async fn assert_sealed_with(app: &TestApp, path: &str, ids: &[&str]) {
    let reply = app.get(path).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {:?}", reply.json());
    let (meta, filter) = bloomcast::wire::Document::parse(&reply.body).unwrap();
    assert!(meta.complete, "{path}");
    assert_eq!(meta.count, ids.len() as u64, "{path}");
    for id in ids {
        assert!(filter.contains(id), "{path} lost {id}");
    }
}

#[tokio::test]
async fn a_clock_a_month_ahead_for_three_seconds_prunes_nothing_and_moves_no_id() {
    let app = TestApp::spawn_with(|s| s.retention_hours = 24).await;
    app.ingest(&["sealed-1", "sealed-2"]).await;
    app.next_hour().await;
    app.ingest(&["open-1"]).await;

    app.clock.step(Duration::hours(722));
    app.clock.advance(Duration::seconds(3));
    let receipt = app.ingest(&["during-1"]).await;
    assert_eq!(receipt["hour"], "2008-09-03T14:00:00Z", "not a month ahead");
    app.service.tick().await.unwrap();
    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(health["clock_ahead_seconds"].as_i64().unwrap() >= 722 * 3600 - 60);
    assert_eq!(health["current_hour"], "2008-09-03T14:00:00Z");
    assert_eq!(metric(&app, "bloomcast_clock_jumps_total").await, 1);
    assert_sealed_with(&app, "/2008/09/03/13", &["sealed-1", "sealed-2"]).await;

    app.clock.step(Duration::hours(-722));
    app.service.tick().await.unwrap();
    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["clock_ahead_seconds"], 0);
    assert_eq!(app.service.current_hour().rfc3339(), "2008-09-03T14:00:00Z");
    assert_sealed_with(&app, "/2008/09/03/13", &["sealed-1", "sealed-2"]).await;
    app.next_hour().await;
    assert_sealed_with(&app, "/2008/09/03/14", &["open-1", "during-1"]).await;
}

#[tokio::test]
async fn a_clock_25_hours_ahead_held_for_an_hour_prunes_nothing() {
    let app = TestApp::spawn_with(|s| s.retention_hours = 24).await;
    app.ingest(&["sealed-1", "sealed-2"]).await;
    app.next_hour().await;
    app.clock.step(Duration::hours(25));
    let mut acked = Vec::new();
    for i in 0..6 {
        app.clock.advance(Duration::minutes(10));
        app.service.tick().await.unwrap();
        let id = format!("held-{i}");
        let receipt = app.ingest(&[&id]).await;
        acked.push((receipt["hour"].as_str().unwrap().to_owned(), id));
    }
    // An hour of real time passed: the service is in the next hour, not a day ahead.
    assert_eq!(app.service.current_hour().rfc3339(), "2008-09-03T15:00:00Z");
    assert!(acked
        .iter()
        .all(|(hour, _)| hour.starts_with("2008-09-03T1")));
    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_sealed_with(&app, "/2008/09/03/13", &["sealed-1", "sealed-2"]).await;
    assert!(metric(&app, "bloomcast_clock_ahead_seconds").await >= 25 * 3600 - 60);

    app.clock.step(Duration::hours(-25));
    app.next_hour().await;
    assert_sealed_with(&app, "/2008/09/03/13", &["sealed-1", "sealed-2"]).await;
    for (hour, id) in &acked {
        let path = format!("/2008/09/03/{}", &hour[11..13]);
        let (_, filter) = app.filter(&path).await;
        assert!(filter.contains(id), "{path} lost {id}");
    }
}

#[tokio::test]
async fn a_step_back_of_two_hours_and_its_correction_leave_no_degraded_window() {
    let app = TestApp::spawn().await;
    app.ingest(&["before"]).await;
    app.next_hour().await; // 14:10

    app.clock.step(Duration::hours(-2)); // 12:10
    app.service.tick().await.unwrap();
    let held = app.ingest(&["stepped-back"]).await;
    assert_eq!(
        held["hour"], "2008-09-03T14:00:00Z",
        "time only moves forward"
    );
    app.clock.advance(Duration::minutes(5));
    app.clock.step(Duration::hours(2)); // corrected: 14:15

    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["clock_ahead_seconds"], 0);
    assert_eq!(health["clock_behind_seconds"], 0);
    assert_eq!(metric(&app, "bloomcast_clock_jumps_total").await, 0);
    assert_eq!(
        app.service.now(),
        app.clock.now(),
        "the correction is followed"
    );
    app.next_hour().await; // 15:15: 14:00 closes on time, not two hours late
    assert_sealed_with(&app, "/2008/09/03/14", &["stepped-back"]).await;
    assert_sealed_with(&app, "/2008/09/03/13", &["before"]).await;
}
