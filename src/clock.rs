//! Time, injected. The server asks a [`Clock`] for "now"; production uses the system
//! clock and tests use a [`ManualClock`] they move by hand, so hour rollover is tested
//! without sleeping for an hour.
//!
//! A clock has two readings: the wall clock ([`Clock::now`]), which an operator or NTP
//! may step, and a monotonic one ([`Clock::monotonic`]), which only measures time
//! passing. [`JumpGuard`] holds the first to the second: the service's time may run
//! ahead of the last trusted reading only by the time measured since, so a wall clock
//! stepped a month ahead for three seconds moves the service three seconds. The guard
//! and the clock read through it ([`GuardedClock`]) are in `guard`; the clocks are here.

use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::hour::Hour;

mod guard;

pub use guard::{GuardedClock, JumpGuard, JumpState};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// Time passed since an origin fixed for this clock, never stepped (the process's
    /// monotonic clock by default).
    fn monotonic(&self) -> std::time::Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }

    /// The hour containing now: the open hour.
    fn current_hour(&self) -> Hour {
        Hour::containing(self.now())
    }
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The system clock shifted by a fixed offset, so that a whole process can be run
/// "at" another time (the crash script uses it to straddle an hour boundary).
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock {
    offset: Duration,
}

impl OffsetClock {
    /// A system clock running `seconds` ahead (negative: behind).
    pub fn new(seconds: i64) -> OffsetClock {
        OffsetClock {
            offset: Duration::seconds(seconds),
        }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }
}

/// A clock that stands still until told to move. Clones share the same time.
/// [`ManualClock::advance`] is time passing (both readings move);
/// [`ManualClock::set`] and [`ManualClock::step`] step the wall clock alone, as an
/// operator or NTP would.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
    /// The monotonic reading, in milliseconds since the clock was made.
    mono_millis: Arc<AtomicI64>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            millis: Arc::new(AtomicI64::new(start.timestamp_millis())),
            mono_millis: Arc::new(AtomicI64::new(0)),
        }
    }

    /// Steps the wall clock by `by` (either way); no time passes.
    pub fn step(&self, by: Duration) {
        self.millis
            .fetch_add(by.num_milliseconds(), Ordering::SeqCst);
    }

    /// A clock at the start of `hour` plus `offset`.
    pub fn at(hour: Hour, offset: Duration) -> ManualClock {
        ManualClock::new(hour.start() + offset)
    }

    /// Steps the wall clock to `t`; no time passes.
    pub fn set(&self, t: DateTime<Utc>) {
        self.millis.store(t.timestamp_millis(), Ordering::SeqCst);
    }

    /// Lets `by` pass: both readings move.
    pub fn advance(&self, by: Duration) {
        self.mono_millis
            .fetch_add(by.num_milliseconds().max(0), Ordering::SeqCst);
        self.millis
            .fetch_add(by.num_milliseconds(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.millis.load(Ordering::SeqCst))
            .single()
            .unwrap_or_default()
    }

    fn monotonic(&self) -> std::time::Duration {
        let millis = self.mono_millis.load(Ordering::SeqCst);
        std::time::Duration::from_millis(u64::try_from(millis).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hour::hour_of;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_it() {
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let clock = ManualClock::at(h, Duration::minutes(59));
        let other = clock.clone();
        assert_eq!(clock.current_hour(), h);
        other.advance(Duration::minutes(1));
        assert_eq!(clock.current_hour(), h.next());
    }

    #[test]
    fn offset_clock_is_the_system_clock_shifted() {
        let ahead = OffsetClock::new(7200).now() - Utc::now();
        assert!(
            (ahead - Duration::hours(2)).num_seconds().abs() <= 1,
            "{ahead}"
        );
        let behind = OffsetClock::new(-90).now() - Utc::now();
        assert!(
            (behind + Duration::seconds(90)).num_seconds().abs() <= 1,
            "{behind}"
        );
    }
}
