//! Time, injected. The server asks a [`Clock`] for "now"; production uses the system
//! clock and tests use a [`ManualClock`] they move by hand, so hour rollover is tested
//! without sleeping for an hour.
//!
//! A clock has two readings: the wall clock ([`Clock::now`]), which an operator or NTP
//! may step, and a monotonic one ([`Clock::monotonic`]), which only measures time
//! passing. [`JumpGuard`] holds the first to the second: the service's time may run
//! ahead of the last trusted reading only by the time measured since, so a wall clock
//! stepped a month ahead for three seconds moves the service three seconds.

use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::hour::Hour;

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

/// Holds a wall clock to the time measured on its monotonic clock.
///
/// The rule: the guarded time is the wall clock's reading unless that is more than
/// `tolerance` ahead of the last trusted reading plus the monotonic time passed since
/// it. Such a reading is a *forward jump*: it is not followed; the guarded time goes on
/// from the last trusted reading at the monotonic clock's pace. The jump is followed
/// only once it is *confirmed*: the wall clock has stayed ahead by the same offset
/// (within `tolerance`) for `confirm` of monotonic time. A clock corrected before then
/// is followed again at once, and the jump never happened for the service. Steps back
/// are followed (the service's own high-water mark keeps its hours from going back).
///
/// Everything the service decides from time (the current hour, what retention prunes)
/// reads the guarded time, so a jump can neither move acknowledged IDs into a future
/// hour nor prune an hour.
#[derive(Debug)]
pub struct JumpGuard {
    tolerance: Duration,
    confirm: std::time::Duration,
    /// The last trusted wall reading (Unix milliseconds; `i64::MIN` before the first) and
    /// the monotonic reading it was taken at (milliseconds). Read without a lock on
    /// every call and written at most once a second: the two may be seen a second
    /// apart, which the tolerance (minutes) absorbs.
    anchor_wall: AtomicI64,
    anchor_mono: AtomicI64,
    /// While the wall clock is ahead: since when (monotonic) and by how much. Taken
    /// only while a jump is in effect.
    ahead: Mutex<Option<(std::time::Duration, Duration)>>,
    /// Whether `ahead` is set, so the common path never takes its lock.
    is_ahead: std::sync::atomic::AtomicBool,
    jumps: std::sync::atomic::AtomicU64,
}

/// Milliseconds of a monotonic reading.
fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl JumpGuard {
    pub fn new(tolerance: std::time::Duration, confirm: std::time::Duration) -> JumpGuard {
        JumpGuard {
            tolerance: Duration::from_std(tolerance).unwrap_or(Duration::MAX),
            confirm,
            anchor_wall: AtomicI64::new(i64::MIN),
            anchor_mono: AtomicI64::new(0),
            ahead: Mutex::new(None),
            is_ahead: std::sync::atomic::AtomicBool::new(false),
            jumps: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn trust(&self, wall: DateTime<Utc>, mono: std::time::Duration) {
        self.anchor_wall
            .store(wall.timestamp_millis(), Ordering::Release);
        self.anchor_mono.store(millis(mono), Ordering::Release);
    }

    /// The guarded time for a wall reading `wall` taken at monotonic `mono`.
    pub fn guard(&self, wall: DateTime<Utc>, mono: std::time::Duration) -> DateTime<Utc> {
        let anchor = self.anchor_wall.load(Ordering::Acquire);
        if anchor == i64::MIN {
            self.trust(wall, mono);
            return wall;
        }
        let at = self.anchor_mono.load(Ordering::Acquire);
        let passed = Duration::milliseconds(millis(mono).saturating_sub(at).max(0));
        let expected = Utc
            .timestamp_millis_opt(anchor)
            .single()
            .and_then(|t| t.checked_add_signed(passed))
            .unwrap_or(wall);
        let offset = wall - expected;
        if offset <= self.tolerance {
            if self.is_ahead.load(Ordering::Acquire) {
                let mut ahead = crate::sync::lock(&self.ahead);
                if ahead.take().is_some() {
                    tracing::warn!(
                        "the wall clock is back within the time measured since its jump; following it again"
                    );
                }
                self.is_ahead.store(false, Ordering::Release);
            }
            // Written at most once a second: nothing shared is written per call.
            if passed >= Duration::seconds(1) || offset < Duration::zero() {
                self.trust(wall, mono);
            }
            return wall;
        }
        let mut ahead = crate::sync::lock(&self.ahead);
        match *ahead {
            Some((since, first)) if (offset - first).abs() <= self.tolerance => {
                if mono.saturating_sub(since) >= self.confirm {
                    tracing::warn!(
                        ahead_seconds = offset.num_seconds(),
                        "the wall clock has stayed ahead for the confirmation period; following it"
                    );
                    *ahead = None;
                    self.is_ahead.store(false, Ordering::Release);
                    self.trust(wall, mono);
                    return wall;
                }
            }
            _ => {
                self.jumps.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    ahead_seconds = offset.num_seconds(),
                    confirm_after = ?self.confirm,
                    "the wall clock jumped ahead of the time measured since it was last trusted; \
                     not following it (nothing is pruned or opened by it) until it is corrected \
                     or stays there for the confirmation period"
                );
                *ahead = Some((mono, offset));
                self.is_ahead.store(true, Ordering::Release);
            }
        }
        expected
    }

    /// What the guard says now, for a wall reading `wall` at monotonic `mono`.
    pub fn state(&self, wall: DateTime<Utc>, mono: std::time::Duration) -> JumpState {
        let guarded = self.guard(wall, mono);
        let ahead = *crate::sync::lock(&self.ahead);
        JumpState {
            ahead_seconds: (wall - guarded).num_seconds().max(0),
            jumps: self.jumps.load(Ordering::Relaxed),
            confirm_in_seconds: ahead.map(|(since, _)| {
                self.confirm
                    .saturating_sub(mono.saturating_sub(since))
                    .as_secs()
            }),
        }
    }
}

/// What the guard says of the wall clock now (for `/healthz` and `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JumpState {
    /// How far the wall clock is ahead of the guarded time (0 when it is not).
    pub ahead_seconds: i64,
    /// Forward jumps seen (each counted once, when first seen).
    pub jumps: u64,
    /// Monotonic seconds left before a jump still in effect is followed.
    pub confirm_in_seconds: Option<u64>,
}

