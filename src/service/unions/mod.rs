//! The unions' own state: what building a union waits on, and what builds leave behind
//! for the next reader. [`Unions`] owns
//! - the build lock of each v1 union range and of each compact union (range, precision
//!   and form): readers of one range share its next build;
//! - the bounded build pool: builds of different ranges at once, past which a build is
//!   refused at once (503 busy) rather than queued into a 408; compact builds (a closed
//!   hour's or a past day's ribbon, at any precision) take their slots too;
//! - the working memory of compact builds in flight (`memory`, a budget of `cache_bytes`
//!   apart from the render cache's): a build reserves its estimate before it starts, or
//!   is refused; its slot and reservation go with its work onto the blocking pool and are
//!   released when that work ends, even if the request that started it has gone;
//! - the open unions: renderings of unions ending in the open hour, one per encoding
//!   asked for, each with the version of that hour it shows (a quarter of `cache_bytes`),
//!   and, for a gzip JSON or hex body, what coding it left for the next version's
//!   renderer, which takes it under the range's turn ([`Unions::coding_before`]);
//! - the newest union filters built (`built`);
//! - sealed hours' keys, for the exact count of a union carried forward (an eighth of
//!   `cache_bytes`);
//! - what union and compact work has cost (`work`: runs and CPU time of each step, for
//!   `/stats` and `/metrics`), counted by [`Unions::measured`] and [`Unions::run`], which
//!   run that work on the blocking pool.
//!
//! Building a union reads the store and the open hours, so that stays the service's
//! work (`union.rs`, `incremental.rs`, `compact.rs`); all of the state above is reached
//! through this API only.
//!
//! Lock order: a range's turn ([`Unions::turn`], [`Unions::compact_turn`]; a tokio lock
//! held across the build), then a pool [`Unions::slot`], then a memory reservation
//! ([`Unions::reserve`], atomics, never waits), never the other way round. The
//! std mutexes inside (the range maps, the open unions, the built filters) and the sealed
//! keys' cache lock are leaves: each is held only inside one method here, never across an await and
//! never while taking another lock, so these methods may be called with a turn or a slot
//! held, but not with the service's ledger held. A rendering's own coding mutex
//! (`Rendered::take_coding`) is taken after the open unions' is released.

mod built;
mod memory;
mod open;
mod ranges;
mod sealed_keys;
mod work;

pub(super) use built::{BuiltUnion, Growth};
pub(super) use memory::Refused;
pub(super) use open::{OpenKey, OpenStamp, UnionKey};
pub(super) use ranges::RangeTurn;
pub(super) use work::Step;
pub use work::{StepStats, UnionWork};

use super::cache::CompactKey;
use super::{lock, Result, ServiceError};
use crate::bloom::Key;
use crate::hour::Hour;
use crate::render::{HexCoding, Rendered};
use built::BuiltUnions;
use memory::{BuildMemory, Reserved};
use open::{OpenUnions, OPEN_UNIONS};
use ranges::Ranges;
use sealed_keys::SealedKeys;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(super) struct Unions {
    /// One build at a time per union range: readers of a range share its next build.
    ranges: Ranges<UnionKey>,
    /// One compact build at a time per union range and precision (on `pool`).
    compact_ranges: Ranges<CompactKey>,
    /// Union and compact builds of different ranges running at once; past it, 503 `busy`.
    pool: Arc<Semaphore>,
    /// Working memory reserved by compact builds in flight.
    memory: Arc<BuildMemory>,
    /// Unions that end in the open hour (`since`, today), each with the open hour's
    /// version it was built from: pollers asking for the same range between two ingests
    /// share one build instead of each re-reading every hour's keys.
    open: Mutex<OpenUnions>,
    /// The newest union filters built, so each representation renders one build, and
    /// one ending in the open hour is carried forward rather than rebuilt.
    built: BuiltUnions,
    /// Sealed hours' keys, for the exact count of a union carried forward.
    sealed_keys: SealedKeys,
    /// What union work has cost.
    work: work::Work,
}

/// What a build holds while it runs: its pool slot and its working memory, both
/// released when it is dropped.
pub(in crate::service) struct Held {
    _slot: OwnedSemaphorePermit,
    _memory: Reserved,
}

/// What the open unions hold now, for `/stats`.
pub(super) struct OpenUsage {
    pub entries: usize,
    pub max_entries: usize,
    pub bytes: usize,
    pub budget_bytes: usize,
}

impl Unions {
    /// `builds` at once (at least one), within budgets carved from `cache_bytes`.
    pub fn new(builds: usize, cache_bytes: usize) -> Unions {
        Unions {
            ranges: Ranges::new(),
            compact_ranges: Ranges::new(),
            pool: Arc::new(Semaphore::new(builds.max(1))),
            memory: BuildMemory::new(cache_bytes as u64),
            open: Mutex::new(OpenUnions::new(cache_bytes / 4)),
            built: BuiltUnions::new(cache_bytes / 4),
            sealed_keys: SealedKeys::new(cache_bytes / 8),
            work: work::Work::default(),
        }
    }

