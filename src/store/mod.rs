//! Storage, behind one small trait so the embedded store and PostgreSQL are
//! interchangeable and nothing above this module knows which is in use.
//!
//! The model: an hour is *open* until it is *closed* (after which appends to it go to
//! the next open hour) and then *sealed* (its final filter and distinct keys stored,
//! never to change). Only the 8-byte keys are stored, never the IDs themselves.

mod links;
mod postgres;
mod sqlite;

pub use links::ChainLink;

pub use postgres::{LinkError, PgLink, PgStore, SslMode, TlsSetupError};
pub use sqlite::SqliteStore;

use crate::bloom::{Filter, Key, Params};
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

impl SealedHour {
    /// The seal of `hour`: `count` distinct keys, all in `filter`.
    pub fn new(hour: Hour, count: u64, filter: &Filter) -> SealedHour {
        SealedHour {
            hour,
            count,
            m: filter.m(),
            k: filter.k(),
            filter: filter.to_bytes(),
        }
    }
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

/// What [`Store::seal`] did: the first seal of an hour stays, so a caller learns here
/// whether the row now stored is the one it passed, without reading it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Sealing {
    /// This call's row is the hour's seal.
    Stored,
    /// The hour was already sealed (by another node, or an earlier call): nothing was
    /// stored, and what is stored may differ from this call's row.
    AlreadySealed,
}

impl Sealing {
    /// The outcome of an insert that ignores a conflict on the hour, from the rows it
    /// inserted.
    pub fn of_rows_inserted(rows: u64) -> Sealing {
        if rows == 1 {
            Sealing::Stored
        } else {
            Sealing::AlreadySealed
        }
    }
}

/// What [`Store::put_link`] did: the first link of an hour stays, so a caller learns
/// here whether the link now stored is the one it passed, without reading it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Linking {
    /// This call's link is the hour's link.
    Stored,
    /// The hour already had a link: nothing was stored, and the stored link may differ.
    AlreadyLinked,
}

impl Linking {
    /// The outcome of an insert that ignores a conflict on the hour, from the rows it
    /// inserted.
    pub fn of_rows_inserted(rows: u64) -> Linking {
        if rows == 1 {
            Linking::Stored
        } else {
            Linking::AlreadyLinked
        }
    }
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

    /// As [`Store::append`], with the batch's cursor when the store can name it: with
    /// `Some(c)`, a reader of the hour whose [`Store::keys_after`] cursor is `c - 1`
    /// and who holds these keys has read everything up to `c`, and may move its cursor
    /// there without reading them back. `None` (the default) promises nothing.
    async fn append_at(&self, hour: Hour, keys: &[Key]) -> Result<(Hour, Option<i64>)> {
        Ok((self.append(hour, keys).await?, None))
    }

    /// Closes every hour up to and including `hour` to appends.
    async fn close_through(&self, hour: Hour) -> Result<()>;

    /// Keys appended to `hour` after `cursor` (0 for all). Duplicates are possible.
    async fn keys_after(&self, hour: Hour, cursor: i64) -> Result<KeysPage>;

    /// The distinct keys of any hour, open (as of now) or sealed.
    async fn keys(&self, hour: Hour) -> Result<Vec<Key>>;

    /// Stores a closed hour's final filter with its distinct keys. Idempotent: sealing
    /// an already sealed hour keeps the first seal. Returns [`Sealing::Stored`] exactly
    /// when this call's row is the one stored, [`Sealing::AlreadySealed`] when another
    /// seal of the hour was there first (then [`Store::sealed`] says what it is).
    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing>;

    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>>;

    /// The newest sealed hour, if any.
    async fn last_sealed(&self) -> Result<Option<Hour>>;

    /// `(hour, count)` of the sealed hours in `from..=to`, each count checked against
    /// the length of the hour's stored keys (a mismatch is [`StoreError::Corrupt`]).
    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>>;

    /// Stores a sealed hour's chain link. Idempotent: the first link of an hour stays.
    /// Returns [`Linking::Stored`] exactly when this call's link is the one stored,
    /// [`Linking::AlreadyLinked`] when the hour had a link already (then
    /// [`Store::last_link`] says what it is).
    async fn put_link(&self, link: &ChainLink) -> Result<Linking>;

    /// Up to `limit` chain links from `from` on, oldest first (verified).
    async fn links(&self, from: Hour, limit: usize) -> Result<Vec<ChainLink>>;

    /// The newest chain link of an hour before `before`, if any (verified).
    async fn last_link(&self, before: Hour) -> Result<Option<ChainLink>>;

