//! Which hours the service speaks for: none before genesis or in the future, none past
//! the retention horizon; and how far retention may prune when the clock has jumped.

use super::{Result, Service, ServiceError, Target};
use crate::clock::Clock;
use crate::hour::Hour;

impl Service {
    /// The hour before which retention may prune: the retention horizon of `now`, but
    /// never past the horizon of the high-water mark at start plus the whole hours
    /// measured on the monotonic clock since (and one hour of slack). A clock read once
    /// far ahead (a jump, or a start on a stepped clock) prunes nothing; after a long
    /// stop, pruning catches up at the pace of real time, keeping old hours longer,
    /// never shorter, than retention.
    pub(super) fn prune_horizon(&self, now: Hour) -> Hour {
        let (at_start, mono) = self.started;
        let passed = self.clock.monotonic().saturating_sub(mono).as_secs() / 3600;
        let bound = Hour::from_index(at_start.index().saturating_add(passed as i64 + 1));
        self.earliest(now.min(bound))
    }

    /// The oldest hour still served: genesis or the retention horizon, whichever is later.
    pub(super) fn earliest(&self, now: Hour) -> Hour {
        let horizon = Hour::from_index(now.index() - self.tuning.retention_hours as i64 + 1);
        horizon.max(self.genesis)
    }

    /// Checks that `hour` is one the service can speak for.
    pub(super) fn check(&self, hour: Hour, now: Hour) -> Result<()> {
        if hour > now {
            return Err(ServiceError::InFuture {
                asked: Target::Hour(hour),
                now,
            });
        }
        if hour < self.genesis {
            return Err(ServiceError::BeforeGenesis {
                hour,
                genesis: self.genesis,
            });
        }
        if hour < self.earliest(now) {
            return Err(ServiceError::PastRetention {
                hour,
                retention_hours: self.tuning.retention_hours,
            });
        }
        Ok(())
    }
}
