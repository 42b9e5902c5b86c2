//! The service: what bloomcast does, independent of HTTP. Ingest keys into the open
//! hour, publish any hour (or union of hours) as a rendered filter, seal hours as they
//! close and prune past retention.
//!
//! Invariants it keeps:
//! - every acknowledged key is in the store before `ingest` returns, and the store puts
//!   it in an hour that is still open, so it is in that hour's sealed filter;
//! - time only moves forward: the current hour is the later of the clock's hour and the
//!   newest hour the store has opened (its high-water mark), so a clock stepped back
//!   never reopens, re-seals or hides an hour;
//! - no filter is ever served for an hour before genesis or in the future, and nothing
//!   read back from the store unverified is served as a filter;
//! - every served filter's false-positive estimate is at most the target.
//!
//! It speaks in hours, bytes, digests and versions: what they are called on the wire
//! (URLs, ETags, headers, status codes) is the HTTP layer's to say.
//!
//! Its state is split into parts, each owning its locks behind a small API, and each
//! module doc says what the part owns and its own lock order: `open_hours` (the ledger
//! of open hours, the board, the refresh and render turns, when the marks were read, the
//! versions kept for deltas),
//! `unions` (union builds' range turns and build slots, and what builds leave for the
//! next reader), `sealer` (the seal turn, the seal backoff, signatures and sealed hours'
//! figures), `cache` (rendered immutable responses), `history` (decoded filters) and
//! `health` (write failures, corrupt hours, the heartbeat). `Service` itself keeps only
//! the store, the clock, the tuning, genesis and the hour marks (atomics).
//!
//! Lock order across the parts, outermost first; a lock is never taken while one after
//! it is held:
//! 1. a union's range turn, then a union build slot (`unions`);
//! 2. the seal turn (`sealer`): a union build seals the hours it reads, and sealing never
//!    calls into a union build;
//! 3. the refresh turn and the render turns (`open_hours`), each taken with no other
//!    tokio lock held (a union ending in the open hour refreshes it before taking its
//!    turn);
//! 4. the ledger (`open_hours`, a std mutex taken only inside `OpenHours`' methods,
//!    never held across an await) is innermost.
//!
//! The heartbeat's turn (`health`) is taken by `/healthz` alone, with no other lock held.
//!
//! The other std mutexes (inside `unions`, `sealer`, `cache`, `history`, `health`, and
//! `open_hours`' `marks_read_at` and kept versions for deltas) each guard a plain map or
//! value, are held only inside one method, never across an await and never while taking
//! another lock, and are not taken while the ledger is held. The board takes no lock
//! (atomics and `arc-swap`): it is written while the ledger is held. A delta being made
//! (a `OnceCell` in `open_hours::deltas`) is awaited with no lock of the service held.

mod cache;
mod chain;
mod compact;
mod health;
mod history;
mod incremental;
mod lifecycle;
mod open_hours;
mod ready;
mod sealer;
pub use ready::ReadyHour;
mod stats;
mod union;
mod unions;
mod views;

pub use chain::{ChainPage, SignedLink, MAX_CHAIN_PAGE};
pub use health::{HealthReport, HealthStatus, RECOVERY_HOLD};
pub use history::History;

use crate::bloom::{FilterError, Key};
use crate::clock::{Clock, GuardedClock, JumpGuard, JumpState};
use crate::hour::{Day, Hour};
use crate::render::Rendered;
use crate::store::{Store, StoreError};
// Every std lock of the service is taken through it: the policy for poisoning is
// stated in `crate::sync`.
use crate::sync::lock;
// Public for `benches/caches.rs`, which measures it against the cache crates.
pub use cache::{CacheKey, RenderCache};
use chrono::{DateTime, Utc};
use open_hours::{Deltas, OpenHours};
pub use stats::{CacheStats, HourStats};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;
pub use unions::{StepStats, UnionWork};

