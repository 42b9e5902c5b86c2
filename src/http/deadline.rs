//! The whole-request timeout (`request_timeout_seconds`), and whose fault it was.
//!
//! A request still unanswered when the timeout runs out is answered at once, and its
//! handler dropped. The status says who was slow: `408` `timeout` when the client was
//! still sending its body (it must send faster or in smaller parts), `503` `timeout` with
//! `Retry-After` when the server had the whole request (a `GET` has nothing to wait for)
//! and its own work outlived the timeout: the client did nothing wrong and may retry.
//! Which case it is comes from the body itself, wrapped to note when its last byte was
//! read.

use super::error::ApiError;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// Answers a request that takes longer than the duration: 408 or 503 (see the module).
#[derive(Clone, Copy)]
pub struct DeadlineLayer(pub Duration);

impl<S> tower::Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline {
            inner,
            timeout: self.0,
        }
    }
}

/// The service of [`DeadlineLayer`].
#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
    timeout: Duration,
}

impl<S> tower::Service<Request> for Deadline<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Timed<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let (parts, body) = request.into_parts();
        // A request without a body (no length, or length 0) was received whole with its
        // head; only a body still to come needs watching.
        let (body, received) = if body.is_end_stream() {
            (body, None)
        } else {
            let received = Arc::new(AtomicBool::new(false));
            let body = Body::new(Watched {
                inner: body,
                received: received.clone(),
            });
            (body, Some(received))
        };
        Timed {
            inner: self.inner.call(Request::from_parts(parts, body)),
            sleep: tokio::time::sleep(self.timeout),
            received,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Deadline`].
    pub struct Timed<F> {
        #[pin]
        inner: F,
        #[pin]
        sleep: Sleep,
        // Set once the body's last byte was read; `None`: the request had no body.
        received: Option<Arc<AtomicBool>>,
    }
}

impl<F> Future for Timed<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(response) = this.inner.poll(cx) {
            return Poll::Ready(response);
        }
        std::task::ready!(this.sleep.poll(cx));
        let received = this
            .received
            .as_ref()
            .is_none_or(|flag| flag.load(Ordering::Acquire));
        let error = if received {
            // The server's own slowness: worth an operator's attention, unlike a slow client.
            tracing::warn!("a request received whole was not answered within the request timeout; answered 503");
            ApiError::ServerTimeout
        } else {
            ApiError::Timeout
        };
        Poll::Ready(Ok(error.into_response()))
    }
}

pin_project_lite::pin_project! {
    /// A request body that notes when it has been read to its end.
    struct Watched {
        #[pin]
        inner: Body,
        received: Arc<AtomicBool>,
    }
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let mut this = self.project();
        let frame = std::task::ready!(this.inner.as_mut().poll_frame(cx));
        // The end is either the frame after the last (`None`) or, for a body of known
        // length, the last frame itself: a reader that stops at the length never asks
        // for the one after.
        if frame.is_none() || (matches!(frame, Some(Ok(_))) && this.inner.is_end_stream()) {
            this.received.store(true, Ordering::Release);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;
    use tower::{service_fn, Layer as _, ServiceExt as _};

    // The handler never answers and the stalled body never ends, so each outcome is
    // certain; only when it comes depends on the clock.

    /// A handler that reads its body to the end, then never answers.
    async fn reads_then_hangs(request: Request) -> Result<Response, Infallible> {
        let _ = request.into_body().collect().await;
        std::future::pending().await
    }

    async fn answer(request: Request) -> (u16, serde_json::Value, Option<String>) {
        let service = DeadlineLayer(Duration::from_millis(100)).layer(service_fn(reads_then_hangs));
        let response = service.oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let retry = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&body).unwrap(), retry)
    }

    #[tokio::test]
    async fn a_request_received_whole_that_outlives_the_timeout_is_the_servers_fault() {
        let get = Request::get("/x").body(Body::empty()).unwrap();
        let (status, json, retry) = answer(get).await;
        assert_eq!((status, json["error"].as_str()), (503, Some("timeout")));
        assert!(retry.is_some());

        let post = Request::post("/x").body(Body::from("a\nb\n")).unwrap();
        let (status, json, _) = answer(post).await;
        assert_eq!((status, json["error"].as_str()), (503, Some("timeout")));
    }

    /// A body that sends its first part, then nothing more, ever.
    struct Stalled(Option<Bytes>);

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.0.take() {
                Some(part) => Poll::Ready(Some(Ok(Frame::data(part)))),
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test]
    async fn a_body_still_arriving_when_the_timeout_runs_out_is_the_clients_fault() {
        let body = Body::new(Stalled(Some(Bytes::from_static(b"first part\n"))));
        let (status, json, retry) = answer(Request::post("/x").body(body).unwrap()).await;
        assert_eq!((status, json["error"].as_str()), (408, Some("timeout")));
        assert!(retry.is_none());
    }
}
