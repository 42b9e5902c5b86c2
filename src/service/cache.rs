//! Rendered responses of closed hours and day unions, kept in memory within a byte
//! budget. They never change, so they are rendered and compressed once.

use crate::render::{Rendered, Repr};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a cached response is of: `(first hour index, last hour index, representation)`.
pub type CacheKey = (i64, i64, Repr);

struct Entry {
    value: Arc<Rendered>,
    last_used: u64,
}

/// A least-recently-used cache bounded by bytes.
pub struct RenderCache {
    inner: Mutex<Inner>,
    budget: usize,
}

struct Inner {
    entries: HashMap<CacheKey, Entry>,
    bytes: usize,
    tick: u64,
}

impl RenderCache {
    pub fn new(budget: usize) -> RenderCache {
        RenderCache {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            budget,
        }
    }

    pub fn get(&self, key: &CacheKey) -> Option<Arc<Rendered>> {
        let mut inner = self.inner.lock().expect("cache lock");
        inner.tick += 1;
        let tick = inner.tick;
        let entry = inner.entries.get_mut(key)?;
        entry.last_used = tick;
        Some(entry.value.clone())
    }

    pub fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        let size = value.size();
        if size > self.budget {
            return;
        }
        let mut inner = self.inner.lock().expect("cache lock");
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(old) = inner.entries.insert(
            key,
            Entry {
                value,
                last_used: tick,
            },
        ) {
            inner.bytes -= old.value.size();
        }
        inner.bytes += size;
        while inner.bytes > self.budget {
            let Some((&oldest, _)) = inner.entries.iter().min_by_key(|(_, e)| e.last_used) else {
                break;
            };
            if let Some(gone) = inner.entries.remove(&oldest) {
                inner.bytes -= gone.value.size();
            }
        }
    }

    /// `(entries, bytes)` held now, for operators.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.inner.lock().expect("cache lock");
        (inner.entries.len(), inner.bytes)
    }

    /// Drops everything of hours before `hour` (after pruning).
    pub fn forget_before(&self, hour: i64) {
        let mut inner = self.inner.lock().expect("cache lock");
        let stale: Vec<CacheKey> = inner
            .entries
            .keys()
            .filter(|k| k.0 < hour)
            .copied()
            .collect();
        for key in stale {
            if let Some(gone) = inner.entries.remove(&key) {
                inner.bytes -= gone.value.size();
            }
        }
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
