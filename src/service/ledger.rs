//! The open hours, in memory: each hour's distinct keys and a filter that grows so
//! its false-positive probability never exceeds the target.
//!
//! The store is the truth; the ledger is a view of it kept current two ways: every
//! ingest this node acknowledges is recorded at once (read-your-writes), and a
//! periodic refresh pulls what other nodes appended (see `Service`).

use crate::bloom::{Filter, Key, Params};
use crate::hour::Hour;
use crate::render::Rendered;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Instant;

/// Keys are already uniformly random SHA-1 bits: hashing them again is wasted work.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub type KeySet = HashSet<u64, BuildHasherDefault<KeyHasher>>;

/// One open hour's state.
pub struct OpenHour {
    keys: KeySet,
    filter: Filter,
    /// The count the filter is sized for; doubles when exceeded.
    capacity: u64,
    target_fpp: f64,
    /// Store cursor: everything appended up to it is in `keys`.
    pub cursor: i64,
    pub refreshed_at: Option<Instant>,
    /// Bumped whenever the content changes.
    pub version: u64,
    /// Room held for batches being appended (their keys not yet here), so concurrent
    /// ingests cannot together pass `max_hour_ids`.
    pub reserved: u64,
    /// The newest rendering per representation, with the version it shows; current
    /// while that version is.
    pub rendered: [Option<(u64, Arc<Rendered>)>; 3],
}

impl OpenHour {
    pub fn new(capacity: u64, target_fpp: f64) -> OpenHour {
        // Settings are validated so that this fits; never panic under the ledger lock.
        let params = Params::optimal(capacity, target_fpp).unwrap_or_else(|_| max_params());
        OpenHour {
            keys: KeySet::default(),
            filter: Filter::new(params),
            capacity,
            target_fpp,
            cursor: 0,
            refreshed_at: None,
            version: 0,
            reserved: 0,
            rendered: [None, None, None],
        }
    }

    /// How many of `keys` are not in the hour yet (each counted once).
    pub fn count_new(&self, keys: &[Key]) -> u64 {
        let mut seen = KeySet::default();
        keys.iter()
            .map(|k| k.to_u64())
            .filter(|k| !self.keys.contains(k) && seen.insert(*k))
            .count() as u64
    }

    /// Adds keys; grows the filter when the count passes capacity or the fill pushes
    /// the false-positive estimate past the target. Returns how many were new.
    pub fn add(&mut self, keys: &[Key]) -> usize {
        let mut new = 0;
        for key in keys {
            if self.keys.insert(key.to_u64()) {
                self.filter.insert_key(*key);
                new += 1;
            }
        }
        if new > 0 {
            self.grow_if_needed();
            self.version += 1;
        }
        new
    }

    fn grow_if_needed(&mut self) {
        let count = self.keys.len() as u64;
        while count > self.capacity || self.filter.fpp() > self.target_fpp {
            self.capacity = (self.capacity * 2).max(count);
            let params =
                Params::optimal(self.capacity, self.target_fpp).unwrap_or_else(|_| max_params());
            let mut filter = Filter::new(params);
            for &k in &self.keys {
                filter.insert_key(Key::from_u64(k));
            }
            self.filter = filter;
            if params.m == u32::MAX {
                break; // cannot grow further; the wire format caps m below 2^32
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.keys.len() as u64
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The distinct keys, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.keys.iter().map(|&k| Key::from_u64(k))
    }
}

/// The largest filter the wire format allows, for sizes past what the target reaches.
fn max_params() -> Params {
    Params::for_count(0, u32::MAX)
}

/// All open hours (normally one, two around the turn of an hour).
#[derive(Default)]
pub struct Ledger {
    pub hours: HashMap<Hour, OpenHour>,
    /// The newest hour sealed by this node: later acknowledgements for it or earlier
    /// hours must not recreate an open entry.
    pub sealed_through: Option<Hour>,
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
        assert!(h.filter().m() > Params::optimal(100, 0.01).unwrap().m);
        assert!(all.iter().all(|k| h.filter().contains_key(*k)));
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

    #[test]
    fn key_hasher_passes_u64_through() {
        let mut hasher = KeyHasher::default();
        hasher.write_u64(42);
        assert_eq!(hasher.finish(), 42);
    }
}
