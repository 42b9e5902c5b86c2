//! The open hour's distinct keys, exact, in about 8 bytes each.
//!
//! A hash set of `u64` costs 15–35 bytes per key (empty buckets, control bytes, and the
//! doubling at each resize). Here most keys sit in sorted runs, one per shard of the
//! keys' top [`SHARD_BITS`] bits, with no slack: each run grows by exactly what is
//! merged into it. New keys go to a small hash set (the tail); once the tail passes a
//! sixteenth of the runs, it is sorted and merged into them shard by shard, so a merge
//! needs no more scratch than the tail itself and one shard.
//!
//! Keys are SHA-1 prefixes, uniform over `u64`, so a key's place in its run is guessed
//! from its value and found from there in a few probes; keys that are not uniform
//! (tests) are still found exactly, only with more probes.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Keys are already uniformly random SHA-1 bits: hashing them again is wasted work.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

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

/// A plain hash set of keys, for small or short-lived sets.
pub(super) type HashedKeys = HashSet<u64, BuildHasherDefault<KeyHasher>>;

/// Top bits of a key choosing its run: 4096 runs, about 12,000 keys each at 50M keys.
const SHARD_BITS: u32 = 12;
const SHARDS: usize = 1 << SHARD_BITS;
/// The tail is merged once it passes the larger of this and a sixteenth of the runs.
const MIN_TAIL: usize = 1 << 16;
const TAIL_FRACTION: usize = 16;

/// A set of distinct keys (`u64`), exact.
#[derive(Default)]
pub(super) struct CompactKeys {
    /// Sorted runs, one per shard; empty until the first merge.
    runs: Vec<Vec<u64>>,
    in_runs: usize,
    /// Keys not merged yet.
    tail: HashedKeys,
}

impl CompactKeys {
    pub(super) fn len(&self) -> usize {
        self.in_runs + self.tail.len()
    }

    pub(super) fn contains(&self, key: u64) -> bool {
        self.tail.contains(&key) || self.in_runs(key)
    }

    /// Adds `key`; returns whether it was new.
    pub(super) fn insert(&mut self, key: u64) -> bool {
        if self.in_runs(key) || !self.tail.insert(key) {
            return false;
        }
        self.merge_if_due();
        true
    }

    /// Adds `key`, known not to be in the set (a Bloom filter of the set said no), without
    /// searching for it.
    pub(super) fn insert_absent(&mut self, key: u64) {
        debug_assert!(!self.contains(key));
        self.tail.insert(key);
        self.merge_if_due();
    }

    fn merge_if_due(&mut self) {
        if self.tail.len() > (self.in_runs / TAIL_FRACTION).max(MIN_TAIL) {
            self.merge();
        }
    }

    /// Every key, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flatten().chain(self.tail.iter()).copied()
    }

    fn in_runs(&self, key: u64) -> bool {
        match self.runs.get(shard_of(key)) {
            Some(run) => find(run, key),
            None => false,
        }
    }

    /// Moves the tail into the runs (keeping the tail's memory for the next keys): the
    /// tail is placed by shard (one counting pass), then each shard's part is sorted and
    /// merged into its run.
    fn merge(&mut self) {
        if self.runs.is_empty() {
            self.runs = (0..SHARDS).map(|_| Vec::new()).collect();
        }
        let mut bounds = vec![0usize; SHARDS + 1];
        for &key in &self.tail {
            bounds[shard_of(key) + 1] += 1;
        }
        for shard in 0..SHARDS {
            bounds[shard + 1] += bounds[shard];
        }
        let mut next = bounds.clone();
        let mut placed = vec![0u64; self.tail.len()];
        for key in self.tail.drain() {
            let slot = &mut next[shard_of(key)];
            placed[*slot] = key;
            *slot += 1;
        }
        self.in_runs += placed.len();
        for (shard, run) in self.runs.iter_mut().enumerate() {
            let mine = &mut placed[bounds[shard]..bounds[shard + 1]];
            if !mine.is_empty() {
                mine.sort_unstable();
                merge_into(run, mine);
            }
        }
    }
}

fn shard_of(key: u64) -> usize {
    (key >> (64 - SHARD_BITS)) as usize
}