    /// Deletes everything of hours before `hour` but their chain links; returns how many
    /// hours went.
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

/// The checksum stored with every key batch and sealed hour: CRC-32 (IEEE 802.3, the
/// zlib/gzip polynomial, as `crc32fast` computes it). It guards against bit rot and
/// torn or misplaced rows, not against tampering; 32 bits catch every burst error up
/// to 32 bits and all but 1 in 2^32 of the rest, at gigabytes a second.
///
/// The bytes covered, in this order:
/// 1. one ASCII byte naming what the row is: `b` a key batch, `f` a sealed filter,
///    `k` a sealed hour's distinct keys, `c` a chain link (so one kind of row can never
///    pass for another);
/// 2. the hour's index (hours since the Unix epoch) as 8 bytes, big-endian two's
///    complement (so a row that rot moves to another hour fails);
/// 3. the row's fields, as listed by [`batch_checksum`], [`filter_checksum`],
///    [`sealed_keys_checksum`] and [`ChainLink::checksum`].
///
/// Stored as a non-negative integer (`0..2^32`).
fn checksum(kind: u8, hour: Hour, fields: &[&[u8]]) -> i64 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[kind]);
    crc.update(&hour.index().to_be_bytes());
    for field in fields {
        crc.update(field);
    }
    i64::from(crc.finalize())
}

/// The checksum of a key batch of `hour`: covers the key blob as stored (8 bytes a key,
/// see [`keys_to_blob`]). The batch's sequence number is not covered: it only orders rows.
pub fn batch_checksum(hour: Hour, blob: &[u8]) -> i64 {
    checksum(b'b', hour, &[blob])
}

/// The checksum of a sealed hour's filter row: covers `count` (8 bytes), `m` and `k`
/// (4 bytes each), all big-endian, then the filter body in wire order.
pub fn filter_checksum(sealed: &SealedHour) -> i64 {
    checksum(
        b'f',
        sealed.hour,
        &[
            &sealed.count.to_be_bytes(),
            &sealed.m.to_be_bytes(),
            &sealed.k.to_be_bytes(),
            &sealed.filter,
        ],
    )
}

/// The checksum of a sealed hour's sorted distinct keys: covers the key blob as stored.
pub fn sealed_keys_checksum(hour: Hour, blob: &[u8]) -> i64 {
    checksum(b'k', hour, &[blob])
}

