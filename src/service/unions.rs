//! The unions' own state: what building a union waits on, and what builds leave behind
//! for the next reader. [`Unions`] owns
//! - the build lock of each v1 union range and of each compact union (range, precision
//!   and form): readers of one range share its next build;
//! - the bounded build pool: builds of different ranges at once, past which a build is
//!   refused at once (`TooManyWaiting`) rather than queued past its deadline; compact builds (a
//!   closed hour's or a past day's ribbon, at any precision) take their slots too;
//! - the working memory of union and compact builds in flight (`memory`, the builds'
//!   share of the one budget): a build reserves its estimate before it reads the keys
//!   it builds from, or is refused; its slot and reservation go with its work onto the
//!   blocking pool and are released when that work ends, even if the request that
//!   started it has gone;
//! - in the one cache ([`super::kept`]): the open unions (renderings of unions ending in
//!   the open hour, one per encoding asked for, each with the version of that hour it
//!   shows, and beside it, for a gzip JSON or hex body, what coding it left for the next
//!   version's renderer, which takes it under the range's turn,
//!   [`Unions::coding_before`]); the newest union filter built per range; sealed hours'
//!   keys, for the exact count of a union carried forward;
//! - what union and compact work has cost (`work`: runs and CPU time of each step, for
//!   `/stats` and `/metrics`), counted by [`Unions::measured`] and [`Unions::run`], which
//!   run that work on the blocking pool.
//!
//! Building a union reads the store and the open hours, so that stays the service's
//! work (`view.rs`, `incremental.rs`, `compact.rs`); all of the state above is reached
//! through this API only.
//!
//! Lock order: see [`Unions`].

mod built;
pub mod fair;
mod memory;
mod open;
mod ranges;
pub(super) mod runs;
mod view;
mod work;

pub(super) use built::{BuiltUnion, Growth};
pub(super) use memory::Refused;
pub(super) use memory::{Reserved, Stage};
pub(super) use open::{OpenKey, OpenStamp, UnionKey};
pub(super) use ranges::RangeTurn;
pub(super) use work::Step;
pub use work::{StepStats, UnionWork};

