//! The working memory of builds in flight, within a budget: a build reserves what it
//! will hold at its peak before it starts, or is refused, so builds readers cause cannot
//! take more memory than the budget together however many arrive. The reservation is
//! released when the build ends (when its work on the blocking pool returns, even if the
//! request that started it has gone).
//!
//! Lock order: atomics only, no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes reserved by builds in flight, of a budget.
pub(super) struct BuildMemory {
    budget: u64,
    reserved: AtomicU64,
}

/// Why a reservation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::service) enum Refused {
    /// The build alone needs more than the whole budget: it never fits.
    TooLarge { needs: u64, budget: u64 },
    /// Other builds hold what it would need now: retry shortly.
    Taken { needs: u64, left: u64 },
}

impl Refused {
    /// The service's error for a refusal of `work`'s working memory.
    pub fn error(self, work: crate::service::Work) -> crate::service::ServiceError {
        use crate::service::ServiceError;
        match self {
            Refused::TooLarge { needs, budget } => ServiceError::TooLargeForBudget {
                work,
                needed: needs,
                budget,
            },
            Refused::Taken { needs, left } => ServiceError::BudgetTaken {
                work,
                needed: needs,
                left,
            },
        }
    }
}

/// Memory held for one build; released on drop.
pub(in crate::service) struct Reserved {
    memory: Arc<BuildMemory>,
    bytes: u64,
}

impl BuildMemory {
    pub fn new(budget: u64) -> Arc<BuildMemory> {
        Arc::new(BuildMemory {
            budget,
            reserved: AtomicU64::new(0),
        })
    }

    /// Reserves `bytes` for a build, or refuses at once (never waits).
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<Reserved, Refused> {
        if bytes > self.budget {
            return Err(Refused::TooLarge {
                needs: bytes,
                budget: self.budget,
            });
        }
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held + bytes <= self.budget).then_some(held + bytes)
            })
            .map_err(|held| Refused::Taken {
                needs: bytes,
                left: self.budget - held,
            })?;
        Ok(Reserved {
            memory: self.clone(),
            bytes,
        })
    }

    /// `(reserved, budget)` now, in bytes.
    pub fn usage(&self) -> (u64, u64) {
        (self.reserved.load(Ordering::Acquire), self.budget)
    }
}

impl Reserved {
    /// Reserves `bytes` more for the same build, or refuses at once (holding what it
    /// held): `TooLarge` when the build's whole reservation would pass the budget.
    pub fn grow(&mut self, bytes: u64) -> Result<(), Refused> {
        let needs = self.bytes + bytes;
        if needs > self.memory.budget {
            let budget = self.memory.budget;
            return Err(Refused::TooLarge { needs, budget });
        }
        let more = self.memory.reserve(bytes)?;
        self.bytes += more.bytes;
        std::mem::forget(more);
        Ok(())
    }
}

/// A build's reservation past which, once no build holds working memory any more, what
/// the builds freed is handed back ([`crate::memory::release_after_transient`]).
const LARGE_BUILD: u64 = 1 << 20;

impl Drop for Reserved {
    fn drop(&mut self) {
        let before = self.memory.reserved.fetch_sub(self.bytes, Ordering::AcqRel);
        if before == self.bytes && self.bytes >= LARGE_BUILD {
            crate::memory::release_after_transient();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_larger_than_the_whole_budget_is_refused_for_good() {
        let memory = BuildMemory::new(1000);

        let refused = memory.reserve(1001).map(|_| ());

        assert_eq!(
            refused,
            Err(Refused::TooLarge {
                needs: 1001,
                budget: 1000
            })
        );
        assert_eq!(memory.usage(), (0, 1000), "nothing is held by a refusal");
    }

    #[test]
    fn builds_share_the_budget_and_a_released_reservation_makes_room() {
        let memory = BuildMemory::new(1000);
        let first = memory.reserve(600).unwrap();

        let second = memory.reserve(600).map(|_| ());

        assert_eq!(
            second,
            Err(Refused::Taken {
                needs: 600,
                left: 400
            })
        );
        let mut small = memory.reserve(300).unwrap();
        assert_eq!(
            small.grow(101),
            Err(Refused::Taken {
                needs: 101,
                left: 100
            })
        );
        assert_eq!(
            small.grow(701),
            Err(Refused::TooLarge {
                needs: 1001,
                budget: 1000
            }),
            "the whole build, not its growth, against the budget"
        );
        small.grow(100).unwrap();
        assert_eq!(memory.usage(), (1000, 1000));
        drop(first);
        drop(small);
        assert_eq!(memory.usage(), (0, 1000));
        assert!(memory.reserve(1000).is_ok(), "the whole budget fits alone");
    }
}
