//! What `/healthz` reports: whether the store takes writes, whether the open hour is
//! loaded, which hours were found corrupt, and the clock. The heartbeat that keeps it
//! current, with nobody asking too, is `heartbeat`.
//!
//! **The write rule.** A store write that fails as unavailable (an ingest append, closing
//! an hour, a seal, a prune, or a heartbeat) makes the status `unavailable` at once. It
//! turns `ok` again only when a write that *began* at least [`RECOVERY_HOLD`] after the
//! latest failure has succeeded: a heartbeat, or an ingest. A write already under way when
//! a write failed, or begun within the hold after it, proves nothing, and every new failure
//! starts the hold again. The reason: on a nearly full disk small writes (a one-row
//! heartbeat, a small batch) squeeze in between the ones that fail, and a check must not
//! answer `ok` because one of them did. So while writes keep failing at least once per
//! hold, no check says `ok`; once they stop failing, the first check after the hold whose
//! heartbeat succeeds does. Successes whose start is not known (background seals, closes
//! and prunes) end nothing; their failures count like any other.
//!
//! Its times (and the heartbeat's, and the sealer's backoff) are read from tokio's clock:
//! the system's monotonic clock, which a test can move on (`tokio::time::advance`)
//! instead of waiting out a hold.

use super::parts::Health;
use super::{lock, Result, Service};
use crate::hour::Hour;
use crate::store::{full_message, StoreError};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long after a failed write a successful one still proves nothing; clients refused
/// for a store that cannot write are told to retry after as long, so that while they
/// keep failing, every check between their attempts still says `unavailable`.
pub const RECOVERY_HOLD: Duration = Duration::from_secs(5);

/// The latest failed write, until a write begun after its hold succeeds (the write rule
/// in the module doc). Pure: times are passed in, so the rule is tested without waiting.
#[derive(Debug, Default)]
struct Writes {
    failure: Option<WriteFailure>,
}

#[derive(Debug, Clone)]
struct WriteFailure {
    /// When the latest failure was noted.
    at: Instant,
    why: String,
}

impl Writes {
    /// A write failed (noted at `at`): unavailable, and the hold starts again.
    fn failed(&mut self, at: Instant, why: String) {
        // A failure noted out of order never shortens the hold of a later one.
        let at = self.failure.as_ref().map_or(at, |f| f.at.max(at));
        self.failure = Some(WriteFailure { at, why });
    }

    /// A write that began at `began` succeeded; returns whether it ended a failure.
    fn succeeded(&mut self, began: Instant) -> bool {
        let proves = self
            .failure
            .as_ref()
            .is_some_and(|f| began >= f.at + RECOVERY_HOLD);
        if proves {
            self.failure = None;
        }
        proves
    }
}

/// Health state, written where writes and reads happen and read by `/healthz`.
pub(super) struct HealthState {
    /// The latest failed write, while no write has proven the store takes writes again.
    writes: Mutex<Writes>,
    /// Whether `writes` holds a failure: a successful write (every ingest) reads this
    /// and takes no lock while the store is healthy. Set and cleared under the lock.
    failing: AtomicBool,
    /// Hours that could not be served because their stored data failed verification.
    corrupt: Mutex<BTreeSet<Hour>>,
    /// Stored records that are not an hour's (the universe) and failed verification.
    corrupt_records: Mutex<BTreeSet<&'static str>>,
    /// Verification failures found (including those repaired from intact keys).
    pub corrupt_found: AtomicU64,
    /// IDs this node held for an hour (each acknowledged by the store) that its seal
    /// lacks: lost by the store (see `Hours::check_held`).
    pub(super) lost_ids: AtomicU64,
    /// The open hour has been loaded from the store since start: the flag is what every
    /// request reads (a plain load, nothing shared written), the channel wakes waiters.
    loaded_flag: AtomicBool,
    loaded: watch::Sender<bool>,
    /// Set while a heartbeat is running or recent, so a flood of probes costs one write
    /// (the heartbeat's turn, taken in `heartbeat`).
    pub(super) last_heartbeat: tokio::sync::Mutex<Option<Instant>>,
}

impl Default for HealthState {
    fn default() -> Self {
        HealthState {
            writes: Mutex::new(Writes::default()),
            failing: AtomicBool::new(false),
            corrupt: Mutex::new(BTreeSet::new()),
            corrupt_records: Mutex::new(BTreeSet::new()),
            corrupt_found: AtomicU64::new(0),
            lost_ids: AtomicU64::new(0),
            loaded_flag: AtomicBool::new(false),
            loaded: watch::Sender::new(false),
            last_heartbeat: tokio::sync::Mutex::new(None),
        }
    }
}

/// The overall state, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// The store does not take writes: ingest fails.
    Unavailable,
    /// The open hour is still being loaded after a start.
    Loading,
    /// Serving, but some hours failed verification (they are refused as corrupt), the
    /// wall clock jumped ahead (or a start found it far past the last heartbeat) and is
    /// not followed, or (cluster mode) this node's clock is off the cluster's.
    Degraded,
    Ok,
}

