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

#[derive(Debug, Error)]
pub enum StoreError {
    /// The backend cannot be reached right now; the caller may retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The first connection at start failed (server unreachable, TLS handshake or
    /// certificate refused, authentication): the store was never reached. The cause is
    /// kept for the log.
    #[error("store unavailable: cannot connect to the database: {}", with_causes(.0.as_ref()))]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Anything else: a bug, corruption, or a failed disk.
    #[error("store failure: {0}")]
    Failed(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An error's message followed by its causes': drivers' top messages ("error performing
/// TLS handshake") leave out why, which is what an operator reading the log needs.
pub(crate) fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

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

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The first hour this store served: hours before it are unknown, not empty.
    async fn genesis(&self) -> Result<Hour>;

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
        return Err(StoreError::Failed(format!(
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
