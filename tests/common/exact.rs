//! Exact hours (docs/PROTOCOL.md section 14) for the SDK and CLI tests: a server whose
//! publisher registered a universe, with sealed hours in which a few of its IDs changed,
//! and a small proxy in front of it that can flip a bit of every exact body (fixing up its
//! `Repr-Digest`, so only the signature can tell) or hide exact bodies (404).

use super::inproc::{self, InProcess};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use bloomcast::hour::Hour;
use chrono::Duration;
use std::sync::{Arc, Mutex};

/// The universe's IDs.
pub fn universe(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("user:{i}")).collect()
}

/// Registers `ids` as (part of) the publisher's universe.
pub async fn post_universe(base: &str, token: &str, ids: &[String]) {
    let reply = reqwest::Client::new()
        .post(format!("{base}/universe"))
        .bearer_auth(token)
        .json(&serde_json::json!({ "ids": ids }))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200, "{}", reply.text().await.unwrap());
}

/// A server with a universe of `n` IDs, `hours` sealed hours from `start` in each of which
/// `changed` universe IDs changed (different ones each hour), and the next hour open and
/// empty. Returns the server and the IDs that changed, per hour.
pub async fn serve(
    token: &str,
    start: Hour,
    n: usize,
    hours: usize,
    changed: usize,
) -> (InProcess, Vec<Vec<String>>) {
    serve_tuned(token, start, n, hours, changed, |_| {}).await
}

/// [`serve`] with its settings changed by `tweak`.
pub async fn serve_tuned(
    token: &str,
    start: Hour,
    n: usize,
    hours: usize,
    changed: usize,
    tweak: impl FnOnce(&mut bloomcast::config::Settings),
) -> (InProcess, Vec<Vec<String>>) {
    let server = inproc::serve("127.0.0.1:0".parse().unwrap(), token, start, tweak).await;
    let ids = universe(n);
    post_universe(&server.base, token, &ids).await;
    let http = reqwest::Client::new();
    let mut per_hour = Vec::new();
    for h in 0..hours {
        let batch: Vec<String> = ids
            .iter()
            .skip(h)
            .step_by(n / changed)
            .take(changed)
            .cloned()
            .collect();
        let reply = http
            .post(format!("{}/updates", server.base))
            .bearer_auth(token)
            .json(&serde_json::json!({ "ids": batch }))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        per_hour.push(batch);
        server.clock.advance(Duration::hours(1));
    }
    (server, per_hour)
}

/// IDs never registered and never published: what a poller may follow without knowing
/// (the universe is never published) that its publisher never registered them.
pub fn outsiders(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("nobody:{i}")).collect()
}

/// The most flags `n` trials at a rate of at most `p` give, with sampling error: the
/// mean plus four standard deviations (a binomial count exceeds it with probability
/// below 1e-4; at n = 2,000 and p = 0.01, 37).
pub fn at_most_at_rate(n: usize, p: f64) -> usize {
    let n = n as f64;
    (n * p + 4.0 * (n * p * (1.0 - p)).sqrt()).floor() as usize
}

/// The README's quick start, sealed: a universe of three IDs registered (`user:1`,
/// `user:2`, `user:5`), then `hours` sealed hours in each of which `per_hour` other IDs
/// were published (`h<hour>:<i>`; they join the universe as each hour is sealed), and the
/// next hour open and empty. Most of each hour's universe changed in it, the case where an
/// exact body's answer for an ID outside the universe is nearly a coin toss. Each sealed
/// hour's exact body is read once before this returns, as another client would have read
/// it, so the index lists its `exact_bytes` (what a client's choice weighs).
pub async fn serve_quick_start(
    token: &str,
    start: Hour,
    hours: usize,
    per_hour: usize,
) -> (InProcess, Vec<Vec<String>>) {
    let server = inproc::serve("127.0.0.1:0".parse().unwrap(), token, start, |_| {}).await;
    let registered = ["user:1", "user:2", "user:5"].map(String::from);
    post_universe(&server.base, token, &registered).await;
    let http = reqwest::Client::new();
    let mut published = Vec::new();
    for h in 0..hours {
        let batch: Vec<String> = (0..per_hour).map(|i| format!("h{h}:{i}")).collect();
        let reply = http
            .post(format!("{}/updates", server.base))
            .bearer_auth(token)
            .json(&serde_json::json!({ "ids": batch }))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        published.push(batch);
        server.clock.advance(Duration::hours(1));
    }
    for h in 0..hours {
        let hour = Hour::from_index(start.index() + h as i64);
        let url = format!("{}{}.exact", server.base, hour.path());
        assert_eq!(reqwest::get(&url).await.unwrap().status(), 200, "{url}");
    }
    (server, published)
}

/// How the proxy lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    None,
    /// Flips the lowest bit of the last byte of every exact body (a solution bit) and
    /// sends the `Repr-Digest` of the changed bytes.
    FlipExact,
    /// Answers 404 for every exact body.
    HideExact,
    /// Answers 404 for the exact bodies of since-ranges, as a server from before them.
    HideExactRanges,
    /// Sends every exact body without its `Bloom-Signature`.
    StripExact,
}

pub struct Proxy {
    pub base: String,
    lie: Arc<Mutex<Lie>>,
}

impl Proxy {
    pub fn set(&self, lie: Lie) {
        *self.lie.lock().unwrap() = lie;
    }
}

/// A proxy in front of `origin`, on the current runtime.
pub async fn proxy(origin: &str) -> Proxy {
    let lie = Arc::new(Mutex::new(Lie::None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback({
        let (lie, origin) = (lie.clone(), origin.to_owned());
        move |request: Request| forward(request, origin.clone(), *lie.lock().unwrap())
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Proxy { base, lie }
}

async fn forward(request: Request, origin: String, lie: Lie) -> Response {
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let exact = request.uri().path().ends_with(".exact");
    let range = request.uri().path().starts_with("/since/");
    if exact && (lie == Lie::HideExact || (lie == Lie::HideExactRanges && range)) {
        let mut response = Response::new(Body::from(
            r#"{"error":"not_found","message":"hidden by the test proxy"}"#,
        ));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let (status, mut headers, mut body) = super::upstream(&origin, &asked).await;
    if exact && lie == Lie::FlipExact && status == StatusCode::OK {
        *body.last_mut().unwrap() ^= 1;
        headers.insert(
            "repr-digest",
            HeaderValue::from_str(&bloomcast::chain::repr_digest(&body)).unwrap(),
        );
    }
    if exact && lie == Lie::StripExact {
        headers.remove("bloom-signature");
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
