//! `GET /events`: changes pushed as Server-Sent Events (WHATWG HTML, "Server-sent
//! events"), so a follower learns of a new version of the open hour, or of a sealed
//! hour, within a second instead of at its next poll.
//!
//! One task per node makes the events ([`Events::publisher`]): it wakes on the
//! service's change signal, at most once per `events_min_interval` (a second), reads
//! the open hour's version and any newly sealed hours, formats each event once and
//! publishes the lot as one [`Feed`] on a `watch` channel. A subscriber's stream keeps
//! only its position (the last event id it sent) and sends what the newest feed holds
//! past it, so events fold (a slow subscriber skips versions, never seals) and a stream
//! costs a `watch` receiver, a timer and its connection.
//!
//! Event ids order the events: `YYYYMMDDHH-COUNT` for a version of an hour with COUNT
//! distinct IDs, `YYYYMMDDHH-sealed` for its seal (after all its versions). A client
//! that reconnects with `Last-Event-ID` gets every seal after that position within
//! `events_resume_hours`, then the open hour's version if newer: no gap. An id older
//! than that window, or one not of this form, gets one `reset` event (re-read the
//! index) and the current version. The protocol is in PROTOCOL.md ("Following changes").

use super::error::{ApiError, Result};
use super::AppState;
use crate::hour::Hour;
use crate::render::{Encodings, RawFields, Repr};
use crate::service::{SealedNote, Service, Target};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

/// How events are served (settings `events_*`).
#[derive(Debug, Clone, Copy)]
pub struct EventSettings {
    /// Streams open at once; past it `503 busy` with `Retry-After`.
    pub max_subscribers: usize,
    /// A comment line this often keeps proxies from closing an idle stream.
    pub heartbeat: Duration,
    /// Hours back a `Last-Event-ID` resumes from without a `reset`.
    pub resume_hours: u64,
    /// Events are made at most this often (a version per interval at most).
    pub min_interval: Duration,
    /// The reconnection time told to clients (`retry:`).
    pub retry: Duration,
}

impl Default for EventSettings {
    fn default() -> EventSettings {
        EventSettings {
            max_subscribers: 10_000,
            heartbeat: Duration::from_secs(30),
            resume_hours: 24,
            min_interval: Duration::from_secs(1),
            retry: Duration::from_secs(2),
        }
    }
}

/// The node's events: the newest feed, the subscribers' slots, the publisher (started
/// with the first subscriber).
pub struct Events {
    settings: EventSettings,
    feed: watch::Sender<Arc<Feed>>,
    slots: Arc<Semaphore>,
    started: OnceLock<()>,
}

/// What every subscriber is sent from: each event formatted once.
#[derive(Debug, Default)]
pub struct Feed {
    /// The open hour's newest version.
    open: Option<(Position, Bytes)>,
    /// Seals within the resume window, oldest first.
    seals: VecDeque<(Position, Bytes)>,
    /// The oldest hour a `Last-Event-ID` may name without a reset.
    window_from: Option<Hour>,
    /// The server is stopping: every stream ends.
    closing: bool,
}

/// Where an event stands in the order of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Position {
    Version(Hour, u64),
    /// Ordered after every version of its hour: `Sealed` compares by hour first.
    Sealed(Hour),
}

impl Position {
    fn key(self) -> (Hour, u8, u64) {
        match self {
            Position::Version(h, c) => (h, 0, c),
            Position::Sealed(h) => (h, 1, 0),
        }
    }

    fn hour(self) -> Hour {
        self.key().0
    }

    fn id(self) -> String {
        let stamp = |h: Hour| h.start().format("%Y%m%d%H").to_string();
        match self {
            Position::Version(h, c) => format!("{}-{c}", stamp(h)),
            Position::Sealed(h) => format!("{}-sealed", stamp(h)),
        }
    }

    /// The position an event id names; `None` for one not of this server's form.
    fn parse(id: &str) -> Option<Position> {
        let (stamp, rest) = id.split_once('-')?;
        if stamp.len() != 10 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let hour =
            Hour::from_parts(&stamp[0..4], &stamp[4..6], &stamp[6..8], &stamp[8..10]).ok()?;
        if rest == "sealed" {
            return Some(Position::Sealed(hour));
        }
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Position::Version(hour, rest.parse().ok()?))
    }
}

