//! The one way into the server: every connection, framed by hyper ([`crate::server`]),
//! hands every request to this one stack, so each concern that cuts across requests is
//! written once, as one layer:
//!
//! ```text
//! [its client's builds] access log (when on) → tracing (when on) → panics → metrics → CORS
//!   → router (route tag → query check → loading → timeout → handlers)
//! ```
//!
//! Each request runs as its connection's client ([`super::client`]: builds are queued by
//! client). The router's layers are typed, so a request's response future nests them in
//! one value rather than a box per layer (`benches/layers.rs`).
//!
//! A node in standby (cluster mode, PostgreSQL not reachable yet) serves the same stack
//! around a router that answers 503 ([`super::standby_app`]), so it has the same CORS,
//! timeouts and limits.

use super::{access_log, metrics, Metrics};
use crate::service::{BuildClient, BUILD_CLIENT};
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::futures::TaskLocalFuture;
use tower::util::BoxCloneSyncService;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use tracing::{Level, Span};

type Stack = BoxCloneSyncService<Request, Response, Infallible>;

/// The whole application as one service.
#[derive(Clone)]
pub struct App {
    stack: Stack,
    metrics: Arc<Metrics>,
    /// The connection's peer, for the build queue and the access log.
    peer: Option<ConnectInfo<SocketAddr>>,
    /// Whether the access log is on: it reads the peer from the request (`ConnectInfo`,
    /// as `axum::serve` gives it), which otherwise carries nothing for it.
    access_log: bool,
}

impl App {
    /// The stack around `routes`, counting into `metrics`, with a line per request
    /// when `access_log`.
    pub(super) fn new(metrics: Arc<Metrics>, access_log: bool, routes: Router) -> App {
        let log_layer = access_log.then(|| axum::middleware::from_fn(access_log::log));
        // A span per request and an event per response, at debug under this module's
        // target (`bloomcast::http::app`), when debug is on for it at start: the filter
        // is fixed for the life of the process, so without it the stack has no layer
        // (and no clock reading) for them at all.
        let trace = tracing::enabled!(Level::DEBUG).then(|| {
            tower::layer::util::Stack::new(
                TraceLayer::new_for_http()
                    .make_span_with(|request: &Request| {
                        tracing::debug_span!(
                            "request",
                            method = %request.method(),
                            uri = %request.uri(),
                            version = ?request.version(),
                        )
                    })
                    .on_response(|response: &Response<_>, latency: Duration, _: &Span| {
                        tracing::debug!(
                            status = response.status().as_u16(),
                            latency_us = latency.as_micros() as u64,
                            "response"
                        );
                    }),
                tower::util::MapResponseLayer::new(IntoResponse::into_response),
            )
        });
        let stack = ServiceBuilder::new()
            .option_layer(log_layer)
            .option_layer(trace)
            // A panic anywhere below is answered 500 `internal` and logged, never a
            // dropped connection; shared state guards against half-finished updates.
            .map_response(IntoResponse::into_response)
            .layer(CatchPanicLayer::custom(super::meta::panicked))
            .layer(metrics::TrackLayer(metrics.clone()))
            .map_response(IntoResponse::into_response)
            .layer(super::cors())
            .service(routes);
        App {
            stack: BoxCloneSyncService::new(stack),
            metrics,
            peer: None,
            access_log,
        }
    }

    /// The server's counters (the connection loop counts the connections it drops).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// This application for a connection from `peer` (builds are queued by it, and the
    /// access log names it).
    pub fn for_peer(&self, peer: ConnectInfo<SocketAddr>) -> App {
        App {
            peer: Some(peer),
            ..self.clone()
        }
    }
}

impl<B> tower::Service<Request<B>> for App
where
    B: HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = AppFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Every layer is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let mut request = request.map(Body::new);
        if let (true, Some(peer)) = (self.access_log, self.peer) {
            request.extensions_mut().insert(peer);
        }
        // The rest of the request runs as its client's (builds are queued by client).
        let client = super::client::of(self.peer, &request);
        BUILD_CLIENT.scope(client, tower::Service::call(&mut self.stack, request))
    }
}

/// The response future of [`App`].
pub type AppFuture = TaskLocalFuture<BuildClient, <Stack as tower::Service<Request>>::Future>;
