//! Sealed hours' sorted keys, for the exact count of a union carried forward (see
//! `incremental`): a key the open hour gained may be in a closed hour of the range.
//! Bounded by bytes (an eighth of `cache_bytes`): a `quick_cache` weighed in bytes, of
//! one shard, so that one set of nearly the whole budget is still kept (a sharded one
//! refuses a set larger than its shard's part). It replaced a hand-written LRU map (a
//! mutex over a hash map, evicting by a scan of every entry); `benches/caches.rs`
//! measures the crate inserting with eviction in ~0.1 µs and looking up faster than
//! the render cache's own map. What is kept is what was used recently and often (an
//! entry read once goes before one read again), not strictly the least recent.
//!
//! Lock order: the cache's own lock is a leaf, held only inside its calls.

use crate::bloom::Key;
use crate::hour::Hour;
use quick_cache::sync::Cache;
use std::sync::Arc;

/// Sealed hours' sorted keys, within a byte budget.
pub(super) struct SealedKeys(Cache<Hour, Arc<Vec<Key>>, Bytes>);

/// A set weighs its keys' bytes; an empty one a byte, so it is evicted like any other
/// (the cache never evicts what weighs nothing).
#[derive(Clone)]
struct Bytes;

impl quick_cache::Weighter<Hour, Arc<Vec<Key>>> for Bytes {
    fn weight(&self, _: &Hour, keys: &Arc<Vec<Key>>) -> u64 {
        bytes_of(keys).max(1) as u64
    }
}

impl SealedKeys {
    pub fn new(budget: usize) -> SealedKeys {
        let options = quick_cache::OptionsBuilder::new()
            .shards(1)
            // About a day of hours of 100k IDs; a hint for its tables, not a bound.
            .estimated_items_capacity((budget / (800 * 1024)).clamp(16, 4096))
            .weight_capacity(budget as u64)
            .build()
            .expect("a positive budget and estimate");
        SealedKeys(Cache::with_options(
            options,
            Bytes,
            Default::default(),
            Default::default(),
        ))
    }

    pub fn get(&self, hour: Hour) -> Option<Arc<Vec<Key>>> {
        self.0.get(&hour)
    }

    /// Keeps `keys` unless they alone weigh more than the cache holds.
    pub fn keep(&self, hour: Hour, keys: Arc<Vec<Key>>) {
        self.0.insert(hour, keys);
    }

    /// `(hours, bytes)` kept.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize) {
        (self.0.len(), self.0.weight() as usize)
    }
}

fn bytes_of(keys: &[Key]) -> usize {
    std::mem::size_of_val(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Arc<Vec<Key>> {
        Arc::new((0..n).map(|i| Key::of(&i.to_string())).collect())
    }

    #[test]
    fn sealed_keys_stay_within_the_budget_least_recently_used_out() {
        let one = bytes_of(&keys(100));
        let kept = SealedKeys::new(2 * one);
        let hour = |i: i64| Hour::from_index(400_000 + i);
        kept.keep(hour(1), keys(100));
        kept.keep(hour(2), keys(100));
        assert!(kept.get(hour(1)).is_some());
        kept.keep(hour(3), keys(100));
        assert!(kept.get(hour(2)).is_none(), "2 was least recently used");
        assert!(kept.get(hour(1)).is_some() && kept.get(hour(3)).is_some());
        assert_eq!(kept.usage(), (2, 2 * one));
        kept.keep(hour(4), keys(1000));
        assert_eq!(kept.usage().0, 2, "a set over the budget is not kept");
    }
}
