//! `bloomcast watch`: follow the open hour, and the next one at its boundary, printing
//! each of the given IDs the first time a version of the hour says it may have changed.
//!
//! It follows the server's event stream (`GET /events`, PROTOCOL.md "Following
//! changes"): each event (a new version, a seal) is answered by one poll of the hour, so
//! an ID is printed about a second after it was acknowledged, with no poll between
//! changes. Where there is no stream (a static mirror: 404) or it drops, it polls every
//! `--every` seconds, and tries the stream again after the server's `retry:` delay (or
//! every ten polls where there was none); `--poll` only polls.
//!
//! Polls travel as deltas (RFC 9842 `dcz`) against the last version the server offered
//! as a dictionary, so following an hour costs a little more than what changed in it.
//!
//! With `--pubkey`, each hour's final bytes (read once it is sealed, before moving on)
//! are verified against the publisher's key, its chain link and signature, as `check
//! --pubkey` does, and so is each version of the open hour, by its
//! `Bloom-Open-Signature`, made within `--freshness` seconds: a version or sealed hour
//! that does not verify ends the watch with the error, naming the hour. A version served
//! without its signature is reported, and said unverified (on stderr; `"unverified":
//! true` in its JSON event).
//!
//! A poll that fails for a passing reason is tried again at the next one, with a warning
//! on stderr. An hour the server cannot verify (`500 corrupt`) is one: the warning names
//! it, and the watch stays on it, never moving past an hour it could not read.

use super::{collect_ids, read_ids, CliError};
use crate::client::{Client, ClientError};
use crate::hour::Hour;
use clap::Args;
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

/// Follow the open hour and print each ID the first time it may have changed in it
/// (until interrupted).
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (or 127.0.0.1:8080).
    #[arg(long, env = "BLOOMCAST_SERVER")]
    server: String,
    /// Seconds between polls where the server has no event stream (or it dropped).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// Poll every --every seconds; do not follow the server's event stream (GET /events).
    #[arg(long)]
    poll: bool,
    /// A file of IDs, one per line (as `-` reads stdin).
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Print one JSON object per event (`version` and `changed`, each with the hour,
    /// the version and the bytes transferred) instead of ID lines.
    #[arg(long)]
    json: bool,
    /// Verify each version of the open hour, and each hour once it is sealed, against
    /// this Ed25519 public key (64 hex digits, as `/.well-known/bloomcast.json`
    /// publishes it); one that does not verify ends the watch with an error naming the
    /// hour, and a version served unsigned is said unverified.
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<crate::chain::PublicKey>,
    /// With --pubkey, how old a version of the open hour may be (its signature says when
    /// it was made): an older one (a replay hiding the changes since) is refused.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    freshness: u64,
    /// IDs to watch; `-` reads one per line from stdin.
    ids: Vec<String>,
}

/// What a poll found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new version of the hour: its ETag (without encoding suffix), its count, the
    /// body bytes that crossed the wire for it and whether it came as a delta.
    Version {
        hour: Hour,
        version: String,
        count: u64,
        bytes: u64,
        delta: bool,
        /// With a key, the version came without its signature (used, not verified).
        unverified: bool,
    },
    /// An ID the version may contain, reported once per hour.
    Changed {
        hour: Hour,
        version: String,
        id: String,
        bytes: u64,
    },
}

impl Event {
    /// The event as one JSON line's object.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Event::Version {
                hour,
                version,
                count,
                bytes,
                delta,
                unverified,
            } => {
                let mut doc = json!({
                    "event": "version", "hour": hour.rfc3339(), "version": version,
                    "count": count, "bytes": bytes, "delta": delta,
                });
                if *unverified {
                    doc["unverified"] = json!(true);
                }
                doc
            }
            Event::Changed {
                hour,
                version,
                id,
                bytes,
            } => json!({
                "event": "changed", "hour": hour.rfc3339(), "version": version,
                "id": id, "bytes": bytes,
            }),
        }
    }
}

/// Follows the open hour for a set of IDs, one poll at a time.
pub struct Watcher {
    client: Client,
    ids: Vec<String>,
    hour: Hour,
    version: Option<String>,
    reported: HashSet<String>,
}

