//! The floor of the one way in: what hyper alone, hyper with one axum `Router`, and that
//! Router with the stock layers, cost per request when the answer is already made. `benches/harness/serving.sh` (with
//! `FLOOR=1`) runs it beside bloomcast and nginx on the very bytes bloomcast sent, so the
//! read path's ratio to nginx can be read against the ratio the framing and routing
//! themselves allow.
//!
//! ```text
//! hyper_floor MODE PORT DIR
//! ```
//!
//! MODE is `hyper` (a `service_fn` on hyper's http1 connection, as `src/server.rs`
//! builds it: header-read timer, `TokioIo`), `axum` (the same connection serving a
//! `Router` with bloomcast's filter route `/{y}/{mo}/{d}/{h}` through
//! `TowerToHyperService`, its handler taking the request as bloomcast's does: no
//! extractor copies anything, so what it adds is the Router's own work) or `stock` (that
//! Router with the stock tower-http layers every bloomcast read passes, as bloomcast
//! orders them: `CatchPanicLayer` and bloomcast's `CorsLayer` around the Router, tower-
//! http's `TimeoutLayer` on its routes; what the one way in costs before any layer or
//! handler of bloomcast's own).
//! DIR holds `closed.json` and `closed.json.gz`; every GET answers those bytes (gzip when
//! `Accept-Encoding` names it) with an ETag, and 304 when `If-None-Match` names it.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;

/// The server's own allocator, so the floor and bloomcast differ only in their work.
#[global_allocator]
static ALLOCATOR: bloomcast::memory::Allocator = bloomcast::memory::Allocator;

/// The two bodies and their validators, made once.
struct Made {
    identity: Bytes,
    gzip: Bytes,
    etag: HeaderValue,
    etag_gzip: HeaderValue,
}

impl Made {
    fn answer(&self, request: &HeaderMap) -> Response<Body> {
        let gzip = request
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("gzip"));
        let etag = if gzip { &self.etag_gzip } else { &self.etag };
        let fresh = request
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| v.as_bytes() == etag.as_bytes());
        let mut response = if fresh {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        } else {
            Response::new(Body::from(if gzip {
                self.gzip.clone()
            } else {
                self.identity.clone()
            }))
        };
        let out = response.headers_mut();
        out.insert(header::ETAG, etag.clone());
        out.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("max-age=31536000, immutable"),
        );
        out.insert(
            header::VARY,
            HeaderValue::from_static("Accept, Accept-Encoding"),
        );
        if !fresh {
            out.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if gzip {
                out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
        }
        response
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, port, dir] = &args[..] else {
        return Err("usage: hyper_floor hyper|axum|stock PORT DIR".into());
    };
    let identity = Bytes::from(std::fs::read(format!("{dir}/closed.json"))?);
    let gzip = Bytes::from(std::fs::read(format!("{dir}/closed.json.gz"))?);
    let etag = |b: &[u8]| {
        let digest = sha1::Sha1::digest(b);
        HeaderValue::try_from(format!("\"{}\"", hex::encode(digest))).expect("hex")
    };
    use sha1::Digest;
    let made = Arc::new(Made {
        etag: etag(&identity),
        etag_gzip: etag(&gzip),
        identity,
        gzip,
    });
    let mode = match mode.as_str() {
        "hyper" => Mode::Hyper,
        "axum" => Mode::Axum,
        "stock" => Mode::Stock,
        other => return Err(format!("MODE is hyper, axum or stock, not {other}").into()),
    };
    let port: u16 = port.parse()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(mode, port, made))
}

#[derive(Clone, Copy)]
enum Mode {
    Hyper,
    Axum,
    Stock,
}

async fn serve(mode: Mode, port: u16, made: Arc<Made>) -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_headers(100);
    let router = {
        let made = made.clone();
        Router::new().route(
            "/{y}/{mo}/{d}/{h}",
            get(move |request: axum::extract::Request| {
                let made = made.clone();
                async move { made.answer(request.headers()) }
            }),
        )
    };
    let stock = ServiceBuilder::new()
        .layer(CatchPanicLayer::new())
        .layer(bloomcast::http::cors())
        .service(router.clone().layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(30),
        )));
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(stream);
        match mode {
            Mode::Axum => {
                let service = TowerToHyperService::new(router.clone());
                tokio::spawn(builder.serve_connection(io, service));
            }
            Mode::Stock => {
                let service = TowerToHyperService::new(stock.clone());
                tokio::spawn(builder.serve_connection(io, service));
            }
            Mode::Hyper => {
                let made = made.clone();
                let service = hyper::service::service_fn(move |request: Request<_>| {
                    let response = made.answer(request.headers());
                    async move { Ok::<_, Infallible>(response) }
                });
                tokio::spawn(builder.serve_connection(io, service));
            }
        }
    }
}