#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Gone(String),
    #[error("{0}")]
    BadRange(String),
    /// The batch would take the hour past `max_hour_ids` distinct IDs; nothing was recorded.
    #[error("the hour {hour} is full: it holds {count} distinct IDs and the limit is {max}")]
    HourFull { hour: Hour, count: u64, max: u64 },
    /// A bounded pool is full; retry shortly.
    #[error("{0}")]
    Busy(String),
    /// The resource exists, but not in the representation asked for (a compact
    /// filter of the open hour).
    #[error("{0}")]
    NotAcceptable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A filter could not be built or read back (a stored filter that fails to decode).
    #[error("filter error: {0}")]
    Filter(#[from] FilterError),
    /// A background task the request waited on failed (a panic while building).
    #[error("background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The service's tunables, from [`crate::config::Settings`].
#[derive(Debug, Clone)]
pub struct Tuning {
    pub capacity: u64,
    pub target_fpp: f64,
    pub retention_hours: u64,
    pub cache_bytes: usize,
    /// How stale the view of the open hour may be (other nodes' appends).
    pub refresh: Duration,
    /// Distinct IDs an hour may hold; ingest beyond it is refused (`HourFull`).
    pub max_hour_ids: u64,
    /// Union builds of different ranges at once; more are refused (`Busy`).
    pub union_builds: usize,
    /// How far the wall clock may run ahead of the monotonic clock before it is a jump
    /// (see [`crate::clock::JumpGuard`]).
    pub clock_jump_tolerance: Duration,
    /// How long a forward jump must hold before it is followed.
    pub clock_jump_confirm: Duration,
    /// The key that signs each sealed hour's chain link; `None` publishes unsigned.
    pub signer: Option<crate::chain::Signer>,
    /// Bytes of the open hour's versions kept as compression dictionaries (RFC 9842
    /// deltas for pollers); 0 keeps none.
    pub delta_bytes: usize,
    /// A new version of the open hour is kept at most this often (`open_max_age`: a
    /// poller holds its dictionary that long) ...
    pub delta_every: Duration,
    /// ... unless this many new IDs arrived since the last one kept (0: by time only).
    pub delta_ids: u64,
}

/// What an ingest acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub hour: Hour,
    pub accepted: usize,
}

/// What a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Hour(Hour),
    Day(Day),
    /// From this hour through the current one.
    Since(Hour),
}

/// A served filter, with where it stands among the others.
#[derive(Debug, Clone)]
pub struct View {
    pub rendered: Arc<Rendered>,
    /// `None` when complete (immutable); else when the content may next change for good
    /// (the end of the open hour).
    pub open_until: Option<DateTime<Utc>>,
    /// The previous hour or day, if the service has it.
    pub prev: Option<Target>,
    /// The next hour or day, if it exists yet.
    pub next: Option<Target>,
    /// The open hour this view shows, whose versions may serve as compression
    /// dictionaries for later ones (RFC 9842); `None` for closed hours and unions.
    pub open_hour: Option<Hour>,
}

/// One line of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourSummary {
    pub hour: Hour,
    pub count: u64,
    pub complete: bool,
}

/// What bloomcast does. Its parts own their locks; the order across them is in the
/// module doc, and each part's own at its struct (`OpenHours`, `Deltas`, `Unions`).
pub struct Service {
    store: Arc<dyn Store>,
    /// The clock held to its monotonic reading: forward jumps are not followed until
    /// confirmed, so no clock reading alone opens or prunes an hour.
    clock: GuardedClock<dyn Clock>,
    /// The high-water mark when the service started and the monotonic reading then:
    /// retention prunes no further than this mark plus the time measured since (see
    /// [`Service::prune_horizon`]).
    started: (Hour, Duration),
    tuning: Tuning,
    genesis: Hour,
    /// The newest hour the store has opened (an hour index): the current hour never goes
    /// back before it, whatever the clock says.
    high_water: AtomicI64,
    /// The newest hour durably closed in the store (an hour index; `i64::MIN` for none).
    closed_through: AtomicI64,
    /// The open hours: their ledger, board, refresh and render turns.
    open: OpenHours,
    health: health::Health,
    /// One seal at a time, its backoff, and what it remembers of sealed hours.
    sealer: sealer::Sealer,
    cache: RenderCache,
    /// Union builds' locks and pool, and what builds leave for the next reader.
    unions: unions::Unions,
    /// Decoded filters of complete hours for [`Service::history`], within a budget of
    /// `cache_bytes` counted apart from the render cache's.
    history: history::HistoryFilters,
}

