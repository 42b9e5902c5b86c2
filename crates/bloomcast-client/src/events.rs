//! Following a server's changes as they happen: `GET /events`, Server-Sent Events
//! (WHATWG HTML, "Server-sent events"; docs/PROTOCOL.md, "Following changes").
//!
//! An event says that something newer exists (a version of the open hour, a sealed
//! hour); it carries no filter bytes. A follower fetches the hour on each event as it
//! would poll it, so what it trusts is what it fetched and verified.

use super::{fetch, Client, ClientError, Result};
use reqwest::StatusCode;
use std::time::Duration;

/// A stream that sends nothing, not even its heartbeat comment (every 30 s by default),
/// for this long is taken for dead.
pub const IDLE: Duration = Duration::from_secs(90);

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEvent {
    /// `version`, `sealed`, `reset` (or `message` for an event without a type).
    pub kind: String,
    /// Its `data`, lines joined with `\n` (a JSON object for this server's events).
    pub data: String,
    /// The last event id after this event (its own, or the one before when it had none).
    pub id: Option<String>,
}

impl ServerEvent {
    /// The data as JSON.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when it is not JSON.
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_str(&self.data).map_err(|e| {
            ClientError::Protocol(format!("{} event's data is not JSON: {e}", self.kind))
        })
    }
}

/// The bytes of a response, as the parser reads them.
type Bytes = futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>;

/// An open event stream.
pub struct EventStream {
    events: eventsource_stream::EventStream<Bytes>,
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("last_id", &self.last_id)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Opens the server's event stream, resuming after `last_event_id` when given;
    /// `Ok(None)` when the server has none (`404`: a static mirror, an older server):
    /// poll instead.
    ///
    /// # Errors
    /// Transport errors and error statuses (`503 busy` past the server's subscriber
    /// limit, with its `Retry-After`).
    pub async fn events(&self, last_event_id: Option<&str>) -> Result<Option<EventStream>> {
        let mut request = self
            .http
            .get(format!("{}/events", self.base))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            // The stream lasts; [`IDLE`] bounds a silent one instead.
            .timeout(Duration::from_secs(365 * 24 * 3600));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = self.send(request).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = fetch::check(response).await?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            // Something answers at /events that is not an event stream: none here.
            return Ok(None);
        }
        use eventsource_stream::Eventsource as _;
        use futures_util::StreamExt as _;
        Ok(Some(EventStream {
            events: response.bytes_stream().boxed().eventsource(),
            last_id: last_event_id.map(str::to_owned),
            retry: None,
        }))
    }
}

impl EventStream {
    /// The next event; `Ok(None)` once the server ended the stream.
    ///
    /// # Errors
    /// Transport errors, a stream that is not UTF-8, and [`ClientError::Protocol`] when
    /// nothing came for [`IDLE`].
    pub async fn next(&mut self) -> Result<Option<ServerEvent>> {
        use futures_util::StreamExt as _;
        let next = tokio::time::timeout(IDLE, self.events.next())
            .await
            .map_err(|_| {
                ClientError::Protocol(format!(
                    "the event stream sent nothing for {} s, not even a heartbeat",
                    IDLE.as_secs()
                ))
            })?;
        let event = match next {
            None => return Ok(None),
            Some(Ok(event)) => event,
            Some(Err(eventsource_stream::EventStreamError::Transport(e))) => return Err(e.into()),
            Some(Err(e)) => return Err(ClientError::Protocol(format!("event stream: {e}"))),
        };
        if let Some(retry) = event.retry {
            self.retry = Some(retry);
        }
        self.last_id = (!event.id.is_empty())
            .then(|| event.id.clone())
            .or(self.last_id.take());
        Ok(Some(ServerEvent {
            kind: event.event,
            data: event.data,
            id: self.last_id.clone(),
        }))
    }

    /// The id to resume after (`Last-Event-ID`), if any event had one.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the server asked for (`retry:`), if it did.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server answering one request with `status` and `body` (an event stream when 200).
    async fn answering(status: &'static str, body: &'static str) -> Client {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 2048];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            // In two pieces, split inside an event.
            let (a, b) = body.split_at(body.len() / 2);
            socket.write_all(a.as_bytes()).await.unwrap();
            socket.flush().await.unwrap();
            socket.write_all(b.as_bytes()).await.unwrap();
        });
        Client::new(&format!("http://{addr}")).unwrap()
    }

    #[tokio::test]
    async fn reads_the_servers_events_with_their_ids_and_retry() {
        let body = "retry: 2000\nid: 2008090313-0\nevent: version\ndata: {\"count\":0}\n\n:\n\n\
                    event: reset\ndata: {\"index\":\"/\"}\n\nid: 2008090313-sealed\r\nevent: sealed\r\ndata: {}\r\n\r\n";
        let client = answering("200 OK", body).await;
        let mut stream = client.events(Some("2008090312-4")).await.unwrap().unwrap();
        assert_eq!(stream.last_event_id(), Some("2008090312-4"));
        let version = stream.next().await.unwrap().unwrap();
        assert_eq!(
            (version.kind.as_str(), version.id.as_deref()),
            ("version", Some("2008090313-0"))
        );
        assert_eq!(version.json().unwrap()["count"], 0);
        assert_eq!(stream.retry(), Some(Duration::from_millis(2000)));
        let reset = stream.next().await.unwrap().unwrap();
        assert_eq!(reset.kind, "reset");
        assert_eq!(
            reset.id.as_deref(),
            Some("2008090313-0"),
            "an event without an id keeps the last"
        );
        let sealed = stream.next().await.unwrap().unwrap();
        assert_eq!(
            sealed.id.as_deref(),
            Some("2008090313-sealed"),
            "CRLF lines too"
        );
        assert_eq!(stream.last_event_id(), Some("2008090313-sealed"));
        assert!(
            stream.next().await.unwrap().is_none(),
            "the end of the stream"
        );
    }

    #[tokio::test]
    async fn a_server_without_a_stream_is_told_apart() {
        let client = answering("404 Not Found", "").await;
        assert!(client.events(None).await.unwrap().is_none());
    }
}