/// Merges `add` (sorted, none in `run`) into the sorted `run`, in one pass into an
/// allocation of exactly the merged length.
fn merge_into(run: &mut Vec<u64>, add: &[u64]) {
    let mut merged = Vec::with_capacity(run.len() + add.len());
    let (mut i, mut j) = (0, 0);
    while i < run.len() && j < add.len() {
        if run[i] < add[j] {
            merged.push(run[i]);
            i += 1;
        } else {
            merged.push(add[j]);
            j += 1;
        }
    }
    merged.extend_from_slice(&run[i..]);
    merged.extend_from_slice(&add[j..]);
    *run = merged;
}

/// Whether the sorted `run` (keys of one shard) holds `key`: starts where a uniform key
/// would sit, gallops outwards to bracket it, then searches the bracket.
fn find(run: &[u64], key: u64) -> bool {
    let n = run.len();
    if n == 0 {
        return false;
    }
    // The key's place within its shard's range, as a fraction of 2^64, times n.
    let guess = ((u128::from(key << SHARD_BITS) * n as u128) >> 64) as usize;
    let (lo, hi) = if run[guess] < key {
        let (mut lo, mut step) = (guess + 1, 1);
        loop {
            let probe = guess + step;
            if probe >= n {
                break (lo, n);
            }
            if run[probe] >= key {
                break (lo, probe + 1);
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        let (mut hi, mut step) = (guess + 1, 1);
        loop {
            if step > guess {
                break (0, hi);
            }
            let probe = guess - step;
            if run[probe] < key {
                break (probe + 1, hi);
            }
            hi = probe + 1;
            step *= 2;
        }
    };
    run[lo..hi].binary_search(&key).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Uniform keys, as SHA-1 prefixes are.
    fn uniform(n: u64, salt: u64) -> impl Iterator<Item = u64> {
        (0..n).map(move |i| (i ^ salt.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)
    }

    #[test]
    fn holds_exactly_the_keys_inserted_across_merges() {
        let mut set = CompactKeys::default();
        let n = 3 * MIN_TAIL as u64;
        for k in uniform(n, 1) {
            assert!(set.insert(k));
        }
        assert!(set.in_runs > 0, "the tail was merged at least once");
        for k in uniform(n, 1) {
            assert!(!set.insert(k), "a repeat is not new");
            assert!(set.contains(k));
        }
        assert_eq!(set.len() as u64, n);
        assert!(uniform(10_000, 2).all(|k| !set.contains(k)));
        let mut all: Vec<u64> = set.iter().collect();
        all.sort_unstable();
        let mut want: Vec<u64> = uniform(n, 1).collect();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn keys_known_absent_are_added_without_a_search() {
        let mut set = CompactKeys::default();
        for k in uniform(2 * MIN_TAIL as u64, 3) {
            set.insert_absent(k);
        }
        assert_eq!(set.len(), 2 * MIN_TAIL);
        assert!(uniform(2 * MIN_TAIL as u64, 3).all(|k| set.contains(k) && !set.insert(k)));
    }

    #[test]
    fn keys_far_from_uniform_are_found_too() {
        let mut set = CompactKeys::default();
        for k in 0..(2 * MIN_TAIL as u64 + 5) {
            set.insert(k * 3);
            set.insert(u64::MAX - k);
        }
        assert!(set.in_runs > 0);
        assert!(set.contains(0) && set.contains(u64::MAX) && set.contains(300));
        assert!(!set.contains(301) && !set.contains(1));
    }

    #[test]
    fn key_hasher_passes_u64_through() {
        let mut hasher = KeyHasher::default();
        hasher.write_u64(42);
        assert_eq!(hasher.finish(), 42);
    }

    #[test]
    fn merge_into_keeps_the_run_sorted() {
        let mut run = vec![2, 4, 6];
        merge_into(&mut run, &[1, 5, 7]);
        assert_eq!(run, [1, 2, 4, 5, 6, 7]);
        merge_into(&mut run, &[0]);
        assert_eq!(run[0], 0);
    }

    proptest! {
        #[test]
        fn find_agrees_with_binary_search(mut run in prop::collection::vec(any::<u64>(), 0..300), key in any::<u64>()) {
            run.sort_unstable();
            run.dedup();
            prop_assert_eq!(find(&run, key), run.binary_search(&key).is_ok());
            for &k in &run {
                prop_assert!(find(&run, k));
            }
        }
    }
}
