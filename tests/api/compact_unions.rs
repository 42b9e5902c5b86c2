//! The compact form of closed unions (a past day) and the JSON form of the compact
//! representation: every ID of every hour, the exact distinct count, fpp within what is
//! advertised, 406 for what touches the open hour, validators, bytes that survive a
//! cache eviction, the build queue; and `?fpp=` refused on v1.

use crate::helpers::*;
use crate::wrapped::Wrapped;
use bloomcast::bloom::Ribbon;
use bloomcast::clock::ManualClock;
use bloomcast::store::{SqliteStore, Store};
use bloomcast::wire::decode_compact;
use std::collections::BTreeSet;
use std::sync::Arc;

const RIBBON: &str = "application/vnd.bloomcast.ribbon";
const RIBBON_JSON: &str = "application/vnd.bloomcast.ribbon+json";
const DAY: &str = "/2008/09/03";

/// Ingests into every hour of 2008-09-03 from 13:00 (the first served) to 23:00, IDs of
/// earlier hours again among new ones, then moves into the next day. Returns every ID.
async fn past_day(app: &TestApp) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for hour in 13..24 {
        let mut ids: Vec<String> = (0..150).map(|i| format!("h{hour}:{i}")).collect();
        ids.extend(all.iter().take(40).cloned());
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        app.ingest(&refs).await;
        all.extend(ids);
        app.next_hour().await;
    }
    all
}

/// A ribbon decoded from a reply, asserting a 200.
fn ribbon(reply: &Reply) -> Ribbon {
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    decode_compact(&reply.body).unwrap().1
}

/// The share of 200,000 IDs never ingested that the filter answers true for.
fn measured_fpp(f: &Ribbon) -> f64 {
    let probes = 200_000;
    let hits = (0..probes)
        .filter(|i| f.contains_id(&format!("absent:{i}")))
        .count();
    hits as f64 / probes as f64
}

#[tokio::test]
async fn a_past_day_is_one_ribbon_of_its_distinct_ids_within_its_fpp() {
    let app = TestApp::spawn().await;
    let ids = past_day(&app).await;

    let reply = app.get(&format!("{DAY}.ribbon")).await;
    let f = ribbon(&reply);

    assert_eq!(reply.header("content-type"), Some(RIBBON));
    let count = ids.len().to_string();
    assert_eq!(reply.header("bloom-count"), Some(count.as_str()));
    assert_eq!(
        f.n() as usize,
        ids.len(),
        "built from the exact distinct set"
    );
    assert_eq!(reply.header("bloom-from"), Some("2008-09-03T13:00:00Z"));
    assert_eq!(reply.header("bloom-to"), Some("2008-09-03T23:00:00Z"));
    assert_eq!(reply.header("bloom-complete"), Some("true"));
    assert_eq!(reply.header("bloom-hash"), Some("sha1-km32"));
    let params = format!("w=64; r=7; m={}; seed={}", f.m(), f.seed());
    assert_eq!(reply.header("bloom-ribbon"), Some(params.as_str()));
    assert_eq!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    assert!(reply.header("repr-digest").is_some());
    let lost: Vec<&String> = ids.iter().filter(|id| !f.contains_id(id)).collect();
    assert!(lost.is_empty(), "false negatives: {lost:?}");
    let fpp = measured_fpp(&f);
    assert!(
        fpp <= f.fpp() * 1.15,
        "measured {fpp}, advertised {}",
        f.fpp()
    );
    // The v1 union says the same count.
    let (meta, _) = app.filter(DAY).await;
    assert_eq!(meta.count as usize, ids.len());
}

#[tokio::test]
async fn a_day_at_a_requested_fpp_holds_every_id_at_that_precision() {
    let app = TestApp::spawn().await;
    let ids = past_day(&app).await;

    let f = ribbon(&app.get(&format!("{DAY}.ribbon?fpp=0.001")).await);

    assert_eq!(f.r(), 10);
    assert!(ids.iter().all(|id| f.contains_id(id)));
    assert!(measured_fpp(&f) <= 0.001 * 1.3);
}

