//! The jump guard: the service's time held to the time measured on the monotonic clock,
//! so a wall clock stepped far ahead is followed only once it has stayed there for the
//! confirmation period, or an operator confirms it.

use super::{BootReading, Clock, ClockRecord, Expected};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Holds a wall clock to the time measured on its monotonic clock.
///
/// The rule: the guarded time is the wall clock's reading unless that is more than
/// `tolerance` ahead of the last trusted reading plus the monotonic time passed since
/// it. Such a reading is a *forward jump*: it is not followed; the guarded time goes on
/// from the last trusted reading at the monotonic clock's pace. The jump is followed
/// only once it is *confirmed*: the wall clock has stayed ahead by the same offset
/// (within `tolerance`) for `confirm` of monotonic time, or an operator confirms it
/// ([`JumpGuard::confirm`]). A clock corrected before then is followed again at once,
/// and the jump never happened for the service. Steps back are followed (the service's
/// own high-water mark keeps its hours from going back), and the guard keeps the
/// furthest timeline it trusted: a step forward back onto it (the correction of a step
/// back) is followed at once, no jump.
///
/// The first reading is trusted, unless a start anchored the guard where the store's
/// clock record says the time should be ([`JumpGuard::anchor_at_start`]): then the first
/// reading is checked against that as any later one, and a start far past the last
/// heartbeat is a jump like any other.
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
    /// The furthest timeline trusted: the largest wall reading less its monotonic
    /// reading (milliseconds) of any reading trusted (or of the start's record);
    /// `i64::MIN` for none. Only grows.
    reach: AtomicI64,
    /// The anchor is still the start's expectation: no reading has been trusted since,
    /// so a jump seen now is a jump from the start.
    start_anchored: AtomicBool,
    /// While the wall clock is ahead: since when, by how much, and whether from the
    /// start. Taken only while a jump is in effect.
    ahead: Mutex<Option<Ahead>>,
    /// Whether `ahead` is set, so the common path never takes its lock.
    is_ahead: AtomicBool,
    jumps: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
struct Ahead {
    /// The monotonic reading when the jump was first seen.
    since: std::time::Duration,
    offset: Duration,
    at_start: bool,
}

/// How far behind the time expected a wall reading must be to count as a step back
/// (and re-anchor the guard at once).
const STEPPED_BACK_MS: i64 = 10;

/// Milliseconds of a monotonic reading.
fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn time_of(ms: i64, or: DateTime<Utc>) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or(or)
}

impl JumpGuard {
    pub fn new(tolerance: std::time::Duration, confirm: std::time::Duration) -> JumpGuard {
        JumpGuard {
            tolerance: Duration::from_std(tolerance).unwrap_or(Duration::MAX),
            confirm,
            anchor_wall: AtomicI64::new(i64::MIN),
            anchor_mono: AtomicI64::new(0),
            reach: AtomicI64::new(i64::MIN),
            start_anchored: AtomicBool::new(false),
            ahead: Mutex::new(None),
            is_ahead: AtomicBool::new(false),
            jumps: AtomicU64::new(0),
        }
    }

    /// Anchors the guard, before its first reading, at the time a start expects from the
    /// store's clock record (the start rule, `clock::record`), taken at monotonic `mono`:
    /// the first reading is followed only within the tolerance of it (or back on the
    /// furthest time trusted before); further past, it is a jump, held until corrected
    /// or confirmed, by time or by an operator.
    pub fn anchor_at_start(&self, expected: &Expected, mono: std::time::Duration) {
        let mono_ms = millis(mono);
        self.anchor_wall
            .store(expected.time.timestamp_millis(), Ordering::Release);
        self.anchor_mono.store(mono_ms, Ordering::Release);
        let reach = expected.trusted.max(expected.time).timestamp_millis();
        self.reach
            .store(reach.saturating_sub(mono_ms), Ordering::Release);
        self.start_anchored.store(true, Ordering::Release);
    }

    fn trust(&self, wall_ms: i64, mono_ms: i64) {
        self.anchor_wall.store(wall_ms, Ordering::Release);
        self.anchor_mono.store(mono_ms, Ordering::Release);
        self.reach
            .fetch_max(wall_ms.saturating_sub(mono_ms), Ordering::AcqRel);
        if self.start_anchored.load(Ordering::Relaxed) {
            self.start_anchored.store(false, Ordering::Release);
        }
    }

