//! A layer that looks at each request before the service below it and either lets it
//! through (marked, if it must be) or answers it there: what `axum::middleware::
//! map_request` does, with the response future a plain `Either` rather than a boxed
//! future and a boxed copy of the service below for every request. The router's request
//! checks are guards ([`super::params`], [`super::timeouts::stamp`]).

use axum::extract::Request;
use axum::response::Response;
use futures_util::future::Either;
use std::future::{ready, Ready};
use std::task::{Context, Poll};

/// The layer: `check` sees each request and answers it (`Some`) or lets it through.
#[derive(Clone, Copy)]
pub struct Guard<F>(pub F);

impl<S, F: Clone> tower::Layer<S> for Guard<F> {
    type Service = Guarded<S, F>;

    fn layer(&self, inner: S) -> Guarded<S, F> {
        Guarded {
            inner,
            check: self.0.clone(),
        }
    }
}

/// The service of [`Guard`].
#[derive(Clone, Copy)]
pub struct Guarded<S, F> {
    inner: S,
    check: F,
}

impl<S, F> tower::Service<Request> for Guarded<S, F>
where
    S: tower::Service<Request, Response = Response>,
    F: Fn(&mut Request) -> Option<Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        match (self.check)(&mut request) {
            Some(answer) => Either::Left(ready(Ok(answer))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use tower::{ServiceBuilder, ServiceExt};

    #[tokio::test]
    async fn a_guard_answers_or_passes_the_request_on_marked() {
        #[derive(Clone)]
        struct Mark;
        let below = tower::service_fn(|request: Request| async move {
            let marked = request.extensions().get::<Mark>().is_some();
            Ok::<_, std::convert::Infallible>(Response::new(format!("{marked}").into()))
        });
        let guarded = ServiceBuilder::new()
            .layer(Guard(|request: &mut Request| {
                if request.uri().path() == "/no" {
                    let mut refused = Response::default();
                    *refused.status_mut() = StatusCode::FORBIDDEN;
                    return Some(refused);
                }
                request.extensions_mut().insert(Mark);
                None
            }))
            .service(below);
        let get = |path: &str| Request::get(path).body(axum::body::Body::empty()).unwrap();
        let refused = guarded.oneshot(get("/no")).await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let passed = guarded.oneshot(get("/yes")).await.unwrap();
        assert_eq!(passed.status(), StatusCode::OK);
        let body = axum::body::to_bytes(passed.into_body(), 16).await.unwrap();
        assert_eq!(&body[..], b"true", "the service below saw the guard's mark");
    }
}
