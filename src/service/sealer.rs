//! The sealer's own state: what sealing serialises on and what it remembers about
//! sealed hours. [`Sealer`] owns
//! - the seal turn: one seal at a time per node, so an hour is built once;
//! - the seal backoff: hours whose seal failed, with when to try again, so a failing
//!   seal is retried in the background rather than on every request;
//! - chain-link signatures as stored, verified (64 bytes and a key id each), and the
//!   registry of signing keys as last read;
//! - sealed hours' figures for `/stats`, read once each (they never change);
//! - what `/metrics` reports of sealing: failed seals counted, and the chain's head (its
//!   newest link) as housekeeping last read it;
//! - the latest checkpoint of that head this node signed (`GET /checkpoint`).
//!
//! Sealing itself reads and writes the store and the open hours, so it stays the
//! service's work (`lifecycle.rs`, `chain.rs`, `stats.rs`); all of the state above is
//! reached through this API only.
//!
//! Lock order: the seal turn (a tokio lock, held across a whole seal) may be taken while
//! a union's turn and build slot are held (a union build seals the hours it reads), and
//! never the other way round; while it is held, the ledger is taken briefly, and no
//! union, refresh or render lock. The std mutexes inside (backoff, signatures, figures, head)
//! are leaves: each is held only inside one method here, never across an await and never
//! while taking another lock.

use super::lock;
use super::stats::HourStats;
use crate::chain::{Checkpoint, Hash, KeyId, KeyList, SignatureField};
use crate::hour::Hour;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// First wait after a failed seal; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// When a failed seal of an hour may be tried again.
struct Retry {
    next: Instant,
    delay: Duration,
}

#[derive(Default)]
pub(super) struct Sealer {
    /// Serialises sealing so an hour is built once per node.
    turn: tokio::sync::Mutex<()>,
    /// Hours whose seal failed, with when to try again.
    retry: Mutex<HashMap<Hour, Retry>>,
    /// Signatures of chain links as stored and verified, by hour and link header.
    signatures: Mutex<HashMap<(Hour, Hash), SignatureField>>,
    /// The registry of signing keys as last read from the store.
    keys: Mutex<Option<Arc<KeyList>>>,
    /// Figures of sealed hours for `/stats`.
    stats: Mutex<BTreeMap<Hour, HourStats>>,
    /// Seals that failed (each retried after its backoff), since start.
    failures: AtomicU64,
    /// The newest chain link as last read: its hour and header.
    head: Mutex<Option<(Hour, Hash)>>,
    /// The latest checkpoint this node signed of that head, with the id of its key.
    checkpoint: Mutex<Option<(Checkpoint, KeyId)>>,
    /// The universe's first hour once read (it never changes), or when it was last
    /// found missing.
    universe_since: Mutex<UniverseSeen>,
}

/// What is known of the universe's first hour.
#[derive(Default, Clone, Copy)]
pub(super) enum UniverseSeen {
    #[default]
    Unknown,
    Missing(Instant),
    Since(Hour),
}

