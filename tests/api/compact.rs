//! The compact (ribbon) representation of closed hours: suffix and `Accept`, `?fpp=`,
//! validators, and the open hour's 406; builds shared, bounded by the union pool and the
//! build memory budget, and counted.

use crate::helpers::{settings, start_hour, TestApp};
use crate::wrapped::Wrapped;
use bloomcast::bloom::Ribbon;
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::store::{SqliteStore, Store};
use std::sync::Arc;

const RIBBON: &str = "application/vnd.bloomcast.ribbon";

async fn closed_hour_of(ids: &[&str]) -> TestApp {
    let app = TestApp::spawn().await;
    app.ingest(ids).await;
    app.next_hour().await;
    app
}

#[tokio::test]
async fn a_closed_hour_is_served_as_a_ribbon_holding_every_id() {
    let ids: Vec<String> = (0..500).map(|i| format!("id:{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let app = closed_hour_of(&refs).await;
    let reply = app.get("/2008/09/03/13.ribbon").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(RIBBON));
    assert_eq!(reply.header("bloom-count"), Some("500"));
    assert_eq!(reply.header("bloom-complete"), Some("true"));
    assert_eq!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    let f = Ribbon::from_bytes(&reply.body).unwrap();
    assert_eq!((f.n(), f.r()), (500, 7), "the target fpp 0.01 needs r = 7");
    assert!(ids.iter().all(|id| f.contains_id(id)));
    // Smaller than the Bloom filter's bytes.
    let bin = app.get("/2008/09/03/13.bin").await;
    assert!(reply.body.len() < bin.body.len());
}

#[tokio::test]
async fn accept_negotiates_the_same_bytes_and_revalidates() {
    let app = closed_hour_of(&["a", "b", "c"]).await;
    // Read as v1 JSON first, so the hour's v1 rendering is cached: it must not answer.
    assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    let by_suffix = app.get("/2008/09/03/13.ribbon").await;
    let by_accept = app.get_with("/2008/09/03/13", &[("accept", RIBBON)]).await;
    assert_eq!(by_accept.status, 200);
    assert_eq!(by_accept.header("content-type"), Some(RIBBON));
    assert_eq!(by_accept.body, by_suffix.body);
    let etag = by_accept.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/2008/09/03/13.ribbon", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    // A v1 suffix wins over Accept.
    let bin = app
        .get_with("/2008/09/03/13.bin", &[("accept", RIBBON)])
        .await;
    assert_eq!(bin.header("content-type"), Some("application/octet-stream"));
}

#[tokio::test]
async fn fpp_on_request_sets_the_fingerprint_bits() {
    let app = closed_hour_of(&["a", "b", "c"]).await;
    for (query, r) in [("0.001", 10), ("0.0000001", 24), ("0.5", 4), ("0.0625", 4)] {
        let reply = app.get(&format!("/2008/09/03/13.ribbon?fpp={query}")).await;
        assert_eq!(reply.status, 200, "{query}");
        let f = Ribbon::from_bytes(&reply.body).unwrap();
        assert_eq!(f.r(), r, "{query}");
        assert!(["a", "b", "c"].iter().all(|id| f.contains_id(id)));
    }
    app.get("/2008/09/03/13.ribbon?fpp=1e-9")
        .await
        .assert_error(400, "bad_request");
    app.get("/2008/09/03/13.ribbon?fpp=often")
        .await
        .assert_error(400, "bad_request");
}

#[tokio::test]
async fn the_open_hour_has_no_compact_form() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    app.get("/2008/09/03/13.ribbon")
        .await
        .assert_error(406, "not_acceptable");
    app.get_with("/2008/09/03/13", &[("accept", RIBBON)])
        .await
        .assert_error(406, "not_acceptable");
    // The v1 forms are unchanged.
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, 200);
}

