//! The cluster's clock. In cluster mode the nodes agree on time through PostgreSQL: each
//! runs on the store's own clock (its `now()`), read at start and with every heartbeat
//! and carried on between readings by this machine's monotonic clock. A node's own wall
//! clock is then only reported against it, so one node with a wrong clock cannot open,
//! seal or prune the cluster's hours.

use super::{BootReading, Clock};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Where the service takes its time from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSource {
    /// The clock the service is given: the embedded store's node; and tests, whose one
    /// clock stands for every clock (PostgreSQL's too).
    Clock,
    /// The store's own clock where it has one (PostgreSQL's `now()`), the given clock's
    /// wall reading only reported against it; the given clock where it has none.
    Store,
}

/// The store's clock carried on by the local monotonic clock ([`TimeSource::Store`]).
pub struct ReferenceClock {
    local: Arc<dyn Clock>,
    /// The last reading of the reference (Unix milliseconds) less the local monotonic
    /// reading it was taken at: one word, so a reader never pairs one reading's time with
    /// another's monotonic reading.
    offset_ms: AtomicI64,
}

impl std::fmt::Debug for ReferenceClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReferenceClock({})", self.now())
    }
}

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl ReferenceClock {
    /// The reference read as `reference` at the local monotonic reading `mono`.
    pub fn new(
        local: Arc<dyn Clock>,
        reference: DateTime<Utc>,
        mono: std::time::Duration,
    ) -> ReferenceClock {
        let clock = ReferenceClock {
            local,
            offset_ms: AtomicI64::new(0),
        };
        clock.observe(reference, mono);
        clock
    }

    /// A new reading of the reference, taken at the local monotonic reading `mono`.
    pub fn observe(&self, reference: DateTime<Utc>, mono: std::time::Duration) {
        let offset = reference.timestamp_millis().saturating_sub(millis(mono));
        self.offset_ms.store(offset, Ordering::Release);
    }

    /// How far this machine's wall clock is ahead of the reference now (negative:
    /// behind).
    pub fn local_offset(&self) -> Duration {
        self.local.now() - self.now()
    }
}

impl Clock for ReferenceClock {
    fn now(&self) -> DateTime<Utc> {
        let ms = self
            .offset_ms
            .load(Ordering::Acquire)
            .saturating_add(millis(self.local.monotonic()));
        Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
    }

    fn monotonic(&self) -> std::time::Duration {
        self.local.monotonic()
    }

    fn boot(&self) -> Option<BootReading> {
        self.local.boot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::hour::hour_of;

    #[test]
    fn the_reference_runs_on_the_local_monotonic_clock_whatever_the_local_wall_clock_says() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let local = ManualClock::at(h, Duration::zero());
        local.step(Duration::days(365));
        let clock = ReferenceClock::new(Arc::new(local.clone()), h.start(), local.monotonic());
        local.advance(Duration::seconds(90));
        assert_eq!(clock.now(), h.start() + Duration::seconds(90));
        assert_eq!(clock.local_offset(), Duration::days(365));
        // A new reading replaces the carried-on one.
        clock.observe(h.start() + Duration::seconds(100), local.monotonic());
        assert_eq!(clock.now(), h.start() + Duration::seconds(100));
    }
}