impl Service {
    /// # Errors
    /// The store cannot tell its genesis.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        tuning: Tuning,
    ) -> Result<Service> {
        let genesis = store.genesis().await?;
        let marks = store.marks().await?;
        let tuning_history_budget = tuning.cache_bytes;
        let unions = unions::Unions::new(tuning.union_builds, tuning.cache_bytes);
        let guard = JumpGuard::new(tuning.clock_jump_tolerance, tuning.clock_jump_confirm);
        let started = (marks.high_water, clock.monotonic());
        let clock = GuardedClock::new(clock, guard);
        let service = Service {
            started,
            cache: RenderCache::new(tuning.cache_bytes),
            open: OpenHours::new(
                tuning.capacity,
                tuning.target_fpp,
                Deltas::new(tuning.delta_bytes, tuning.delta_every, tuning.delta_ids),
            ),
            store,
            clock,
            tuning,
            genesis,
            high_water: AtomicI64::new(marks.high_water.index()),
            closed_through: AtomicI64::new(marks.closed_through.map_or(i64::MIN, Hour::index)),
            health: health::Health::default(),
            sealer: sealer::Sealer::default(),
            unions,
            history: history::HistoryFilters::new(tuning_history_budget),
        };
        service.warn_if_clock_behind();
        Ok(service)
    }

    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    pub fn genesis(&self) -> Hour {
        self.genesis
    }

    /// The service's current (open) hour: the later of the clock's hour and the newest
    /// hour the store has opened, so that time only moves forward for the service.
    pub fn current_hour(&self) -> Hour {
        self.clock.current_hour().max(self.high_water())
    }

    fn high_water(&self) -> Hour {
        Hour::from_index(self.high_water.load(Ordering::Acquire))
    }

    /// The newest hour durably closed to appends, if any.
    fn closed_through(&self) -> Option<Hour> {
        match self.closed_through.load(Ordering::Acquire) {
            i64::MIN => None,
            h => Some(Hour::from_index(h)),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// What the clock's jump guard says now: how far the wall clock is ahead of the
    /// time the service runs on, and the jumps seen.
    pub fn clock_jump(&self) -> JumpState {
        self.clock.jump_state()
    }

    /// The hour before which retention may prune: the retention horizon of `now`, but
    /// never past the horizon of the high-water mark at start plus the whole hours
    /// measured on the monotonic clock since (and one hour of slack). A clock read once
    /// far ahead (a jump, or a start on a stepped clock) prunes nothing; after a long
    /// stop, pruning catches up at the pace of real time, keeping old hours longer,
    /// never shorter, than retention.
    pub(super) fn prune_horizon(&self, now: Hour) -> Hour {
        let (at_start, mono) = self.started;
        let passed = self.clock.monotonic().saturating_sub(mono).as_secs() / 3600;
        let bound = Hour::from_index(at_start.index().saturating_add(passed as i64 + 1));
        self.earliest(now.min(bound))
    }

    /// How far the clock is behind the start of the current hour (0 when it is not):
    /// non-zero after a clock step back, until the clock catches up.
    pub fn clock_behind_seconds(&self) -> i64 {
        let start = self.high_water().start();
        (start - self.clock.now()).num_seconds().max(0)
    }

    fn warn_if_clock_behind(&self) {
        let behind = self.clock_behind_seconds();
        if behind > 0 {
            tracing::warn!(
                behind_seconds = behind,
                current = %self.current_hour(),
                "the clock is behind the newest hour the store has opened: ingest stays in that \
                 hour until the clock passes its end"
            );
        }
    }

    /// Reads the marks from the store (other nodes move them) and takes the later of
    /// each; time never moves back.
    ///
    /// # Errors
    /// Store failures.
    pub(super) async fn read_marks(&self) -> Result<()> {
        let marks = self.store.marks().await?;
        self.raise_high_water(marks.high_water);
        if let Some(closed) = marks.closed_through {
            self.closed_through
                .fetch_max(closed.index(), Ordering::AcqRel);
        }
        self.open.marks_read();
        Ok(())
    }

    /// As [`Service::read_marks`], at most once per refresh interval.
    pub(super) async fn read_marks_if_due(&self) -> Result<()> {
        if self.open.marks_due(self.tuning.refresh) {
            self.read_marks().await?;
        }
        Ok(())
    }

    fn raise_high_water(&self, hour: Hour) {
        let before = self.high_water.fetch_max(hour.index(), Ordering::AcqRel);
        if hour.index() > before && self.clock.current_hour() < hour {
            self.warn_if_clock_behind();
        }
    }

    /// The oldest hour still served: genesis or the retention horizon, whichever is later.
    pub fn earliest(&self, now: Hour) -> Hour {
        let horizon = Hour::from_index(now.index() - self.tuning.retention_hours as i64 + 1);
        horizon.max(self.genesis)
    }

    /// Records keys in the current hour. Returns once they are durable.
    ///
    /// # Errors
    /// [`ServiceError::HourFull`] past `max_hour_ids`; [`ServiceError::Store`] if the
    /// store could not make them durable. Nothing was acknowledged then, and the caller
    /// may retry.
    pub async fn ingest(&self, keys: &[Key]) -> Result<Receipt> {
        self.wait_loaded().await;
        let now = self.current_hour();
        let max = self.tuning.max_hour_ids;
        let reservation = self.open.reserve(now, keys, max, self.closed_through())?;
        let began = Instant::now();
        let appended = self.store.append_at(now, keys).await;
        let (hour, cursor) = match self.note_write_begun(Some(began), appended) {
            Ok(appended) => appended,
            Err(e) => {
                self.open.release(reservation);
                return Err(e);
            }
        };
        self.raise_high_water(hour);
        let closed = self.closed_through();
        self.open
            .acknowledge(reservation, hour, keys, cursor, closed);
        Ok(Receipt {
            hour,
            accepted: keys.len(),
        })
    }

    /// The distinct-key count of the current hour as this node sees it.
    pub fn current_count(&self) -> u64 {
        let now = self.current_hour();
        self.open.count(now)
    }

    /// Checks that `hour` is one the service can speak for.
    fn check(&self, hour: Hour, now: Hour) -> Result<()> {
        if hour > now {
            return Err(ServiceError::NotFound(format!(
                "{hour} is in the future; the current hour is {now}"
            )));
        }
        if hour < self.genesis {
            return Err(ServiceError::NotFound(format!(
                "{hour} is before this service's first hour {}: nothing is known about it",
                self.genesis
            )));
        }
        if hour < self.earliest(now) {
            return Err(ServiceError::Gone(format!(
                "{hour} is past the retention of {} hours",
                self.tuning.retention_hours
            )));
        }
        Ok(())
    }

    /// The most recent hours, newest first, back to `earliest` but at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn recent(&self, limit: usize) -> Result<Vec<HourSummary>> {
        let now = self.current_hour();
        let earliest = self.earliest(now);
        self.refresh(now).await?;
        let mut out = vec![HourSummary {
            hour: now,
            count: self.current_count(),
            complete: false,
        }];
        let oldest = Hour::from_index((now.index() - limit as i64 + 1).max(earliest.index()));
        if oldest < now {
            let sealed = self.sealed_counts(oldest, now.prev()).await?;
            let mut hour = now.prev();
            while hour >= oldest {
                let (count, complete) = match sealed.iter().find(|(h, _)| *h == hour) {
                    Some((_, c)) => (*c, true),
                    None => self.closed_count(hour).await?,
                };
                out.push(HourSummary {
                    hour,
                    count,
                    complete,
                });
                hour = hour.prev();
            }
        }
        Ok(out)
    }
}

impl Service {
    /// `(hour, count)` of the sealed hours in `from..=to`; when a row fails verification,
    /// none (each hour is then read on its own, and a corrupt one rebuilt from its keys).
    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        match self.store.sealed_counts(from, to).await {
            Err(StoreError::Corrupt(why)) => {
                tracing::error!(%from, %to, %why, "a sealed hour's count failed verification");
                Ok(Vec::new())
            }
            other => Ok(other?),
        }
    }
}
