//! Locking a `std::sync::Mutex`: **a poisoned lock is recovered, never passed on as a
//! panic**, the policy of the server's `src/sync.rs` (which says why it is safe). Every
//! std mutex of the SDK guards a map of finished values changed by whole inserts and
//! removals, so a panic while one is held leaves it usable.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking its value as it is if a holder panicked.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    #[test]
    fn a_poisoned_lock_is_taken_with_its_value_as_the_holder_left_it() {
        let mutex = Mutex::new(vec![1]);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let mut guard = lock(&mutex);
            guard.push(2);
            panic!("a holder panics");
        }));
        assert!(mutex.is_poisoned());
        lock(&mutex).push(3);
        assert_eq!(*lock(&mutex), [1, 2, 3]);
    }
}
