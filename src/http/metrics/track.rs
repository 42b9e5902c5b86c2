//! The metrics' request layer: which route answered (the router tags its responses,
//! [`Answered`]) and [`Track`], the layer above the router that counts every response
//! (and error responses by the [`ErrorCode`] they carry).

use super::{route_slot, Metrics, UNMATCHED};
use crate::http::error::ErrorCode;
use axum::body::HttpBody as _;
use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The router's route that answered a request, carried on its response for [`Track`],
/// which sits above the router and so cannot see its match.
#[derive(Clone)]
pub struct Answered(MatchedPath);

/// The layer inside the router: tags each response with the route that matched.
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
    /// The response future of [`Tag`]: tags the response when it is ready.
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
        let mut result = std::task::ready!(this.inner.poll(cx));
        if let (Ok(response), Some(matched)) = (&mut result, this.matched.take()) {
            response.extensions_mut().insert(Answered(matched));
        }
        Poll::Ready(result)
    }
}

/// Counts every response by the route that answered it ([`Answered`]) and its status,
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
            inner: self.inner.call(request),
            metrics: Some(self.metrics.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Track`]: counts the response when it is ready.
    pub struct Tracked<F> {
        #[pin]
        inner: F,
        metrics: Option<Arc<Metrics>>,
    }
}

impl<F, E> Future for Tracked<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        if let (Ok(response), Some(metrics)) = (&result, this.metrics.take()) {
            let bytes = response.body().size_hint().exact().unwrap_or(0);
            let status = response.status().as_u16();
            let (slot, name) = match response.extensions().get::<Answered>() {
                Some(Answered(matched)) => (route_slot(Some(matched)), matched.as_str()),
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
