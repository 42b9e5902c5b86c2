//! The read path's fast lane: one layer of the application's stack ([`mod@super::app`]),
//! just above the router. A `GET` of an hour whose rendering is ready
//! ([`Service::with_ready_hour`]) is answered here with the response prepared once per
//! rendering and worker thread ([`super::prepared`]), made by the filter handler's own
//! code: exactly what the router would answer, without what the router costs per
//! request (route matching and its parameter map, the loading gate and the request
//! deadline, boxed futures). Everything else, and every hour not ready now, goes on to
//! the router.
//!
//! The layers above it (tracing, panics, the access log, metrics) see the lane's
//! responses as they see the router's: each is written once, in the stack (metrics learn
//! the lane's route from its future, [`KnownRoute`]). The CORS layer sits below it,
//! around the router: its headers, which do not depend on the request, are applied by
//! that layer's code once when a response is prepared.
//!
//! [`Service::with_ready_hour`]: crate::service::Service::with_ready_hour

use super::cors::CorsHeaders;
use super::filters::not_modified;
use super::metrics::KnownRoute;
use super::negotiate::{
    accepts_gzip, choose_repr, wants_compact, wants_exact, AVAILABLE_DICTIONARY,
};
use super::paths::filter_path;
use super::prepared::{self, Variant};
use super::AppState;
use crate::service::Target;
use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use futures_util::future::Either;
use std::future::{ready, Ready};
use std::task::{Context, Poll};

/// Puts the fast lane in front of a service (the router).
#[derive(Clone)]
pub struct LaneLayer {
    pub state: AppState,
    /// The CORS layer's headers, applied once to each prepared response.
    pub cors: &'static CorsHeaders,
}

impl<S> tower::Layer<S> for LaneLayer {
    type Service = Lane<S>;

    fn layer(&self, inner: S) -> Lane<S> {
        Lane {
            inner,
            state: self.state.clone(),
            cors: self.cors,
        }
    }
}

/// The service of [`LaneLayer`].
#[derive(Clone)]
pub struct Lane<S> {
    inner: S,
    state: AppState,
    cors: &'static CorsHeaders,
}

impl<S> tower::Service<Request> for Lane<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = LaneFuture<S::Future, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match answer(&self.state, self.cors, &request) {
            Some(response) => Either::Left(ready(Ok(response))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

/// The prepared response to `request`, if it is a poll of a ready hour.
fn answer(state: &AppState, cors: &CorsHeaders, request: &Request) -> Option<Response> {
    let uri = request.uri();
    // A query (`?fpp=`), the compact and exact forms are the router's, as are deltas (a
    // poller offering a dictionary): prepared responses are whole v1 bodies.
    if request.method() != Method::GET || uri.query().is_some() {
        return None;
    }
    // Only hour paths: a cheap look before parsing keeps other routes' GETs from
    // making a parse error.
    if !uri.path().as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let Ok((Target::Hour(hour), suffix)) = filter_path(uri.path()) else {
        return None;
    };
    let headers = request.headers();
    if headers.contains_key(AVAILABLE_DICTIONARY)
        || (suffix.is_none() && (wants_compact(headers).is_some() || wants_exact(headers)))
    {
        return None;
    }
    // An `Accept` that refuses every type gets the router's 406.
    let repr = suffix.or_else(|| choose_repr(headers))?;
    let response = state.service.with_ready_hour(hour, repr, |ready| {
        let variant = Variant {
            gzip: accepts_gzip(headers),
            suffix: suffix.is_some(),
            not_modified: not_modified(ready.rendered, headers),
        };
        prepared::response(state, cors, ready, variant)
    })?;
    state.metrics.count_fast();
    Some(response)
}

/// The response future of [`Lane`]: ready at once (a prepared response), or the router's.
pub type LaneFuture<F, E> = Either<Ready<Result<Response, E>>, F>;

impl<F, E> KnownRoute for LaneFuture<F, E> {
    fn is_hour_lane(&self) -> bool {
        matches!(self, Either::Left(_))
    }
}
