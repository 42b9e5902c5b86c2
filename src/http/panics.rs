//! Panic containment, one layer of the application's stack ([`mod@super::app`]): a panic
//! while a request is called or its response future polled is answered 500 `internal`
//! ([`super::meta::panicked`]) and logged, never a dropped connection.
//!
//! tower-http's `CatchPanicLayer` does the same, but boxes every response body into its
//! own type, which the stack then boxes back into axum's `Body`: two allocations and two
//! levels of indirection per response on the read path. This layer keeps the body as it
//! is (docs/BENCHMARKS.md, "Keep or delete", has the two measured in one run).

use super::meta::panicked;
use axum::extract::Request;
use axum::response::Response;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Contains the panics of the service below it.
#[derive(Clone, Copy)]
pub struct ContainLayer;

impl<S> tower::Layer<S> for ContainLayer {
    type Service = Contain<S>;

    fn layer(&self, inner: S) -> Contain<S> {
        Contain { inner }
    }
}

/// The service of [`ContainLayer`].
#[derive(Clone)]
pub struct Contain<S> {
    inner: S,
}

impl<S> tower::Service<Request> for Contain<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Contained<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Unwind safety: shared state below guards against half-finished updates (its
        // locks recover from poisoning, src/sync.rs), and `inner` is used again only as
        // a clone would be.
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => Contained::Running { future },
            Err(panic) => Contained::Panicked {
                response: Some(panicked(panic)),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Contain`].
    #[project = ContainedProj]
    pub enum Contained<F> {
        Running { #[pin] future: F },
        Panicked { response: Option<Response> },
    }
}

impl<F> Future for Contained<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            ContainedProj::Running { future } => {
                match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                    Ok(poll) => poll,
                    Err(panic) => Poll::Ready(Ok(panicked(panic))),
                }
            }
            ContainedProj::Panicked { response } => {
                Poll::Ready(Ok(response.take().expect("polled after completion")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::{Layer as _, ServiceExt as _};

    async fn status_of<S>(service: S) -> (StatusCode, String)
    where
        S: tower::Service<Request, Response = Response, Error = Infallible>,
    {
        let response = ContainLayer
            .layer(service)
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_panic_when_called_or_polled_is_a_500_and_other_responses_pass_through() {
        let in_call =
            tower::service_fn(|_: Request| -> std::future::Ready<_> { panic!("in call") });
        let (status, body) = status_of(in_call).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(body.contains(r#""error":"internal""#), "{body}");

        let in_poll = tower::service_fn(|_: Request| async {
            if true {
                panic!("in poll");
            }
            Ok::<Response, Infallible>(Response::new(Body::empty()))
        });
        let (status, body) = status_of(in_poll).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(body.contains(r#""error":"internal""#), "{body}");

        let fine = tower::service_fn(|_: Request| async {
            Ok::<_, Infallible>(Response::new(Body::from("fine")))
        });
        assert_eq!(status_of(fine).await, (StatusCode::OK, "fine".to_owned()));
    }
}