/// A clock read through a [`JumpGuard`]: what the service runs on.
#[derive(Debug)]
pub struct GuardedClock<C: ?Sized> {
    pub guard: JumpGuard,
    inner: Arc<C>,
}

impl<C: Clock + ?Sized> GuardedClock<C> {
    pub fn new(inner: Arc<C>, guard: JumpGuard) -> GuardedClock<C> {
        GuardedClock { guard, inner }
    }

    /// What the guard says of the inner clock now.
    pub fn jump_state(&self) -> JumpState {
        self.guard.state(self.inner.now(), self.inner.monotonic())
    }
}

impl<C: Clock + ?Sized> Clock for GuardedClock<C> {
    fn now(&self) -> DateTime<Utc> {
        self.guard.guard(self.inner.now(), self.inner.monotonic())
    }

    fn monotonic(&self) -> std::time::Duration {
        self.inner.monotonic()
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

    fn guarded(clock: &ManualClock) -> GuardedClock<ManualClock> {
        let guard = JumpGuard::new(
            std::time::Duration::from_secs(300),
            std::time::Duration::from_secs(2 * 3600),
        );
        GuardedClock::new(Arc::new(clock.clone()), guard)
    }

    #[test]
    fn a_month_ahead_for_three_seconds_moves_the_guarded_clock_three_seconds() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let clock = ManualClock::at(h, Duration::minutes(30));
        let guarded = guarded(&clock);
        let before = guarded.now();
        clock.step(Duration::hours(722));
        clock.advance(Duration::seconds(3));
        assert_eq!(guarded.now(), before + Duration::seconds(3));
        assert_eq!(guarded.current_hour(), h);
        let state = guarded.jump_state();
        assert_eq!(state.jumps, 1);
        assert_eq!(state.ahead_seconds, 722 * 3600);
        clock.step(Duration::hours(-722));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(guarded.jump_state().ahead_seconds, 0);
        assert_eq!(guarded.jump_state().jumps, 1);
    }

    #[test]
    fn a_jump_held_past_the_confirmation_period_is_followed() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let clock = ManualClock::at(h, Duration::zero());
        let guarded = guarded(&clock);
        guarded.now();
        clock.step(Duration::hours(25));
        guarded.now();
        for _ in 0..6 {
            clock.advance(Duration::minutes(10));
            guarded.now();
        }
        // An hour held: still at the monotonic pace.
        assert_eq!(guarded.now(), h.start() + Duration::hours(1));
        assert_eq!(guarded.jump_state().confirm_in_seconds, Some(3600));
        clock.advance(Duration::hours(1));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(guarded.jump_state().ahead_seconds, 0);
    }

    #[test]
    fn small_steps_and_steps_back_are_followed() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let clock = ManualClock::at(h, Duration::zero());
        let guarded = guarded(&clock);
        guarded.now();
        clock.step(Duration::seconds(299));
        assert_eq!(guarded.now(), clock.now());
        clock.step(Duration::hours(-3));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(guarded.jump_state().jumps, 0);
    }

    #[test]
    fn a_second_jump_restarts_the_confirmation() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let clock = ManualClock::at(h, Duration::zero());
        let guarded = guarded(&clock);
        guarded.now();
        clock.step(Duration::hours(25));
        clock.advance(Duration::minutes(90));
        guarded.now();
        clock.step(Duration::hours(5));
        clock.advance(Duration::minutes(60));
        assert_eq!(guarded.now(), h.start() + Duration::minutes(150));
        assert_eq!(guarded.jump_state().jumps, 2);
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
