//! The whole-request timeout (`request_timeout_seconds`), and whose fault it was.
//!
//! tower-http's [`TimeoutLayer`] answers a request still unanswered when the timeout runs
//! out, and drops its handler: `503` `timeout` with `Retry-After`, as the server had the
//! whole request and its own work outlived the timeout (the client may retry). A handler
//! that reads a body reads it by a deadline of its own ([`Deadline`], stamped on an
//! upload just after the timeout starts): a body still arriving then is the client's
//! fault, `408` `timeout` (it must send faster or in smaller parts). The body's deadline
//! falls about a tenth of the timeout before the layer's timer ends (it is stamped just
//! after that timer starts), so a slow body is answered 408, never 503. Requests without
//! a body carry none.

use super::error::ApiError;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::time::Duration;
use tokio::time::Instant;
use tower::layer::util::{Identity, Stack};
use tower::util::MapResponseLayer;
use tower::ServiceBuilder;
use tower_http::timeout::TimeoutLayer;

/// When the request's time runs out: a handler reading a body stops then (408).
#[derive(Debug, Clone, Copy)]
pub struct Deadline(pub Instant);

impl Deadline {
    /// `read` if it finishes before the deadline, else 408 `timeout`.
    ///
    /// # Errors
    /// 408 when the deadline passes first; whatever `read` fails with.
    pub async fn read<T>(
        deadline: Option<Deadline>,
        read: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        match deadline {
            Some(Deadline(at)) => tokio::time::timeout_at(at, read)
                .await
                .unwrap_or(Err(ApiError::Timeout)),
            None => read.await,
        }
    }
}

/// The guard of the upload routes, under [`layer`] ([`super::guard::Guard`]): stamps
/// each upload with its [`Deadline`], nine tenths of the timeout from now, the moment
/// just after that layer started its own timer, so a tenth of the timeout before it.
pub fn stamp(timeout: Duration) -> impl Fn(&mut Request) -> Option<Response> + Clone {
    let body_time = body_time(timeout);
    move |request: &mut Request| {
        request
            .extensions_mut()
            .insert(Deadline(Instant::now() + body_time));
        None
    }
}

/// The part of the request timeout a body may take: nine tenths, so that a body still
/// arriving is answered 408 before the layer's own timer (which wins a tie) says 503.
fn body_time(timeout: Duration) -> Duration {
    timeout - timeout / 10
}

/// tower-http's [`TimeoutLayer`] (503) with its bare answer given the `timeout` error's
/// body ([`explained`]): the request timeout of the routes and of the standby's.
pub fn layer(timeout: Duration) -> TimeoutLayers {
    ServiceBuilder::new()
        .map_response(explained as fn(Response) -> Response)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            timeout,
        ))
}

/// What [`layer`] gives.
pub type TimeoutLayers = ServiceBuilder<
    Stack<TimeoutLayer, Stack<MapResponseLayer<fn(Response) -> Response>, Identity>>,
>;

/// The timeout layer's own answer (a bare 503, where every handler's error is JSON)
/// as the `timeout` error.
pub fn explained(response: Response) -> Response {
    if response.status() != StatusCode::SERVICE_UNAVAILABLE || super::error::is_json(&response) {
        return response;
    }
    // The server's own slowness: worth an operator's attention, unlike a slow client.
    tracing::warn!(
        "a request received whole was not answered within the request timeout; answered 503"
    );
    ApiError::ServerTimeout.into_response()
}
