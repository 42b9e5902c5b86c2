//! Unions that end in the open hour, kept current by adding what the hour gained since
//! they were built, instead of rebuilding them from every hour's keys.
//!
//! A union built over `from..=now` remembers the open hour it read (its id) and how many
//! of that hour's distinct keys it holds (its position). To catch up, it takes the keys
//! the hour added after that position (`OpenHour::keys_since`), sets their bits, and
//! counts them exactly: a key new to the open hour is new to the union unless a closed
//! hour of the range holds it. The union's own filter answers most of that: a key that
//! sets a bit in it was in no hour of it. The rest (about `target_fpp` of them) are
//! looked up in the closed hours' filters, then in the sealed keys of the hours whose
//! filter says maybe (kept, least recently used first, within a byte budget).
//!
//! It is built with room for more keys than it holds ([`room`]), and rebuilt from the
//! store when its count passes that room or its false-positive estimate passes the
//! target: the grow-when-full rule of the hourly filter. Its bits are always exactly
//! those of a fresh build of its keys at its size.

use super::union::{BuiltUnion, Growth};
use super::{lock, Result, Service};
use crate::bloom::Key;
use crate::hour::Hour;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The count a union ending in the open hour is sized for, holding `count` keys: a
/// sixteenth more, so it takes that many new keys before it is rebuilt.
pub(super) fn room(count: u64) -> u64 {
    count + count / 16 + 64
}

impl Service {
    /// The kept union of `from..=now` carried forward to what the open hour holds now,
    /// or `None` when there is none to carry (then it is built afresh): no union kept
    /// for the range, the open hour's keys since it are no longer all kept, or it
    /// would pass its room.
    pub(super) async fn advance_union(&self, from: Hour, now: Hour) -> Result<Option<BuiltUnion>> {
        let Some(prev) = self.take_growable(from, now) else {
            return Ok(None);
        };
        let Some(growth) = prev.growth else {
            return Ok(None);
        };
        let (fresh, position, version) = {
            let ledger = self.ledger();
            let Some(open) = ledger.hours.get(&now) else {
                return Ok(None);
            };
            if open.id != growth.hour_id {
                return Ok(None);
            }
            let Some(fresh) = open.keys_since(growth.position) else {
                return Ok(None);
            };
            (fresh.to_vec(), open.count(), open.version)
        };
        let mut filter = Arc::try_unwrap(prev.filter).unwrap_or_else(|shared| (*shared).clone());
        // Set the fresh keys' bits; those that set none may be in a closed hour.
        let (filter, maybe) = tokio::task::spawn_blocking(move || {
            let maybe: Vec<Key> = fresh
                .into_iter()
                .map(Key::from_u64)
                .filter(|&key| !filter.insert_key(key))
                .collect();
            (filter, maybe)
        })
        .await?;
        let added = position - growth.position;
        let in_closed = if maybe.is_empty() || from >= now {
            0
        } else {
            self.count_in_closed(from, now.prev(), &maybe).await?
        };
        let count = prev.count + added - in_closed;
        if count > growth.capacity || filter.fpp() > self.tuning.target_fpp {
            return Ok(None);
        }
        Ok(Some(BuiltUnion {
            range: prev.range,
            stamp: Some((now.index(), version)),
            complete: false,
            filter: Arc::new(filter),
            count,
            growth: Some(Growth { position, ..growth }),
        }))
    }

    /// How many of `keys` some closed hour of `from..=to` holds: each key is looked up in
    /// the sealed keys of the hours whose filter may hold it.
    async fn count_in_closed(&self, from: Hour, to: Hour, keys: &[Key]) -> Result<u64> {
        let filters = self.hour_filters(from, to).await?;
        let mut found = 0;
        for &key in keys {
            for (&hour, filter) in &filters {
                if filter.contains_key(key)
                    && self.sealed_keys(hour).await?.binary_search(&key).is_ok()
                {
                    found += 1;
                    break;
                }
            }
        }
        Ok(found)
    }

    /// The distinct keys of a closed hour, sorted (kept within the budget).
    async fn sealed_keys(&self, hour: Hour) -> Result<Arc<Vec<Key>>> {
        if let Some(keys) = self.sealed_keys.get(hour) {
            return Ok(keys);
        }
        let mut keys = self.closed_keys(hour).await?;
        // Sealed hours come sorted and distinct; one read while the store could not
        // seal it may not.
        if !keys.windows(2).all(|w| w[0] < w[1]) {
            keys.sort_unstable();
            keys.dedup();
        }
        let keys = Arc::new(keys);
        self.sealed_keys.keep(hour, keys.clone());
        Ok(keys)
    }
}

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

    fn get(&self, hour: Hour) -> Option<Arc<Vec<Key>>> {
        let mut kept = lock(&self.inner);
        kept.tick += 1;
        let tick = kept.tick;
        let (keys, used) = kept.by_hour.get_mut(&hour)?;
        *used = tick;
        Some(keys.clone())
    }

    fn keep(&self, hour: Hour, keys: Arc<Vec<Key>>) {
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

    #[test]
    fn room_grows_with_the_count() {
        assert!(room(0) > 0);
        assert_eq!(room(1600), 1600 + 100 + 64);
    }
}
