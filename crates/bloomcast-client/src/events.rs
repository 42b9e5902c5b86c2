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

/// An open event stream.
#[derive(Debug)]
pub struct EventStream {
    response: reqwest::Response,
    parser: Parser,
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
        Ok(Some(EventStream {
            response,
            parser: Parser {
                last_id: last_event_id.map(str::to_owned),
                ..Parser::default()
            },
        }))
    }
}

impl EventStream {
    /// The next event; `Ok(None)` once the server ended the stream.
    ///
    /// # Errors
    /// Transport errors, and [`ClientError::Protocol`] when nothing came for [`IDLE`].
    pub async fn next(&mut self) -> Result<Option<ServerEvent>> {
        loop {
            if let Some(event) = self.parser.next_event() {
                return Ok(Some(event));
            }
            let chunk = tokio::time::timeout(IDLE, self.response.chunk())
                .await
                .map_err(|_| {
                    ClientError::Protocol(format!(
                        "the event stream sent nothing for {} s, not even a heartbeat",
                        IDLE.as_secs()
                    ))
                })??;
            match chunk {
                Some(bytes) => self.parser.feed(&bytes),
                None => return Ok(None),
            }
        }
    }

    /// The id to resume after (`Last-Event-ID`), if any event had one.
    pub fn last_event_id(&self) -> Option<&str> {
        self.parser.last_id.as_deref()
    }

    /// The reconnection time the server asked for (`retry:`), if it did.
    pub fn retry(&self) -> Option<Duration> {
        self.parser.retry
    }
}

/// The event-stream parser of WHATWG HTML ("Interpreting an event stream"), fed bytes
/// as they arrive.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Vec<u8>,
    /// A CR ended the last line: an LF right after it belongs to it.
    after_cr: bool,
    data: String,
    has_data: bool,
    kind: String,
    last_id: Option<String>,
    retry: Option<Duration>,
    ready: std::collections::VecDeque<ServerEvent>,
}

impl Parser {
    /// Takes `bytes` of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.line(),
                b'\r' => {
                    self.line();
                    self.after_cr = true;
                }
                _ => self.pending.push(b),
            }
        }
    }

    /// The next complete event, if any.
    pub fn next_event(&mut self) -> Option<ServerEvent> {
        self.ready.pop_front()
    }

    fn line(&mut self) {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.kind = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => {
                self.last_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok().map(Duration::from_millis);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        let kind = std::mem::take(&mut self.kind);
        if !self.has_data {
            return;
        }
        self.has_data = false;
        self.ready.push_back(ServerEvent {
            kind: if kind.is_empty() {
                "message".into()
            } else {
                kind
            },
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> (Vec<ServerEvent>, Parser) {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk);
            while let Some(e) = parser.next_event() {
                out.push(e);
            }
        }
        (out, parser)
    }

    #[test]
    fn reads_the_servers_events_split_anywhere() {
        let stream = b"retry: 2000\n\nid: 2008090313-0\nevent: version\ndata: {\"count\":0}\n\n:\n\nevent: reset\ndata: {}\n\n";
        for split in 0..stream.len() {
            let (got, parser) = events(&[&stream[..split], &stream[split..]]);
            assert_eq!(parser.retry, Some(Duration::from_millis(2000)));
            assert_eq!(
                got,
                [
                    ServerEvent {
                        kind: "version".into(),
                        data: "{\"count\":0}".into(),
                        id: Some("2008090313-0".into())
                    },
                    ServerEvent {
                        kind: "reset".into(),
                        data: "{}".into(),
                        id: Some("2008090313-0".into())
                    },
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn follows_the_standards_line_rules() {
        // CRLF and CR line ends, data on several lines, a field without a colon, no
        // space after the colon, an event without data (not dispatched), an unknown field.
        let (got, _) = events(&[
            b"data:a\r\ndata: b\rdata\r\nfoo: x\n\nevent: x\n\n",
            b"data: c\n\n",
        ]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].data, "a\nb\n");
        assert_eq!(got[0].kind, "message");
        assert_eq!(
            got[1].kind, "message",
            "the type of an event without data is dropped"
        );
        assert_eq!(got[1].data, "c");
    }
}
