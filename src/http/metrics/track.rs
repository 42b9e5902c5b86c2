//! The metrics' request layer: which route answered (the router's [`Tag`] says so to
//! [`Track`], the layer above the router that counts every response, and error
//! responses by the [`ErrorCode`] they carry).

use super::{route_slot, Metrics, UNMATCHED};
use crate::http::error::ErrorCode;
use axum::body::HttpBody as _;
use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::task::futures::TaskLocalFuture;

tokio::task_local! {
    /// The router's route that answered the request [`Track`] is counting: [`Track`]
    /// sits above the router and so cannot see its match; [`Tag`], inside it, writes it
    /// here (a task-local the request's own future scopes, so a response carries nothing
    /// for it and no map is made for it).
    static ANSWERED: Cell<Option<MatchedPath>>;
}

/// The layer inside the router: tells [`Track`] the route that matched.
#[derive(Clone, Copy)]
pub struct TagLayer;

impl<S> tower::Layer<S> for TagLayer {
    type Service = Tag<S>;

    fn layer(&self, inner: S) -> Tag<S> {
        Tag(inner)
    }
}

/// The service of [`TagLayer`].
#[derive(Clone, Copy)]
pub struct Tag<S>(S);

impl<S> tower::Service<Request> for Tag<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Tagged<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        Tagged {
            matched: request.extensions().get::<MatchedPath>().cloned(),
            inner: self.0.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Tag`]: tells [`Track`] the route once it has answered.
    pub struct Tagged<F> {
        #[pin]
        inner: F,
        matched: Option<MatchedPath>,
    }
}

impl<F, E> Future for Tagged<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        if let Some(matched) = this.matched.take() {
            // Outside a `Track` (a router served on its own) nobody is counting.
            let _ = ANSWERED.try_with(|answered| answered.set(Some(matched)));
        }
        Poll::Ready(result)
    }
}

/// Counts every response by the route that answered it ([`Tag`]) and its status,
/// and body bytes (a layer rather than `from_fn`, so a request costs no boxed future).
#[derive(Clone)]
pub struct TrackLayer(pub Arc<Metrics>);

impl<S> tower::Layer<S> for TrackLayer {
    type Service = Track<S>;

    fn layer(&self, inner: S) -> Track<S> {
        Track {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// The service of [`TrackLayer`].
#[derive(Clone)]
pub struct Track<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S> tower::Service<Request> for Track<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Tracked<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        Tracked {
            inner: ANSWERED.scope(Cell::new(None), self.inner.call(request)),
            metrics: Some(self.metrics.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Track`]: counts the response when it is ready.
    pub struct Tracked<F> {
        #[pin]
        inner: TaskLocalFuture<Cell<Option<MatchedPath>>, F>,
        metrics: Option<Arc<Metrics>>,
    }
}

impl<F, E> Future for Tracked<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let result = std::task::ready!(this.inner.as_mut().poll(cx));
        let answered = this.inner.take_value().and_then(Cell::into_inner);
        if let (Ok(response), Some(metrics)) = (&result, this.metrics.take()) {
            let bytes = response.body().size_hint().exact().unwrap_or(0);
            let status = response.status().as_u16();
            let (slot, name) = match &answered {
                Some(matched) => (route_slot(Some(matched)), matched.as_str()),
                None => (route_slot(None), UNMATCHED),
            };
            metrics.record_slot(slot, name, status, bytes);
            // Only error responses carry a code: the success path looks up nothing.
            if status >= 400 {
                if let Some(ErrorCode(code)) = response.extensions().get::<ErrorCode>() {
                    metrics.count_error(code);
                }
            }
        }
        Poll::Ready(result)
    }
}
