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
//! (URLs, ETags, headers, status codes) is the HTTP layer's to say, errors included
//! ([`ServiceError`] says what failed and with which data; `http::error` words it).
//!
//! Its public face is split by part (`parts`): `service.ingest()`, `hours()`,
//! `forms()`, `signing()`, `health()` and `stats()` hand out handles whose methods sit
//! in the modules that do the work; `Service` itself keeps its lifecycle (start, load,
//! tick, the background tasks) and the time it runs on.
//!
//! Its state is split into parts, each owning its locks behind a small API, and each
//! module doc says what the part owns and its own lock order: `open_hours` (the ledger
//! of open hours, the refresh and render turns, when the marks were read, the
//! versions kept for deltas),
//! `unions` (union builds' range turns and build slots, and what builds leave for the
//! next reader), `sealer` (the seal turn, the seal backoff, signatures and sealed hours'
//! figures), `cache` (rendered immutable responses), `history` (decoded filters),
//! `health` (write failures, corrupt hours, the heartbeat's turn), `scrub` (what the
//! background scrub verified and found) and `time` (the cluster's reference clock).
//! `Service` itself keeps only the store, the clock, the tuning, genesis and the hour
//! marks (atomics).
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
//! The heartbeat's turn (`health`, taken in `heartbeat`) is taken by `/healthz`, the
//! background heartbeat and a clock confirmation, each with no other lock held.
//!
//! The other std mutexes (inside `unions`, `sealer`, `cache`, `history`, `health`, and
//! `open_hours`' `marks_read_at` and kept versions for deltas) each guard a plain map or
//! value, are held only inside one method, never across an await and never while taking
//! another lock, and are not taken while the ledger is held. A delta being made
//! (a `OnceCell` in `open_hours::deltas`) is awaited with no lock of the service held.

mod budget;
mod cache;
mod chain;
mod changes;
mod compact;
mod error;
mod exact;
pub mod grades;
mod health;
mod heartbeat;
mod history;
mod incremental;
mod index;
mod ingest;
mod kept;
mod lifecycle;
mod marks;
mod open_hours;
mod parts;
mod retention;
mod scrub;
mod sealer;
mod signing;
pub use signing::register_key;
mod stats;
mod target;
mod time;
mod tuning;
mod unions;
mod validators;
mod views;
mod vouch;
mod warm;
pub use warm::WarmStats;

pub use budget::{Split, FOLLOWER_BYTES};
pub use chain::{ChainPage, SignedLink, MAX_CHAIN_PAGE};
pub use changes::SealedNote;
pub use error::{Result, ServiceError, Work};
pub use health::{HealthReason, HealthReport, HealthStatus, RECOVERY_HOLD};
pub use history::History;
pub use index::{HourState, HourSummary};
pub use ingest::Receipt;
pub use kept::KeptUsage;
pub use parts::{Forms, Health, Hours, Ingest, Signing, Stats};
pub use target::{Target, View};
pub use time::ClockReport;
pub use tuning::Tuning;

use crate::bloom::Sizing;
use crate::clock::{Clock, GuardedClock, TimeSource};
use crate::hour::Hour;
use crate::store::Store;
// Every std lock of the service is taken through it: the policy for poisoning is
// stated in `crate::sync`.
use crate::sync::lock;
// Public for `benches/caches.rs`, which measures it against the cache crates.
pub use cache::{CacheKey, RenderCache};
use open_hours::{Deltas, OpenHours};
pub use open_hours::{Linked, DICTIONARY_ID_BYTES};
pub use scrub::ScrubReport;
pub use stats::{CacheStats, HourStats, MemoryStats};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;
pub use unions::fair::{BuildClient, QueueStats, BUILD_CLIENT};
pub use unions::{StepStats, UnionWork};