/// A closed hour of `ids` on a store whose key reads the test can hold at a gate.
async fn gated_closed_hour_of(ids: &[&str]) -> (TestApp, Arc<Wrapped>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), chrono::Duration::minutes(10));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    let settings: Settings = settings(dir.path().to_owned());
    assert_eq!(settings.union_builds, 1, "one build slot");
    let app = TestApp::build_with_store(settings, clock, wrapped.clone(), Some(dir)).await;
    app.service.wait_loaded().await;
    app.ingest(ids).await;
    app.next_hour().await; // sealed: reading it again is the ribbon build's own read
    (app, wrapped)
}

/// A GET through the router on its own task, with its status, ETag and body.
fn spawn_get(app: &TestApp, path: &str) -> tokio::task::JoinHandle<(u16, String, Vec<u8>)> {
    spawn_get_from(app, path, None)
}

/// As [`spawn_get`], from the connection of `peer` (its builds queued as that client's).
fn spawn_get_from(
    app: &TestApp,
    path: &str,
    peer: Option<[u8; 4]>,
) -> tokio::task::JoinHandle<(u16, String, Vec<u8>)> {
    let router = app.router.clone();
    let path = path.to_owned();
    tokio::spawn(async move {
        use tower::ServiceExt;
        let mut req = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        if let Some(ip) = peer {
            let addr = std::net::SocketAddr::from((ip, 40000));
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(addr));
        }
        let response = router.oneshot(req).await.unwrap();
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = http_body_util::BodyExt::collect(response.into_body()).await;
        (status, etag, body.unwrap().to_bytes().to_vec())
    })
}

/// Runs of a closed hour's compact work (`/stats`), and the same in `/metrics`.
async fn hour_ribbon_runs(app: &TestApp) -> u64 {
    let stats = app.get("/stats").await.json();
    let runs = stats["unions"]["hour_ribbons"]["runs"].as_u64().unwrap();
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    let line = format!("bloomcast_union_work_runs_total{{step=\"hour_ribbon\"}} {runs}");
    assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    runs
}

