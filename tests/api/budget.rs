//! The one memory budget (`cache_bytes`): no union is built past it, every part stays
//! within its share, and a past day's union is revalidated without a build.

use crate::helpers::{start_hour, TestApp, TOKEN};
use axum::http::StatusCode;

/// `n` IDs of hour `h`, none seen in another hour.
fn ids(h: usize, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("h{h}-id{i}")).collect()
}

/// `hours` closed hours of `n` IDs each ([`ids`]), from the start hour on.
async fn past_hours(app: &TestApp, hours: usize, n: usize) {
    for h in 0..hours {
        app.ingest_all(&ids(h, n)).await;
        app.next_hour().await;
    }
}

/// The builds' part of the budget (`/stats`).
async fn builds_budget(app: &TestApp) -> u64 {
    let stats = app.get("/stats").await.json();
    stats["memory"]["parts"]["builds"]["budget_bytes"]
        .as_u64()
        .unwrap()
}

async fn ingest(app: &TestApp, ids: &[String]) {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    app.ingest(&ids).await;
}

#[tokio::test]
async fn a_since_range_over_every_retained_hour_past_the_budget_is_refused_naming_what_fits() {
    // 100 IDs in each of 721 hours; a budget whose builds' part holds about a third of
    // their union.
    let app = TestApp::spawn_with(|s| s.cache_bytes = 1536 * 1024).await;
    let hours = 721;
    for h in 0..hours {
        ingest(&app, &ids(h, 100)).await;
        if h + 1 < hours {
            app.next_hour().await;
        }
    }
    let stats = app.get("/stats").await.json();
    let builds_budget = stats["memory"]["parts"]["builds"]["budget_bytes"]
        .as_u64()
        .unwrap();
    assert!(builds_budget < 100 * 721 * 8, "{builds_budget}");
    let oldest = start_hour().next();
    let since = format!("/since{}", oldest.path());

    let reply = app.get(&since).await;

    reply.assert_error(413, "range_too_large");
    let message = reply.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("cache_bytes"), "{message}");
    let fits = message
        .split("GET ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("names the longest range that fits: {message}"));
    assert!(fits.starts_with("/since/"), "{message}");
    let (meta, filter) = app.filter(&format!("{fits}.json")).await;
    assert!(meta.count > 100 * 24, "a useful range fits: {}", meta.count);
    assert!(meta.count < 100 * 721);
    assert!(filter.contains(&format!("h{}-id7", hours - 1)));
    let stats = app.get("/stats").await.json();
    assert_eq!(
        stats["memory"]["parts"]["builds"]["bytes"], 0,
        "nothing held once the builds end"
    );
}

#[tokio::test]
async fn a_since_range_whose_keys_pass_the_budget_is_built_from_a_file_when_its_output_fits() {
    // 16 hours of 25,000 IDs and a few in the open hour: 400,150 keys, 3.2 MB of keys
    // alone, against a builds' part of about 4 MiB.
    let app = TestApp::spawn_with(|s| s.cache_bytes = 12 << 20).await;
    let hours = 16;
    past_hours(&app, hours, 25_000).await;
    let open = ids(hours, 150);
    app.ingest_all(&open).await;
    let builds_budget = builds_budget(&app).await;
    let since = format!("/since{}.json", start_hour().path());

    let (meta, filter) = app.filter(&since).await;

    assert_eq!(meta.count, 25_000 * hours as u64 + 150);
    // What the build held before: every key read (8 bytes each) beside the filter and
    // five of its bytes for the rendering.
    let held_at_once = 8 * meta.count + 5 * u64::from(filter.m()).div_ceil(8);
    assert!(
        builds_budget < held_at_once,
        "{builds_budget} vs {held_at_once}"
    );
    for h in 0..hours {
        for id in ids(h, 25_000).iter().step_by(97) {
            assert!(filter.contains(id), "{id} missing from the union");
        }
    }
    assert!(open.iter().all(|id| filter.contains(id)));
    assert!(filter.fpp() <= 0.01);
    let stats = app.get("/stats").await.json();
    assert_eq!(stats["memory"]["parts"]["builds"]["bytes"], 0);
    // The same bytes in every representation, rendered from the one build.
    let bin = app.get(&since.replace(".json", ".bin")).await;
    assert_eq!(bin.status, StatusCode::OK);
    assert_eq!(bin.body, filter.to_bytes());
}

