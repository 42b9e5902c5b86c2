//! The access log (setting `access_log`, off by default): one line per request at `info`,
//! under the target `bloomcast::access`, in a combined-log-like format:
//!
//! ```text
//! 127.0.0.1:50632 "GET /2026/11/23/10 HTTP/1.1" 200 4512 0.8ms "curl/8.5.0"
//! ```
//!
//! remote address, request line, status, body bytes (`-` when streamed), time to the
//! response head, user agent. Lines are written after the response is built, so a 408 or
//! a 304 is logged with the status the client got.

use axum::body::HttpBody as _;
use axum::extract::{ConnectInfo, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use std::net::SocketAddr;
use std::time::Instant;

/// Middleware writing one access-log line per request.
pub async fn log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let remote = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "-".to_owned(), |c| c.0.to_string());
    let line = format!(
        "{} {} {:?}",
        request.method(),
        request.uri().path_and_query().map_or("/", |p| p.as_str()),
        request.version()
    );
    let agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    let response = next.run(request).await;
    let bytes = response
        .body()
        .size_hint()
        .exact()
        .map_or_else(|| "-".to_owned(), |n| n.to_string());
    tracing::info!(
        target: "bloomcast::access",
        "{remote} {line:?} {} {bytes} {:.1}ms {agent:?}",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0,
    );
    response
}
