//! Rendered responses of closed hours and complete unions (and their compact forms):
//! they never change, so they are rendered and compressed once and kept, within the one
//! budget of everything the service keeps ([`Kept`]).
//!
//! Reading is the hot path of every poll of a closed hour. It is `quick_cache`'s lookup
//! (a shard's read lock and a clone of the rendering's `Arc`), measured against the
//! hand-written copy-on-insert map it replaced in one run (`benches/caches.rs`,
//! docs/BENCHMARKS.md).

use super::kept::{Kept, Slot, Value};
use crate::hour::Hour;
use crate::render::{Compact, Rendered, Repr};
use std::sync::Arc;

/// What a cached response is of: `(first hour index, last hour index, representation)`.
pub type CacheKey = (i64, i64, Repr);

/// What a cached compact (ribbon) rendering is of: `(first hour, last hour, fingerprint
/// bits, form)`.
pub type CompactKey = (i64, i64, u32, Compact);

/// The renderings part of the one cache.
pub struct RenderCache {
    kept: Arc<Kept>,
}

impl RenderCache {
    /// A cache of renderings alone, within `budget` bytes (for benchmarks and tests).
    pub fn new(budget: usize) -> RenderCache {
        RenderCache::on(Arc::new(Kept::new(budget)))
    }

    /// The renderings part of `kept`.
    pub(super) fn on(kept: Arc<Kept>) -> RenderCache {
        RenderCache { kept }
    }

    pub fn get(&self, key: &CacheKey) -> Option<Arc<Rendered>> {
        self.get_slot(&Slot::Rendering(*key))
    }

    /// Calls `f` with the cached value.
    pub fn with<R>(&self, key: &CacheKey, f: impl FnOnce(&Arc<Rendered>) -> R) -> Option<R> {
        self.get(key).map(|r| f(&r))
    }

    /// A cached compact body.
    pub fn get_compact(&self, key: &CompactKey) -> Option<Arc<Rendered>> {
        self.get_slot(&Slot::Compact(*key))
    }

    pub fn insert_compact(&self, key: CompactKey, value: Arc<Rendered>) {
        self.kept
            .insert(Slot::Compact(key), Value::Rendering(value));
    }

    /// The cached exact rendering of the sealed hours `from..=to`.
    pub fn get_exact(&self, from: Hour, to: Hour) -> Option<Arc<Rendered>> {
        self.get_slot(&Slot::Exact((from.index(), to.index())))
    }

    pub fn insert_exact(&self, from: Hour, to: Hour, value: Arc<Rendered>) {
        let slot = Slot::Exact((from.index(), to.index()));
        self.kept.insert(slot, Value::Rendering(value));
    }

    pub fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.kept
            .insert(Slot::Rendering(key), Value::Rendering(value));
    }

    fn get_slot(&self, slot: &Slot) -> Option<Arc<Rendered>> {
        match self.kept.get(slot)? {
            Value::Rendering(r) => Some(r),
            _ => None,
        }
    }

    /// Drops everything of hours before `hour` (after pruning), of every part.
    pub fn forget_before(&self, hour: i64) {
        self.kept.retain(|slot, _| match slot {
            Slot::Rendering(k) => k.0 >= hour,
            Slot::Compact(k) => k.0 >= hour,
            Slot::OpenUnion(k) => k.0 .0 >= hour,
            Slot::Built(range) | Slot::Exact(range) => range.0 >= hour,
            Slot::Decoded(h) | Slot::SealedKeys(h) => h.index() >= hour,
        });
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
    fn a_rendering_read_often_outlives_newer_ones_within_the_budget() {
        let one = rendered();
        let cache = RenderCache::new(one.size() * 4);
        cache.insert((1, 1, Repr::Json), one.clone());
        for _ in 0..3 {
            assert!(cache.get(&(1, 1, Repr::Json)).is_some());
        }
        for i in 2..20 {
            cache.insert((i, i, Repr::Json), one.clone());
        }
        assert!(cache.get(&(1, 1, Repr::Json)).is_some());
        let held = (2..20)
            .filter(|&i| cache.get(&(i, i, Repr::Json)).is_some())
            .count();
        assert!(held <= 3, "{held} of the newer ones held past the budget");
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
