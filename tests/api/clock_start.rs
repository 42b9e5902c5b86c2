//! The clock at start: a restart whose first clock reading is far past what the last
//! heartbeat recorded (plus the time measured since, where the same boot measures it)
//! is a jump from the start. It is held as a running jump is: nothing pruned or opened
//! by it, `/healthz` `degraded` with the figure, the jump counted, until the clock is
//! corrected, an operator confirms it (`POST /clock/confirm`), or it holds for the
//! confirmation period. Real downtime on the same boot is measured and followed.

use crate::clock_jumps::{assert_sealed_with, metric};
use crate::helpers::{TestApp, TOKEN};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use bloomcast::clock::Clock;
use chrono::Duration;

/// 1,000 IDs acknowledged: 500 into 13:00 (sealed), 500 into 14:00 (open, the clock at
/// 14:10), and a heartbeat written, as the background task writes one.
async fn thousand_acknowledged() -> (TestApp, Vec<String>, Vec<String>) {
    let app = TestApp::spawn().await;
    let sealed: Vec<String> = (0..500).map(|i| format!("sealed-{i}")).collect();
    let open: Vec<String> = (0..500).map(|i| format!("open-{i}")).collect();
    app.ingest(&refs(&sealed)).await;
    app.next_hour().await;
    let receipt = app.ingest(&refs(&open)).await;
    assert_eq!(receipt["hour"], "2008-09-03T14:00:00Z");
    assert_eq!(app.get("/healthz").await.json()["status"], "ok");
    (app, sealed, open)
}

fn refs(ids: &[String]) -> Vec<&str> {
    ids.iter().map(String::as_str).collect()
}

/// Every one of the 1,000 is served in its hour: 13:00 sealed with its 500, 14:00 with
/// its 500 (and `more`).
async fn assert_thousand_served(app: &TestApp, sealed: &[String], open: &[String]) {
    let sealed: Vec<&str> = sealed.iter().map(String::as_str).collect();
    assert_sealed_with(app, "/2008/09/03/13", &sealed).await;
    let (_, filter) = app.filter("/2008/09/03/14").await;
    let lost = open.iter().filter(|id| !filter.contains(id)).count();
    assert_eq!(lost, 0, "{lost} of 500 lost in 14:00");
}