/// Fails with [`StoreError::Corrupt`] naming `row` unless the stored checksum matches.
/// `None` is a row written before checksums existed (PostgreSQL only): accepted as is.
fn check_sum(row: &dyn std::fmt::Display, stored: Option<i64>, computed: i64) -> Result<()> {
    match stored {
        Some(stored) if stored != computed => Err(StoreError::Corrupt(format!(
            "{row}: checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        ))),
        _ => Ok(()),
    }
}

/// Verifies key batch `seq` of `hour` as read back and appends its keys to `out`.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the batch and hour: a checksum mismatch, or a blob
/// whose length is not a multiple of 8.
pub fn verify_batch(
    hour: Hour,
    seq: i64,
    blob: &[u8],
    stored: Option<i64>,
    out: &mut Vec<Key>,
) -> Result<()> {
    let row = format!("batch {seq} of hour {hour}");
    check_sum(&row, stored, batch_checksum(hour, blob))?;
    blob_to_keys(blob, out).map_err(|e| in_row(&row, e))
}

/// A sealed filter row as read back, before verification: the integers as the
/// database holds them, so out-of-range values are caught here rather than in a cast.
pub struct SealedRow {
    pub hour: Hour,
    pub count: i64,
    pub m: i64,
    pub k: i64,
    pub filter: Vec<u8>,
    /// The length of the hour's stored key blob.
    pub key_bytes: i64,
    /// `None` for a row written before checksums existed (PostgreSQL only).
    pub checksum: Option<i64>,
}

impl SealedRow {
    /// Verifies the row: the checksum, `m` and `k` within the wire format's ranges, a
    /// body of the length `m` implies, and `count` equal to the number of stored keys.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour and what failed.
    pub fn verify(self) -> Result<SealedHour> {
        let row = format!("the sealed filter of hour {}", self.hour);
        let corrupt = |what: String| StoreError::Corrupt(format!("{row}: {what}"));
        let (count, m, k) = match (
            u64::try_from(self.count),
            u32::try_from(self.m),
            u32::try_from(self.k),
        ) {
            (Ok(count), Ok(m), Ok(k)) => (count, m, k),
            _ => {
                return Err(corrupt(format!(
                    "count {}, m {}, k {} out of range",
                    self.count, self.m, self.k
                )))
            }
        };
        let sealed = SealedHour {
            hour: self.hour,
            count,
            m,
            k,
            filter: self.filter,
        };
        check_sum(&row, self.checksum, filter_checksum(&sealed))?;
        let params = Params::new(m.into(), k.into()).map_err(|e| corrupt(e.to_string()))?;
        if sealed.filter.len() != params.byte_len() {
            return Err(corrupt(format!(
                "a body of {} bytes where m = {m} needs {}",
                sealed.filter.len(),
                params.byte_len()
            )));
        }
        check_count(&row, self.count, self.key_bytes)?;
        Ok(sealed)
    }
}

/// Verifies a sealed hour's distinct keys as read back against the hour's count and
/// checksum, and decodes them.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the hour and what failed.
pub fn verify_sealed_keys(
    hour: Hour,
    count: i64,
    blob: &[u8],
    stored: Option<i64>,
) -> Result<Vec<Key>> {
    let row = format!("the sealed keys of hour {hour}");
    check_sum(&row, stored, sealed_keys_checksum(hour, blob))?;
    check_count(&row, count, i64::try_from(blob.len()).unwrap_or(i64::MAX))?;
    let mut keys = Vec::with_capacity(blob.len() / 8);
    blob_to_keys(blob, &mut keys).map_err(|e| in_row(&row, e))?;
    Ok(keys)
}

/// Checks a sealed hour's count against the length of its stored keys (8 bytes each),
/// which it always equals as written; returns the count.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `row` when they disagree.
pub fn check_count(row: &str, count: i64, key_bytes: i64) -> Result<u64> {
    match u64::try_from(count) {
        Ok(n) if count.checked_mul(8) == Some(key_bytes) => Ok(n),
        _ => Err(StoreError::Corrupt(format!(
            "{row}: count {count} but {key_bytes} bytes of keys"
        ))),
    }
}

/// A corruption error with the row it was found in prefixed.
fn in_row(row: &str, e: StoreError) -> StoreError {
    match e {
        StoreError::Corrupt(what) => StoreError::Corrupt(format!("{row}: {what}")),
        other => other,
    }
}

/// What a store knows of an hour besides its rows, read in the same snapshot as them:
/// the records that say whether the rows are all there.
///
/// - The hour chain: a link is written only after the hour's seal is stored, and links
///   are never pruned, so a link at an hour not pruned means a sealed row must be
///   there, with the bytes the link's digest covers.
/// - The batch record: every append adds one to its hour's batch count in the same
///   transaction as the batch, so the number of batches read back must equal it.
#[derive(Debug, Default)]
pub struct HourRecord {
    /// The hour's chain link as read back: `Some(Err(_))` for a link row that fails its
    /// own verification (it still says the hour was sealed).
    pub link: Option<Result<ChainLink>>,
    /// Every hour before this one was pruned: its rows are gone by design.
    pub pruned_before: Option<Hour>,
    /// The batches appended to the hour, as its record counts them (`None`: no record).
    pub batches: Option<i64>,
}

impl HourRecord {
    fn pruned(&self, hour: Hour) -> bool {
        self.pruned_before.is_some_and(|p| hour < p)
    }

    /// Cross-checks a sealed hour as read (`None`: no sealed row) against the record.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the hour is in the chain but its sealed row is
    /// missing, or its filter is not the one the chain link's digest covers.
    pub fn check_sealed(
        &self,
        hour: Hour,
        sealed: Option<SealedHour>,
    ) -> Result<Option<SealedHour>> {
        if self.pruned(hour) {
            return Ok(sealed);
        }
        match (&sealed, &self.link) {
            (None, Some(_)) => Err(missing_seal(hour)),
            (Some(s), Some(Ok(link))) if crate::chain::digest(&s.filter) != link.digest => {
                Err(StoreError::Corrupt(format!(
                    "the sealed filter of hour {hour} is not the one its chain link covers \
                     (digest {}, link {})",
                    crate::chain::hex(&crate::chain::digest(&s.filter)),
                    crate::chain::hex(&link.digest)
                )))
            }
            _ => Ok(sealed),
        }
    }

    /// Checks that an hour with no sealed row may be read from its batches: it is not
    /// in the chain, and `read` batches are what its record counts.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour and what is missing.
    pub fn check_batches(&self, hour: Hour, read: usize) -> Result<()> {
        if self.pruned(hour) {
            return Ok(());
        }
        if self.link.is_some() {
            return Err(missing_seal(hour));
        }
        let recorded = self.batches.unwrap_or(0);
        if i64::try_from(read).ok() != Some(recorded) {
            return Err(StoreError::Corrupt(format!(
                "hour {hour}: {read} key batches are stored but its record counts {recorded}: \
                 a batch was deleted, moved to another hour, or its record damaged"
            )));
        }
        Ok(())
    }
}

fn missing_seal(hour: Hour) -> StoreError {
    StoreError::Corrupt(format!(
        "hour {hour} is in the hour chain, so it was sealed, but its sealed row is missing \
         (deleted, or moved to another hour)"
    ))
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

#[cfg(test)]
mod tests;