/// One event on the wire.
fn event(kind: &str, id: Option<Position>, data: &serde_json::Value) -> Bytes {
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str("id: ");
        text.push_str(&id.id());
        text.push('\n');
    }
    text.push_str("event: ");
    text.push_str(kind);
    text.push_str("\ndata: ");
    text.push_str(&data.to_string());
    text.push_str("\n\n");
    Bytes::from(text)
}

fn sealed_event(note: &SealedNote) -> (Position, Bytes) {
    let position = Position::Sealed(note.hour);
    let data = json!({
        "hour": note.hour.rfc3339(),
        "path": note.hour.path(),
        "count": note.count,
        "digest": hex::encode(note.digest),
        "header": hex::encode(note.header),
        "chain": format!("/chain{}", note.hour.path()),
    });
    (position, event("sealed", Some(position), &data))
}

impl Events {
    pub fn new(settings: EventSettings) -> Events {
        Events {
            settings,
            feed: watch::Sender::new(Arc::new(Feed::default())),
            slots: Arc::new(Semaphore::new(settings.max_subscribers)),
            started: OnceLock::new(),
        }
    }

    /// Streams open now.
    pub fn subscribers(&self) -> usize {
        self.settings
            .max_subscribers
            .saturating_sub(self.slots.available_permits())
    }

    /// Streams this node keeps open at most (`events_max_subscribers`).
    pub fn max_subscribers(&self) -> usize {
        self.settings.max_subscribers
    }

    /// Ends every stream (the server is stopping: a stream would hold its connection
    /// open through the drain).
    pub fn close(&self) {
        self.feed.send_modify(|feed| {
            *feed = Arc::new(Feed {
                closing: true,
                ..Feed::default()
            });
        });
        self.slots.close();
    }

    /// Starts the publisher on first use.
    fn start(self: &Arc<Self>, service: &Arc<Service>) {
        self.started.get_or_init(|| {
            tokio::spawn(publisher(Arc::downgrade(self), service.clone()));
        });
    }
}

