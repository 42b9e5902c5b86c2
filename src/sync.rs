//! Locking a `std::sync::Mutex`, under the one policy bloomcast's crates follow for a poisoned lock.
//!
//! **A poisoned lock is recovered, never passed on as a panic.** Every std mutex here
//! guards a plain value: a map of finished values (rendered hours, signatures, kept
//! versions, cached filters), a count (a cache's bytes, per-route metrics), a pool of
//! idle store connections, a small record (the clock's forward jump, health). Their
//! methods change the value by whole inserts, removals and assignments, so a panic
//! while one is held leaves it usable: at worst an entry or a count is missing, which
//! costs a cache miss or a metric one request short. Passing the poison on instead would
//! turn one panic (already contained to its request) into a failure of every later
//! request that touches the same map.
//!
//! Where an update can be left half-done in a way that matters, the value is repaired
//! instead, once, before anyone uses it again ([`lock_repairing`]: the open hours' ledger
//! is emptied and reloaded from the store).
//!
//! Every std lock in the server is taken through these two functions; the SDK
//! (`crates/bloomcast-client/src/sync.rs`) keeps a copy of [`lock`] under the same policy.
//! Tokio's locks do not poison and are not concerned.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking its value as it is if a holder panicked (see the module docs
/// for why that is always safe here).
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Locks `mutex`; if a holder panicked, first hands its value to `repair` (which puts it
/// back into a consistent state, such as empty) and clears the poison, so the repair
/// runs once per panic.
pub fn lock_repairing<T: ?Sized>(
    mutex: &Mutex<T>,
    repair: impl FnOnce(&mut T),
) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            repair(&mut guard);
            mutex.clear_poison();
            guard
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// `mutex` poisoned by a panic while its value was `[1, 2]`.
    fn poisoned() -> Mutex<Vec<u32>> {
        let mutex = Mutex::new(vec![1]);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let mut guard = mutex.lock().unwrap();
            guard.push(2);
            panic!("a holder panics");
        }));
        assert!(mutex.is_poisoned());
        mutex
    }

    #[test]
    fn a_poisoned_lock_is_taken_with_its_value_as_the_holder_left_it() {
        let mutex = poisoned();
        lock(&mutex).push(3);
        assert_eq!(*lock(&mutex), [1, 2, 3]);
    }

    #[test]
    fn a_poisoned_lock_is_repaired_once_then_taken_as_usual() {
        let mutex = poisoned();
        let mut repairs = 0;
        lock_repairing(&mutex, |v| {
            repairs += 1;
            v.clear();
        })
        .push(4);
        assert!(!mutex.is_poisoned());
        assert_eq!(*lock_repairing(&mutex, |_| repairs += 1), [4]);
        assert_eq!(repairs, 1);
    }

    #[test]
    fn a_sound_lock_is_never_repaired() {
        let mutex = Mutex::new(5);
        assert_eq!(*lock_repairing(&mutex, |v| *v = 0), 5);
    }
}
