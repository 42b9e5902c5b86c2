//! `GET /events`: Server-Sent Events for each new version of the open hour and each
//! sealed hour, resumable with `Last-Event-ID`, bounded in subscribers.

use crate::helpers::*;
use crate::wait::HANG;
use axum::body::Body;
use axum::http::Request;
use chrono::Duration;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// One event as the stream sent it.
#[derive(Debug, Clone)]
struct Event {
    id: Option<String>,
    kind: String,
    data: serde_json::Value,
}

/// An open stream, read event by event.
struct Stream {
    body: Body,
    buffer: String,
    retry: Option<u64>,
}

impl Stream {
    async fn open(app: &TestApp, last_event_id: Option<&str>) -> Stream {
        let mut request = Request::get("/events");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = app
            .router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers();
        assert_eq!(headers["content-type"], "text/event-stream");
        assert_eq!(headers["cache-control"], "no-store");
        Stream {
            body: response.into_body(),
            buffer: String::new(),
            retry: None,
        }
    }

    /// The next event (comments and `retry:` noted on the way).
    async fn next(&mut self) -> Event {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event {
                    id: None,
                    kind: "message".into(),
                    data: serde_json::Value::Null,
                };
                let mut saw_field = false;
                for line in block.lines() {
                    if line.starts_with(':') {
                        // A heartbeat.
                    } else if let Some(v) = line.strip_prefix("retry: ") {
                        self.retry = Some(v.parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                        saw_field = true;
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event.kind = v.to_owned();
                        saw_field = true;
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        event.data = serde_json::from_str(v).unwrap();
                        saw_field = true;
                    }
                }
                if saw_field {
                    return event;
                }
                continue;
            }
            let frame = tokio::time::timeout(HANG, self.body.frame())
                .await
                .expect("the stream sent nothing for a minute")
                .expect("the stream ended")
                .unwrap();
            let data = frame.into_data().unwrap();
            self.buffer.push_str(std::str::from_utf8(&data).unwrap());
        }
    }

    /// Events until one of `kind` whose data satisfies `want`.
    async fn until(&mut self, kind: &str, want: impl Fn(&serde_json::Value) -> bool) -> Event {
        loop {
            let event = self.next().await;
            if event.kind == kind && want(&event.data) {
                return event;
            }
        }
    }
}

#[tokio::test]
async fn a_subscriber_hears_of_each_new_version_and_each_seal() {
    let app = TestApp::spawn().await;
    let mut stream = Stream::open(&app, None).await;
    let first = stream.next().await;
    assert_eq!(
        stream.retry,
        Some(2000),
        "the stream says its reconnection time first"
    );
    assert_eq!(first.kind, "version");
    assert_eq!(first.data["hour"], "2008-09-03T13:00:00Z");
    assert_eq!(first.data["count"], 0);
    assert_eq!(first.id.as_deref(), Some("2008090313-0"));

    app.ingest(&["a", "b"]).await;
    let version = stream.until("version", |d| d["count"] == 2).await;
    assert_eq!(version.id.as_deref(), Some("2008090313-2"));
    assert_eq!(version.data["path"], "/2008/09/03/13");
    // The event names the version a poll then gets.
    let polled = app.get("/2008/09/03/13.bin").await;
    assert_eq!(
        version.data["etag"].as_str(),
        polled.header("etag"),
        "the event's etag is the .bin form's"
    );

    app.clock.advance(Duration::hours(1));
    app.service.tick().await.unwrap();
    let sealed = stream.next().await;
    assert_eq!(sealed.kind, "sealed");
    assert_eq!(sealed.id.as_deref(), Some("2008090313-sealed"));
    assert_eq!(sealed.data["count"], 2);
    let chain = app.get("/chain/2008/09/03/13").await.json();
    assert_eq!(sealed.data["digest"], chain[0]["digest"]);
    assert_eq!(sealed.data["header"], chain[0]["header"]);
    let next = stream.next().await;
    assert_eq!(
        (next.kind.as_str(), next.data["hour"].as_str()),
        ("version", Some("2008-09-03T14:00:00Z"))
    );
}

