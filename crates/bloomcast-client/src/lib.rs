//! The Rust SDK of bloomcast: fetch filters from a bloomcast server and answer "which of
//! my IDs may have changed since I last looked?".
//!
//! The client keeps every filter it fetched with its ETag: a complete filter is never
//! fetched twice and an open one is revalidated with `If-None-Match`, so polling hourly
//! costs one small request per new hour. Filters travel as gzip-compressed raw bytes,
//! the smallest representation; a followed open hour travels as a delta (RFC 9842
//! `dcz`) against the last version of it the server offered as a dictionary.
//!
//! The crate's README, whose examples run as doctests:
#![doc = include_str!("../README.md")]

// The core's modules, under the names the SDK's code and its users know them by.
pub use bloomcast_core::{bloom, chain, dcz, exact, hour, wire};
pub use keys::{key_list_json, parse_key_list};

mod builder;
mod cache;
mod changed;
mod choice;
mod clock;
mod compact;
mod coverage;
mod dictionaries;
mod error;
mod events;
mod exact_hours;
mod fetch;
mod held;
mod history;
mod keys;
mod pages;
mod plan;
mod publish;
mod refine;
mod sync;
mod verify;

pub use builder::ClientBuilder;
pub use choice::{
    cheapest_form, cheapest_form_of, cheapest_pages, exact_or, Choice, Form, Forms,
    DEFAULT_FETCH_COST, PAGE_RESPONSE, PAGE_ROUND_TRIP, RIBBON_BITS,
};
pub use clock::ClockReport;
pub use coverage::{
    checkpoint_reasons, lag_reason, no_checkpoint_reason, Answer, Coverage, DEFAULT_FRESHNESS,
    LAG_HOURS,
};
pub use error::ClientError;
pub use events::{EventStream, ServerEvent, IDLE as EVENTS_IDLE};
pub use history::{default_cache_dir, IdHistory};
pub use pages::PagesRead;
pub use plan::Strategy;
pub use publish::{PublishOptions, PublishSummary};
pub use refine::{cheapest_within, refined_or, Reading};
pub use verify::{parse_chain_page, ChainEntry, ChainReport};

use crate::bloom::Filter;
use crate::hour::{Day, Hour};
use crate::wire::Meta;
use cache::EtagCache;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// A filter as fetched from the server, with what the server said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub meta: Meta,
    pub filter: Filter,
    /// The validator the server sent; the client revalidates with it.
    pub etag: Option<String>,
}

impl Fetched {
    /// The first and last hour the filter covers (the same hour for an hourly filter).
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the server named no readable hour or range.
    pub fn range(&self) -> Result<(Hour, Hour)> {
        let parse = |s: &Option<String>| s.as_deref().and_then(|s| Hour::parse_flexible(s).ok());
        match (
            parse(&self.meta.hour),
            parse(&self.meta.from),
            parse(&self.meta.to),
        ) {
            (Some(h), _, _) => Ok((h, h)),
            (None, Some(from), Some(to)) => Ok((from, to)),
            _ => Err(ClientError::Protocol(
                "filter names no hour or range".into(),
            )),
        }
    }
}

/// IDs that may have changed between `from` and `to` (inclusive; equal for one hour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub from: Hour,
    pub to: Hour,
    pub ids: Vec<String>,
}

/// The server's index (`GET /`): parameters, the current hour and recent hours.
#[derive(Debug, Clone, Deserialize)]
pub struct Index {
    pub version: String,
    pub protocol: u32,
    pub hash: String,
    pub target_fpp: f64,
    pub capacity: u64,
    pub retention_hours: u64,
    pub genesis: String,
    pub current: IndexHour,
    /// Newest first.
    pub hours: Vec<IndexHour>,
    /// A static mirror's index (PROTOCOL.md section 13): `current` is the newest hour it
    /// holds, sealed, and it serves no unions.
    #[serde(default, rename = "static")]
    pub static_layout: bool,
    /// The first hour with an exact body (PROTOCOL.md section 14), RFC 3339; `None` when
    /// the publisher registered no universe (or the server predates exact hours).
    #[serde(default)]
    pub exact_since: Option<String>,
    /// The compact form's versions the server serves (`[1, 2]`; absent: version 1 only).
    #[serde(default)]
    pub ribbon_versions: Vec<u32>,
}

/// One hour as the index lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct IndexHour {
    pub hour: String,
    pub url: String,
    /// Absent on a corrupt line: never read a missing count as an empty hour.
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub complete: Option<bool>,
    /// The size of the hour's exact body, when it has one (section 14).
    #[serde(default)]
    pub exact_bytes: Option<u64>,
    /// The server's stored data of the hour failed verification (its filter answers
    /// `500 corrupt`): whether IDs changed in it is unknown, never "no change".
    #[serde(default)]
    pub corrupt: bool,
}

