//! The open hours, in memory: each hour's distinct keys and a filter that grows so
//! its false-positive probability never exceeds the target.
//!
//! The store is the truth; the ledger is a view of it kept current two ways: every
//! ingest this node acknowledges is recorded at once (read-your-writes), and a
//! periodic refresh pulls what other nodes appended (see `Service`).

use super::keyset::{CompactKeys, HashedKeys};
use crate::bloom::{Filter, Key, Params};
use crate::hour::Hour;
use crate::render::Rendered;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Distinct keys kept in arrival order for unions to catch up from: at least this many,
/// or a 32nd of the hour if more (about half a byte per ID).
const MIN_RECENT: usize = 1 << 14;
const RECENT_FRACTION: usize = 32;

/// Tells one `OpenHour` from another: positions count from a hour's own start, and an
/// hour reloaded from the store (after a poisoned ledger) orders its keys anew.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One open hour's state.
pub(super) struct OpenHour {
    keys: CompactKeys,
    /// The newest distinct keys in the order they were added; `recent[0]` was the
    /// `recent_from`-th distinct key (counting from 0).
    recent: Vec<u64>,
    recent_from: u64,
    /// Unique per `OpenHour`, for positions (see [`OpenHour::keys_since`]).
    pub(super) id: u64,
    filter: Filter,
    /// The count the filter is sized for; doubles when exceeded.
    capacity: u64,
    target_fpp: f64,
    /// Store cursor: everything appended up to it is in `keys`.
    pub(super) cursor: i64,
    pub(super) refreshed_at: Option<Instant>,
    /// Another node wrote to the hour since the last refresh (it said so): the next
    /// read refreshes at once.
    pub(super) expired: bool,
    /// Bumped whenever the content changes.
    pub(super) version: u64,
    /// Room held for batches being appended (their keys not yet here), so concurrent
    /// ingests cannot together pass `max_hour_ids`.
    pub(super) reserved: u64,
    /// The newest rendering per representation, with the version it shows; current
    /// while that version is.
    pub(super) rendered: [Option<(u64, Arc<Rendered>)>; 3],
}

impl OpenHour {
    pub(super) fn new(capacity: u64, target_fpp: f64) -> OpenHour {
        // Settings are validated so that this fits; never panic under the ledger lock.
        let params = Params::sized(capacity, target_fpp).unwrap_or_else(|_| max_params());
        OpenHour {
            keys: CompactKeys::default(),
            recent: Vec::new(),
            recent_from: 0,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            filter: Filter::new(params),
            capacity,
            target_fpp,
            cursor: 0,
            refreshed_at: None,
            expired: false,
            version: 0,
            reserved: 0,
            rendered: [None, None, None],
        }
    }

    /// How many of `keys` are not in the hour yet (each counted once).
    /// How many of the keys held here `sealed` lacks (it has no false negatives, so
    /// each is surely not in the seal).
    pub(super) fn missing_from(&self, sealed: &Filter) -> u64 {
        let missing = self.keys.iter().map(Key::from_u64);
        missing.filter(|key| !sealed.contains_key(*key)).count() as u64
    }

    pub(super) fn count_new(&self, keys: &[Key]) -> u64 {
        let mut seen = HashedKeys::default();
        keys.iter()
            .map(|k| k.to_u64())
            .filter(|&k| !self.holds(k) && seen.insert(k))
            .count() as u64
    }

    /// Adds keys; grows the filter when the count passes capacity or the fill pushes
    /// the false-positive estimate past the target. Returns how many were new.
    pub(super) fn add(&mut self, keys: &[Key]) -> usize {
        let mut new = 0;
        for key in keys {
            // The filter holds every key: its "no" is certain and spares the search,
            // which most keys of an ingest (new ones) then skip.
            let added = if self.filter.contains_key(*key) {
                self.keys.insert(key.to_u64())
            } else {
                self.keys.insert_absent(key.to_u64());
                true
            };
            if added {
                self.filter.insert_key(*key);
                self.recent.push(key.to_u64());
                self.trim_recent();
                new += 1;
            }
        }
        if new > 0 {
            self.grow_if_needed();
            self.version += 1;
        }
        new
    }

    /// The filter is sized for a rung of one ladder, `capacity` setting × 2^j: the
    /// smallest rung that holds the count within the target. Both conditions only get
    /// worse as keys arrive, so the rung, and with it the filter's bytes, are a function
    /// of the keys alone, not of the batches they came in: a restart that loads the hour
    /// back builds the very same filter, and pollers keep their ETag.
    fn grow_if_needed(&mut self) {
        let count = self.keys.len() as u64;
        if count <= self.capacity && self.filter.fpp() <= self.target_fpp {
            return;
        }
        let mut capacity = self.capacity;
        while capacity < count {
            capacity = capacity.saturating_mul(2);
        }
        loop {
            let params = Params::sized(capacity, self.target_fpp).unwrap_or_else(|_| max_params());
            // Built in place: the old filter goes before the new one's pages are written
            // (a zeroed allocation takes memory as it is touched), so the two are never
            // resident together.
            self.filter = Filter::new(params);
            for k in self.keys.iter() {
                self.filter.insert_key(Key::from_u64(k));
            }
            self.capacity = capacity;
            // The wire format caps m below 2^32: past that it cannot grow further.
            if self.filter.fpp() <= self.target_fpp || params.m == u32::MAX {
                break;
            }
            capacity = capacity.saturating_mul(2);
        }
    }

