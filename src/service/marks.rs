//! The service's place in time: the current hour (the later of the clock's and the
//! high-water mark, so time only moves forward), the hour marks read back from the store
//! as other nodes move them, and what the clock's jump guard reports.

use super::parts::Health;
use super::{Result, Service};
use crate::clock::{Clock, JumpState};
use crate::hour::Hour;
use chrono::{DateTime, Utc};
use std::sync::atomic::Ordering;

impl Service {
    /// The service's current (open) hour: the later of the clock's hour and the newest
    /// hour the store has opened, so that time only moves forward for the service.
    pub fn current_hour(&self) -> Hour {
        self.clock.current_hour().max(self.high_water())
    }

    fn high_water(&self) -> Hour {
        Hour::from_index(self.high_water.load(Ordering::Acquire))
    }

    /// The newest hour durably closed to appends, if any.
    pub(super) fn closed_through(&self) -> Option<Hour> {
        match self.closed_through.load(Ordering::Acquire) {
            i64::MIN => None,
            h => Some(Hour::from_index(h)),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// How far the clock is behind the start of the current hour (0 when it is not):
    /// non-zero after a clock step back, until the clock catches up.
    pub(super) fn clock_behind_seconds(&self) -> i64 {
        let start = self.high_water().start();
        (start - self.clock.now()).num_seconds().max(0)
    }

    pub(super) fn warn_if_clock_behind(&self) {
        let behind = self.clock_behind_seconds();
        if behind > 0 {
            tracing::warn!(
                behind_seconds = behind,
                current = %self.current_hour(),
                "the clock is behind the newest hour the store has opened: ingest stays in that \
                 hour until the clock passes its end"
            );
        }
    }

    /// Reads the marks from the store (other nodes move them) and takes the later of
    /// each; time never moves back.
    ///
    /// # Errors
    /// Store failures.
    pub(super) async fn read_marks(&self) -> Result<()> {
        let marks = self.store.marks().await?;
        self.raise_high_water(marks.high_water);
        if let Some(closed) = marks.closed_through {
            self.closed_through
                .fetch_max(closed.index(), Ordering::AcqRel);
        }
        self.open.marks_read();
        Ok(())
    }

    /// The current hour for a read of `target`: when the target is later, the marks are
    /// read first (at most once per refresh interval), as another node may have opened
    /// a later hour: learnt before saying "future".
    pub(super) async fn current_hour_for(
        &self,
        target: super::Target,
    ) -> Result<crate::hour::Hour> {
        let asked = match target {
            super::Target::Hour(h) | super::Target::Since(h) => h,
            super::Target::Day(d) => d.first_hour(),
        };
        // One reading of the clock for the usual read, of an hour already open or closed.
        let now = self.current_hour();
        if asked <= now {
            return Ok(now);
        }
        self.read_marks_if_due().await?;
        Ok(self.current_hour())
    }

    /// As [`Service::read_marks`], at most once per refresh interval.
    pub(super) async fn read_marks_if_due(&self) -> Result<()> {
        if self.open.marks_due(self.tuning.refresh) {
            self.read_marks().await?;
        }
        Ok(())
    }

    pub(super) fn raise_high_water(&self, hour: Hour) {
        let before = self.high_water.fetch_max(hour.index(), Ordering::AcqRel);
        if hour.index() > before && self.clock.current_hour() < hour {
            self.warn_if_clock_behind();
        }
    }
}

impl Health<'_> {
    /// What the clock's jump guard says now: how far the wall clock is ahead of the
    /// time the service runs on, and the jumps seen.
    pub fn clock_jump(&self) -> JumpState {
        self.clock.jump_state()
    }
}