#[tokio::test]
async fn the_json_form_decodes_to_the_same_filter_with_gzip_and_validators() {
    let app = TestApp::spawn().await;
    let ids = past_day(&app).await;
    let bin = app.get(&format!("{DAY}.ribbon")).await;

    let json = app.get(&format!("{DAY}.ribbon.json")).await;
    let zipped = app
        .get_with(
            &format!("{DAY}.ribbon.json"),
            &[("accept-encoding", "gzip")],
        )
        .await;

    assert_eq!(json.header("content-type"), Some(RIBBON_JSON));
    let doc = json.json();
    assert_eq!(doc["structure"], "ribbon");
    assert_eq!(doc["hash"], "sha1-km32");
    assert_eq!(doc["from"], "2008-09-03T13:00:00Z");
    assert_eq!(doc["count"].as_u64(), Some(ids.len() as u64));
    let (meta, from_json) = decode_compact(&json.body).unwrap();
    assert_eq!(meta.unwrap().to.as_deref(), Some("2008-09-03T23:00:00Z"));
    let from_bin = ribbon(&bin);
    assert_eq!(from_json, from_bin);
    for probe in ids
        .iter()
        .cloned()
        .chain((0..5000).map(|i| format!("x{i}")))
    {
        assert_eq!(from_json.contains_id(&probe), from_bin.contains_id(&probe));
    }
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&zipped.body), json.body);
    assert!(zipped.body.len() < json.body.len());
    for reply in [&json, &zipped] {
        let etag = reply.header("etag").unwrap();
        let again = app
            .get_with(&format!("{DAY}.ribbon.json"), &[("if-none-match", etag)])
            .await;
        assert_eq!(again.status, 304);
    }
    assert_ne!(json.header("etag"), bin.header("etag"));
}

#[tokio::test]
async fn accept_negotiates_either_form_of_a_day() {
    let app = TestApp::spawn().await;
    past_day(&app).await;

    let by_accept = app.get_with(DAY, &[("accept", RIBBON)]).await;
    let json_by_accept = app.get_with(DAY, &[("accept", RIBBON_JSON)]).await;

    assert_eq!(by_accept.body, app.get(&format!("{DAY}.ribbon")).await.body);
    assert_eq!(json_by_accept.header("content-type"), Some(RIBBON_JSON));
    assert_eq!(
        json_by_accept.body,
        app.get(&format!("{DAY}.ribbon.json")).await.body
    );
    // A v1 suffix wins over Accept.
    let bin = app
        .get_with(&format!("{DAY}.bin"), &[("accept", RIBBON)])
        .await;
    assert_eq!(bin.header("content-type"), Some("application/octet-stream"));
}

#[tokio::test]
async fn what_touches_the_open_hour_is_not_acceptable() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await; // 13:00 is closed, 14:00 open: today still is

    for path in [
        "/2008/09/03.ribbon",
        "/2008/09/03.ribbon.json",
        "/since/2008/09/03/13.ribbon",
        "/since/2008/09/03/14.ribbon.json",
        "/2008/09/03/14.ribbon.json",
    ] {
        app.get(path).await.assert_error(406, "not_acceptable");
    }
    for path in ["/2008/09/03", "/since/2008/09/03/13"] {
        app.get_with(path, &[("accept", RIBBON)])
            .await
            .assert_error(406, "not_acceptable");
    }
    // The closed hour is served; the future and the unknown keep their own statuses.
    assert_eq!(app.get("/2008/09/03/13.ribbon.json").await.status, 200);
    app.get("/since/2008/09/03/15.ribbon")
        .await
        .assert_error(400, "invalid_hour");
    app.get("/2008/09/05.ribbon")
        .await
        .assert_error(404, "not_found");
}

/// An app over a store whose calls the test can hold, with a small render cache.
async fn spawn_wrapped(cache_bytes: usize) -> (TestApp, Arc<Wrapped>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), chrono::Duration::minutes(10));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    let mut settings = settings(dir.path().to_owned());
    settings.cache_bytes = cache_bytes;
    let app = TestApp::build_with_store(settings, clock, wrapped.clone(), Some(dir)).await;
    app.service.wait_loaded().await;
    (app, wrapped)
}

