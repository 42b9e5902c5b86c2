//! Rendered responses of closed hours and day unions, kept in memory within a byte
//! budget. They never change, so they are rendered and compressed once.
//!
//! Reading is the hot path of every poll, so a read takes no lock and writes nothing
//! shared in the common case: the map is an immutable snapshot swapped whole on insert
//! (`arc-swap`; inserts are once per rendering), and recency is approximate: an entry
//! records the insert epoch it was last read in, so a read writes its entry's stamp at
//! most once between two inserts.
//!
//! Measured against `quick_cache` and `moka` in one run (`benches/caches.rs`,
//! docs/BENCHMARKS.md), it stays: its eviction is least recently used first, which the
//! API tests pin (a day read three times, then left while newer renderings fill the
//! budget, is the one evicted), and `quick_cache` keeps an entry read often over one
//! read lately; `moka`'s LRU looks a rendering up about 4x slower than this. (Its
//! lookup is 10-20 ns slower than `quick_cache`'s from one thread and level from two,
//! and its insert copies the map, ~7 µs: inserts come once per rendering, each costing
//! milliseconds.)

use crate::render::{Compact, Rendered, Repr};
use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a cached response is of: `(first hour index, last hour index, representation)`.
pub type CacheKey = (i64, i64, Repr);

/// What a cached compact (ribbon) rendering is of: `(first hour, last hour, fingerprint
/// bits, form)`.
pub type CompactKey = (i64, i64, u32, Compact);

/// Both keyspaces share one map and one byte budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    V1(CacheKey),
    Compact(CompactKey),
}

impl Slot {
    fn first_hour(self) -> i64 {
        match self {
            Slot::V1(k) => k.0,
            Slot::Compact(k) => k.0,
        }
    }
}

/// Keys are hours within retention, chosen by the service, not by clients: a fast
/// non-keyed hash is safe here, and it is on every poll's path.
type Map = HashMap<Slot, Arc<Entry>, rustc_hash::FxBuildHasher>;

struct Entry {
    value: Arc<Rendered>,
    /// The insert epoch of the last read (or, for an entry never read, the epoch before
    /// its insert): eviction takes the smallest.
    last_used: AtomicU64,
}

/// A least-recently-used cache bounded by bytes, read without locks.
pub struct RenderCache {
    map: ArcSwap<Map>,
    /// Bytes held; the lock also serialises writers (insert, forget).
    bytes: Mutex<usize>,
    /// The insert epoch: bumped by every insert, read by every hit.
    epoch: AtomicU64,
    budget: usize,
}

impl RenderCache {
    pub fn new(budget: usize) -> RenderCache {
        RenderCache {
            map: ArcSwap::from_pointee(Map::default()),
            bytes: Mutex::new(0),
            epoch: AtomicU64::new(1),
            budget,
        }
    }

    pub fn get(&self, key: &CacheKey) -> Option<Arc<Rendered>> {
        self.with(key, Arc::clone)
    }

    /// Calls `f` with the cached value, borrowed: no reference count is touched.
    pub fn with<R>(&self, key: &CacheKey, f: impl FnOnce(&Arc<Rendered>) -> R) -> Option<R> {
        self.with_slot(&Slot::V1(*key), f)
    }

    /// A cached compact body.
    pub fn get_compact(&self, key: &CompactKey) -> Option<Arc<Rendered>> {
        self.with_slot(&Slot::Compact(*key), Arc::clone)
    }

    pub fn insert_compact(&self, key: CompactKey, value: Arc<Rendered>) {
        self.insert_slot(Slot::Compact(key), value);
    }

    fn with_slot<R>(&self, key: &Slot, f: impl FnOnce(&Arc<Rendered>) -> R) -> Option<R> {
        let map = self.map.load();
        let entry = map.get(key)?;
        let epoch = self.epoch.load(Ordering::Relaxed);
        if entry.last_used.load(Ordering::Relaxed) < epoch {
            entry.last_used.store(epoch, Ordering::Relaxed);
        }
        Some(f(&entry.value))
    }

    pub fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.insert_slot(Slot::V1(key), value);
    }

    fn insert_slot(&self, key: Slot, value: Arc<Rendered>) {
        let size = value.size();
        if size > self.budget {
            return;
        }
        let mut bytes = crate::sync::lock(&self.bytes);
        let mut map = Map::clone(&self.map.load());
        // Never read yet: ranks below everything read since the last insert.
        let stamp = self.epoch.fetch_add(1, Ordering::Relaxed);
        let entry = Entry {
            value,
            last_used: AtomicU64::new(stamp),
        };
        if let Some(old) = map.insert(key, Arc::new(entry)) {
            *bytes -= old.value.size();
        }
        *bytes += size;
        // The new entry fits alone (checked above); it is never the one to go.
        while *bytes > self.budget {
            let Some((&oldest, _)) = map
                .iter()
                .filter(|(k, _)| **k != key)
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
            else {
                break;
            };
            if let Some(gone) = map.remove(&oldest) {
                *bytes -= gone.value.size();
            }
        }
        self.map.store(Arc::new(map));
    }

    /// `(entries, bytes)` held now, for operators.
    pub fn usage(&self) -> (usize, usize) {
        let bytes = *crate::sync::lock(&self.bytes);
        (self.map.load().len(), bytes)
    }

    /// Drops everything of hours before `hour` (after pruning).
    pub fn forget_before(&self, hour: i64) {
        let mut bytes = crate::sync::lock(&self.bytes);
        let mut map = Map::clone(&self.map.load());
        map.retain(|key, entry| {
            let keep = key.first_hour() >= hour;
            if !keep {
                *bytes -= entry.value.size();
            }
            keep
        });
        self.map.store(Arc::new(map));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;
    use crate::render::{render, Effort};
    use crate::wire::Meta;

    fn rendered() -> Arc<Rendered> {
        let f = Filter::with_capacity(10, 0.01).unwrap();
        Arc::new(render(
            &Meta::hour("h".into(), true, 0),
            &f,
            Repr::Json,
            Effort::Fast,
        ))
    }

    #[test]
    fn evicts_the_least_recently_used_within_budget() {
        let one = rendered();
        let cache = RenderCache::new(one.size() * 2);
        cache.insert((1, 1, Repr::Json), one.clone());
        cache.insert((2, 2, Repr::Json), one.clone());
        assert!(cache.get(&(1, 1, Repr::Json)).is_some());
        cache.insert((3, 3, Repr::Json), one);
        assert!(
            cache.get(&(2, 2, Repr::Json)).is_none(),
            "2 was least recently used"
        );
        assert!(cache.get(&(1, 1, Repr::Json)).is_some());
        assert!(cache.get(&(3, 3, Repr::Json)).is_some());
    }

    #[test]
    fn forgets_pruned_hours() {
        let cache = RenderCache::new(1 << 20);
        cache.insert((1, 1, Repr::Hex), rendered());
        cache.insert((5, 5, Repr::Hex), rendered());
        cache.forget_before(5);
        assert!(cache.get(&(1, 1, Repr::Hex)).is_none());
        assert!(cache.get(&(5, 5, Repr::Hex)).is_some());
    }
}
