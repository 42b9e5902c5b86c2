//! The one way into the server: every request, whichever writer frames its connection
//! ([`crate::server`]), is served by this one stack, so each concern that cuts across
//! requests is written once, as one layer:
//!
//! ```text
//! access log (when on) → tracing (when on) → panics → metrics → fast lane → CORS → router
//!                                                                   (route tag → loading → deadline → handlers)
//! ```
//!
//! The fast lane ([`super::lane`]) answers polls of ready hours from prepared responses;
//! the layers above it treat its responses as the router's. Its responses are prepared
//! with the CORS layer's own headers ([`super::cors::CorsHeaders::apply`], run once per
//! prepared response), so that layer sits below it, around the router. The loading gate
//! and the request deadline are inside the router: the lane only answers what is ready
//! now.

use super::{access_log, lane, metrics, panics, AppState};
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::util::BoxCloneSyncService;
use tower::ServiceBuilder;
use tower_http::trace::TraceLayer;
use tracing::{Level, Span};

type Stack = BoxCloneSyncService<Request, Response, Infallible>;

/// The whole application as one service.
#[derive(Clone)]
pub struct App {
    stack: Stack,
    state: AppState,
    /// The connection's peer, for the access log and the build queue (`ConnectInfo`, as
    /// `axum::serve` gives it).
    peer: Option<SocketAddr>,
}

impl App {
    /// The stack around `routes`.
    pub(super) fn new(state: AppState, routes: Router) -> App {
        let access_log = state
            .access_log
            .then(|| axum::middleware::from_fn(access_log::log));
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
        let cors = super::cors::FastCorsLayer::new(super::cors_config());
        let stack = ServiceBuilder::new()
            .option_layer(access_log)
            .option_layer(trace)
            // A panic anywhere below is answered 500 `internal` and logged, never a
            // dropped connection; shared state guards against half-finished updates.
            .layer(panics::ContainLayer)
            // The counters outlive the application: counting a request then writes no
            // reference count that every core shares (one `Arc` handle is leaked per
            // application, so its `Metrics` live as long as the process).
            .layer(metrics::TrackLayer(Box::leak(Box::new(
                state.metrics.clone(),
            ))))
            .layer(lane::LaneLayer {
                state: state.clone(),
                cors: cors.headers(),
            })
            .layer(cors)
            .service(routes);
        App {
            stack: BoxCloneSyncService::new(stack),
            state,
            peer: None,
        }
    }

    /// The response to `request`.
    pub fn call(&mut self, mut request: Request) -> <Stack as tower::Service<Request>>::Future {
        // The access log names the peer, and builds are queued by it (`client`).
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        tower::Service::call(&mut self.stack, request)
    }

    /// The server's counters (the connection layer counts what it writes and drops).
    pub fn metrics(&self) -> &std::sync::Arc<super::Metrics> {
        &self.state.metrics
    }

    /// This application for a connection from `peer` (the access log names it).
    pub fn for_peer(&self, peer: SocketAddr) -> App {
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
    type Future = <Stack as tower::Service<Request>>::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Every layer is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        App::call(self, request.map(Body::new))
    }
}
