//! Storage, behind one small trait so the embedded store and PostgreSQL are
//! interchangeable and nothing above this module knows which is in use.
//!
//! The model: an hour is *open* until it is *closed* (after which appends to it go to
//! the next open hour) and then *sealed* (its final filter and distinct keys stored,
//! never to change). Only the 8-byte keys are stored, never the IDs themselves.

mod forms;
mod links;
mod postgres;
mod record;
mod rows;
mod shape;
mod signatures;
mod sqlite;
mod subscriptions;
mod universe;

pub use forms::{FormName, FormRecord};
pub use links::ChainLink;
pub use record::HourRecord;
pub use rows::{
    batch_checksum, blob_to_keys, check_count, distinct, exact_checksum, filter_checksum,
    keys_to_blob, read_sealed_keys, sealed_keys_checksum, verify_batch, verify_sealed_keys,
    SealedRow,
};
pub use shape::HourShape;
pub use signatures::{key_from_row, key_list, HourSignature};
pub use universe::{
    check_universe, missing_since, universe_checksum, verify_universe_row, Tally, UniverseAdded,
    UniverseInfo,
};

pub use postgres::{LinkError, PgLink, PgStore, SslMode, TlsSetupError};
pub use sqlite::SqliteStore;
pub use subscriptions::Subscription;

use crate::bloom::{Filter, Key};
use crate::chain::{ListedKey, PublicKey, Succession};
use crate::clock::ClockRecord;
use crate::hour::Hour;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
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

/// Where a store sends an open hour's keys as it reads them ([`Store::send_keys_after`]).
pub type KeyPieces = tokio::sync::mpsc::Sender<Vec<Key>>;

/// About how many keys a store sends at once while reading an open hour (512 KiB of
/// keys; a piece ends at a batch's end, so it holds up to one batch more): the reader
/// holds a piece or two, never the hour's whole list.
pub const PIECE_KEYS: usize = 1 << 16;

/// The end of a read whose receiver of pieces ([`KeyPieces`]) went away.
pub(crate) fn receiver_gone() -> StoreError {
    StoreError::bug("the receiver of an open hour's keys went away during the read")
}

/// Reads `hour`'s keys after `cursor` from `store` ([`Store::send_keys_after`]), handing
/// each piece to `each` as it arrives; the cursor the read covers. A piece or two is held
/// at a time, never the whole read.
pub async fn each_piece_after<S: Store + ?Sized>(
    store: &S,
    hour: Hour,
    cursor: i64,
    mut each: impl FnMut(Vec<Key>) + Send,
) -> Result<i64> {
    let (pieces, mut received) = tokio::sync::mpsc::channel(1);
    let take = async {
        while let Some(piece) = received.recv().await {
            each(piece);
        }
    };
    let (cursor, ()) = tokio::join!(store.send_keys_after(hour, cursor, pieces), take);
    cursor
}

/// New keys of an open hour since a cursor, for keeping an in-memory view current.
#[derive(Debug, Clone, Default)]
pub struct KeysPage {
    pub keys: Vec<Key>,
    /// Pass back to get only what was appended after this page.
    pub cursor: i64,
}

