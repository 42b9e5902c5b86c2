//! Storage, behind one small trait so the embedded store and PostgreSQL are
//! interchangeable and nothing above this module knows which is in use.
//!
//! The model: an hour is *open* until it is *closed* (after which appends to it go to
//! the next open hour) and then *sealed* (its final filter and distinct keys stored,
//! never to change). Only the 8-byte keys are stored, never the IDs themselves.

mod postgres;
mod sqlite;

pub use postgres::{LinkError, PgLink, PgStore, SslMode, TlsSetupError};
pub use sqlite::SqliteStore;

use crate::bloom::Key;
use crate::hour::Hour;
use async_trait::async_trait;
use thiserror::Error;

/// The cause of a store error, kept for logs (`#[source]`), never shown to clients.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in the store. The variant, not the message, decides what a caller
/// does: retry later ([`StoreError::Unavailable`], [`StoreError::Busy`]), refuse to
/// serve the data ([`StoreError::Corrupt`]), or report a bug ([`StoreError::Failed`]).
#[derive(Debug, Error)]
pub enum StoreError {
    /// The backend cannot write or be reached right now (disk full, I/O error, read-only
    /// file system, locked database, lost connection); nothing was done; retry later.
    #[error("store unavailable: {what}")]
    Unavailable {
        what: String,
        #[source]
        source: Option<Cause>,
    },
    /// The write queue is full: the store is healthy but behind; retry shortly.
    #[error("store busy: {0}")]
    Busy(String),
    /// Data read back failed verification (checksum mismatch, malformed row, a file
    /// that is not bloomcast's): never served as a filter.
    #[error("corrupt data in the store: {0}")]
    Corrupt(String),
    /// Anything else: a bug or a failure that retrying will not fix.
    #[error("store failure: {what}")]
    Failed {
        what: String,
        #[source]
        source: Option<Cause>,
    },
}

impl StoreError {
    /// A retryable failure, keeping its cause.
    pub fn unavailable(what: impl Into<String>, source: impl Into<Cause>) -> StoreError {
        StoreError::Unavailable {
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// A non-retryable failure, keeping its cause.
    pub fn failed(what: impl Into<String>, source: impl Into<Cause>) -> StoreError {
        StoreError::Failed {
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// A non-retryable failure with no underlying error.
    pub fn bug(what: impl Into<String>) -> StoreError {
        StoreError::Failed {
            what: what.into(),
            source: None,
        }
    }

    /// An error of the same kind, for each of several requests that one failure failed
    /// (a group commit): the message carries the cause's text.
    pub fn same_kind(&self) -> StoreError {
        let what = full_message(self);
        match self {
            StoreError::Unavailable { .. } => StoreError::Unavailable { what, source: None },
            StoreError::Busy(_) => StoreError::Busy(what),
            StoreError::Corrupt(_) => StoreError::Corrupt(what),
            StoreError::Failed { .. } => StoreError::Failed { what, source: None },
        }
    }

    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. } | StoreError::Busy(_))
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A closed hour's final filter, as stored and served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedHour {
    pub hour: Hour,
    /// Distinct IDs (keys) recorded in the hour.
    pub count: u64,
    pub m: u32,
    pub k: u32,
    /// The filter body in wire order.
    pub filter: Vec<u8>,
}

/// New keys of an open hour since a cursor, for keeping an in-memory view current.
#[derive(Debug, Clone, Default)]
pub struct KeysPage {
    pub keys: Vec<Key>,
    /// Pass back to get only what was appended after this page.
    pub cursor: i64,
}

/// Where the store's hours stand: what a restarted node (or one whose clock stepped
/// back) needs to know so that time only moves forward for the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// Every hour up to and including this one is closed to appends.
    pub closed_through: Option<Hour>,
    /// The newest hour the store has opened: the later of the hour after
    /// `closed_through` and the newest hour holding appended keys (at least genesis).
    pub high_water: Hour,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The first hour this store served: hours before it are unknown, not empty.
    async fn genesis(&self) -> Result<Hour>;

    /// The closed and high-water marks, persisted (shared by every node in cluster mode).
    async fn marks(&self) -> Result<Marks>;

    /// Durably appends keys to `hour`, or to the first hour after it that is still
    /// open if `hour` was closed meanwhile. Returns the hour the keys went into; once
    /// it returns, the keys survive a crash.
    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour>;

    /// Closes every hour up to and including `hour` to appends.
    async fn close_through(&self, hour: Hour) -> Result<()>;

    /// Keys appended to `hour` after `cursor` (0 for all). Duplicates are possible.
    async fn keys_after(&self, hour: Hour, cursor: i64) -> Result<KeysPage>;

    /// The distinct keys of any hour, open (as of now) or sealed.
    async fn keys(&self, hour: Hour) -> Result<Vec<Key>>;

    /// Stores a closed hour's final filter with its distinct keys. Idempotent: sealing
    /// an already sealed hour keeps the first seal.
    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<()>;

    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>>;

    /// The newest sealed hour, if any.
    async fn last_sealed(&self) -> Result<Option<Hour>>;

    /// `(hour, count)` of the sealed hours in `from..=to`.
    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>>;

    /// Deletes everything of hours before `hour`; returns how many hours went.
    async fn prune_before(&self, hour: Hour) -> Result<u64>;

    /// Cheap check that the store is usable.
    async fn ping(&self) -> Result<()>;
}

/// An error and its causes, one line: `what: cause: cause`. Drivers' top messages
/// ("error performing TLS handshake") leave out why, which is what an operator reading
/// the log needs.
pub fn full_message(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Keys as stored: 8 bytes each, `h1` then `h2`, big-endian.
pub fn keys_to_blob(keys: &[Key]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(keys.len() * 8);
    for key in keys {
        blob.extend_from_slice(&key.to_bytes());
    }
    blob
}

/// Inverse of [`keys_to_blob`]; a trailing partial key (corruption) is an error.
pub fn blob_to_keys(blob: &[u8], out: &mut Vec<Key>) -> Result<()> {
    if blob.len() % 8 != 0 {
        return Err(StoreError::Corrupt(format!(
            "key blob of {} bytes is not a multiple of 8",
            blob.len()
        )));
    }
    out.extend(
        blob.chunks_exact(8)
            .map(|c| Key::from_bytes(c.try_into().expect("chunks of 8"))),
    );
    Ok(())
}

/// Sorts and deduplicates keys: the canonical form of an hour's key set.
pub fn distinct(mut keys: Vec<Key>) -> Vec<Key> {
    keys.sort_unstable();
    keys.dedup();
    keys
}