impl Index {
    /// The server's current hour.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the index names an unreadable hour.
    pub fn current_hour(&self) -> Result<Hour> {
        Hour::parse_flexible(&self.current.hour)
            .map_err(|e| ClientError::Protocol(format!("index current hour: {e}")))
    }

    /// The oldest hour the server has (its genesis).
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the index names an unreadable hour.
    pub fn genesis_hour(&self) -> Result<Hour> {
        Hour::parse_flexible(&self.genesis)
            .map_err(|e| ClientError::Protocol(format!("index genesis: {e}")))
    }

    /// The first hour with an exact body, `None` without a universe.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the index names an unreadable hour.
    pub fn exact_since_hour(&self) -> Result<Option<Hour>> {
        self.exact_since
            .as_deref()
            .map(|h| {
                Hour::parse_flexible(h)
                    .map_err(|e| ClientError::Protocol(format!("index exact_since: {e}")))
            })
            .transpose()
    }

    /// The hours from `from` through `to` the index lists as corrupt (section 9), oldest
    /// first: whether IDs changed in them is unknown.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when a corrupt line names an unreadable hour (it could
    /// be any hour).
    pub fn corrupt_hours(&self, from: Hour, to: Hour) -> Result<Vec<Hour>> {
        let mut hours = Vec::new();
        for line in self.hours.iter().filter(|line| line.corrupt) {
            let hour = Hour::parse_flexible(&line.hour)
                .map_err(|e| ClientError::Protocol(format!("index corrupt hour: {e}")))?;
            if (from..=to).contains(&hour) {
                hours.push(hour);
            }
        }
        hours.sort();
        Ok(hours)
    }

    /// The oldest hour the server can answer for: its genesis, or the oldest its
    /// retention keeps, whichever is later.
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the index names an unreadable hour.
    pub fn oldest_hour(&self) -> Result<Hour> {
        let now = self.current_hour()?;
        let retained = now.index() - i64::try_from(self.retention_hours).unwrap_or(i64::MAX) + 1;
        Ok(Hour::from_index(self.genesis_hour()?.index().max(retained)))
    }

    /// The last `hours` hours, the current one included, as far back as the server can
    /// answer for: a window reaching before its first hour or past its retention starts
    /// at the oldest hour it has, and says so (`clamped`), as `bloomcast check --hours`
    /// does. Pass [`Window::since`] to [`Client::changed_since`].
    ///
    /// # Errors
    /// [`ClientError::Protocol`] when the index names an unreadable hour.
    pub fn window(&self, hours: u32) -> Result<Window> {
        let now = self.current_hour()?;
        let oldest = self.oldest_hour()?.index();
        let wanted = now.index() - i64::from(hours.max(1)) + 1;
        Ok(Window {
            since: Hour::from_index(wanted.max(oldest)),
            clamped: wanted < oldest,
        })
    }
}

/// The first hour of a window of recent hours ([`Index::window`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The window's first hour.
    pub since: Hour,
    /// Whether the window was cut short: the server has no hours (any more) before `since`.
    pub clamped: bool,
}

/// The server's reply to an accepted ingest batch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Receipt {
    /// RFC 3339 start of the hour the IDs went into.
    pub hour: String,
    pub accepted: u64,
}

/// What this client has spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// HTTP requests sent (answers from the local cache of complete filters are free).
    pub requests: u64,
    /// Response body bytes as they crossed the wire (compressed).
    pub body_bytes: u64,
    /// Requests answered 304 Not Modified.
    pub not_modified: u64,
    /// Filters answered from the local cache without a request.
    pub cache_hits: u64,
    /// Responses that came as a delta against a version this client kept (RFC 9842 `dcz`).
    pub deltas: u64,
    /// Closed hours fetched as ribbon filters (PROTOCOL.md section 12).
    pub ribbons: u64,
    /// Of those, version 2 (`.ribbon2`).
    pub ribbons2: u64,
    /// Sealed hours fetched as exact bodies (PROTOCOL.md section 14).
    pub exacts: u64,
    /// Pages of closed hours read by `Range` (PROTOCOL.md section 12, "Huge hours by
    /// the page").
    pub pages: u64,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    body_bytes: AtomicU64,
    not_modified: AtomicU64,
    cache_hits: AtomicU64,
    deltas: AtomicU64,
    ribbons: AtomicU64,
    ribbons2: AtomicU64,
    exacts: AtomicU64,
    pages: AtomicU64,
}

