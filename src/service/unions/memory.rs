//! The working memory of builds in flight, within a budget: a build reserves what it
//! will hold at its peak before it starts, or is refused, so builds readers cause cannot
//! take more memory than the budget together however many arrive. The reservation is
//! released when the build ends (when its work on the blocking pool returns, even if the
//! request that started it has gone).
//!
//! What a build holds is less than its reservation until it renders: it reserves
//! before it reads a key. A build that says what it holds as it goes ([`Stage`]) is
//! counted at that in what builds hold ([`BuildMemory::holding`], `/stats`); one that
//! does not, at its reservation.
//!
//! Lock order: one build's [`Stage`] lock, then atomics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes reserved by builds in flight, of a budget, and what they hold of it.
pub(super) struct BuildMemory {
    budget: u64,
    reserved: AtomicU64,
    /// The sum of each build's [`Holding::bytes`].
    holding: AtomicU64,
}

/// What one build holds now, at most its reservation.
struct Holding {
    bytes: u64,
    reserved: u64,
    /// Its reservation was released: it holds nothing any more.
    ended: bool,
}

/// A handle through which a build running off its [`Reserved`] says what it holds.
#[derive(Clone)]
pub(in crate::service) struct Stage {
    memory: Arc<BuildMemory>,
    holding: Arc<Mutex<Holding>>,
}

impl Stage {
    /// The build holds `bytes` now (counted at most at its reservation).
    pub fn hold(&self, bytes: u64) {
        let mut holding = crate::sync::lock(&self.holding);
        if holding.ended {
            return;
        }
        let bytes = bytes.min(holding.reserved);
        if bytes >= holding.bytes {
            self.memory
                .holding
                .fetch_add(bytes - holding.bytes, Ordering::AcqRel);
        } else {
            self.memory
                .holding
                .fetch_sub(holding.bytes - bytes, Ordering::AcqRel);
        }
        holding.bytes = bytes;
    }

    /// The build holds its whole reservation now (it renders).
    pub fn hold_all(&self) {
        self.hold(u64::MAX);
    }
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

/// Memory held for one build; released on drop. Its reservation and what it holds are
/// its [`Stage`]'s, which the build may hand on.
pub(in crate::service) struct Reserved {
    stage: Stage,
}

impl BuildMemory {
    pub fn new(budget: u64) -> Arc<BuildMemory> {
        Arc::new(BuildMemory {
            budget,
            reserved: AtomicU64::new(0),
            holding: AtomicU64::new(0),
        })
    }

    /// Reserves `bytes` for a build, or refuses at once (never waits). The build is
    /// counted as holding all of it until it says otherwise ([`Reserved::stage`]).
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<Reserved, Refused> {
        self.take(bytes)?;
        self.holding.fetch_add(bytes, Ordering::AcqRel);
        Ok(Reserved {
            stage: Stage {
                memory: self.clone(),
                holding: Arc::new(Mutex::new(Holding {
                    bytes,
                    reserved: bytes,
                    ended: false,
                })),
            },
        })
    }

    /// Takes `bytes` of the budget, or refuses at once.
    fn take(&self, bytes: u64) -> Result<(), Refused> {
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
        Ok(())
    }

    /// `(reserved, budget)` now, in bytes.
    pub fn usage(&self) -> (u64, u64) {
        (self.reserved.load(Ordering::Acquire), self.budget)
    }

    /// What the builds in flight hold now, in bytes: at most what they reserved.
    pub fn holding(&self) -> u64 {
        self.holding.load(Ordering::Acquire)
    }
}

impl Reserved {
    /// Reserves `bytes` more for the same build, or refuses at once (holding what it
    /// held): `TooLarge` when the build's whole reservation would pass the budget. What
    /// the build holds is unchanged until it says ([`Stage::hold`]).
    pub fn grow(&mut self, bytes: u64) -> Result<(), Refused> {
        let memory = &self.stage.memory;
        let mut holding = crate::sync::lock(&self.stage.holding);
        let needs = holding.reserved + bytes;
        if needs > memory.budget {
            let budget = memory.budget;
            return Err(Refused::TooLarge { needs, budget });
        }
        memory.take(bytes)?;
        holding.reserved = needs;
        Ok(())
    }

    /// The handle through which the build says what it holds as it goes.
    pub fn stage(&self) -> Stage {
        self.stage.clone()
    }
}

/// A build's reservation past which, once no build holds working memory any more, what
/// the builds freed is handed back ([`crate::memory::release_after_transient`]).
const LARGE_BUILD: u64 = 1 << 20;

impl Drop for Reserved {
    fn drop(&mut self) {
        let memory = &self.stage.memory;
        let reserved = {
            let mut holding = crate::sync::lock(&self.stage.holding);
            holding.ended = true;
            memory.holding.fetch_sub(holding.bytes, Ordering::AcqRel);
            holding.reserved
        };
        let before = memory.reserved.fetch_sub(reserved, Ordering::AcqRel);
        if before == reserved && reserved >= LARGE_BUILD {
            crate::memory::release_after_transient();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_counts_what_it_says_it_holds_within_its_reservation() {
        let memory = BuildMemory::new(1000);
        let other = memory.reserve(100).unwrap();
        let mut build = memory.reserve(300).unwrap();
        assert_eq!(
            memory.holding(),
            400,
            "a build holds its reservation until it says"
        );
        let stage = build.stage();

        stage.hold(50);
        assert_eq!(memory.holding(), 150);
        build.grow(200).unwrap();
        assert_eq!(memory.holding(), 150, "growing reserves, it does not hold");
        stage.hold(450);
        assert_eq!(memory.holding(), 550);
        stage.hold(10_000);
        assert_eq!(memory.holding(), 600, "never more than its reservation");
        stage.hold(20);
        stage.hold_all();
        assert_eq!(memory.holding(), 600);
        assert_eq!(memory.usage(), (600, 1000));

        drop(build);
        assert_eq!(memory.holding(), 100);
        stage.hold(300);
        assert_eq!(memory.holding(), 100, "an ended build holds nothing");
        drop(other);
        assert_eq!(memory.holding(), 0);
    }

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
        assert_eq!(memory.holding(), 0);
        assert!(memory.reserve(1000).is_ok(), "the whole budget fits alone");
    }
}