#[tokio::test]
async fn a_since_range_in_version_2_is_built_from_a_file_when_its_keys_pass_the_budget() {
    // 400,000 keys: 9.6 MB as a build held them before (the keys as read, their
    // distinct union and its grouping by shard), against a builds' part of 7 MiB.
    let app = TestApp::spawn_with(|s| s.cache_bytes = 21 << 20).await;
    let hours = 16;
    past_hours(&app, hours, 25_000).await;
    app.ingest(&["open"]).await;
    let builds_budget = builds_budget(&app).await;
    assert!(builds_budget < 24 * 400_000, "{builds_budget}");

    let reply = app
        .get(&format!("/since{}.ribbon2?fpp=1e-3", start_hour().path()))
        .await;

    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let f = bloomcast::bloom::Ribbon2::from_bytes(&reply.body).unwrap();
    assert_eq!(f.n(), 400_000);
    for h in 0..hours {
        assert!(
            ids(h, 25_000).iter().all(|id| f.contains_id(id)),
            "hour {h}"
        );
    }
    let stats = app.get("/stats").await.json();
    assert_eq!(stats["memory"]["parts"]["builds"]["bytes"], 0);
}

#[tokio::test]
async fn revalidating_a_past_day_is_answered_from_its_hours_digests_without_a_build() {
    let app = TestApp::spawn().await;
    // 13:00 on 2008-09-03: through the end of that day and one hour into the next.
    for h in 0..12 {
        ingest(&app, &ids(h, 50)).await;
        app.next_hour().await;
    }
    let day = "/2008/09/03.json";
    let first = app.get_with(day, &[("accept-encoding", "gzip")]).await;
    assert_eq!(first.status, StatusCode::OK);
    let etag = first.header("etag").unwrap().to_owned();
    assert!(etag.ends_with("-gz\""), "{etag}");

    // A restart forgets every rendering: what names the day is read from its hours.
    let app = app.restart().await;
    let again = app
        .get_with(
            day,
            &[
                ("accept-encoding", "gzip"),
                ("if-none-match", etag.as_str()),
            ],
        )
        .await;

    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(
        again.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    assert_eq!(app.service.stats().union_work().builds.runs, 0, "no build");
    assert_eq!(
        app.service.stats().cache_stats().entries,
        0,
        "nothing rendered"
    );
    // The same union built afresh is named the same.
    let rebuilt = app.get_with(day, &[("accept-encoding", "gzip")]).await;
    assert_eq!(rebuilt.status, StatusCode::OK);
    assert_eq!(rebuilt.header("etag"), Some(etag.as_str()));
    assert_eq!(app.service.stats().union_work().builds.runs, 1);
    // Another form's tag is not this one's.
    let hex = app
        .get_with("/2008/09/03.hex", &[("if-none-match", etag.as_str())])
        .await;
    assert_eq!(hex.status, StatusCode::OK);
}

#[tokio::test]
async fn revalidating_a_closed_hour_no_longer_kept_is_answered_from_its_link_without_rendering() {
    let app = TestApp::spawn().await;
    ingest(&app, &ids(0, 50)).await;
    app.next_hour().await;
    let hour = format!("{}.hex", start_hour().path());
    let first = app.get(&hour).await;
    assert_eq!(first.status, StatusCode::OK);
    let etag = first.header("etag").unwrap().to_owned();

    let app = app.restart().await;
    let again = app
        .get_with(&hour, &[("if-none-match", etag.as_str())])
        .await;

    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(
        app.service.stats().cache_stats().entries,
        0,
        "nothing rendered"
    );
    let rendered = app.get(&hour).await;
    assert_eq!(
        rendered.header("etag"),
        Some(etag.as_str()),
        "named the same"
    );
    assert_eq!(rendered.body, first.body);
}

#[tokio::test]
async fn every_part_stays_within_its_share_under_many_unions_and_history() {
    let app = TestApp::spawn_with(|s| s.cache_bytes = 1 << 20).await;
    for h in 0..30 {
        ingest(&app, &ids(h, 400)).await;
        app.next_hour().await;
    }
    let auth = format!("Bearer {TOKEN}");
    let id_query: String = (0..200).map(|i| format!("id=h3-id{i}&")).collect();
    for h in 0..30 {
        let hour = {
            let mut hour = start_hour();
            for _ in 0..h {
                hour = hour.next();
            }
            hour
        };
        for form in ["json", "hex", "bin"] {
            let reply = app.get(&format!("/since{}.{form}", hour.path())).await;
            assert_eq!(reply.status, StatusCode::OK);
            let reply = app.get(&format!("{}.{form}", hour.path())).await;
            assert_eq!(reply.status, StatusCode::OK);
        }
        let reply = app
            .get_with(&format!("/history?{id_query}"), &[("authorization", &auth)])
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        let memory = app.get("/stats").await.json()["memory"].clone();
        let mut held = 0;
        for part in ["builds", "deltas", "cache"] {
            let p = &memory["parts"][part];
            let (bytes, budget) = (
                p["bytes"].as_u64().unwrap(),
                p["budget_bytes"].as_u64().unwrap(),
            );
            assert!(bytes <= budget, "{part}: {bytes} of {budget}");
            held += bytes;
        }
        assert!(held <= memory["budget_bytes"].as_u64().unwrap());
        assert_eq!(memory["bytes"].as_u64().unwrap(), held);
        let builds = &memory["parts"]["builds"];
        assert!(
            builds["reserved_bytes"].as_u64().unwrap() >= builds["bytes"].as_u64().unwrap(),
            "a build holds at most what it reserved: {builds}"
        );
    }
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(
        text.contains("bloomcast_memory_budget_bytes{part=\"total\"} 1048576"),
        "{text}"
    );
    assert!(text.contains("bloomcast_memory_bytes{part=\"cache_renderings\"}"));
}

#[tokio::test]
async fn what_is_held_outside_the_budget_is_reported_beside_it() {
    let app = TestApp::spawn().await;
    let outside = |memory: &serde_json::Value| {
        let part = |name: &str| memory["parts"][name]["bytes"].as_u64().unwrap();
        let (open, store) = (part("open_hour"), part("store"));
        assert_eq!(
            memory["outside_budget_bytes"].as_u64().unwrap(),
            open + store + part("allocator_free") + part("connections"),
            "{memory}"
        );
        assert!(
            memory["parts"]["open_hour"].get("budget_bytes").is_none(),
            "{memory}"
        );
        (open, store)
    };
    let (empty, store) = outside(&app.get("/stats").await.json()["memory"]);
    assert!(store > 0, "the embedded store's page caches count: {store}");

    ingest(&app, &ids(0, 20_000)).await;

    let memory = app.get("/stats").await.json()["memory"].clone();
    let (open, _) = outside(&memory);
    let grown = open - empty;
    assert!(
        (20_000 * 8..=20_000 * 40).contains(&grown),
        "20,000 keys of 8 bytes with their tail and filter: {grown}"
    );
    if cfg!(target_os = "linux") {
        let process = &memory["process"];
        let (resident, anonymous) = (
            process["resident_bytes"].as_u64().unwrap(),
            process["anonymous_bytes"].as_u64().unwrap(),
        );
        assert!(0 < anonymous && anonymous < resident, "{process}");
    }
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(text.contains("bloomcast_memory_bytes{part=\"open_hour\"} "));
    assert!(!text.contains("bloomcast_memory_budget_bytes{part=\"open_hour\"}"));
    if cfg!(target_os = "linux") {
        assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
    }
}