async fn confirm(app: &TestApp, token: Option<&str>) -> crate::helpers::Reply {
    let mut req = Request::post("/clock/confirm");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    app.request(req.body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn a_start_a_year_or_721_hours_ahead_is_held_prunes_nothing_and_a_start_on_the_right_clock_serves_all(
) {
    for ahead in [Duration::days(365), Duration::hours(721)] {
        let (app, sealed, open) = thousand_acknowledged().await;

        app.clock.step(ahead);
        let app = app.restart().await;
        app.service.tick().await.unwrap();
        let late = app.ingest(&["after-the-start"]).await;

        assert_eq!(
            late["hour"], "2008-09-03T14:00:00Z",
            "{ahead}: not moved ahead"
        );
        let health = app.get("/healthz").await.json();
        assert_eq!(health["status"], "degraded", "{health}");
        assert_eq!(health["current_hour"], "2008-09-03T14:00:00Z");
        let figure = health["clock_ahead_seconds"].as_i64().unwrap();
        assert!(
            (figure - ahead.num_seconds()).abs() < 60,
            "{figure} for {ahead}"
        );
        let reason = health["reason"].as_str().unwrap();
        assert!(reason.contains("bloomcast confirm-clock"), "{reason}");
        assert!(reason.contains("at start"), "{reason}");
        assert_eq!(metric(&app, "bloomcast_clock_jumps_total").await, 1);
        assert!(metric(&app, "bloomcast_clock_ahead_seconds").await >= ahead.num_seconds() - 60);
        assert_thousand_served(&app, &sealed, &open).await;

        app.clock.step(-ahead);
        let app = app.restart().await;
        app.service.tick().await.unwrap();
        let health = app.get("/healthz").await.json();
        assert_eq!(health["status"], "ok", "{health}");
        assert_eq!(health["clock_ahead_seconds"], 0);
        assert_eq!(health["current_hour"], "2008-09-03T14:00:00Z");
        assert_thousand_served(&app, &sealed, &open).await;
        let (_, filter) = app.filter("/2008/09/03/14").await;
        assert!(filter.contains("after-the-start"));
    }
}

#[tokio::test]
async fn an_operator_confirming_a_start_held_ahead_is_followed_at_once_and_needs_the_token() {
    let (app, _, _) = thousand_acknowledged().await;
    app.clock.step(Duration::days(365));
    let app = app.restart().await;

    confirm(&app, None).await.assert_error(401, "unauthorized");
    confirm(&app, Some("not-the-token"))
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(app.service.current_hour().rfc3339(), "2008-09-03T14:00:00Z");
    let reply = confirm(&app, Some(TOKEN)).await;

    assert_eq!(reply.status, StatusCode::OK);
    let report = reply.json();
    assert_eq!(report["confirmed"], true, "{report}");
    let moved = report["followed_seconds"].as_i64().unwrap();
    assert!((moved - 365 * 86_400).abs() < 60, "{report}");
    assert_eq!(report["current_hour"], "2009-09-03T14:00:00Z", "{report}");
    assert_eq!(report["clock_ahead_seconds"], 0);
    assert_eq!(report["clock_jumps"], 1);
    assert_eq!(app.get("/healthz").await.json()["status"], "ok");
    confirm(&app, Some(TOKEN))
        .await
        .assert_error(409, "nothing_to_confirm");
    // Recorded: a restart on the confirmed clock is no jump.
    let app = app.restart().await;
    assert_eq!(app.get("/healthz").await.json()["status"], "ok");
    assert_eq!(app.service.health().clock_jump().jumps, 0);
}

#[tokio::test]
async fn a_start_held_ahead_is_followed_once_it_holds_for_the_confirmation_period() {
    let (app, _, _) = thousand_acknowledged().await;
    app.clock.step(Duration::hours(721));
    let app = app.restart().await;
    app.get("/healthz").await;

    app.clock.advance(Duration::minutes(119));
    assert_eq!(app.get("/healthz").await.json()["status"], "degraded");
    assert_eq!(app.service.current_hour().rfc3339(), "2008-09-03T16:00:00Z");
    app.clock.advance(Duration::minutes(1));

    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(app.service.now(), app.clock.now());
}

#[tokio::test]
async fn a_start_after_real_downtime_on_the_same_boot_is_followed_with_no_alarm() {
    for down in [Duration::minutes(2), Duration::hours(3)] {
        let (app, sealed, open) = thousand_acknowledged().await;
        // Stopped for `down`: the same machine's time since boot measures it.
        app.clock.advance(down);

        let app = app.restart().await;
        app.service.tick().await.unwrap();

        let health = app.get("/healthz").await.json();
        assert_eq!(health["status"], "ok", "{down}: {health}");
        assert_eq!(app.service.health().clock_jump().jumps, 0, "{down}");
        assert_eq!(app.service.now(), app.clock.now(), "{down}");
        assert_thousand_served(&app, &sealed, &open).await;
    }
}

#[tokio::test]
async fn after_a_reboot_a_start_past_the_tolerance_is_held_and_one_within_it_is_followed() {
    let (app, _, _) = thousand_acknowledged().await;
    app.clock.reboot();
    app.clock.advance(Duration::minutes(4));
    let app = app.restart().await;
    assert_eq!(app.get("/healthz").await.json()["status"], "ok");
    app.get("/healthz").await;

    app.clock.reboot();
    app.clock.advance(Duration::hours(1));
    let app = app.restart().await;

    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "degraded", "{health}");
    let figure = health["clock_ahead_seconds"].as_i64().unwrap();
    assert!(
        (figure - 3600).abs() < 5,
        "the downtime cannot be measured: {health}"
    );
    assert_eq!(health["current_hour"], "2008-09-03T14:00:00Z");
}

#[tokio::test]
async fn a_start_back_on_the_time_trusted_before_a_step_back_is_followed() {
    let (app, _, _) = thousand_acknowledged().await;
    app.clock.step(Duration::hours(-2));
    // Past the heartbeat's once a second: recorded 12:10, having trusted 14:10.
    crate::wait::pass(std::time::Duration::from_millis(1100)).await;
    app.get("/healthz").await;

    app.clock.step(Duration::hours(2));
    let app = app.restart().await;

    let health = app.get("/healthz").await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(app.service.health().clock_jump().jumps, 0);
    assert_eq!(app.service.now(), app.clock.now());
}