    /// Ends a jump in effect, if any (the clock was corrected or the jump confirmed).
    fn end_jump(&self) -> Option<Ahead> {
        let mut ahead = crate::sync::lock(&self.ahead);
        self.is_ahead.store(false, Ordering::Release);
        ahead.take()
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
        let tolerance_ms = self.tolerance.num_milliseconds();
        if offset_ms <= tolerance_ms {
            if self.is_ahead.load(Ordering::Acquire) && self.end_jump().is_some() {
                tracing::warn!(
                    "the wall clock is back within the time measured since its jump; following it again"
                );
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
        // Ahead of the time measured since: back on the furthest timeline trusted before
        // (the correction of a step back) is no jump.
        let reach = self.reach.load(Ordering::Acquire);
        if reach != i64::MIN
            && wall_ms <= reach.saturating_add(mono_ms).saturating_add(tolerance_ms)
        {
            self.end_jump();
            tracing::info!(
                forward_seconds = offset_ms / 1000,
                "the wall clock stepped forward onto the time it was trusted at before; following it"
            );
            self.trust(wall_ms, mono_ms);
            return wall;
        }
        let offset = Duration::milliseconds(offset_ms);
        let expected = time_of(expected_ms, wall);
        let mut ahead = crate::sync::lock(&self.ahead);
        match *ahead {
            Some(Ahead {
                since,
                offset: first,
                ..
            }) if (offset - first).abs() <= self.tolerance => {
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
                let at_start = self.start_anchored.load(Ordering::Acquire);
                if at_start {
                    tracing::error!(
                        ahead_seconds = offset.num_seconds(),
                        recorded = %expected,
                        confirm_after = ?self.confirm,
                        "the clock at start is far past the time the last heartbeat recorded \
                         (plus the time measured since, where this boot measured it); not \
                         following it (nothing is pruned or opened by it) until it is \
                         corrected, confirmed (bloomcast confirm-clock) or holds for the \
                         confirmation period"
                    );
                } else {
                    tracing::error!(
                        ahead_seconds = offset.num_seconds(),
                        confirm_after = ?self.confirm,
                        "the wall clock jumped ahead of the time measured since it was last \
                         trusted; not following it (nothing is pruned or opened by it) until \
                         it is corrected, confirmed (bloomcast confirm-clock) or stays there \
                         for the confirmation period"
                    );
                }
                *ahead = Some(Ahead {
                    since: mono,
                    offset,
                    at_start,
                });
                self.is_ahead.store(true, Ordering::Release);
            }
        }
        expected
    }

    /// An operator confirms the wall clock: a jump in effect is followed at once.
    /// Returns how far the guarded time moved forward, or `None` when no jump was in
    /// effect (nothing to confirm).
    pub fn confirm(&self, wall: DateTime<Utc>, mono: std::time::Duration) -> Option<Duration> {
        let guarded = self.guard(wall, mono);
        let ended = self.end_jump()?;
        tracing::warn!(
            ahead_seconds = (wall - guarded).num_seconds(),
            at_start = ended.at_start,
            "an operator confirmed the wall clock; following it"
        );
        self.trust(wall.timestamp_millis(), millis(mono));
        Some(wall - guarded)
    }

    /// The furthest time trusted, carried on to monotonic `mono` (for the clock record).
    pub fn trusted(&self, mono: std::time::Duration) -> Option<DateTime<Utc>> {
        let reach = self.reach.load(Ordering::Acquire);
        (reach != i64::MIN)
            .then(|| time_of(reach.saturating_add(millis(mono)), DateTime::UNIX_EPOCH))
    }

    /// What the guard says now, for a wall reading `wall` at monotonic `mono`.
    pub fn state(&self, wall: DateTime<Utc>, mono: std::time::Duration) -> JumpState {
        let guarded = self.guard(wall, mono);
        let ahead = *crate::sync::lock(&self.ahead);
        JumpState {
            ahead_seconds: (wall - guarded).num_seconds().max(0),
            jumps: self.jumps.load(Ordering::Relaxed),
            confirm_in_seconds: ahead.map(|a| {
                self.confirm
                    .saturating_sub(mono.saturating_sub(a.since))
                    .as_secs()
            }),
            at_start: ahead.is_some_and(|a| a.at_start),
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
    /// The jump in effect was seen at start: the first reading far past the clock record.
    pub at_start: bool,
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

    /// An operator confirms the inner clock (see [`JumpGuard::confirm`]).
    pub fn confirm(&self) -> Option<Duration> {
        self.guard.confirm(self.inner.now(), self.inner.monotonic())
    }

    /// What a heartbeat records of this clock now (see [`ClockRecord`]).
    pub fn record(&self) -> ClockRecord {
        let time = self.now();
        let trusted = self
            .guard
            .trusted(self.monotonic())
            .unwrap_or(time)
            .max(time);
        ClockRecord {
            time,
            trusted,
            boot: self.boot(),
        }
    }
}

impl<C: Clock + ?Sized> Clock for GuardedClock<C> {
    fn now(&self) -> DateTime<Utc> {
        self.guard.guard(self.inner.now(), self.inner.monotonic())
    }

    fn monotonic(&self) -> std::time::Duration {
        self.inner.monotonic()
    }

    fn boot(&self) -> Option<BootReading> {
        self.inner.boot()
    }
}

#[cfg(test)]
mod tests;
