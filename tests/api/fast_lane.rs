//! The read path's fast lane (an hour whose rendering is ready, answered in front of the
//! router) gives exactly what the router's full stack gives: the same status, the same
//! headers in the same order and the same body, for every variant of a request. And it
//! never serves an open hour older than an acknowledgement the reader arrived after.

use crate::helpers::*;
use bloomcast::hour::Hour;
use sha1::{Digest, Sha1};

/// How many hour reads the fast lane has answered (`/metrics`).
async fn fast_reads(app: &TestApp) -> u64 {
    let text = String::from_utf8(app.get("/metrics").await.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("bloomcast_http_fast_responses_total "))
        .expect("the fast lane's counter is exported")
        .parse()
        .unwrap()
}

/// Status, headers in order, and the body's length and digest.
type Parts = (u16, Vec<(String, String)>, (usize, String));

fn parts(reply: &Reply) -> Parts {
    let headers = reply
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = Sha1::digest(&reply.body);
    (
        reply.status.as_u16(),
        headers,
        (reply.body.len(), bloomcast::bloom::to_hex(&body)),
    )
}

/// What in a request can change its response.
#[derive(Debug, Clone, Copy)]
struct Variant {
    gzip: bool,
    suffix: bool,
    revalidate: bool,
    origin: bool,
}

fn variants() -> Vec<Variant> {
    (0..16)
        .map(|i| Variant {
            gzip: i & 1 != 0,
            suffix: i & 2 != 0,
            revalidate: i & 4 != 0,
            origin: i & 8 != 0,
        })
        .collect()
}

/// The path and headers of a request of `hour` in representation `ext` (chosen by
/// suffix or by `accept`).
fn request(
    hour: Hour,
    ext: &str,
    accept: &'static str,
    v: Variant,
) -> (String, Vec<(&'static str, &'static str)>) {
    let path = if v.suffix {
        format!("{}.{ext}", hour.path())
    } else {
        hour.path()
    };
    let mut headers = Vec::new();
    if !v.suffix {
        headers.push(("accept", accept));
    }
    if v.gzip {
        headers.push(("accept-encoding", "gzip, deflate"));
    }
    if v.revalidate {
        headers.push(("if-none-match", "*"));
    }
    if v.origin {
        headers.push(("origin", "https://example.org"));
    }
    (path, headers)
}

/// Reads `path` twice: the first read is the router's (`first` says why), the second
/// the fast lane's (checked on its counter). Returns both replies.
async fn routed_then_fast(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
    first: &str,
) -> (Reply, Reply) {
    let mut before = fast_reads(app).await;
    let routed = app.get_with(path, headers).await;
    assert_eq!(fast_reads(app).await, before, "{path}: {first}");
    if headers.iter().any(|(name, _)| *name == "if-none-match") && routed.status == 304 {
        // A closed hour's revalidation is answered from its chain link without a
        // rendering; a read renders it (if it is not ready yet) for the fast lane.
        let plain: Vec<(&str, &str)> = headers
            .iter()
            .copied()
            .filter(|(name, _)| *name != "if-none-match")
            .collect();
        app.get_with(path, &plain).await;
        before = fast_reads(app).await;
    }
    let fast = app.get_with(path, headers).await;
    assert_eq!(
        fast_reads(app).await,
        before + 1,
        "{path} {headers:?}: the fast lane answers"
    );
    (routed, fast)
}

const REPRS: [(&str, &str); 3] = [
    ("json", "application/json"),
    ("hex", "text/plain"),
    ("bin", "application/octet-stream"),
];

#[tokio::test]
async fn closed_hours_are_answered_alike_by_the_router_and_the_fast_lane() {
    let app = TestApp::spawn().await;
    let variants = variants();
    // One closed hour per (representation, variant), so each is first read by it.
    let hours = (REPRS.len() * variants.len()) as i64;
    for i in 0..hours {
        app.ingest(&[&format!("id-{i}"), "common"]).await;
        app.next_hour().await;
    }
    let mut hour = start_hour();
    for (ext, accept) in REPRS {
        for &v in &variants {
            let (path, headers) = request(hour, ext, accept, v);
            let (routed, fast) =
                routed_then_fast(&app, &path, &headers, "the first read renders").await;
            assert_eq!(
                routed.status,
                if v.revalidate { 304 } else { 200 },
                "{path} {v:?}"
            );
            assert_eq!(parts(&fast), parts(&routed), "{path} {v:?}");
            hour = hour.next();
        }
    }
}

