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
//!
//! A third reading, the machine's boot ([`Clock::boot`]), lets a start tell downtime from
//! a jump: every heartbeat records the service's time with it (`record`), and a start
//! checks its first reading against that record. In cluster mode the service runs on the
//! store's clock instead of its own (`reference`).

use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::hour::Hour;

mod boot;
mod guard;
mod record;
mod reference;

pub use boot::{boot_id_of, BootReading};
pub use guard::{GuardedClock, JumpGuard, JumpState};
pub use record::{ClockRecord, Expected};
pub use reference::{ReferenceClock, TimeSource};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// Time passed since an origin fixed for this clock, never stepped (the process's
    /// monotonic clock by default).
    fn monotonic(&self) -> std::time::Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }

    /// The machine's boot and the time since it began (`None` where unknown): what a
    /// start measures its downtime by, since no wall clock reading can.
    fn boot(&self) -> Option<BootReading> {
        None
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

    fn boot(&self) -> Option<BootReading> {
        boot::system()
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

    /// The machine's own: the offset shifts the wall clock, not the boot.
    fn boot(&self) -> Option<BootReading> {
        boot::system()
    }
}

/// A clock that stands still until told to move. Clones share the same time.
/// [`ManualClock::advance`] is time passing (both readings move);
/// [`ManualClock::set`] and [`ManualClock::step`] step the wall clock alone, as an
/// operator or NTP would.
///
/// Each clock made is a machine of its own with a boot of its own (clones share it): its
/// time since boot is its monotonic reading since the boot began, so a server restarted
/// on a clone measures the time passed meanwhile, and one restarted on a new clock, or
/// after [`ManualClock::reboot`], cannot.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
    /// The monotonic reading, in milliseconds since the clock was made.
    mono_millis: Arc<AtomicI64>,
    /// The boot's id and the monotonic reading it began at (milliseconds).
    boot: Arc<std::sync::Mutex<(i64, i64)>>,
}

/// A boot id no other [`ManualClock`] has had in this process.
fn new_boot_id() -> i64 {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            millis: Arc::new(AtomicI64::new(start.timestamp_millis())),
            mono_millis: Arc::new(AtomicI64::new(0)),
            boot: Arc::new(std::sync::Mutex::new((new_boot_id(), 0))),
        }
    }

    /// The machine reboots: a new boot begins now, so a start after it cannot measure
    /// how long it was down. No time passes.
    pub fn reboot(&self) {
        let mono = self.mono_millis.load(Ordering::SeqCst);
        *crate::sync::lock(&self.boot) = (new_boot_id(), mono);
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

    fn boot(&self) -> Option<BootReading> {
        let (id, began) = *crate::sync::lock(&self.boot);
        let since = self
            .mono_millis
            .load(Ordering::SeqCst)
            .saturating_sub(began);
        Some(BootReading {
            id,
            since_boot: std::time::Duration::from_millis(u64::try_from(since).unwrap_or(0)),
        })
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
    fn a_manual_clocks_clones_share_one_boot_that_a_reboot_or_a_new_clock_does_not() {
        let clock = ManualClock::new(Utc::now());
        let clone = clock.clone();
        let first = clock.boot().unwrap();
        clone.advance(Duration::seconds(90));
        let later = clock.boot().unwrap();
        assert_eq!(later.id, first.id);
        assert_eq!(
            later.since_boot - first.since_boot,
            std::time::Duration::from_secs(90)
        );
        clock.step(Duration::days(1));
        assert_eq!(
            clock.boot(),
            Some(later),
            "a step of the wall clock is no time since boot"
        );
        clone.reboot();
        let rebooted = clock.boot().unwrap();
        assert_ne!(rebooted.id, first.id);
        assert_eq!(rebooted.since_boot, std::time::Duration::ZERO);
        assert_ne!(ManualClock::new(Utc::now()).boot().unwrap().id, rebooted.id);
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