#[tokio::test]
async fn last_event_id_resumes_without_a_gap() {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    let mut stream = Stream::open(&app, None).await;
    let seen = stream.until("version", |d| d["count"] == 1).await;
    drop(stream);
    // While the client is away: more IDs, two seals.
    app.ingest(&["b"]).await;
    app.clock.advance(Duration::hours(1));
    app.ingest(&["c"]).await;
    app.clock.advance(Duration::hours(1));
    app.service.tick().await.unwrap();
    let mut stream = Stream::open(&app, seen.id.as_deref()).await;
    let kinds: Vec<(String, Option<String>)> = [
        stream.next().await,
        stream.next().await,
        stream.next().await,
    ]
    .into_iter()
    .map(|e| (e.kind, e.id))
    .collect();
    assert_eq!(
        kinds,
        [
            ("sealed".into(), Some("2008090313-sealed".into())),
            ("sealed".into(), Some("2008090314-sealed".into())),
            ("version".into(), Some("2008090315-0".into())),
        ]
    );
}

#[tokio::test]
async fn an_id_it_cannot_resume_from_gets_one_reset_then_the_current_version() {
    let app = TestApp::spawn_with(|s| s.events_resume_hours = 2).await;
    for id in ["not-an-id", "2008090308-5"] {
        let mut stream = Stream::open(&app, Some(id)).await;
        let reset = stream.next().await;
        assert_eq!(reset.kind, "reset", "{id}");
        assert_eq!(reset.id, None, "a reset moves no position");
        assert_eq!(reset.data["index"], "/");
        assert!(reset.data["reason"].as_str().unwrap().contains(id));
        let version = stream.next().await;
        assert_eq!(version.id.as_deref(), Some("2008090313-0"));
    }
}

#[tokio::test]
async fn idle_streams_get_heartbeats() {
    let app = TestApp::spawn_with(|s| s.events_heartbeat_seconds = 1).await;
    let mut stream = Stream::open(&app, None).await;
    stream.next().await;
    // Nothing changes: what comes next is a comment line, no event.
    let frame = tokio::time::timeout(HANG, stream.body.frame())
        .await
        .expect("no heartbeat for a minute")
        .expect("the stream ended")
        .unwrap();
    assert_eq!(&frame.into_data().unwrap()[..], b":\n\n");
}

#[tokio::test]
async fn past_the_limit_a_subscriber_is_answered_busy() {
    let app = TestApp::spawn_with(|s| s.events_max_subscribers = 1).await;
    let _held = Stream::open(&app, None).await;
    let refused = app.get("/events").await;
    refused.assert_error(503, "busy");
    assert!(refused.header("retry-after").is_some());
    assert!(refused.json()["message"]
        .as_str()
        .unwrap()
        .contains("events_max_subscribers"));
}

#[tokio::test]
async fn a_page_of_another_origin_may_resume_the_stream() {
    let app = TestApp::spawn().await;
    let preflight = app
        .request(
            Request::builder()
                .method("OPTIONS")
                .uri("/events")
                .header("origin", "https://reader.example")
                .header("access-control-request-method", "GET")
                .header("access-control-request-headers", "last-event-id")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    let allowed = preflight.header("access-control-allow-headers").unwrap();
    assert!(allowed.contains("last-event-id"), "{allowed}");
}

#[tokio::test]
async fn streams_count_against_the_memory_budget() {
    // 1 MiB: a quarter holds 16 streams of 16 KiB, whatever events_max_subscribers asks.
    let app = TestApp::spawn_with(|s| {
        s.cache_bytes = 1 << 20;
        s.events_max_subscribers = 100;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(Stream::open(&app, None).await);
    }
    let stats = app.get("/stats").await.json();
    let part = &stats["memory"]["parts"]["followers"];
    assert_eq!(part["budget_bytes"], 256 * 1024);
    assert_eq!(part["bytes"], 16 * 16 * 1024, "16 KiB a stream");
    assert_eq!(stats["events"]["max_subscribers"], 16);
    app.get("/events").await.assert_error(503, "busy");
    drop(held.pop());
    // A stream's slot is free once its body is dropped.
    held.push(Stream::open(&app, None).await);
}
