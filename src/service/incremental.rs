//! Unions that end in the open hour, kept current by adding what the hour gained since
//! they were built, instead of rebuilding them from every hour's keys.
//!
//! A union built over `from..=now` remembers the open hour it read (its id) and how many
//! of that hour's distinct keys it holds (its position). To catch up, it takes the keys
//! the hour added after that position (`OpenHours::gained_since`), sets their bits, and
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

use super::unions::{BuiltUnion, Growth, Step};
use super::{Result, Service};
use crate::bloom::Key;
use crate::hour::Hour;
use std::sync::Arc;

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
        let Some(prev) = self.unions.take_growable(from, now) else {
            return Ok(None);
        };
        let Some(growth) = prev.growth else {
            return Ok(None);
        };
        let Some(gained) = self.open.gained_since(now, growth.hour_id, growth.position) else {
            return Ok(None);
        };
        let (fresh, position, version) = (gained.keys, gained.count, gained.version);
        // Set the fresh keys' bits; those that set none may be in a closed hour. Off the
        // runtime, with the copy of the filter it takes if a rendering still shares it.
        let prev_filter = prev.filter;
        let (filter, maybe) = self
            .unions
            .measured(Step::Advance, move || {
                let mut filter =
                    Arc::try_unwrap(prev_filter).unwrap_or_else(|shared| (*shared).clone());
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
    /// the sealed keys of the hours whose filter may hold it, an hour at a time.
    async fn count_in_closed(&self, from: Hour, to: Hour, keys: &[Key]) -> Result<u64> {
        let mut left: Vec<Key> = keys.to_vec();
        let mut found = 0;
        let mut hour = from;
        while hour <= to && !left.is_empty() {
            let filter = self.hour_filter(hour).await?;
            let maybe: Vec<Key> = left
                .iter()
                .copied()
                .filter(|&k| filter.contains_key(k))
                .collect();
            if !maybe.is_empty() {
                let sealed = self.sealed_keys(hour).await?;
                let held: Vec<Key> = maybe
                    .into_iter()
                    .filter(|k| sealed.binary_search(k).is_ok())
                    .collect();
                found += held.len() as u64;
                left.retain(|k| !held.contains(k));
            }
            hour = hour.next();
        }
        Ok(found)
    }

    /// The distinct keys of a closed hour, sorted (kept within the budget).
    async fn sealed_keys(&self, hour: Hour) -> Result<Arc<Vec<Key>>> {
        if let Some(keys) = self.unions.sealed_keys(hour) {
            return Ok(keys);
        }
        let mut keys = self.vouched_keys(hour).await?;
        // Sealed hours come sorted and distinct; one read while the store could not
        // seal it may not.
        if !keys.windows(2).all(|w| w[0] < w[1]) {
            keys.sort_unstable();
            keys.dedup();
        }
        let keys = Arc::new(keys);
        self.unions.keep_sealed_keys(hour, keys.clone());
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_grows_with_the_count() {
        assert!(room(0) > 0);
        assert_eq!(room(1600), 1600 + 100 + 64);
    }
}