use super::cache::CompactKey;
use super::kept::{Kept, OpenUnion, Slot, Value};
use super::{lock, Result, ServiceError};
use crate::bloom::Key;
use crate::hour::Hour;
use crate::render::{Before, HexCoding, Rendered};
use fair::{BuildQueue, BuildSlot, QueueStats};
use memory::BuildMemory;
use ranges::Ranges;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The unions' state. Lock order: a range's turn ([`Unions::turn`],
/// [`Unions::compact_turn`]; a tokio lock held across the build), then a pool
/// [`Unions::slot`], then a memory reservation ([`Unions::reserve`], atomics, never
/// waits), never the other way round. The std mutexes inside (the range maps, `open`
/// with the codings it keeps, the built filters, the sealed keys) are leaves: each is
/// held only inside one method here, never across an await and never while taking
/// another lock, so these methods may be called with a turn or a slot held, but not
/// with the service's ledger held.
pub(super) struct Unions {
    /// One build at a time per union range: readers of a range share its next build.
    ranges: Ranges<UnionKey>,
    /// One compact build at a time per union range and precision (on `pool`).
    compact_ranges: Ranges<CompactKey>,
    /// One rendering at a time of each closed hour and form not kept (off the pool).
    hour_renders: Ranges<UnionKey>,
    /// One exact build at a time of each sealed hour or range (by first and last hour
    /// index, on `pool`).
    exact_hours: Ranges<(i64, i64)>,
    /// Union, compact and exact builds of different ranges running at once, handed out
    /// fairly across clients ([`fair`]).
    pool: Arc<BuildQueue>,
    /// Working memory reserved by compact builds in flight.
    memory: Arc<BuildMemory>,
    /// What builds leave for the next reader: open unions, built filters, sealed keys.
    kept: Arc<Kept>,
    /// The open hour of the open unions kept (an hour index): those of an earlier one
    /// are dropped when one of a later hour is kept.
    open_hour: AtomicI64,
    /// What union work has cost.
    work: work::Work,
}

/// What a build holds while it runs: its pool slot and its working memory, both
/// released when it is dropped.
pub(in crate::service) struct Held {
    _slot: BuildSlot,
    memory: Reserved,
}

impl Held {
    /// Reserves `bytes` more working memory for this build, or refuses at once.
    pub fn grow(&mut self, bytes: u64) -> std::result::Result<(), Refused> {
        self.memory.grow(bytes)
    }

    /// The handle through which the build says what it holds as it goes.
    pub fn stage(&self) -> Stage {
        self.memory.stage()
    }
}

impl Unions {
    /// `builds` at once (at least one), their working memory within `build_bytes`
    /// together, what they leave kept in `kept`.
    pub fn new(builds: usize, build_bytes: u64, kept: Arc<Kept>) -> Unions {
        Unions {
            ranges: Ranges::new(),
            compact_ranges: Ranges::new(),
            hour_renders: Ranges::new(),
            exact_hours: Ranges::new(),
            pool: BuildQueue::new(builds),
            memory: BuildMemory::new(build_bytes),
            kept,
            open_hour: AtomicI64::new(i64::MIN),
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

    /// Waits for the turn to render the closed hour of `key` (its first and last hour
    /// are the hour): readers of one share its rendering.
    pub async fn hour_render_turn(&self, key: UnionKey) -> RangeTurn<'_, UnionKey> {
        self.hour_renders.turn(key).await
    }

    /// Waits for the turn to build the exact body of the sealed hours `from..=to`:
    /// readers of one share its build.
    pub async fn exact_turn(&self, from: Hour, to: Hour) -> RangeTurn<'_, (i64, i64)> {
        self.exact_hours.turn((from.index(), to.index())).await
    }

    /// Reserves `bytes` of working memory (at most the whole builds' part: a rendering
    /// larger than that runs alone) for work that takes no pool slot, a closed hour's
    /// rendering; refused at once while other work holds what it needs.
    pub fn reserve_memory(&self, bytes: u64) -> std::result::Result<Reserved, Refused> {
        let (_, budget) = self.memory.usage();
        self.memory.reserve(bytes.min(budget))
    }

    /// A build slot for the current task's client once its turn comes (every build a
    /// reader can cause: unions, compact forms, exact bodies): at most one running per
    /// client while others wait, clients served in turn.
    ///
    /// # Errors
    /// [`ServiceError::TooManyWaiting`] at once when the client has too many builds waiting.
    pub async fn queued_slot(&self) -> Result<BuildSlot> {
        let client = fair::current_client();
        self.pool
            .acquire(client)
            .await
            .map_err(|fair::QueueFull| ServiceError::TooManyWaiting {
                waiting: fair::WAITING_PER_CLIENT,
            })
    }

    /// The build queue's figures now.
    pub fn queue_stats(&self) -> QueueStats {
        self.pool.stats()
    }

    /// Reserves `bytes` of working memory for the build holding `slot`; refused at once
    /// (never queued) when the budget has not that much left.
    pub fn reserve(&self, slot: BuildSlot, bytes: u64) -> std::result::Result<Held, Refused> {
        Ok(Held {
            _slot: slot,
            memory: self.memory.reserve(bytes)?,
        })
    }

    /// Reserves `first` bytes of working memory for the build holding `slot`, or, refused,
    /// `second` (its smaller alternative); `true` with the first. Refused (as for
    /// `second`) at once when neither fits.
    pub fn reserve_either(
        &self,
        slot: BuildSlot,
        first: u64,
        second: u64,
    ) -> std::result::Result<(Held, bool), Refused> {
        let (memory, first) = match self.memory.reserve(first) {
            Ok(memory) => (memory, true),
            Err(_) => (self.memory.reserve(second)?, false),
        };
        Ok((
            Held {
                _slot: slot,
                memory,
            },
            first,
        ))
    }

    /// `(reserved, budget)` of the builds' working memory now, in bytes.
    pub fn memory_usage(&self) -> (u64, u64) {
        self.memory.usage()
    }

    /// What the builds in flight hold of their working memory now, in bytes.
    pub fn memory_holding(&self) -> u64 {
        self.memory.holding()
    }

    /// The open union of `key` if it shows at least `wanted` (same open hour, version
    /// not older: versions only grow).
    pub fn open(&self, key: &OpenKey, wanted: OpenStamp) -> Option<Arc<Rendered>> {
        match self.kept.get(&Slot::OpenUnion(*key))? {
            Value::OpenUnion(u) if u.stamp.0 == wanted.0 && u.stamp.1 >= wanted.1 => {
                Some(u.rendered.clone())
            }
            _ => None,
        }
    }

    /// What the renderings of the union of `key` kept now left for rendering its next
    /// version, taken (once): its next renderer holds the range's turn. The version
    /// before the one kept gives its body's memory, unless a response still holds it.
    pub fn before(&self, key: &OpenKey) -> Before {
        match self.kept.get(&Slot::OpenUnion(*key)) {
            Some(Value::OpenUnion(u)) => Before {
                coding: lock(&u.coding).take(),
                body: lock(&u.previous)
                    .take()
                    .and_then(|previous| Arc::try_unwrap(previous).ok())
                    .map(Rendered::into_body_memory)
                    .unwrap_or_default(),
            },
            _ => Before::default(),
        }
    }

    /// Keeps the rendering of an open union, showing `stamp`, with what it left for
    /// rendering the next version.
    pub fn keep_open(
        &self,
        key: OpenKey,
        stamp: OpenStamp,
        rendered: Arc<Rendered>,
        coding: Option<HexCoding>,
    ) {
        // Unions of earlier open hours can never be asked for again.
        if self.open_hour.fetch_max(stamp.0, Ordering::AcqRel) < stamp.0 {
            self.kept.retain(|_, value| match value {
                Value::OpenUnion(u) => u.stamp.0 >= stamp.0,
                _ => true,
            });
        }
        let previous = match self.kept.get(&Slot::OpenUnion(key)) {
            Some(Value::OpenUnion(u)) => Some(u.rendered.clone()),
            _ => None,
        };
        let union = OpenUnion::new(stamp, rendered, coding, previous);
        self.kept
            .insert(Slot::OpenUnion(key), Value::OpenUnion(Arc::new(union)));
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
        match self.kept.get(&Slot::Built((from.index(), to.index())))? {
            Value::Built(b) if b.stamp == current && b.complete == complete => {
                Some(BuiltUnion::clone(&b))
            }
            _ => None,
        }
    }

    /// Takes out the kept union of `from..=now` that can be carried forward, if any.
    pub fn take_growable(&self, from: Hour, now: Hour) -> Option<BuiltUnion> {
        let slot = Slot::Built((from.index(), now.index()));
        let growable = |value: &Value| match value {
            Value::Built(b) => b.growth.is_some() && b.stamp.is_some_and(|s| s.0 == now.index()),
            _ => false,
        };
        match self.kept.remove_if(&slot, growable)? {
            // Taken out: nobody else holds it, so it is carried forward without a copy.
            Value::Built(b) => Some(Arc::try_unwrap(b).unwrap_or_else(|b| BuiltUnion::clone(&b))),
            _ => None,
        }
    }

    /// Keeps the newest filter built for its range (in place of any before), so each
    /// representation of a union is a rendering of one build.
    pub fn remember(&self, built: BuiltUnion) {
        let slot = Slot::Built(built.range);
        self.kept.insert(slot, Value::Built(Arc::new(built)));
    }

    /// The sorted keys of the sealed `hour`, if kept.
    pub fn sealed_keys(&self, hour: Hour) -> Option<Arc<Vec<Key>>> {
        match self.kept.get(&Slot::SealedKeys(hour))? {
            Value::Keys(keys) => Some(keys),
            _ => None,
        }
    }

    /// Keeps the sorted keys of the sealed `hour`, within the budget.
    pub fn keep_sealed_keys(&self, hour: Hour, keys: Arc<Vec<Key>>) {
        self.kept.insert(Slot::SealedKeys(hour), Value::Keys(keys));
    }
}