/// Reads of what never changes once written (a sealed hour, its keys, its chain link
/// and signatures, a form's record), meant for read replicas: how many a replica
/// answered, how many went to the primary because the replica did not have the row yet
/// (or it does not exist), and how many because the replica failed or ran out of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaReads {
    pub served: u64,
    pub behind: u64,
    pub failed: u64,
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
    /// Writes as they commit, when other nodes write to the same store: a receiver that
    /// gets `()` after appends (any node's) and whenever it may have missed some (a
    /// reconnect); signals fold, at most one waits. `None` (the default) for a store no
    /// other node writes to. Starts a task: call it once.
    fn changes(&self) -> Option<tokio::sync::mpsc::Receiver<()>> {
        None
    }

    /// Bytes the store's client holds in this process (an embedded database's page
    /// caches and buffers), outside the memory budget; 0 where it is not known.
    fn memory_bytes(&self) -> u64 {
        0
    }

    /// Where reads meant for read replicas went so far (`database_read_url`); `None`
    /// for a store with none.
    fn replica_reads(&self) -> Option<ReplicaReads> {
        None
    }

    async fn genesis(&self) -> Result<Hour>;

    /// The first hour sized (and its `fpp` reckoned) by the probe-sequence rule,
    /// [`crate::bloom::Sizing::Probes`]; the hours before it, and the days ending before
    /// it, are [`crate::bloom::Sizing::Classic`]. Fixed, like genesis, at the first start
    /// of a version with the rule: the hour after the newest closed then (genesis when
    /// none was), so that no hour or day served before changes a byte.
    async fn probes_from(&self) -> Result<Hour>;

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

    /// Keys appended to `hour` after `cursor` (0 for all), sent to `pieces` as they are
    /// read, in pieces of about [`PIECE_KEYS`] (whole batches), so that reading an hour of
    /// any size holds a few pieces at a time. Duplicates are possible. Returns the cursor
    /// to pass back: what every piece sent covers.
    ///
    /// Every key sent is a verified key of the hour, even when the read as a whole then
    /// fails (a later batch does not verify, or the batches do not match the hour's
    /// record): the error says the hour is not known in full, never that a key sent is
    /// wrong. A receiver that goes away ends the read with an error.
    async fn send_keys_after(&self, hour: Hour, cursor: i64, pieces: KeyPieces) -> Result<i64>;

    /// As [`Store::send_keys_after`], gathered in one page: for reads known to be small.
    async fn keys_after(&self, hour: Hour, cursor: i64) -> Result<KeysPage> {
        let mut keys = Vec::new();
        let cursor = each_piece_after(self, hour, cursor, |piece| keys.extend(piece)).await?;
        Ok(KeysPage { keys, cursor })
    }

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

    /// Every signing key registered, oldest first (shared by every node in cluster mode).
    async fn signing_keys(&self) -> Result<Vec<ListedKey>>;

    /// Registers `key` as the signer of hours from `first_hour` on, with the signatures
    /// of its `succession` (the retiring key's vouch, its acknowledgement of it),
    /// retiring the open key at the hour before, in one transaction, if the open key is
    /// still `current` (`None`: no key is registered yet). Returns whether this call
    /// registered it; either way [`Store::signing_keys`] says what is registered (first
    /// writer wins).
    async fn register_key(
        &self,
        key: &PublicKey,
        first_hour: Hour,
        current: Option<&PublicKey>,
        succession: &Succession,
    ) -> Result<bool>;

    /// Stores `key`'s acknowledgement of the key before it (a key registered before
    /// successions were signed), unless it has one; whether this call stored it.
    async fn put_key_ack(&self, key: &PublicKey, ack: &[u8; 64]) -> Result<bool>;

    /// Stores a sealed hour's signature, made by `key`, unless the hour has one or `key`
    /// is not registered for the hour (checked in the same transaction, so a key retired
    /// meanwhile signs nothing). Returns whether this call's is the one stored (either
    /// way [`Store::signatures`] says what is).
    async fn put_signature(&self, signature: &HourSignature, key: &PublicKey) -> Result<bool>;

    /// The stored signatures of hours in `from..=to`, oldest first.
    async fn signatures(&self, from: Hour, to: Hour) -> Result<Vec<HourSignature>>;

    /// Deletes everything of hours before `hour` but their chain links and signatures;
    /// returns how many hours went.
    async fn prune_before(&self, hour: Hour) -> Result<u64>;

    /// Cheap check that the store is usable.
    async fn ping(&self) -> Result<()>;

    /// The publisher's universe, if one was created.
    async fn universe(&self) -> Result<Option<UniverseInfo>>;

    /// Durably adds `keys` to the universe as joining in the `open` hour, creating it
    /// (with `since = open` and the keys of every hour the store holds) when there is
    /// none. Refuses the whole batch, recording nothing, when it would take the universe
    /// past `max` distinct keys. Sealing an hour adds its keys to an existing universe,
    /// as joining in that hour, in the seal's transaction.
    async fn add_to_universe(&self, keys: &[Key], open: Hour, max: u64) -> Result<UniverseAdded>;

    /// The keys of the universe that joined in `through` or before, sorted: the
    /// universe as it stood when `through` was sealed, whenever it is read. Each row is
    /// verified, and the keys checked against the tally the seal of `through` recorded
    /// ([`Tally`]): a sealed hour of the universe with no such record, or keys that do
    /// not add up to it, are [`StoreError::Corrupt`].
    async fn universe_keys(&self, through: Hour) -> Result<Vec<Key>>;

    /// Stores `hour`'s exact body unless it has one that verifies (a rotten one is
    /// replaced); returns the stored body (the first one stored wins, so every node
    /// serves the same bytes).
    async fn put_exact(&self, hour: Hour, body: &[u8]) -> Result<Vec<u8>>;

    /// `hour`'s exact body, verified, if stored.
    async fn exact(&self, hour: Hour) -> Result<Option<Vec<u8>>>;

    /// The WebSub hub's subscriptions (`crate::websub`), all of them.
    async fn subscriptions(&self) -> Result<Vec<Subscription>>;

    /// Adds the subscription of its callback and topic, or renews it (its secret and
    /// lease replaced).
    async fn put_subscription(&self, subscription: &Subscription) -> Result<()>;

    /// Removes the subscription of `callback` to `topic`; whether there was one.
    async fn remove_subscription(&self, callback: &str, topic: &str) -> Result<bool>;

    /// Claims the delivery of `hour`'s seal to the hub's subscribers: `true` for the
    /// first caller only, so that one node of a fleet delivers each hour.
    async fn claim_delivery(&self, hour: Hour) -> Result<bool>;

    /// Records what a derived body of a closed range is (its digest) unless its range
    /// and form have a record; returns the digest recorded (the first one stays, so every
    /// node serves the same bytes or none). Pruned with the range's first hour.
    async fn record_form(&self, record: &FormRecord) -> Result<crate::chain::Hash>;

    /// The digest recorded for the `form` of `from..=to` ([`Store::record_form`]), if
    /// one is; read only.
    async fn form_digest(
        &self,
        from: Hour,
        to: Hour,
        form: FormName,
    ) -> Result<Option<crate::chain::Hash>>;

    /// The cluster's [`HourShape`] in effect for `hour`, recorded as `local` first when
    /// none is (the first node's wins, in effect for every hour until a change); `None`
    /// for a store one node alone uses (the embedded one), whose node's own
    /// configuration shapes its hours.
    async fn hour_shape(&self, local: &HourShape, hour: Hour) -> Result<Option<HourShape>> {
        let _ = (local, hour);
        Ok(None)
    }

    /// `(hour, bytes)` of each hour in `from..=to` with a stored exact body, oldest
    /// first: what the index lists as `exact_bytes` for hours this process has not
    /// served yet (after a restart, or built by another node). Not verified: a body
    /// that fails its checksum is built again, with the same bytes, when it is served.
    ///
    /// The default reads each body ([`Store::exact`]); the stores override it with a
    /// query that reads the lengths alone.
    async fn exact_sizes(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let mut out = Vec::new();
        let mut hour = from;
        while hour <= to {
            if let Some(body) = self.exact(hour).await? {
                out.push((hour, body.len() as u64));
            }
            hour = hour.next();
        }
        Ok(out)
    }

    /// The store's own clock where nodes share the store (PostgreSQL's `now()`): the time
    /// every node runs on in cluster mode, so that no node's clock alone moves the
    /// cluster's hours. `None` for a store one node alone uses (the embedded one).
    async fn time(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(None)
    }

    /// The clock record the latest [`Store::heartbeat`] wrote, if any: what a start
    /// checks its first clock reading against (`crate::clock::ClockRecord`).
    async fn clock_record(&self) -> Result<Option<ClockRecord>> {
        Ok(None)
    }

    /// A heartbeat through the write path, as [`Store::ping`], recording `record` in the
    /// same transaction (the previous record replaced whole). By default a plain ping,
    /// recording nothing.
    async fn heartbeat(&self, record: &ClockRecord) -> Result<()> {
        let _ = record;
        self.ping().await
    }
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

#[cfg(test)]
mod tests;