#[tokio::test]
async fn the_open_hour_is_answered_alike_and_never_older_than_an_acknowledgement() {
    // A refresh interval longer than the test: the open hour changes only by ingest here.
    let app = TestApp::spawn_with(|s| s.refresh_ms = 3_600_000).await;
    let path = start_hour().path();
    let mut n: u64 = 0;
    for (ext, accept) in REPRS {
        for v in variants() {
            n += 1;
            let id = format!("open-{n}");
            app.ingest(&[&id]).await;
            let (path, headers) = request(start_hour(), ext, accept, v);
            let (routed, fast) =
                routed_then_fast(&app, &path, &headers, "a change since: rendered anew").await;
            assert_eq!(parts(&fast), parts(&routed), "{path} {v:?}");
        }
    }
    // Every acknowledged ID is in what the next reader gets, fast lane or not.
    for i in 0..20 {
        let id = format!("late-{i}");
        app.ingest(&[&id]).await;
        let (meta, filter) = app.filter(&path).await;
        assert!(
            filter.contains(&id),
            "{id} missing after its acknowledgement"
        );
        assert_eq!(meta.count, n + i + 1);
    }
}

#[tokio::test]
async fn a_request_offering_a_dictionary_takes_the_router_and_gets_its_delta() {
    use base64::Engine as _;
    let app = TestApp::spawn_with(|s| {
        s.refresh_ms = 3_600_000;
        s.delta_ids = 1;
    })
    .await;
    let path = format!("{}.bin", start_hour().path());
    app.ingest(&["a", "b"]).await;
    let dictionary = app.get(&path).await;
    assert!(dictionary.header("use-as-dictionary").is_some());
    app.ingest(&["c"]).await;
    let sha = bloomcast::dcz::sha256(&dictionary.body);
    let offer = format!(
        ":{}:",
        base64::engine::general_purpose::STANDARD.encode(sha)
    );
    let headers = [
        ("accept-encoding", "dcz, gzip"),
        ("available-dictionary", offer.as_str()),
    ];
    app.get_with(&path, &headers).await;
    let before = fast_reads(&app).await;
    // The rendering is ready now: a plain read would be the fast lane's.
    let delta = app.get_with(&path, &headers).await;
    assert_eq!(fast_reads(&app).await, before, "the router answers");
    assert_eq!(delta.header("content-encoding"), Some("dcz"));
    let current = app.get(&path).await;
    assert_eq!(fast_reads(&app).await, before + 1, "a plain read is fast");
    let decoded = bloomcast::dcz::decode(&dictionary.body, &delta.body).unwrap();
    assert_eq!(decoded, current.body);
}

#[tokio::test]
async fn head_and_other_methods_still_take_the_router() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    let path = start_hour().path();
    let get = app.get(&path).await;
    let before = fast_reads(&app).await;
    let head = app
        .request(
            axum::http::Request::head(&path)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.header("etag"), get.header("etag"));
    let post = app
        .request(
            axum::http::Request::post(&path)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    post.assert_error(405, "method_not_allowed");
    assert_eq!(fast_reads(&app).await, before);
}

#[tokio::test]
async fn big_renderings_are_answered_alike_without_being_kept() {
    let app = TestApp::spawn().await;
    // 20,000 IDs: a JSON rendering of about 50 KB, past what a thread keeps prepared.
    let ids: Vec<String> = (0..20_000).map(|i| format!("big-{i}")).collect();
    for chunk in ids.chunks(5_000) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        app.ingest(&chunk).await;
    }
    app.next_hour().await;
    for v in variants() {
        let (path, headers) = request(start_hour(), "json", "application/json", v);
        let routed = app.get_with(&path, &headers).await;
        let before = fast_reads(&app).await;
        let fast = app.get_with(&path, &headers).await;
        assert_eq!(
            fast_reads(&app).await,
            before + 1,
            "{path} {v:?}: the fast lane answers"
        );
        assert_eq!(parts(&fast), parts(&routed), "{path} {v:?}");
        if !v.revalidate {
            assert!(fast.body.len() > 20_000, "{path} {v:?}: a big body");
        }
    }
}