impl Sealer {
    /// Waits for the turn to seal: one seal at a time.
    pub async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// How long until `hour` may be sealed again after a failure, if it must wait.
    pub fn backoff_left(&self, hour: Hour) -> Option<Duration> {
        let left = lock(&self.retry)
            .get(&hour)?
            .next
            .saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// `hour` sealed: no retry is pending for it.
    pub fn sealed(&self, hour: Hour) {
        lock(&self.retry).remove(&hour);
    }

    /// A seal of `hour` failed: backs off (doubling up to a minute) and returns how
    /// long until it is tried again.
    pub fn failed(&self, hour: Hour) -> Duration {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut retries = lock(&self.retry);
        let delay = retries
            .get(&hour)
            .map_or(FIRST_BACKOFF, |r| (r.delay * 2).min(MAX_BACKOFF));
        retries.insert(
            hour,
            Retry {
                next: Instant::now() + delay,
                delay,
            },
        );
        delay
    }

    /// Seals that failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Keeps `hour`'s link header as the chain's head, unless a later hour's is kept.
    pub fn keep_head(&self, hour: Hour, header: Hash) {
        let mut head = lock(&self.head);
        if head.as_ref().is_none_or(|(kept, _)| *kept <= hour) {
            *head = Some((hour, header));
        }
    }

    /// The chain's head as last read: the newest linked hour and its header.
    pub fn head(&self) -> Option<(Hour, Hash)> {
        *lock(&self.head)
    }

    /// Keeps a checkpoint just signed (one of a later hour, or made later, replaces it).
    pub fn keep_checkpoint(&self, checkpoint: Checkpoint, key: KeyId) {
        let mut kept = lock(&self.checkpoint);
        let newer = kept
            .as_ref()
            .is_none_or(|(c, _)| (checkpoint.hour, checkpoint.made) >= (c.hour, c.made));
        if newer {
            *kept = Some((checkpoint, key));
        }
    }

    /// The latest checkpoint signed, with its key's id.
    pub fn checkpoint(&self) -> Option<(Checkpoint, KeyId)> {
        *lock(&self.checkpoint)
    }

    /// Until the soonest pending retry (zero when one is due), if any.
    pub fn next_retry(&self) -> Option<Duration> {
        lock(&self.retry)
            .values()
            .map(|r| r.next.saturating_duration_since(Instant::now()))
            .min()
    }

    /// Forgets the retries of hours before `earliest` (past retention).
    pub fn forget_retries_before(&self, earliest: Hour) {
        lock(&self.retry).retain(|h, _| *h >= earliest);
    }

    /// The signature kept of the link of `hour` with `header`, if any.
    pub fn signature(&self, hour: Hour, header: &Hash) -> Option<SignatureField> {
        lock(&self.signatures).get(&(hour, *header)).copied()
    }

    /// Keeps a stored, verified signature (it never changes).
    pub fn keep_signature(&self, hour: Hour, header: Hash, field: SignatureField) {
        lock(&self.signatures).insert((hour, header), field);
    }

    /// The registry of signing keys as last read (empty before the first read).
    pub fn keys(&self) -> Arc<KeyList> {
        lock(&self.keys)
            .clone()
            .unwrap_or_else(|| Arc::new(KeyList::new(Vec::new()).expect("an empty list")))
    }

    /// Keeps the registry as just read.
    pub fn keep_keys(&self, keys: Arc<KeyList>) {
        *lock(&self.keys) = Some(keys);
    }

    /// The figures of the sealed `hour`, if read already.
    pub fn stats(&self, hour: Hour) -> Option<HourStats> {
        lock(&self.stats).get(&hour).cloned()
    }

    /// Keeps the figures of the sealed `hour` (they never change).
    pub fn keep_stats(&self, hour: Hour, stats: HourStats) {
        lock(&self.stats).insert(hour, stats);
    }

    /// What is known of the universe's first hour.
    pub fn universe_seen(&self) -> UniverseSeen {
        *lock(&self.universe_since)
    }

    /// Keeps what the store said of the universe's first hour.
    pub fn keep_universe(&self, since: Option<Hour>) {
        *lock(&self.universe_since) = match since {
            Some(hour) => UniverseSeen::Since(hour),
            None => UniverseSeen::Missing(Instant::now()),
        };
    }

    /// Forgets the figures of hours before `earliest` (past retention).
    pub fn forget_stats_before(&self, earliest: Hour) {
        lock(&self.stats).retain(|h, _| *h >= earliest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(h: u32) -> Hour {
        crate::hour::hour_of(2008, 9, 3, h).unwrap()
    }

    #[test]
    fn every_failed_seal_is_counted_and_a_seal_clears_only_its_retry() {
        let sealer = Sealer::default();
        sealer.failed(hour(1));
        sealer.failed(hour(1));
        sealer.failed(hour(2));
        sealer.sealed(hour(1));
        assert_eq!(sealer.failures(), 3);
        assert!(sealer.backoff_left(hour(1)).is_none());
        assert!(sealer.backoff_left(hour(2)).is_some());
    }

    #[test]
    fn the_head_is_the_newest_link_kept_whatever_the_order() {
        let sealer = Sealer::default();
        assert_eq!(sealer.head(), None);
        sealer.keep_head(hour(5), [5; 32]);
        sealer.keep_head(hour(4), [4; 32]);
        assert_eq!(sealer.head(), Some((hour(5), [5; 32])));
        sealer.keep_head(hour(6), [6; 32]);
        assert_eq!(sealer.head(), Some((hour(6), [6; 32])));
    }
}