impl Watcher {
    /// Starts at the server's current hour.
    ///
    /// # Errors
    /// The server's index cannot be read.
    pub async fn start(client: Client, ids: Vec<String>) -> Result<Watcher, ClientError> {
        let hour = client.index().await?.current_hour()?;
        Ok(Watcher::start_at(client, ids, hour))
    }

    /// Starts at `hour` (a past hour is read once, complete, then the next, up to the
    /// open hour): resuming a watch where it stopped.
    pub fn start_at(client: Client, ids: Vec<String>, hour: Hour) -> Watcher {
        Watcher {
            client,
            ids,
            hour,
            version: None,
            reported: HashSet::new(),
        }
    }

    /// The hour followed now.
    pub fn hour(&self) -> Hour {
        self.hour
    }

    /// Polls the hour once; moves to the next hour once this one is complete (its
    /// final bytes read first, so nothing of its end is missed).
    ///
    /// # Errors
    /// Transport errors and error statuses; [`ClientError::Corrupt`] naming the hour when
    /// the server could not verify it (`500 corrupt`: transient, the watch stays on the
    /// hour and polls it again, never moving past it); [`ClientError::Unverified`] when
    /// the client has a public key and the sealed hour does not verify (nothing of it is
    /// reported).
    pub async fn poll(&mut self) -> Result<Vec<Event>, ClientError> {
        self.poll_with(false).await
    }

    /// As [`Watcher::poll`], after an event of the server's stream: caches between are
    /// asked for a copy no older than the event ([`Client::hour_fresh`]).
    ///
    /// # Errors
    /// As [`Watcher::poll`].
    pub async fn poll_fresh(&mut self) -> Result<Vec<Event>, ClientError> {
        self.poll_with(true).await
    }

    async fn poll_with(&mut self, fresh: bool) -> Result<Vec<Event>, ClientError> {
        let before = self.client.stats();
        let fetched = if fresh {
            self.client.hour_fresh(self.hour).await
        } else {
            self.client.hour(self.hour).await
        };
        let fetched = fetched.map_err(|e| e.of_hour(self.hour))?;
        let after = self.client.stats();
        let bytes = after.body_bytes - before.body_bytes;
        let version = fetched
            .etag
            .as_deref()
            .map(|t| {
                let t = t.trim_start_matches("W/").trim_matches('"');
                let t = t.strip_suffix("-gz").unwrap_or(t);
                t.strip_suffix("-dcz").unwrap_or(t).to_owned()
            })
            .unwrap_or_default();
        let mut events = Vec::new();
        if self.version.as_deref() != Some(version.as_str()) {
            events.push(Event::Version {
                hour: self.hour,
                version: version.clone(),
                count: fetched.meta.count,
                bytes,
                delta: after.deltas > before.deltas,
                unverified: !fetched.meta.complete
                    && !self
                        .client
                        .unverified_hours(self.hour, self.hour)
                        .is_empty(),
            });
            for id in &self.ids {
                if !self.reported.contains(id) && fetched.filter.contains(id) {
                    self.reported.insert(id.clone());
                    events.push(Event::Changed {
                        hour: self.hour,
                        version: version.clone(),
                        id: id.clone(),
                        bytes,
                    });
                }
            }
            self.version = Some(version);
        }
        if fetched.meta.complete {
            self.hour = self.hour.next();
            self.version = None;
            self.reported.clear();
        }
        Ok(events)
    }
}

