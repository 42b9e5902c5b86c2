//! The service's tunables: sizing, retention, cache budgets, limits, the clock guard,
//! the signer and the open hour's kept versions.

use std::time::Duration;

/// The service's tunables, from [`crate::config::Settings`].
#[derive(Debug, Clone)]
pub struct Tuning {
    pub capacity: u64,
    pub target_fpp: f64,
    pub retention_hours: u64,
    /// The one memory budget: everything kept beyond the open hour's own keys (see
    /// [`crate::service::Split`]).
    pub cache_bytes: usize,
    /// How stale the view of the open hour may be (other nodes' appends).
    pub refresh: Duration,
    /// Distinct IDs an hour may hold; ingest beyond it is refused (`HourFull`).
    pub max_hour_ids: u64,
    /// Distinct IDs the universe may hold; adding beyond it is refused (`UniverseFull`).
    pub max_universe_ids: u64,
    /// Union builds of different ranges at once; more are refused (`TooManyWaiting`).
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
    /// How long each kept version is promised and served at its own URL (a linked
    /// dictionary's `max-age`, `dictionary_max_age`); zero links none.
    pub dictionary_max_age: Duration,
    /// How long one scrub pass over the served hours takes; zero turns the scrub off.
    pub scrub_pass: Duration,
    /// Followers' streams (`GET /events`) the budget makes room for, at most a quarter
    /// of `cache_bytes` (see [`crate::service::Split`]).
    pub followers: u64,
}
