//! Hour rollover, sealing and recovery, under a clock the tests move.

use crate::helpers::*;
use chrono::Duration;

#[tokio::test]
async fn ids_land_in_the_hour_they_arrive_and_closed_hours_are_complete() {
    let app = TestApp::spawn().await;
    app.ingest(&["in-13"]).await;
    app.clock.advance(Duration::minutes(50)); // 14:00, housekeeping has not run yet
    let reply = app.ingest(&["in-14"]).await;
    assert_eq!(reply["hour"], "2008-09-03T14:00:00Z");
    let (meta13, f13) = app.filter("/2008/09/03/13").await;
    assert!(meta13.complete, "a past hour is sealed on demand");
    assert!(f13.contains("in-13") && meta13.count == 1);
    let (meta14, f14) = app.filter("/2008/09/03/14").await;
    assert!(!meta14.complete);
    assert!(f14.contains("in-14") && meta14.count == 1);
}

#[tokio::test]
async fn housekeeping_seals_every_hour_that_closed() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.clock.advance(Duration::hours(3));
    app.service.tick().await.unwrap();
    for h in 13..16 {
        let (meta, _) = app.filter(&format!("/2008/09/03/{h}")).await;
        assert!(meta.complete, "hour {h}");
        assert_eq!(meta.count, u64::from(h == 13));
    }
}

#[tokio::test]
async fn the_open_hour_is_recovered_after_a_restart() {
    let app = TestApp::spawn().await;
    app.ingest(&["before-restart-1", "before-restart-2"]).await;
    let app = app.restart().await;
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 2);
    assert!(filter.contains("before-restart-1") && filter.contains("before-restart-2"));
    app.ingest(&["after-restart"]).await;
    assert_eq!(app.filter("/2008/09/03/13").await.0.count, 3);
}

#[tokio::test]
async fn hours_that_closed_while_down_are_sealed_at_start() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.clock.advance(Duration::hours(2));
    let app = app.restart().await;
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(meta.complete && filter.contains("a"));
    assert_eq!(app.filter("/2008/09/03/14").await.0.count, 0);
    assert!(!app.filter("/2008/09/03/15").await.0.complete);
}

#[tokio::test]
async fn the_day_union_covers_every_hour_and_completes_when_the_day_ends() {
    let app = TestApp::spawn().await;
    app.ingest(&["h13"]).await;
    app.next_hour().await;
    app.ingest(&["h14"]).await;
    let (meta, filter) = app.filter("/2008/09/03").await;
    assert!(!meta.complete);
    assert_eq!(meta.from.as_deref(), Some("2008-09-03T13:00:00Z"));
    assert_eq!(meta.to.as_deref(), Some("2008-09-03T14:00:00Z"));
    assert!(filter.contains("h13") && filter.contains("h14") && meta.count == 2);
    app.clock.advance(Duration::hours(10)); // next day
    app.service.tick().await.unwrap();
    let reply = app.get("/2008/09/03").await;
    assert_eq!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    let (meta, filter) = app.filter("/2008/09/03").await;
    assert!(meta.complete && filter.contains("h13") && filter.contains("h14"));
    assert_eq!(meta.to.as_deref(), Some("2008-09-03T23:00:00Z"));
}

#[tokio::test]
async fn since_covers_that_hour_through_the_current_one() {
    let app = TestApp::spawn().await;
    app.ingest(&["h13"]).await;
    app.next_hour().await;
    app.ingest(&["h14"]).await;
    app.next_hour().await;
    app.ingest(&["h15"]).await;
    let (meta, filter) = app.filter("/since/2008/09/03/14").await;
    assert_eq!(meta.count, 2);
    assert!(filter.contains("h14") && filter.contains("h15"));
    assert!(filter.fpp() <= 0.01);
    let reply = app.get("/since/2008/09/03/14").await;
    assert!(reply
        .header("cache-control")
        .unwrap()
        .starts_with("max-age="));
}

#[tokio::test]
async fn a_since_union_served_once_still_takes_later_ingests() {
    let app = TestApp::spawn().await;
    app.ingest(&["early"]).await;
    app.next_hour().await;
    app.ingest(&["a"]).await;
    let first = app.get("/since/2008/09/03/13").await;
    let again = app.get("/since/2008/09/03/13").await;

    app.ingest(&["late"]).await;
    let (meta, filter) = app.filter("/since/2008/09/03/13").await;

    assert_eq!(first.body, again.body);
    assert_eq!(first.header("etag"), again.header("etag"));
    assert_eq!(meta.count, 3);
    assert!(["early", "a", "late"].iter().all(|id| filter.contains(id)));
}

#[tokio::test]
async fn every_representation_of_a_union_is_the_same_filter_open_or_complete() {
    let app = TestApp::spawn().await;
    app.ingest(&["h13-a", "h13-b"]).await;
    app.next_hour().await;
    app.ingest(&["h14"]).await;
    assert_representations_agree(&app, "/since/2008/09/03/13", false).await;
    app.clock.advance(Duration::hours(10)); // the day is over
    app.service.tick().await.unwrap();
    assert_representations_agree(&app, "/2008/09/03", true).await;
}

/// The JSON, hex and bin forms of `path` hold the same filter, count and completeness.
async fn assert_representations_agree(app: &TestApp, path: &str, complete: bool) {
    let (meta, filter) = app.filter(&format!("{path}.json")).await;
    assert_eq!((meta.count, meta.complete), (3, complete), "{path}");
    for (suffix, hex) in [("hex", true), ("bin", false)] {
        let reply = app.get(&format!("{path}.{suffix}")).await;
        assert_eq!(reply.status, 200, "{path}.{suffix}");
        let (raw_meta, raw) =
            bloomcast::wire::decode_raw(|n| reply.header(n), &reply.body, hex).unwrap();
        assert_eq!(raw, filter, "{path}.{suffix}");
        assert_eq!((raw_meta.count, raw_meta.complete), (3, complete));
    }
}