/// What bloomcast does. Its parts own their locks; the order across them is in the
/// module doc, and each part's own at its struct (`OpenHours`, `Deltas`, `Unions`).
pub struct Service {
    store: Arc<dyn Store>,
    /// The clock held to its monotonic reading: forward jumps are not followed until
    /// confirmed, so no clock reading alone opens or prunes an hour. In cluster mode it
    /// reads the cluster's clock (`reference`), not this node's.
    clock: GuardedClock<dyn Clock>,
    /// Cluster mode: the cluster's clock (PostgreSQL's), which `clock` reads, and this
    /// node's own clock reported against it.
    reference: Option<time::Reference>,
    /// The high-water mark when the service started and the monotonic reading then:
    /// retention prunes no further than this mark plus the time measured since (see
    /// [`Service::prune_horizon`]).
    started: (Hour, Duration),
    tuning: Tuning,
    genesis: Hour,
    /// The first hour sized by the probe-sequence rule ([`Store::probes_from`]).
    probes_from: Hour,
    /// The newest hour the store has opened (an hour index): the current hour never goes
    /// back before it, whatever the clock says.
    high_water: AtomicI64,
    /// The newest hour durably closed in the store (an hour index; `i64::MIN` for none).
    closed_through: AtomicI64,
    /// The open hours: their ledger, refresh and render turns.
    open: OpenHours,
    health: health::HealthState,
    /// One seal at a time, its backoff, and what it remembers of sealed hours.
    sealer: sealer::Sealer,
    /// The parts of the one memory budget (`cache_bytes`).
    split: Split,
    /// The one cache of what is kept to answer again without rebuilding.
    kept: Arc<kept::Kept>,
    /// Its renderings.
    cache: RenderCache,
    /// Union builds' locks, pool and working memory; what builds leave, kept.
    unions: unions::Unions,
    /// What the background scrub has verified and found.
    scrub: scrub::Scrub,
    /// The precisions the compact forms are served at.
    grades: grades::Grades,
    /// What warming sealed hours' grades has done.
    warm: warm::Warm,
    /// Bumped at every change followers are told of (`/events`).
    changes: changes::Changes,
}

impl Service {
    /// A service over `store`, its time from `source`: `clock`, or the store's own clock
    /// (PostgreSQL's in cluster mode) carried on by `clock`'s monotonic reading. Either
    /// way the first reading is checked against the store's clock record (the start
    /// rule, `crate::clock::ClockRecord`).
    ///
    /// # Errors
    /// The store cannot tell its genesis, marks, time or clock record.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        source: TimeSource,
        tuning: Tuning,
    ) -> Result<Service> {
        let genesis = store.genesis().await?;
        let probes_from = store.probes_from().await?;
        let marks = store.marks().await?;
        let split = Split::of(
            tuning.cache_bytes as u64,
            tuning.delta_bytes as u64,
            tuning.followers,
        );
        let kept = Arc::new(kept::Kept::new(split.kept as usize));
        let unions = unions::Unions::new(tuning.union_builds, split.builds, kept.clone());
        let (clock, reference) = time::start_clock(store.as_ref(), clock, source, &tuning).await?;
        let started = (marks.high_water, clock.monotonic());
        let grades = grades::Grades::new(tuning.target_fpp);
        let service = Service {
            started,
            split,
            cache: RenderCache::on(kept.clone()),
            kept,
            open: OpenHours::new(
                tuning.capacity,
                tuning.target_fpp,
                Deltas::new(
                    split.delta_versions() as usize,
                    tuning.delta_every,
                    tuning.delta_ids,
                    tuning.dictionary_max_age,
                ),
            ),
            store,
            clock,
            reference,
            tuning,
            genesis,
            probes_from,
            high_water: AtomicI64::new(marks.high_water.index()),
            closed_through: AtomicI64::new(marks.closed_through.map_or(i64::MIN, Hour::index)),
            health: health::HealthState::default(),
            sealer: sealer::Sealer::default(),
            unions,
            scrub: scrub::Scrub::default(),
            grades,
            warm: warm::Warm::new(),
            changes: changes::Changes::default(),
        };
        service.warn_if_clock_behind();
        service.check_node_clock();
        service.register_signer().await?;
        Ok(service)
    }

    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    pub fn genesis(&self) -> Hour {
        self.genesis
    }

    /// The parts of the one memory budget.
    pub fn split(&self) -> Split {
        self.split
    }

    /// The rule that sizes `hour`'s filter and reckons its `fpp`, and a union's whose
    /// last hour it is: the classical one before [`Store::probes_from`], so that every
    /// hour and day served before the probe-sequence rule is rebuilt and rendered byte
    /// for byte as it was (docs/PROTOCOL.md section 3).
    fn sizing_of(&self, hour: Hour) -> Sizing {
        if hour < self.probes_from {
            Sizing::Classic
        } else {
            Sizing::Probes
        }
    }
}

impl Forms<'_> {
    /// The precisions the compact forms are served at (section 12, "The grade set").
    pub fn grades(&self) -> &grades::Grades {
        &self.grades
    }
}

impl Stats<'_> {
    /// The build queue's figures now (`build_queue` in `/stats`).
    pub fn build_queue(&self) -> QueueStats {
        self.unions.queue_stats()
    }
}
