//! The jump guard's rule, on a clock the tests step by hand.

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

#[test]
fn a_step_back_and_its_correction_are_both_followed_at_once_and_no_jump_is_counted() {
    let h = hour_of(2026, 11, 1, 10).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(30));
    let guarded = guarded(&clock);
    guarded.now();
    clock.step(Duration::hours(-2));
    assert_eq!(guarded.now(), clock.now());
    clock.advance(Duration::minutes(10));
    assert_eq!(guarded.now(), clock.now());
    clock.step(Duration::hours(2));
    assert_eq!(guarded.now(), clock.now(), "the correction is followed");
    let state = guarded.jump_state();
    assert_eq!((state.jumps, state.ahead_seconds), (0, 0));
    // Further than the timeline trusted before is still a jump.
    clock.step(Duration::hours(2));
    assert_eq!(guarded.now(), clock.now() - Duration::hours(2));
    assert_eq!(guarded.jump_state().jumps, 1);
}

/// A guard anchored where a start's record says the time is: `expected` at monotonic 0.
fn started(
    clock: &ManualClock,
    expected: DateTime<Utc>,
    trusted: DateTime<Utc>,
) -> GuardedClock<ManualClock> {
    let guarded = guarded(clock);
    let expected = Expected {
        time: expected,
        trusted,
        measured: None,
    };
    guarded.guard.anchor_at_start(&expected, clock.monotonic());
    guarded
}

#[test]
fn a_start_far_past_the_record_is_held_as_a_jump_from_the_start_until_an_operator_confirms_it() {
    let h = hour_of(2026, 11, 1, 10).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(30));
    clock.step(Duration::days(365));
    let recorded = h.start() + Duration::minutes(30);
    let guarded = started(&clock, recorded, recorded);
    assert_eq!(guarded.now(), recorded);
    clock.advance(Duration::seconds(40));
    assert_eq!(guarded.now(), recorded + Duration::seconds(40));
    let state = guarded.jump_state();
    assert_eq!(state.jumps, 1);
    assert!(state.at_start);
    assert_eq!(state.ahead_seconds, 365 * 86_400);
    assert_eq!(state.confirm_in_seconds, Some(7200 - 40));

    assert_eq!(guarded.confirm(), Some(Duration::days(365)));
    assert_eq!(guarded.now(), clock.now());
    assert_eq!(guarded.jump_state().ahead_seconds, 0);
    assert_eq!(guarded.confirm(), None, "nothing left to confirm");
    assert_eq!(guarded.jump_state().jumps, 1);
}

#[test]
fn a_start_jump_held_for_the_confirmation_period_is_followed() {
    let h = hour_of(2026, 11, 1, 10).unwrap();
    let clock = ManualClock::at(h, Duration::zero());
    clock.step(Duration::hours(721));
    let guarded = started(&clock, h.start(), h.start());
    guarded.now();
    clock.advance(Duration::hours(1));
    assert_eq!(guarded.now(), h.start() + Duration::hours(1));
    clock.advance(Duration::hours(1));
    assert_eq!(guarded.now(), clock.now());
    assert!(!guarded.jump_state().at_start);
}

#[test]
fn a_start_near_the_record_behind_it_or_back_on_the_time_trusted_before_is_followed() {
    let h = hour_of(2026, 11, 1, 10).unwrap();
    let recorded = h.start();
    for (reading, trusted) in [
        (Duration::seconds(299), recorded),
        (Duration::hours(-3), recorded),
        (Duration::hours(2), recorded + Duration::hours(2)),
    ] {
        let clock = ManualClock::new(recorded + reading);
        let guarded = started(&clock, recorded, trusted);
        assert_eq!(guarded.now(), clock.now(), "{reading}");
        assert_eq!(guarded.jump_state().jumps, 0, "{reading}");
    }
}

#[test]
fn a_record_carries_the_guarded_time_and_the_furthest_time_trusted() {
    let h = hour_of(2026, 11, 1, 10).unwrap();
    let clock = ManualClock::at(h, Duration::zero());
    let guarded = guarded(&clock);
    guarded.now();
    clock.step(Duration::hours(-2));
    clock.advance(Duration::seconds(5));
    let record = guarded.record();
    assert_eq!(record.time, clock.now());
    assert_eq!(record.trusted, clock.now() + Duration::hours(2));
    assert_eq!(record.boot, clock.boot());
}
