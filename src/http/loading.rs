//! Requests that need the open hour wait until it is loaded after a start, outside the
//! request timeout; closed hours, `/healthz` and `/metrics` are answered meanwhile.
//!
//! A layer of the router. Once the service is loaded (every request but those of the
//! first moments after a start) a request goes straight on, its future the one below;
//! only a request that must wait costs a boxed future.

use super::paths::filter_path;
use crate::service::{Service, Target};
use axum::extract::Request;
use axum::response::Response;
use futures_util::future::{BoxFuture, Either};
use std::sync::Arc;
use std::task::{Context, Poll};

/// The layer: the routes below wait for the open hour's first load when they need it.
#[derive(Clone)]
pub struct LoadingLayer(pub Arc<Service>);

impl<S> tower::Layer<S> for LoadingLayer {
    type Service = Loading<S>;

    fn layer(&self, inner: S) -> Loading<S> {
        Loading {
            inner,
            service: self.0.clone(),
        }
    }
}

/// The service of [`LoadingLayer`].
#[derive(Clone)]
pub struct Loading<S> {
    inner: S,
    service: Arc<Service>,
}

impl<S> tower::Service<Request> for Loading<S>
where
    S: tower::Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let service = &self.service;
        if service.is_loaded() || !needs_open_hour(service, request.uri().path()) {
            return Either::Left(self.inner.call(request));
        }
        // The service below was made ready for this request: it takes this one, and a
        // fresh copy stays for the next.
        let inner = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, inner);
        let service = service.clone();
        Either::Right(Box::pin(async move {
            service.wait_loaded().await;
            ready.call(request).await
        }))
    }
}

/// Everything but health, metrics and hours before the current one reads or writes the
/// open hour (ingest, the index, the open hour, unions ending now).
fn needs_open_hour(service: &Service, path: &str) -> bool {
    if matches!(path, "/healthz" | "/metrics") {
        return false;
    }
    match filter_path(path) {
        Ok((Target::Hour(hour), _)) => hour >= service.current_hour(),
        _ => true,
    }
}