    /// Whether the hour holds `key` (as `u64`): the filter first, whose "no" is certain.
    fn holds(&self, key: u64) -> bool {
        self.filter.contains_key(Key::from_u64(key)) && self.keys.contains(key)
    }

    /// Keeps the recent keys within their bound by dropping the older half.
    #[inline]
    fn trim_recent(&mut self) {
        if self.recent.len() > (self.keys.len() / RECENT_FRACTION).max(MIN_RECENT) {
            let drop = self.recent.len() / 2;
            self.recent.drain(..drop);
            self.recent_from += drop as u64;
        }
    }

    /// The distinct keys added after the first `position` (a past [`OpenHour::count`]
    /// of this same hour, see [`OpenHour::id`]), in the order added; `None` when they
    /// are no longer all kept.
    pub(super) fn keys_since(&self, position: u64) -> Option<&[u64]> {
        let start = usize::try_from(position.checked_sub(self.recent_from)?).ok()?;
        self.recent.get(start..)
    }

    pub(super) fn count(&self) -> u64 {
        self.keys.len() as u64
    }

    /// Heap bytes it holds: its keys, the newest of them in order, and its filter's bits.
    pub(super) fn heap_bytes(&self) -> u64 {
        let recent = self.recent.capacity() * std::mem::size_of::<u64>();
        self.keys.heap_bytes() + recent as u64 + u64::from(self.filter.m()).div_ceil(8)
    }

    pub(super) fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The distinct keys, in no particular order.
    pub(super) fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.keys.iter().map(Key::from_u64)
    }
}

/// The largest filter the wire format allows, for sizes past what the target reaches.
fn max_params() -> Params {
    Params::for_count(0, u32::MAX)
}

/// All open hours (normally one, two around the turn of an hour).
#[derive(Default)]
pub(super) struct Ledger {
    pub(super) hours: HashMap<Hour, OpenHour>,
    /// The newest hour sealed by this node: later acknowledgements for it or earlier
    /// hours must not recreate an open entry.
    pub(super) sealed_through: Option<Hour>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(range: std::ops::Range<u32>) -> Vec<Key> {
        range.map(|i| Key::of(&format!("id-{i}"))).collect()
    }

    #[test]
    fn counts_distinct_keys_only() {
        let mut h = OpenHour::new(100, 0.01);
        assert_eq!(h.add(&keys(0..10)), 10);
        assert_eq!(h.add(&keys(5..15)), 5);
        assert_eq!(h.count(), 15);
    }

    #[test]
    fn grows_past_capacity_without_losing_keys_or_exceeding_the_target() {
        let mut h = OpenHour::new(100, 0.01);
        let all = keys(0..5000);
        for chunk in all.chunks(250) {
            h.add(chunk);
            assert!(
                h.filter().fpp() <= 0.01,
                "fpp {} at {}",
                h.filter().fpp(),
                h.count()
            );
        }
        assert!(h.filter().m() > Params::sized(100, 0.01).unwrap().m);
        assert!(all.iter().all(|k| h.filter().contains_key(*k)));
    }

    #[test]
    fn the_filter_is_a_function_of_the_keys_not_of_the_batches_they_came_in() {
        let all = keys(0..100_000);
        let built = |batch: usize| {
            let mut h = OpenHour::new(3000, 0.01);
            for chunk in all.chunks(batch) {
                h.add(chunk);
            }
            h
        };
        // As published (batches of 1000), as loaded back at a restart (pieces of 64K),
        // and all at once.
        let published = built(1000);
        for other in [built(65_536), built(all.len()), built(7)] {
            assert_eq!(other.filter().m(), published.filter().m());
            assert_eq!(other.filter().k(), published.filter().k());
            assert!(other.filter() == published.filter(), "the same bits");
        }
        assert!(published.filter().fpp() <= 0.01);
    }

    #[test]
    fn keys_since_a_position_are_the_keys_added_after_it_until_trimmed() {
        let mut h = OpenHour::new(100, 0.01);
        h.add(&keys(0..10));
        let at = h.count();
        h.add(&keys(5..15));
        let since: Vec<Key> = h
            .keys_since(at)
            .unwrap()
            .iter()
            .map(|&k| Key::from_u64(k))
            .collect();
        assert_eq!(since, keys(10..15));
        assert_eq!(h.keys_since(h.count()), Some(&[][..]));
        assert_eq!(h.keys_since(h.count() + 1), None);
        h.add(&keys(15..(MIN_RECENT as u32 + 20)));
        assert_eq!(
            h.keys_since(at),
            None,
            "the oldest recent keys were dropped"
        );
        let tail = h.count() - 5;
        assert_eq!(h.keys_since(tail).map(<[u64]>::len), Some(5));
        assert!(h.recent.len() <= MIN_RECENT);
    }

    #[test]
    fn version_changes_only_with_content() {
        let mut h = OpenHour::new(100, 0.01);
        h.add(&keys(0..3));
        let v = h.version;
        h.add(&keys(0..3));
        assert_eq!(h.version, v);
        h.add(&keys(3..4));
        assert_ne!(h.version, v);
    }
}
