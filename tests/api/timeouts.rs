//! The request timeout says whose side was slow: 408 for a client still sending its
//! body, 503 `timeout` with `Retry-After` for a request received whole whose answer the
//! server did not have in time. Each case is held deterministically (a body that never
//! ends, a union build stopped at a gate); only the 1 s timeout takes real time.

use crate::helpers::*;
use crate::wrapped::Wrapped;
use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use bloomcast::clock::ManualClock;
use bloomcast::store::{SqliteStore, Store};
use hyper::body::Frame;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// An app over a store wrapped for fault injection, at 13:10, with a 1 s request timeout.
async fn spawn_wrapped() -> (TestApp, Arc<Wrapped>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let clock = ManualClock::at(start_hour(), chrono::Duration::minutes(10));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path(), start_hour()).unwrap());
    let wrapped = Wrapped::new(store);
    let mut settings = settings(dir.path().to_owned());
    settings.request_timeout_seconds = 1;
    let app = TestApp::build_with_store(settings, clock, wrapped.clone(), Some(dir)).await;
    app.service.wait_loaded().await;
    (app, wrapped)
}

#[tokio::test]
async fn a_read_whose_build_outlives_the_timeout_is_answered_503_timeout_not_408() {
    let (app, wrapped) = spawn_wrapped().await;
    app.ingest(&["a"]).await;
    app.next_hour().await; // 13:00 sealed
    wrapped.keys_gate.arm(); // the union build stops reading 13's keys, until released

    let slow = app.get("/since/2008/09/03/13").await;

    slow.assert_error(503, "timeout");
    assert_eq!(slow.header("retry-after"), Some("5"));
    assert_eq!(slow.header("cache-control"), Some("no-store"));
    assert!(
        slow.json()["message"].as_str().unwrap().contains("retry"),
        "{}",
        slow.json()
    );
    // The retry the answer asks for succeeds once the server has caught up.
    wrapped.keys_gate.release();
    let (meta, filter) = app.filter("/since/2008/09/03/13").await;
    assert!(meta.count >= 1 && filter.contains("a"));
}

/// A request body that sends its first part, then nothing more, ever.
struct Stalled(Option<Bytes>);

impl hyper::body::Body for Stalled {
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
async fn an_ingest_body_that_stops_arriving_is_still_answered_408_and_recorded_nowhere() {
    let (app, _wrapped) = spawn_wrapped().await;
    let request = Request::post("/updates")
        .header("content-type", "text/plain")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::new(Stalled(Some(Bytes::from_static(
            b"late-1\nlate-",
        )))))
        .unwrap();

    let reply = app.request(request).await;

    reply.assert_error(408, "timeout");
    assert!(reply.header("retry-after").is_none());
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!(meta.count, 0);
    assert!(!filter.contains("late-1"));
    assert_eq!(app.get("/healthz").await.status, StatusCode::OK);
}