#[tokio::test]
async fn identical_concurrent_ribbon_requests_of_an_hour_share_one_build() {
    let ids: Vec<String> = (0..2000).map(|i| format!("id:{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (app, wrapped) = gated_closed_hour_of(&refs).await;
    assert_eq!(hour_ribbon_runs(&app).await, 0);
    wrapped.keys_gate.arm(); // the first build stops reading the hour's keys

    let readers: Vec<_> = (0..8)
        .map(|_| spawn_get(&app, "/2008/09/03/13.ribbon"))
        .collect();
    wrapped.keys_gate.arrived().await;
    // Everyone else is waiting on that build's turn by now; none reads the keys itself.
    wrapped.keys_gate.release();
    let mut replies = Vec::new();
    for reader in readers {
        replies.push(reader.await.unwrap());
    }

    assert!(
        replies.iter().all(|r| r.0 == 200),
        "{:?}",
        replies.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert!(replies
        .iter()
        .all(|r| r.1 == replies[0].1 && r.2 == replies[0].2));
    let f = Ribbon::from_bytes(&replies[0].2).unwrap();
    assert!(ids.iter().all(|id| f.contains_id(id)));
    assert_eq!(
        hour_ribbon_runs(&app).await,
        1,
        "one build for every reader"
    );
    let stats = app.get("/stats").await.json();
    assert_eq!(
        stats["unions"]["builds"]["runs"], 0,
        "an hour is not a union"
    );
}

#[tokio::test]
async fn a_ribbon_of_another_precision_while_a_build_runs_waits_its_turn() {
    let (app, wrapped) = gated_closed_hour_of(&["a", "b", "c"]).await;
    wrapped.keys_gate.arm();
    let building = spawn_get(&app, "/2008/09/03/13.ribbon");
    wrapped.keys_gate.arrived().await;
    let reserved = app.get("/stats").await.json()["cache"]["build_bytes"].clone();

    let other = spawn_get(&app, "/2008/09/03/13.ribbon.json?fpp=0.001");
    let queue = wait_for_queue(&app, 1).await;

    assert_eq!(queue["running"], 1, "{queue}");
    assert_eq!(queue["clients"], 1, "{queue}");
    assert!(!other.is_finished(), "it waits for the slot");
    assert!(
        reserved.as_u64().unwrap() > 0,
        "the build reserved its memory: {reserved}"
    );
    // The Bloom forms do not wait on the pool.
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, 200);
    wrapped.keys_gate.release();
    assert_eq!(building.await.unwrap().0, 200);
    let (status, _, body) = other.await.unwrap();
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["r"], 10);
    let queue = app.get("/stats").await.json()["build_queue"].clone();
    assert_eq!(
        (queue["running"].clone(), queue["waiting"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(queue["queued"], 1, "{queue}");
    let cache = app.get("/stats").await.json()["cache"].clone();
    assert_eq!(
        cache["build_bytes"], 0,
        "released once the builds ended: {cache}"
    );
    let memory = app.get("/stats").await.json()["memory"].clone();
    assert_eq!(
        cache["build_budget_bytes"],
        memory["parts"]["builds"]["budget_bytes"]
    );
}

#[tokio::test]
async fn fpp_values_of_one_ladder_step_are_one_build_with_one_etag() {
    let app = closed_hour_of(&["a", "b", "c"]).await;
    // 0.01 is the target (no fpp); 0.0078125 = 2^-7 exactly; 0.009 rounds down to it too.
    let paths = [
        "/2008/09/03/13.ribbon",
        "/2008/09/03/13.ribbon?fpp=0.01",
        "/2008/09/03/13.ribbon?fpp=0.0078125",
        "/2008/09/03/13.ribbon?fpp=0.009",
    ];
    let mut replies = Vec::new();
    for path in paths {
        replies.push(app.get(path).await);
    }

    for reply in &replies {
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("etag"), replies[0].header("etag"));
        assert_eq!(reply.body, replies[0].body);
        // The precision served, never worse than asked: 2^-7.
        assert_eq!(reply.header("bloom-fpp"), Some("0.0078125"));
    }
    assert_eq!(hour_ribbon_runs(&app).await, 1);
    // The next step down is another build.
    let finer = app.get("/2008/09/03/13.ribbon?fpp=0.0078").await;
    assert_eq!(finer.header("bloom-fpp"), Some("0.00390625"));
    assert_ne!(finer.header("etag"), replies[0].header("etag"));
    assert_eq!(hour_ribbon_runs(&app).await, 2);
}

#[tokio::test]
async fn an_hour_whose_build_exceeds_the_memory_budget_has_no_compact_form() {
    let app = TestApp::spawn_with(|s| s.cache_bytes = 8 * 1024).await;
    let ids: Vec<String> = (0..2000).map(|i| format!("id:{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    app.ingest(&refs).await;
    app.next_hour().await;

    let refused = app.get("/2008/09/03/13.ribbon").await;

    refused.assert_error(406, "not_acceptable");
    assert!(refused.json()["message"]
        .as_str()
        .unwrap()
        .contains("cache_bytes"));
    assert_eq!(hour_ribbon_runs(&app).await, 0, "refused before any work");
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, 200);
}

#[tokio::test]
async fn revalidating_a_past_days_or_closed_hours_ribbon_needs_no_build() {
    let app = TestApp::spawn().await;
    // 13:00 on 2008-09-03 through the end of that day and one hour into the next.
    for h in 0..12 {
        let ids: Vec<String> = (0..40).map(|i| format!("h{h}:{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        app.ingest(&refs).await;
        app.next_hour().await;
    }
    let gzip = ("accept-encoding", "gzip");
    let forms = [
        ("/2008/09/03.ribbon.json?fpp=0.001", true),
        ("/2008/09/03.ribbon", false),
        ("/2008/09/03/14.ribbon.json", true),
    ];
    let mut tags = Vec::new();
    for (path, gzipped) in forms {
        let first = app.get_with(path, &[gzip]).await;
        assert_eq!(first.status, 200, "{path}");
        let etag = first.header("etag").unwrap().to_owned();
        assert_eq!(etag.ends_with("-gz\""), gzipped, "{path}: {etag}");
        tags.push(etag);
    }

    // A restart forgets every rendering: what names each is read from its hours' links.
    let app = app.restart().await;
    for ((path, _), etag) in forms.iter().zip(&tags) {
        let again = app
            .get_with(path, &[gzip, ("if-none-match", etag.as_str())])
            .await;
        assert_eq!(again.status, 304, "{path}");
        assert_eq!(again.header("etag"), Some(etag.as_str()), "{path}");
        assert_eq!(
            again.header("cache-control"),
            Some("max-age=31536000, immutable")
        );
        assert_eq!(again.header("vary"), Some("Accept, Accept-Encoding"));
    }
    let stats = app.get("/stats").await.json();
    assert_eq!(stats["unions"]["builds"]["runs"], 0, "no union built");
    assert_eq!(hour_ribbon_runs(&app).await, 0, "no hour's ribbon built");

    // Built afresh, each is named the same; another precision's tag is not this one's.
    for ((path, _), etag) in forms.iter().zip(&tags) {
        let rebuilt = app.get_with(path, &[gzip]).await;
        assert_eq!(rebuilt.status, 200, "{path}");
        assert_eq!(rebuilt.header("etag"), Some(etag.as_str()), "{path}");
    }
    let other = app
        .get_with(
            "/2008/09/03.ribbon.json?fpp=0.01",
            &[gzip, ("if-none-match", tags[0].as_str())],
        )
        .await;
    assert_eq!(other.status, 200);
    assert_ne!(other.header("etag"), Some(tags[0].as_str()));
}

/// `/stats`' `build_queue` once `waiting` builds wait (the test's own requests).
async fn wait_for_queue(app: &TestApp, waiting: u64) -> serde_json::Value {
    loop {
        let queue = app.get("/stats").await.json()["build_queue"].clone();
        if queue["waiting"].as_u64() == Some(waiting) {
            return queue;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn one_client_flooding_builds_is_refused_past_its_queue_while_others_wait() {
    let (app, wrapped) = gated_closed_hour_of(&["a", "b", "c"]).await;
    wrapped.keys_gate.arm();
    let flooder = Some([10, 0, 0, 1]);
    let building = spawn_get_from(&app, "/2008/09/03/13.ribbon2", flooder);
    wrapped.keys_gate.arrived().await;
    // The flooder's next builds wait, up to its queue's bound (8).
    let mut waiting = Vec::new();
    for b in 10..18 {
        let path = format!("/2008/09/03/13.ribbon2?fpp={:e}", 2f64.powi(-b));
        waiting.push(spawn_get_from(&app, &path, flooder));
    }
    wait_for_queue(&app, 8).await;
    let refused = spawn_get_from(
        &app,
        "/2008/09/03/13.ribbon2?fpp=9.5367431640625e-7",
        flooder,
    )
    .await
    .unwrap();
    assert_eq!(
        refused.0,
        503,
        "past its queue: {}",
        String::from_utf8_lossy(&refused.2)
    );
    let error: serde_json::Value = serde_json::from_slice(&refused.2).unwrap();
    assert_eq!(error["error"], "busy");
    // Another client still gets its place.
    let other = spawn_get_from(
        &app,
        "/2008/09/03/13.ribbon2?fpp=2.384185791015625e-7",
        Some([10, 0, 0, 2]),
    );
    let queue = wait_for_queue(&app, 9).await;
    assert_eq!(queue["clients"], 2, "{queue}");
    assert_eq!(queue["refused"], 1, "{queue}");
    wrapped.keys_gate.release();
    assert_eq!(building.await.unwrap().0, 200);
    assert_eq!(other.await.unwrap().0, 200);
    for w in waiting {
        assert_eq!(w.await.unwrap().0, 200);
    }
}
