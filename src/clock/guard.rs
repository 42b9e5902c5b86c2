//! The jump guard: the service's time held to the time measured on the monotonic clock,
//! so a wall clock stepped far ahead is followed only once it has stayed there for the
//! confirmation period.

use super::Clock;
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

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

/// How far behind the time expected a wall reading must be to count as a step back
/// (and re-anchor the guard at once).
const STEPPED_BACK_MS: i64 = 10;

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

    fn trust(&self, wall_ms: i64, mono_ms: i64) {
        self.anchor_wall.store(wall_ms, Ordering::Release);
        self.anchor_mono.store(mono_ms, Ordering::Release);
    }

    /// The guarded time for a wall reading `wall` taken at monotonic `mono`.
    pub fn guard(&self, wall: DateTime<Utc>, mono: std::time::Duration) -> DateTime<Utc> {
        // Milliseconds throughout: this runs on every request that reads the clock.
        let (wall_ms, mono_ms) = (wall.timestamp_millis(), millis(mono));
        let anchor = self.anchor_wall.load(Ordering::Acquire);
        if anchor == i64::MIN {
            self.trust(wall_ms, mono_ms);
            return wall;
        }
        let at = self.anchor_mono.load(Ordering::Acquire);
        let passed = mono_ms.saturating_sub(at).max(0);
        let expected_ms = anchor.saturating_add(passed);
        let offset_ms = wall_ms.saturating_sub(expected_ms);
        if offset_ms <= self.tolerance.num_milliseconds() {
            if self.is_ahead.load(Ordering::Acquire) {
                let mut ahead = crate::sync::lock(&self.ahead);
                if ahead.take().is_some() {
                    tracing::warn!(
                        "the wall clock is back within the time measured since its jump; following it again"
                    );
                }
                self.is_ahead.store(false, Ordering::Release);
            }
            // Written at most once a second, or when the wall clock was stepped back:
            // nothing shared is written per call. (Readings of the two clocks, each
            // truncated to the millisecond, disagree by a millisecond or two; a slewing
            // clock drifts less than one in a second.)
            if passed >= 1000 || offset_ms < -STEPPED_BACK_MS {
                self.trust(wall_ms, mono_ms);
            }
            return wall;
        }
        let offset = Duration::milliseconds(offset_ms);
        let expected = Utc
            .timestamp_millis_opt(expected_ms)
            .single()
            .unwrap_or(wall);
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
                    self.trust(wall_ms, mono_ms);
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
    use crate::clock::ManualClock;
    use crate::hour::hour_of;

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
    fn the_anchor_is_written_once_a_second_or_on_a_step_back_not_per_reading() {
        let h = hour_of(2026, 11, 1, 10).unwrap();
        let clock = ManualClock::at(h, Duration::zero());
        let guarded = guarded(&clock);
        guarded.now();
        let anchor = || guarded.guard.anchor_wall.load(Ordering::Relaxed);
        let first = anchor();
        // The two clocks' readings a millisecond or two apart, either way: no write.
        clock.step(Duration::milliseconds(-2));
        assert_eq!(guarded.now(), clock.now(), "a step back is followed");
        clock.advance(Duration::milliseconds(500));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(anchor(), first);
        // A step back of a minute re-anchors at once, so a step forward again is no jump.
        clock.step(Duration::minutes(-1));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(anchor(), clock.now().timestamp_millis());
        let stepped = anchor();
        clock.advance(Duration::milliseconds(999));
        guarded.now();
        assert_eq!(anchor(), stepped);
        clock.advance(Duration::milliseconds(1));
        guarded.now();
        assert_eq!(anchor(), clock.now().timestamp_millis(), "a second since");
        clock.step(Duration::minutes(1));
        assert_eq!(guarded.now(), clock.now());
        assert_eq!(guarded.jump_state().jumps, 0);
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
}
