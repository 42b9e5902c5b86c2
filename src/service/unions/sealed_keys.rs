//! Sealed hours' sorted keys, for the exact count of a union carried forward (see
//! `incremental`): a key the open hour gained may be in a closed hour of the range.
//! Bounded by bytes (an eighth of `cache_bytes`), least recently used first out.
//!
//! Lock order: its one std mutex is a leaf, held only inside a method here.

use crate::bloom::Key;
use crate::hour::Hour;
use crate::service::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Sealed hours' sorted keys, within a byte budget, least recently used first out.
pub(super) struct SealedKeys {
    inner: Mutex<Kept>,
    budget: usize,
}

#[derive(Default)]
struct Kept {
    by_hour: HashMap<Hour, (Arc<Vec<Key>>, u64)>,
    bytes: usize,
    tick: u64,
}

impl SealedKeys {
    pub fn new(budget: usize) -> SealedKeys {
        SealedKeys {
            inner: Mutex::new(Kept::default()),
            budget,
        }
    }

    pub fn get(&self, hour: Hour) -> Option<Arc<Vec<Key>>> {
        let mut kept = lock(&self.inner);
        kept.tick += 1;
        let tick = kept.tick;
        let (keys, used) = kept.by_hour.get_mut(&hour)?;
        *used = tick;
        Some(keys.clone())
    }

    pub fn keep(&self, hour: Hour, keys: Arc<Vec<Key>>) {
        let size = bytes_of(&keys);
        if size > self.budget {
            return;
        }
        let mut kept = lock(&self.inner);
        while kept.bytes + size > self.budget {
            let oldest = kept
                .by_hour
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(h, _)| *h);
            let Some(gone) = oldest.and_then(|h| kept.by_hour.remove(&h)) else {
                break;
            };
            kept.bytes -= bytes_of(&gone.0);
        }
        kept.tick += 1;
        let tick = kept.tick;
        if let Some(old) = kept.by_hour.insert(hour, (keys, tick)) {
            kept.bytes -= bytes_of(&old.0);
        }
        kept.bytes += size;
    }

    /// `(hours, bytes)` kept.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize) {
        let kept = lock(&self.inner);
        (kept.by_hour.len(), kept.bytes)
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