/// Makes the feed: once at start, then after each change, at most once per interval.
async fn publisher(events: std::sync::Weak<Events>, service: Arc<Service>) {
    let mut changes = service.hours().changes();
    let mut seals: VecDeque<(Position, Bytes)> = VecDeque::new();
    loop {
        let Some(strong) = events.upgrade() else {
            return;
        };
        if strong.feed.borrow().closing {
            return;
        }
        let settings = strong.settings;
        changes.borrow_and_update();
        match make_feed(&service, &settings, &mut seals).await {
            Ok(feed) => {
                strong.feed.send_replace(Arc::new(feed));
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot make the events feed; trying at the next change")
            }
        }
        drop(strong);
        tokio::time::sleep(settings.min_interval).await;
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The feed now: the open hour's version (its `.bin` form's ETag and count, the
/// dictionary a delta is made against) and the seals of the window.
async fn make_feed(
    service: &Arc<Service>,
    settings: &EventSettings,
    seals: &mut VecDeque<(Position, Bytes)>,
) -> std::result::Result<Feed, crate::service::ServiceError> {
    let now = service.current_hour();
    let window_from =
        Hour::from_index(now.index() - settings.resume_hours as i64).max(service.genesis());
    while seals.front().is_some_and(|(p, _)| p.hour() < window_from) {
        seals.pop_front();
    }
    let newest = seals.back().map(|(p, _)| p.hour());
    // Hours before the open one not yet told of: read (a query per change at most,
    // and only until the hour before the open one is sealed).
    if newest.is_none_or(|h| h.next() < now) {
        let from = newest.map_or(window_from, Hour::next);
        let notes = service
            .hours()
            .sealed_notes(from, (now.index() - from.index()).max(1) as usize)
            .await?;
        seals.extend(notes.iter().filter(|n| n.hour < now).map(sealed_event));
    }
    let view = service
        .hours()
        .view(Target::Hour(now), Repr::Bin, Encodings::Both)
        .await?;
    let r = &view.rendered;
    let count = match &r.fields {
        RawFields::Bloom { meta, .. } => meta.count,
        _ => 0,
    };
    let position = Position::Version(now, count);
    let path = now.path();
    let mut data = json!({
        "hour": now.rfc3339(),
        "path": path,
        "count": count,
        "etag": r.head().etag(false).to_str().unwrap_or_default(),
    });
    if let Some(sha256) = service.hours().linked_dictionary(now, r) {
        data["dictionary"] = json!(super::dictionaries::url(&format!("{path}.bin"), &sha256));
    }
    Ok(Feed {
        open: Some((position, event("version", Some(position), &data))),
        seals: seals.clone(),
        window_from: Some(window_from),
        closing: false,
    })
}

/// What a stream sends next from `feed`, given its `position` (moved past what it sends).
fn pending(feed: &Feed, position: &mut Option<Position>, out: &mut VecDeque<Bytes>) {
    if let Some(at) = *position {
        for (p, text) in &feed.seals {
            if p.key() > at.key() {
                out.push_back(text.clone());
                *position = Some(*p);
            }
        }
    }
    if let Some((p, text)) = &feed.open {
        if position.is_none_or(|at| p.key() > at.key()) {
            out.push_back(text.clone());
            *position = Some(*p);
        }
    }
}

/// `GET /events`.
pub async fn get_events(State(state): State<AppState>, request: HeaderMap) -> Result<Response> {
    let events = state.events.clone();
    events.start(&state.service);
    let slot: OwnedSemaphorePermit = events.slots.clone().try_acquire_owned().map_err(|_| {
        ApiError::Busy(format!(
            "{} event streams are open, the most this server keeps (events_max_subscribers): reconnect later",
            events.settings.max_subscribers
        ))
    })?;
    let mut feed = events.feed.subscribe();
    // The first feed is made before the first event is sent.
    if feed.borrow().window_from.is_none() {
        let _ = feed.changed().await;
    }
    let mut first = VecDeque::new();
    let current = feed.borrow_and_update().clone();
    let asked = request
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let mut position = None;
    if let Some(asked) = asked {
        match Position::parse(asked) {
            Some(p) if current.window_from.is_some_and(|from| p.hour() >= from) => {
                position = Some(p);
            }
            parsed => {
                let reason = match parsed {
                    None => format!("Last-Event-ID {asked:?} is not an event id of this server"),
                    Some(_) => format!(
                        "Last-Event-ID {asked:?} is older than the {} hours events resume from",
                        events.settings.resume_hours
                    ),
                };
                first.push_back(event(
                    "reset",
                    None,
                    &json!({"reason": reason, "index": "/"}),
                ));
            }
        }
    }
    pending(&current, &mut position, &mut first);
    // The reconnection time, in the first event's block: parsers that read `retry` only
    // as a field of an event (not on its own) take it too.
    let retry = format!("retry: {}\n", events.settings.retry.as_millis());
    if let Some(block) = first.front_mut() {
        let mut with_retry = Vec::with_capacity(retry.len() + block.len());
        with_retry.extend_from_slice(retry.as_bytes());
        with_retry.extend_from_slice(block);
        *block = Bytes::from(with_retry);
    }
    let heartbeat = events.settings.heartbeat;
    let stream = futures_util::stream::unfold(
        (
            feed,
            position,
            first,
            slot,
            tokio::time::Instant::now() + heartbeat,
        ),
        move |(mut feed, mut position, mut out, slot, mut beat)| async move {
            loop {
                if let Some(text) = out.pop_front() {
                    return Some((Ok::<_, Infallible>(text), (feed, position, out, slot, beat)));
                }
                tokio::select! {
                    changed = feed.changed() => {
                        if changed.is_err() {
                            return None;
                        }
                        let current = feed.borrow_and_update().clone();
                        if current.closing {
                            return None;
                        }
                        pending(&current, &mut position, &mut out);
                    }
                    () = tokio::time::sleep_until(beat) => {
                        beat = tokio::time::Instant::now() + heartbeat;
                        out.push_back(Bytes::from_static(b":\n\n"));
                    }
                }
            }
        },
    );
    let mut response = Response::new(Body::from_stream(stream));
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // nginx and others buffer a proxied response unless told not to.
    out.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_order() {
        let h = Hour::from_parts("2026", "11", "29", "08").unwrap();
        let v = Position::Version(h, 12);
        let s = Position::Sealed(h);
        assert_eq!(v.id(), "2026112908-12");
        assert_eq!(s.id(), "2026112908-sealed");
        assert_eq!(Position::parse("2026112908-12"), Some(v));
        assert_eq!(Position::parse("2026112908-sealed"), Some(s));
        assert!(v.key() < s.key());
        assert!(s.key() < Position::Version(h.next(), 0).key());
        for bad in [
            "",
            "x",
            "2026112908",
            "2026112908-",
            "2026112908-1x",
            "2026133108-1",
            "20261129-1",
        ] {
            assert_eq!(Position::parse(bad), None, "{bad:?}");
        }
    }
}