#[tokio::test]
async fn a_day_revalidates_and_is_rebuilt_to_the_same_bytes_after_eviction() {
    // 384 KiB: the day's build (about 110 KiB of working memory) fits the builds' part.
    let (app, wrapped) = spawn_wrapped(384 * 1024).await;
    past_day(&app).await;
    let path = format!("{DAY}.ribbon");
    let first = app.get(&path).await;
    assert_eq!(first.status, 200);
    let etag = first.header("etag").unwrap().to_owned();

    let second = app.get(&path).await;
    let revalidated = app.get_with(&path, &[("if-none-match", &etag)]).await;
    // Fill the cache with the other precisions in both forms (about 250 KiB in all):
    // the budget holds.
    for bits in (4..=24).filter(|&b| b != 7) {
        for form in ["", ".json"] {
            let other = app
                .get(&format!("{path}{form}?fpp={}", 0.5f64.powi(bits)))
                .await;
            assert_eq!(other.status, 200);
        }
    }
    let stats = app.service.stats().cache_stats();
    assert!(stats.bytes <= stats.budget_bytes, "{stats:?}");
    // A node that never kept it (as after its eviction) builds it again.
    let settings = app.settings.clone();
    let evicted =
        TestApp::build_with_store(settings, app.clock.clone(), wrapped.clone(), None).await;
    evicted.service.wait_loaded().await;
    wrapped.keys_gate.arm();
    let router = evicted.router.clone();
    let rebuilt = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::get(format!("{DAY}.ribbon"))
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(req).await.unwrap();
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        let body = http_body_util::BodyExt::collect(response.into_body()).await;
        (etag, body.unwrap().to_bytes().to_vec())
    });
    // Evicted: it reads the hours' keys again.
    let waited = std::time::Duration::from_secs(20);
    let arrived = tokio::time::timeout(waited, wrapped.keys_gate.arrived()).await;
    assert!(arrived.is_ok(), "served without a rebuild: not evicted");
    wrapped.keys_gate.release();
    let (rebuilt_etag, rebuilt_body) = rebuilt.await.unwrap();

    assert_eq!(second.body, first.body);
    assert_eq!(revalidated.status, 304);
    assert!(revalidated.body.is_empty());
    assert_eq!(rebuilt_body, first.body, "the same bytes after a rebuild");
    assert_eq!(rebuilt_etag, etag);
}

#[tokio::test]
async fn a_day_build_on_a_full_union_pool_waits_its_turn() {
    let (app, wrapped) = spawn_wrapped(256 * 1024 * 1024).await;
    past_day(&app).await;
    wrapped.keys_gate.arm(); // the next build stops reading its first hour's keys
    let router = app.router.clone();
    let building = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::get(format!("{DAY}.ribbon"))
            .body(axum::body::Body::empty())
            .unwrap();
        router.oneshot(req).await.unwrap().status()
    });
    wrapped.keys_gate.arrived().await;

    let router = app.router.clone();
    let other = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::get(format!("{DAY}.ribbon?fpp=0.001"))
            .body(axum::body::Body::empty())
            .unwrap();
        router.oneshot(req).await.unwrap().status()
    });
    loop {
        let queue = app.get("/stats").await.json()["build_queue"].clone();
        if queue["waiting"] == 1 {
            assert_eq!(queue["running"], 1, "{queue}");
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!other.is_finished(), "it waits for the slot");
    wrapped.keys_gate.release();
    assert_eq!(building.await.unwrap(), 200);
    assert_eq!(other.await.unwrap(), 200);
}

#[tokio::test]
async fn fpp_on_a_bloom_representation_is_refused() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    // The closed hour's v1 rendering is cached: it must not answer the refusal.
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, 200);

    for path in [
        "/2008/09/03/13.bin?fpp=0.001",
        "/2008/09/03/13?fpp=0.01",
        "/2008/09/03/14.hex?fpp=0.001",
        "/2008/09/03.json?fpp=0.001",
        "/since/2008/09/03/13?fpp=0.001",
    ] {
        app.get(path).await.assert_error(400, "bad_request");
    }
    // Nor is any parameter the route does not read ignored (section 9).
    app.get("/2008/09/03/13.bin?v=2")
        .await
        .assert_error(400, "bad_request");
}

#[tokio::test]
async fn scripts_may_read_the_ribbon_parameters() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;

    let reply = app
        .get_with(
            "/2008/09/03/13.ribbon",
            &[("origin", "https://example.org")],
        )
        .await;

    let exposed = reply.header("access-control-expose-headers").unwrap();
    assert!(
        exposed.split(',').any(|h| h.trim() == "bloom-ribbon"),
        "{exposed}"
    );
}

#[tokio::test]
async fn a_compact_union_counts_as_union_work_and_an_hour_as_its_own() {
    let app = TestApp::spawn().await;
    past_day(&app).await;
    let runs = |stats: &serde_json::Value, step: &str| stats["unions"][step]["runs"].as_u64();
    assert_eq!(app.get("/2008/09/03/13.ribbon").await.status, 200);
    let stats = app.get("/stats").await.json();
    assert_eq!(runs(&stats, "builds"), Some(0));
    assert_eq!(runs(&stats, "hour_ribbons"), Some(1), "{stats}");
    assert_eq!(app.get(&format!("{DAY}.ribbon")).await.status, 200);
    assert_eq!(app.get(&format!("{DAY}.ribbon.json")).await.status, 200);
    let stats = app.get("/stats").await.json();
    assert_eq!(runs(&stats, "builds"), Some(1), "{stats}");
    assert_eq!(runs(&stats, "renders"), Some(1));
    assert_eq!(runs(&stats, "hour_ribbons"), Some(1));
}