/// An async bloomcast client. Cheap to share: wrap it in an `Arc` or clone the parts.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    cache: EtagCache,
    /// Closed hours held as ribbons, the most precise of each.
    ribbons: compact::RibbonCache,
    /// Closed hours held as version 2 ribbons, the most precise of each.
    ribbons2: compact::RibbonCache<crate::bloom::Ribbon2>,
    /// Sealed hours held as exact bodies.
    exacts: exact_hours::ExactCache,
    /// Bytes a caller spends fetching a resource a filter wrongly flagged: what
    /// `changed_since` weighs false positives at.
    fetch_cost: u64,
    /// The caller declared the IDs it asks about registered: exact bodies may be read
    /// alone ([`ClientBuilder::registered`]).
    registered: bool,
    /// The last version of each open resource the server offered as a dictionary.
    dictionaries: dictionaries::Dictionaries,
    counters: Counters,
    /// Where [`Client::history`] keeps complete hours' filters across runs, if anywhere.
    cache_dir: Option<std::path::PathBuf>,
    /// The publisher's key: when set, every closed hour fetched is verified.
    pubkey: Option<crate::chain::PublicKey>,
    /// Trust on first use: pin the server's list of keys in `cache_dir` and verify with it.
    pin: bool,
    /// The publisher's keys as last read and trusted (see `keys.rs`).
    keyring: tokio::sync::Mutex<Option<std::sync::Arc<keys::Keys>>>,
    /// The newest hour index recorded in the pin (`i64::MIN`: none).
    pin_mark: std::sync::atomic::AtomicI64,
    /// Set once a raw filter came without its `Bloom-*` headers (a static mirror): filters
    /// are then read in their self-describing JSON form.
    static_layout: std::sync::atomic::AtomicBool,
    /// Hours verified so far: index → (previous header, header), to check chain links.
    verified:
        std::sync::Mutex<std::collections::HashMap<i64, (crate::chain::Hash, crate::chain::Hash)>>,
    /// With a key: open hours used without a signature (hour indexes).
    unverified: std::sync::Mutex<std::collections::BTreeSet<i64>>,
    /// With a key: each open hour's verified version's `made` (Unix seconds).
    open_made: std::sync::Mutex<std::collections::HashMap<i64, i64>>,
    /// The newest current hour an index of the source named (`i64::MIN`: none read): an
    /// hour before it is sealed, and never accepted as an open version.
    current: std::sync::atomic::AtomicI64,
    /// How old a version of the open hour may be, with a key.
    freshness: std::time::Duration,
    /// Tries of a read answered 503 with a short `Retry-After` (`ClientBuilder::read_tries`).
    read_tries: u32,
    /// Return an answer whose source is not shown current rather than
    /// [`ClientError::Stale`].
    accept_stale: bool,
    /// Pages read per page needed ([`ClientBuilder::pages_cover`]).
    pages_cover: u32,
}

impl Client {
    /// The server's base URL, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// What this client has spent so far.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            requests: c.requests.load(Ordering::Relaxed),
            body_bytes: c.body_bytes.load(Ordering::Relaxed),
            not_modified: c.not_modified.load(Ordering::Relaxed),
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            deltas: c.deltas.load(Ordering::Relaxed),
            ribbons: c.ribbons.load(Ordering::Relaxed),
            ribbons2: c.ribbons2.load(Ordering::Relaxed),
            exacts: c.exacts.load(Ordering::Relaxed),
            pages: c.pages.load(Ordering::Relaxed),
        }
    }

    /// The filter of one hour.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), bloomcast_client::ClientError> {
    /// use bloomcast_client::hour::Hour;
    /// let client = bloomcast_client::Client::new("http://127.0.0.1:8080")?;
    /// let hour = Hour::parse_flexible("2008-09-03T13").expect("a valid hour");
    /// let fetched = client.hour(hour).await?;
    /// if fetched.filter.contains("user:42") {
    ///     // user:42 probably changed in that hour: fetch its feed.
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] with 404 for a future hour or one before the server's
    /// genesis, 410 past retention; transport and decoding errors.
    pub async fn hour(&self, hour: Hour) -> Result<Arc<Fetched>> {
        self.filter(&hour.path()).await
    }

    /// As [`Client::hour`], asking caches between for a copy no older than now
    /// ([`Client::filter_fresh`]): after an event said a newer version exists.
    ///
    /// # Errors
    /// As [`Client::hour`].
    pub async fn hour_fresh(&self, hour: Hour) -> Result<Arc<Fetched>> {
        self.filter_fresh(&hour.path()).await
    }

    /// The union of one day's hours.
    ///
    /// # Errors
    /// As [`Client::hour`].
    pub async fn day(&self, day: Day) -> Result<Arc<Fetched>> {
        let path = day.first_hour().start().format("/%Y/%m/%d").to_string();
        self.filter(&path).await
    }

    /// The union from `hour` through the server's current hour.
    ///
    /// # Errors
    /// As [`Client::hour`], and 400 for an hour in the future.
    pub async fn since(&self, hour: Hour) -> Result<Arc<Fetched>> {
        self.filter(&format!("/since{}", hour.path())).await
    }
}
