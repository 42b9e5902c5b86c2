//! One build at a time per range: readers of a range wait on its lock and then share
//! what the first of them built, instead of each starting their own.
//!
//! Lock order: the map's std mutex is a leaf, held only inside a method here; a range's
//! own (tokio) lock is held by the caller across its build, through a [`RangeTurn`].

use crate::service::lock;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedMutexGuard;

/// The lock of each range being built, while anyone holds or waits on it.
pub(super) struct Ranges<K> {
    held: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K: Hash + Eq> Ranges<K> {
    pub fn new() -> Ranges<K> {
        Ranges {
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for `key`'s turn: earlier holders of the range finish first.
    pub async fn turn(&self, key: K) -> RangeTurn<'_, K> {
        let range = lock(&self.held).entry(key).or_default().clone();
        RangeTurn {
            ranges: self,
            turn: range.lock_owned().await,
        }
    }
}

/// A range's turn to build; the last one out forgets the range's lock (and any left
/// by cancelled requests).
pub(in crate::service) struct RangeTurn<'r, K: Hash + Eq> {
    ranges: &'r Ranges<K>,
    turn: OwnedMutexGuard<()>,
}

impl<K: Hash + Eq> Drop for RangeTurn<'_, K> {
    fn drop(&mut self) {
        let mine = OwnedMutexGuard::mutex(&self.turn);
        lock(&self.ranges.held).retain(|_, l| {
            let holders = Arc::strong_count(l) - 1 - usize::from(Arc::ptr_eq(l, mine));
            holders > 0
        });
    }
}