/// Why the status is not `ok`: the HTTP layer says it in words.
#[derive(Debug, Clone)]
pub enum HealthReason {
    /// The latest write failed, and why (the store's words).
    WriteFailed(String),
    /// The open hour is still being loaded.
    Loading,
    /// Some stored data failed verification and is not served.
    Corrupt,
    /// A forward jump of the clock is held; `reference`: the clock is the cluster's
    /// (PostgreSQL's), not this node's.
    ClockJump {
        jump: crate::clock::JumpState,
        reference: bool,
    },
    /// Cluster mode: this node's clock is `offset_seconds` off the cluster's (ahead
    /// when positive), beyond the tolerance.
    NodeClockOff { offset_seconds: i64 },
}

/// The `/healthz` document, but its `status` and `reason` (which the HTTP layer writes).
#[derive(Debug, Clone, Serialize)]
pub struct HealthReport {
    #[serde(skip)]
    pub status: HealthStatus,
    #[serde(skip)]
    pub reason: Option<HealthReason>,
    pub current_hour: String,
    pub clock_behind_seconds: i64,
    /// How far the wall clock is ahead of the time the service runs on: non-zero while a
    /// forward jump is neither corrected nor confirmed (see `clock_jump_confirm_seconds`).
    pub clock_ahead_seconds: i64,
    /// Cluster mode: how far this node's wall clock is ahead of the cluster's
    /// (PostgreSQL's), negative behind; absent on the embedded store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_clock_offset_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrupt_hours: Vec<String>,
    /// Stored records other than hours that failed verification (`universe`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrupt_records: Vec<String>,
    /// Seconds since the latest failed write, while it holds the status `unavailable`
    /// (it is `ok` again once a write begun [`RECOVERY_HOLD`] after it succeeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_failed_seconds_ago: Option<u64>,
    /// What the background scrub has verified and found.
    pub scrub: super::ScrubReport,
}

impl HealthReport {
    /// Whether a load balancer should send traffic here (`/healthz` answers 200).
    pub fn is_serving(&self) -> bool {
        matches!(self.status, HealthStatus::Ok | HealthStatus::Degraded)
    }
}

impl Service {
    /// Records how a store write ended, for `/healthz`, and passes the result on. Its
    /// start is not known, so a success here ends no failure (the write rule).
    pub(super) fn note_write<T>(&self, result: crate::store::Result<T>) -> Result<T> {
        self.note_write_begun(None, result)
    }

    /// As [`Service::note_write`], for a write that began at `began`: a success ends a
    /// failure when it began at least [`RECOVERY_HOLD`] after it.
    pub(super) fn note_write_begun<T>(
        &self,
        began: Option<Instant>,
        result: crate::store::Result<T>,
    ) -> Result<T> {
        match &result {
            Ok(_) => {
                if let Some(began) = began {
                    self.note_success(began);
                }
            }
            Err(e @ StoreError::Unavailable { .. }) => self.note_failure(e),
            Err(_) => {}
        }
        Ok(result?)
    }

    fn note_success(&self, began: Instant) {
        // A failure noted after this load began after this write did: it proves nothing
        // against it, so skipping the lock then loses nothing.
        if !self.health.failing.load(Ordering::Acquire) {
            return;
        }
        let mut writes = lock(&self.health.writes);
        if writes.succeeded(began) {
            self.health.failing.store(false, Ordering::Release);
            tracing::info!("the store takes writes again");
        }
    }

    pub(super) fn note_failure(&self, e: &StoreError) {
        let text = full_message(e);
        tracing::warn!(error = %text, "a store write failed");
        let mut writes = lock(&self.health.writes);
        writes.failed(Instant::now(), text);
        self.health.failing.store(true, Ordering::Release);
    }

    /// Records an hour whose stored data failed verification and could not be rebuilt.
    pub(super) fn note_corrupt(&self, hour: Hour, error: &StoreError) {
        tracing::error!(%hour, error = %full_message(error), "stored data failed verification");
        self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
        lock(&self.health.corrupt).insert(hour);
    }

    /// The error for `hour`'s data failing verification, recorded as
    /// [`Service::note_corrupt`] does.
    pub(super) fn corrupt(&self, hour: Hour, error: StoreError) -> super::ServiceError {
        self.note_corrupt(hour, &error);
        super::ServiceError::Corrupt {
            hour,
            keys_only: false,
            source: error,
        }
    }

    /// Records a stored record that is not an hour's (`what`, e.g. `universe`) whose data
    /// failed verification.
    pub(super) fn note_corrupt_record(&self, what: &'static str, error: &StoreError) {
        tracing::error!(record = what, error = %full_message(error), "stored data failed verification");
        self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
        lock(&self.health.corrupt_records).insert(what);
    }

    /// Marks the open hour loaded: waiting requests proceed, `/healthz` stops saying so.
    pub(super) fn set_loaded(&self) {
        self.health.loaded_flag.store(true, Ordering::Release);
        self.health.loaded.send_replace(true);
    }