    /// Runs `f` on the blocking pool and counts its CPU time as a run of `step`.
    pub async fn measured<T: Send + 'static>(
        &self,
        step: Step,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        let (out, cpu) = tokio::task::spawn_blocking(move || work::timed(f)).await?;
        self.work.record(step, cpu);
        Ok(out)
    }

    /// Runs `f` on the blocking pool holding `held` (a build's slot and memory) until
    /// `f` returns, and counts its CPU time as a run of `step`. If the request awaiting
    /// it goes away, the work still holds both until it ends: the pool and the budget
    /// bound what runs, not what is awaited.
    pub async fn run<T: Send + 'static>(
        &self,
        held: Held,
        step: Step,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        self.measured(step, move || {
            let out = f();
            drop(held);
            out
        })
        .await
    }

    /// What union work has cost so far.
    pub fn work(&self) -> UnionWork {
        self.work.stats()
    }

    /// Waits for the turn to build the union `key`.
    pub async fn turn(&self, key: UnionKey) -> RangeTurn<'_, UnionKey> {
        self.ranges.turn(key).await
    }

    /// Waits for the turn to build the compact union `key`.
    pub async fn compact_turn(&self, key: CompactKey) -> RangeTurn<'_, CompactKey> {
        self.compact_ranges.turn(key).await
    }

    /// A build slot, held for the build.
    ///
    /// # Errors
    /// [`ServiceError::Busy`] when every slot is taken: refused at once, not queued.
    pub fn slot(&self) -> Result<OwnedSemaphorePermit> {
        self.pool.clone().try_acquire_owned().map_err(|_| {
            ServiceError::Busy(
                "every union build slot is taken; retry shortly (setting union_builds)".into(),
            )
        })
    }

    /// Reserves `bytes` of working memory for the build holding `slot`; refused at once
    /// (never queued) when the budget has not that much left.
    pub fn reserve(
        &self,
        slot: OwnedSemaphorePermit,
        bytes: u64,
    ) -> std::result::Result<Held, Refused> {
        Ok(Held {
            _slot: slot,
            _memory: self.memory.reserve(bytes)?,
        })
    }

    /// `(reserved, budget)` of the builds' working memory now, in bytes.
    pub fn memory_usage(&self) -> (u64, u64) {
        self.memory.usage()
    }

    /// The open union of `key` if it shows at least `wanted` (versions only grow).
    pub fn open(&self, key: &OpenKey, wanted: OpenStamp) -> Option<Arc<Rendered>> {
        lock(&self.open).get(key, wanted)
    }

    /// What rendering the union of `key` kept now left for rendering its next version.
    pub fn coding_before(&self, key: &OpenKey) -> Option<HexCoding> {
        let kept = lock(&self.open).latest(key)?;
        kept.take_coding()
    }

    /// Keeps the rendering of an open union, showing `stamp`.
    pub fn keep_open(&self, key: OpenKey, stamp: OpenStamp, rendered: Arc<Rendered>) {
        lock(&self.open).insert(key, stamp, rendered);
    }

    /// The union filter built for `from..=to` showing exactly `current` (the open hour
    /// and its version; `None` for a range of closed hours), if one is kept.
    pub fn built(
        &self,
        from: Hour,
        to: Hour,
        current: Option<OpenStamp>,
        complete: bool,
    ) -> Option<BuiltUnion> {
        self.built.find(from, to, current, complete)
    }

    /// Takes out the kept union of `from..=now` that can be carried forward, if any.
    pub fn take_growable(&self, from: Hour, now: Hour) -> Option<BuiltUnion> {
        self.built.take_growable(from, now)
    }

    /// Keeps the newest few built filters (within a quarter of the cache budget each),
    /// so each representation of a union is a rendering of one build.
    pub fn remember(&self, built: BuiltUnion) {
        self.built.remember(built);
    }

    /// The sorted keys of the sealed `hour`, if kept.
    pub fn sealed_keys(&self, hour: Hour) -> Option<Arc<Vec<Key>>> {
        self.sealed_keys.get(hour)
    }

    /// Keeps the sorted keys of the sealed `hour`, within the budget.
    pub fn keep_sealed_keys(&self, hour: Hour, keys: Arc<Vec<Key>>) {
        self.sealed_keys.keep(hour, keys);
    }

    /// What the open unions hold now.
    pub fn open_usage(&self) -> OpenUsage {
        let open = lock(&self.open);
        let (entries, bytes) = open.usage();
        OpenUsage {
            entries,
            max_entries: OPEN_UNIONS,
            bytes,
            budget_bytes: open.budget(),
        }
    }
}
