//! The read path's fast lane, in front of the router: a `GET` of an hour whose rendering
//! is ready ([`Service::ready_hour`]) is answered here, at once, with exactly the
//! response the router's stack would give (same handler code, CORS headers, metrics),
//! but without what that stack costs per request: route matching and its parameter
//! map, boxed futures, a timer for the request timeout, a clone of every layer.
//!
//! Everything else goes to the router: other routes and methods, hours that need the
//! store, a render or a refresh, errors of any kind, and every request while per-request
//! tracing or the access log is on (they need the stack's spans and log lines).
//!
//! [`Service::ready_hour`]: crate::service::Service::ready_hour

use super::cors::CorsHeaders;
use super::filters::not_modified;
use super::negotiate::{accepts_gzip, choose_repr, AVAILABLE_DICTIONARY};
use super::paths::plain_hour_path;
use super::prepared::{self, Answer, Variant};
use super::AppState;
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::Router;
use bytes::Bytes;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tracing::Level;

/// The whole application as one service: the fast lane, then the router.
#[derive(Clone)]
pub struct App {
    router: Router,
    state: AppState,
    cors: Arc<CorsHeaders>,
    /// The connection's peer, for requests the router serves (`ConnectInfo`, as
    /// `axum::serve` gives it).
    peer: Option<SocketAddr>,
}

impl App {
    pub fn new(router: Router, state: AppState, cors: Arc<CorsHeaders>) -> App {
        App {
            router,
            state,
            cors,
            peer: None,
        }
    }

    /// The response, if the fast lane can give it.
    fn answer<B>(&self, request: &Request<B>) -> Option<Response> {
        if request.method() != Method::GET || !self.lane_open() {
            return None;
        }
        let uri = request.uri();
        // `?fpp=` is the compact form's, refused on v1 (400): the router says so.
        if super::compact::fpp_param(uri.query()).is_some() {
            return None;
        }
        let (hour, suffix) = plain_hour_path(uri.path())?;
        self.lane(hour, suffix, request.headers(), |answer| {
            answer.into_response()
        })
    }

    /// Whether the lane may answer at all: not while per-request tracing or the access
    /// log is on (they need the router's stack's spans and log lines).
    fn lane_open(&self) -> bool {
        !self.state.access_log && !tracing_requests()
    }

    /// Answers a `GET` of `hour` (with the path's `suffix`) and `headers` if the fast
    /// lane can: calls `f` with the prepared response. `None` means "take the router".
    fn lane<R>(
        &self,
        hour: crate::hour::Hour,
        suffix: Option<crate::render::Repr>,
        headers: &HeaderMap,
        f: impl FnOnce(Answer<'_>) -> R,
    ) -> Option<R> {
        // A poller asking for a delta (RFC 9842) takes the router: prepared responses
        // are whole bodies.
        if headers.contains_key(AVAILABLE_DICTIONARY) {
            return None;
        }
        if suffix.is_none() && super::negotiate::wants_compact(headers).is_some() {
            return None;
        }
        let repr = suffix.unwrap_or_else(|| choose_repr(headers));
        self.state.service.with_ready_hour(hour, repr, |ready| {
            let variant = Variant {
                gzip: accepts_gzip(headers),
                suffix: suffix.is_some(),
                not_modified: not_modified(ready.rendered, headers),
            };
            prepared::with_answer(&self.state, &self.cors, ready, variant, f)
        })
    }

    /// Answers a `GET` of `path` on the connection's own writer ([`crate::server`]) if
    /// the fast lane can: appends the whole HTTP/1.1 response to `out` (the body too,
    /// unless it is larger than `inline_max`, when it is returned to be sent after
    /// `out`) and counts it in the metrics as the router would.
    pub fn answer_wire(
        &self,
        path: &str,
        headers: &HeaderMap,
        date: &[u8],
        out: &mut Vec<u8>,
        inline_max: usize,
    ) -> Wire {
        if !self.lane_open() {
            return Wire::Hyper;
        }
        let Some((hour, suffix)) = plain_hour_path(path) else {
            return Wire::Hyper;
        };
        let mark = out.len();
        let answered = catch_unwind(AssertUnwindSafe(|| {
            self.lane(hour, suffix, headers, |answer| {
                answer.write_http1(out, date);
                let body = answer.body();
                let status = answer.status.as_u16();
                let rest = if body.len() > inline_max {
                    Some(body.clone())
                } else {
                    out.extend_from_slice(body);
                    None
                };
                (status, body.len(), rest)
            })
        }));
        match answered {
            Ok(Some((status, bytes, rest))) => {
                self.state
                    .metrics
                    .record_fast_hour_read(status, bytes as u64, true);
                Wire::Answered(rest)
            }
            Ok(None) => Wire::Route,
            Err(panic) => {
                // What was written of the answer is dropped; the router's stack answers
                // (its panic handler: 500 `internal`).
                out.truncate(mark);
                tracing::error!(
                    panic = ?panic.downcast_ref::<&str>(),
                    "the fast lane panicked; the router takes the request"
                );
                Wire::Route
            }
        }
    }

    /// The router's response to `request`, with the connection's peer for the access
    /// log (what hyper's call takes when the fast lane declines).
    pub fn route(&mut self, mut request: Request) -> RouteFuture<Infallible> {
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        tower::Service::call(&mut self.router, request)
    }

    /// The server's counters (the connection layer counts the connections it drops).
    pub fn metrics(&self) -> &Arc<super::Metrics> {
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

/// How the connection's own writer is to answer a request.
pub enum Wire {
    /// Answered in the output, with the body still to send after it if it was large.
    Answered(Option<Bytes>),
    /// An hour the fast lane cannot answer now (it needs the store, a render, a
    /// refresh, or a delta): the connection gives the request to [`App::route`] and
    /// writes the router's response.
    Route,
    /// Not a poll (or the access log is on): the connection is handed to hyper.
    Hyper,
}

/// Whether the router's per-request spans and events would be recorded.
fn tracing_requests() -> bool {
    tracing::enabled!(target: "tower_http::trace::make_span", Level::DEBUG)
        || tracing::enabled!(target: "tower_http::trace::on_response", Level::DEBUG)
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
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> AppFuture {
        // A panic here is answered as the router's stack answers one: 500 `internal`.
        let fast = catch_unwind(AssertUnwindSafe(|| self.answer(&request)))
            .unwrap_or_else(|panic| Some(super::meta::panicked(panic)));
        match fast {
            Some(response) => {
                let bytes = response.body().size_hint().exact().unwrap_or(0);
                self.state
                    .metrics
                    .record_fast_hour_read(response.status().as_u16(), bytes, false);
                AppFuture::Ready {
                    response: Some(response),
                }
            }
            None => AppFuture::Routed {
                future: self.route(request.map(Body::new)),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`App`].
    #[project = AppProj]
    pub enum AppFuture {
        Ready { response: Option<Response> },
        Routed { #[pin] future: RouteFuture<Infallible> },
    }
}

impl Future for AppFuture {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AppProj::Ready { response } => {
                Poll::Ready(Ok(response.take().expect("polled after completion")))
            }
            AppProj::Routed { future } => future.poll(cx),
        }
    }
}