    pub fn is_loaded(&self) -> bool {
        self.health.loaded_flag.load(Ordering::Acquire)
    }

    /// Resolves once the open hour is loaded (at once in steady state).
    pub async fn wait_loaded(&self) {
        if self.is_loaded() {
            return;
        }
        let mut rx = self.health.loaded.subscribe();
        let _ = rx.wait_for(|loaded| *loaded).await;
    }
}

impl Health<'_> {
    /// The health report: a heartbeat write through the store's write path (at most
    /// one a second), the write rule's verdict (module doc), loading and corruption.
    pub async fn report(&self) -> HealthReport {
        self.heartbeat().await;
        let corrupt: Vec<String> = lock(&self.health.corrupt)
            .iter()
            .map(|h| h.rfc3339())
            .collect();
        let corrupt_records: Vec<String> = lock(&self.health.corrupt_records)
            .iter()
            .map(|r| (*r).to_owned())
            .collect();
        let write_failure = lock(&self.health.writes).failure.clone();
        let write_failed_seconds_ago = write_failure.as_ref().map(|f| f.at.elapsed().as_secs());
        let jump = self.health().clock_jump();
        let (status, reason) = if let Some(failure) = write_failure {
            (
                HealthStatus::Unavailable,
                Some(HealthReason::WriteFailed(failure.why)),
            )
        } else if !self.is_loaded() {
            (HealthStatus::Loading, Some(HealthReason::Loading))
        } else if !corrupt.is_empty() || !corrupt_records.is_empty() {
            (HealthStatus::Degraded, Some(HealthReason::Corrupt))
        } else if jump.ahead_seconds > 0 {
            let reference = self.node_clock_offset_seconds().is_some();
            (
                HealthStatus::Degraded,
                Some(HealthReason::ClockJump { jump, reference }),
            )
        } else if self.node_clock_off() {
            let offset_seconds = self.node_clock_offset_seconds().unwrap_or(0);
            (
                HealthStatus::Degraded,
                Some(HealthReason::NodeClockOff { offset_seconds }),
            )
        } else {
            (HealthStatus::Ok, None)
        };
        HealthReport {
            status,
            reason,
            current_hour: self.current_hour().rfc3339(),
            clock_behind_seconds: self.clock_behind_seconds(),
            clock_ahead_seconds: jump.ahead_seconds,
            node_clock_offset_seconds: self.node_clock_offset_seconds(),
            corrupt_hours: corrupt,
            corrupt_records,
            write_failed_seconds_ago,
            scrub: self.health().scrub_report(),
        }
    }

    /// Whether the store takes writes now, as `/healthz` would say without writing a
    /// heartbeat first (the write rule).
    pub fn store_takes_writes(&self) -> bool {
        !self.health.failing.load(Ordering::Acquire)
    }

    /// Verification failures found so far (for `/metrics`).
    pub fn corrupt_found(&self) -> u64 {
        self.health.corrupt_found.load(Ordering::Relaxed)
    }

    /// Where reads meant for read replicas went (for `/metrics`); `None` without replicas.
    pub fn replica_reads(&self) -> Option<crate::store::ReplicaReads> {
        self.store.replica_reads()
    }

    /// IDs acknowledged and then lost by the store, found at seals so far (for
    /// `/metrics`).
    pub fn lost_ids(&self) -> u64 {
        self.health.lost_ids.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_at(at: Instant) -> Writes {
        let mut writes = Writes::default();
        writes.failed(at, "disk full".into());
        writes
    }

    #[test]
    fn a_write_that_began_within_the_hold_after_a_failure_proves_nothing() {
        let t0 = Instant::now();
        let mut writes = failed_at(t0);
        let just_short = t0 + RECOVERY_HOLD - Duration::from_millis(1);
        for began in [t0 - Duration::from_secs(1), t0, just_short] {
            assert!(!writes.succeeded(began), "began {began:?}");
            assert!(writes.failure.is_some());
        }
    }

    #[test]
    fn a_write_that_began_after_the_hold_ends_the_failure() {
        let t0 = Instant::now();
        let mut writes = failed_at(t0);
        assert!(writes.succeeded(t0 + RECOVERY_HOLD));
        assert!(writes.failure.is_none());
        // Nothing to end: a later success is a plain success.
        assert!(!writes.succeeded(t0 + RECOVERY_HOLD * 2));
    }

    #[test]
    fn every_failure_starts_the_hold_again_and_out_of_order_ones_never_shorten_it() {
        let t0 = Instant::now();
        let mut writes = failed_at(t0);
        let t1 = t0 + Duration::from_secs(3);
        writes.failed(t1, "still full".into());
        writes.failed(t0 + Duration::from_secs(1), "noted late".into());
        assert!(!writes.succeeded(t0 + RECOVERY_HOLD));
        assert!(!writes.succeeded(t1 + RECOVERY_HOLD - Duration::from_millis(1)));
        assert!(writes.succeeded(t1 + RECOVERY_HOLD));
    }
}