impl WatchArgs {
    /// Watches until interrupted (Ctrl-C or SIGTERM ends it with exit code 0).
    ///
    /// # Errors
    /// Unreadable IDs, an unreachable server, an error status, an unwritable stdout.
    pub async fn run(self) -> Result<(), CliError> {
        let mut ids = if self.ids.is_empty() {
            Vec::new()
        } else {
            collect_ids(&self.ids)?
        };
        if let Some(path) = &self.file {
            let file = std::fs::File::open(path).map_err(|source| CliError::Io {
                context: format!("cannot open {}", path.display()),
                source,
            })?;
            read_ids(std::io::BufReader::new(file), |id| {
                ids.push(id);
                Ok(())
            })?;
        }
        if ids.is_empty() {
            return Err(CliError::Input(
                "no IDs: pass them as arguments, - to read stdin, or --file".into(),
            ));
        }
        let client = super::verifying_builder(
            &self.server,
            None,
            self.pubkey,
            crate::client::DEFAULT_FETCH_COST,
        )
        .freshness(Duration::from_secs(self.freshness))
        .build()?;
        let mut follow = Follow::new(!self.poll, Duration::from_secs(self.every));
        let mut watcher = Watcher::start(client, ids).await?;
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            // A poll that fails for a passing reason (a kept-alive connection the server
            // closed as this poll reused it, a 503) is tried again at the next one.
            let events = match watcher.poll_with(follow.pushed).await {
                Ok(events) => events,
                Err(e) if e.is_transient() => {
                    let hour = watcher.hour();
                    tracing::warn!(%hour, error = %e, "poll failed; trying again at the next one");
                    Vec::new()
                }
                Err(e) => return Err(e.into()),
            };
            let mut out = std::io::stdout().lock();
            for event in &events {
                if let Event::Version {
                    hour,
                    version,
                    unverified: true,
                    ..
                } = event
                {
                    eprintln!(
                        "bloomcast: unverified (no signature to check): {} (open), version {version}",
                        hour.rfc3339()
                    );
                }
                let written = match (self.json, event) {
                    (true, e) => writeln!(out, "{}", e.to_json()),
                    (false, Event::Changed { id, .. }) => writeln!(out, "{id}"),
                    (false, Event::Version { .. }) => Ok(()),
                };
                written
                    .and_then(|()| out.flush())
                    .map_err(super::stdout_error)?;
            }
            drop(out);
            tokio::select! {
                _ = &mut interrupted => return Ok(()),
                () = follow.next_change(&watcher.client) => {}
            }
        }
    }
}

/// When to poll next: at the next event of the server's stream, or every `every` where
/// there is none.
struct Follow {
    stream: Option<crate::client::EventStream>,
    /// Try to open the stream at all (`--poll` says no).
    wanted: bool,
    every: Duration,
    /// Where to resume the stream (`Last-Event-ID`).
    last_id: Option<String>,
    /// No stream until then (the server had none, or it dropped).
    retry_at: Option<tokio::time::Instant>,
    /// The server's reconnection time.
    retry: Duration,
    /// The last wait ended with an event of the stream (not a timer).
    pushed: bool,
}

impl Follow {
    fn new(wanted: bool, every: Duration) -> Follow {
        Follow {
            stream: None,
            wanted,
            every,
            last_id: None,
            retry_at: None,
            retry: Duration::from_secs(2),
            pushed: false,
        }
    }

    /// Returns when the hour should be polled again.
    async fn next_change(&mut self, client: &Client) {
        self.pushed = false;
        if self.stream.is_none() && self.wanted {
            self.open(client).await;
        }
        let Some(stream) = self.stream.as_mut() else {
            tokio::time::sleep(self.every).await;
            return;
        };
        let next = stream.next().await;
        self.last_id = stream.last_event_id().map(str::to_owned);
        if let Some(retry) = stream.retry() {
            self.retry = retry;
        }
        match next {
            // A version, a seal or a reset: each is answered by a poll, for a copy no
            // older than the event.
            Ok(Some(_)) => self.pushed = true,
            Ok(None) => self.dropped("the server ended the event stream".into()),
            Err(e) => self.dropped(e.to_string()),
        }
    }

    async fn open(&mut self, client: &Client) {
        if self
            .retry_at
            .is_some_and(|at| tokio::time::Instant::now() < at)
        {
            return;
        }
        match client.events(self.last_id.as_deref()).await {
            Ok(Some(stream)) => {
                tracing::debug!("following the server's event stream");
                self.stream = Some(stream);
                self.retry_at = None;
            }
            Ok(None) => {
                tracing::debug!(
                    "the server has no event stream; polling every {} s",
                    self.every.as_secs()
                );
                self.retry_at = Some(tokio::time::Instant::now() + self.every * 10);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot open the server's event stream; polling until it can be");
                self.retry_at = Some(tokio::time::Instant::now() + self.retry.max(self.every));
            }
        }
    }

    /// The stream is gone: poll now, reconnect after the server's `retry:` delay.
    fn dropped(&mut self, why: String) {
        tracing::warn!(error = %why, "the event stream dropped; polling until it is back");
        self.stream = None;
        self.retry_at = Some(tokio::time::Instant::now() + self.retry);
    }
}
