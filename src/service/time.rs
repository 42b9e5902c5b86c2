//! The clock the service runs on, from its start: which clock (its own, or in cluster
//! mode the store's), the start rule that checks the first reading against the store's
//! clock record, an operator's confirmation of a held jump, and this node's own clock
//! reported against the cluster's.
//!
//! Owns the cluster's reference clock and whether this node's clock is off it (atomics,
//! no lock); the guarded clock itself is `Service::clock`.

use super::parts::Health;
use super::{Result, Service, ServiceError, Tuning};
use crate::clock::{Clock, GuardedClock, JumpGuard, ReferenceClock, TimeSource};
use crate::store::Store;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The cluster's clock (the store's, carried on by the local monotonic clock), and
/// whether this node's wall clock was last seen off it by more than the tolerance.
pub(super) struct Reference {
    clock: Arc<ReferenceClock>,
    off: AtomicBool,
}

/// The clock the service runs on, built at start: the store's clock where `source`
/// asks for it and the store has one, else `local`; held by a jump guard anchored where
/// the store's clock record says the time is now (the start rule, `clock::record`), and
/// read once, so a start far past the record is a jump held and counted from the start.
///
/// # Errors
/// Store failures reading its time or its record.
pub(super) async fn start_clock(
    store: &dyn Store,
    local: Arc<dyn Clock>,
    source: TimeSource,
    tuning: &Tuning,
) -> Result<(GuardedClock<dyn Clock>, Option<Reference>)> {
    let reference = match source {
        TimeSource::Clock => None,
        TimeSource::Store => {
            let before = local.monotonic();
            let time = store.time().await?;
            let mono = before + local.monotonic().saturating_sub(before) / 2;
            time.map(|t| Arc::new(ReferenceClock::new(local.clone(), t, mono)))
        }
    };
    let inner: Arc<dyn Clock> = match &reference {
        Some(reference) => {
            tracing::info!(
                "cluster mode: the service runs on PostgreSQL's clock; this node's own is only \
                 checked against it"
            );
            reference.clone()
        }
        None => local,
    };
    let guard = JumpGuard::new(tuning.clock_jump_tolerance, tuning.clock_jump_confirm);
    match store.clock_record().await? {
        Some(record) => {
            let expected = record.expected_now(inner.boot());
            tracing::info!(
                recorded = %record.time,
                expected = %expected.time,
                measured_downtime = ?expected.measured,
                "the clock's first reading is checked against the last heartbeat's record"
            );
            guard.anchor_at_start(&expected, inner.monotonic());
        }
        None => tracing::info!(
            "no clock record in the store yet (a new store, or one no heartbeat of this \
             version wrote): the first clock reading is trusted"
        ),
    }
    let clock = GuardedClock::new(inner, guard);
    // The first reading, checked now: a jump from the start is logged and counted here.
    clock.now();
    let reference = reference.map(|clock| Reference {
        clock,
        off: AtomicBool::new(false),
    });
    Ok((clock, reference))
}

/// The clock's state, as `POST /clock/confirm` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ClockReport {
    /// A held jump was confirmed: the service follows the clock from now on.
    pub confirmed: bool,
    /// How far the service's time moved forward by the confirmation.
    pub followed_seconds: i64,
    /// The service's time now (RFC 3339).
    pub now: String,
    pub current_hour: String,
    pub clock_ahead_seconds: i64,
    pub clock_behind_seconds: i64,
    /// Cluster mode: how far this node's wall clock is ahead of the cluster's
    /// (PostgreSQL's; negative: behind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_clock_offset_seconds: Option<i64>,
    pub clock_jumps: u64,
}

impl Service {
    fn clock_report(&self, followed_seconds: i64) -> ClockReport {
        let jump = self.health().clock_jump();
        ClockReport {
            confirmed: true,
            followed_seconds,
            now: self
                .now()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            current_hour: self.current_hour().rfc3339(),
            clock_ahead_seconds: jump.ahead_seconds,
            clock_behind_seconds: self.clock_behind_seconds(),
            node_clock_offset_seconds: self.node_clock_offset_seconds(),
            clock_jumps: jump.jumps,
        }
    }

    /// Cluster mode: how far this node's wall clock is ahead of the cluster's
    /// (PostgreSQL's) in whole seconds, negative behind; `None` on the embedded store.
    pub(super) fn node_clock_offset_seconds(&self) -> Option<i64> {
        let reference = self.reference.as_ref()?;
        Some(reference.clock.local_offset().num_seconds())
    }

    /// Whether this node's clock is off the cluster's by more than the jump tolerance
    /// (it then opens and prunes nothing by itself: it runs on the cluster's).
    pub(super) fn node_clock_off(&self) -> bool {
        self.node_clock_offset_seconds()
            .is_some_and(|off| off.unsigned_abs() > self.tuning.clock_jump_tolerance.as_secs())
    }

    /// Cluster mode: takes a new reading of the cluster's clock (after each heartbeat
    /// written), and says so, once, when this node's clock goes off it or comes back.
    pub(super) async fn observe_reference(&self) {
        let Some(reference) = &self.reference else {
            return;
        };
        let before = self.clock.monotonic();
        match self.store.time().await {
            Ok(Some(time)) => {
                let after = self.clock.monotonic();
                reference
                    .clock
                    .observe(time, before + after.saturating_sub(before) / 2);
            }
            Ok(None) => {}
            // The heartbeat's write after it says whether the store is down.
            Err(e) => tracing::debug!(error = %e, "cannot read PostgreSQL's clock"),
        }
        self.say_if_node_clock_off(reference);
    }

    fn say_if_node_clock_off(&self, reference: &Reference) {
        let off = self.node_clock_off();
        if reference.off.swap(off, Ordering::AcqRel) == off {
            return;
        }
        let offset_seconds = reference.clock.local_offset().num_seconds();
        if off {
            tracing::error!(
                offset_seconds,
                tolerance_seconds = self.tuning.clock_jump_tolerance.as_secs(),
                "this node's clock is off PostgreSQL's, which the cluster runs on: it opens, \
                 seals and prunes nothing by its own clock; fix its time synchronisation (NTP)"
            );
        } else {
            tracing::warn!(
                offset_seconds,
                "this node's clock agrees with PostgreSQL's again"
            );
        }
    }

    /// Says at start whether this node's clock is off the cluster's.
    pub(super) fn check_node_clock(&self) {
        if let Some(reference) = &self.reference {
            self.say_if_node_clock_off(reference);
        }
    }
}

impl Health<'_> {
    /// An operator confirms the clock: a held forward jump (while running, or from the
    /// start) is followed at once, and a heartbeat records it, so a restart expects the
    /// time followed.
    ///
    /// # Errors
    /// [`ServiceError::NoClockJumpHeld`] when no jump is held (with this node's offset
    /// from the cluster's clock when that is what is off).
    pub async fn confirm_clock(&self) -> Result<ClockReport> {
        let Some(moved) = self.clock.confirm() else {
            let tolerance = self.tuning.clock_jump_tolerance.as_secs() as i64;
            let node_offset_seconds = self
                .node_clock_offset_seconds()
                .filter(|off| off.abs() > tolerance);
            return Err(ServiceError::NoClockJumpHeld {
                node_offset_seconds,
            });
        };
        self.heartbeat_now().await;
        Ok(self.clock_report(moved.num_seconds()))
    }
}
