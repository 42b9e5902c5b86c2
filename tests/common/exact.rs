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
    let server = inproc::serve("127.0.0.1:0".parse().unwrap(), token, start, |_| {}).await;
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

/// How the proxy lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    None,
    /// Flips the lowest bit of the last byte of every exact body (a solution bit) and
    /// sends the `Repr-Digest` of the changed bytes.
    FlipExact,
    /// Answers 404 for every exact body.
    HideExact,
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
    if exact && lie == Lie::HideExact {
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
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
