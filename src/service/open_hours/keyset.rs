//! The open hour's distinct keys, exact, in about 8 bytes each.
//!
//! A hash set of `u64` costs 15–35 bytes per key (empty buckets, control bytes, and the
//! doubling at each resize). Here most keys sit in sorted runs, one per shard of the
//! keys' top bits, with no slack: each run grows by exactly what is merged into it. New
//! keys go to a small hash set (the tail); once the tail passes a sixteenth of the runs,
//! it is sorted and merged into them shard by shard, so a merge needs no more scratch
//! than the tail itself and one run.
//!
//! Runs are kept at one to two [`RUN_BYTES`] each: the shards split in two (at a merge)
//! whenever the runs would pass twice that. Small runs would cost memory the keys do not
//! use: each merge replaces every run by a longer one, and an allocator that serves
//! blocks of a few KiB from shared pages keeps the pages that the old runs left half
//! used. Measured at 1M keys with mimalloc, 4,096 runs of 2 KiB left about 5 MiB that way
//! (docs/BENCHMARKS.md, "Open hour memory"); blocks this large get pages of their own,
//! which go back whole when freed.
//!
//! Keys are SHA-1 prefixes, uniform over `u64`, so a key's place in its run is guessed
//! from its value, the guess corrected once from the key found there, and the key found
//! from there in a few probes; keys that are not uniform (tests) are still found exactly,
//! only with more probes.

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

/// What a run is sized to: each holds one to two times this (while it has keys at all).
/// Above mimalloc's largest size class (512 KiB), so each run has pages of its own.
const RUN_BYTES: usize = 1 << 20;
/// At most 2^12 runs: 4,096 runs hold 8.6 billion keys before passing two `RUN_BYTES`.
const MAX_SHARD_BITS: u32 = 12;
/// The tail is merged once it passes the larger of this and a sixteenth of the runs.
const MIN_TAIL: usize = 1 << 16;
const TAIL_FRACTION: usize = 16;

/// A set of distinct keys (`u64`), exact.
pub(super) struct CompactKeys {
    /// Sorted runs, one per shard of the keys' top `shard_bits` bits; empty until the
    /// first merge.
    runs: Vec<Vec<u64>>,
    shard_bits: u32,
    in_runs: usize,
    /// Keys not merged yet.
    tail: HashedKeys,
    /// [`RUN_BYTES`], smaller in tests so that shards split at a few thousand keys.
    run_bytes: usize,
}

impl Default for CompactKeys {
    fn default() -> CompactKeys {
        CompactKeys::with_run_bytes(RUN_BYTES)
    }
}

impl CompactKeys {
    fn with_run_bytes(run_bytes: usize) -> CompactKeys {
        CompactKeys {
            runs: Vec::new(),
            shard_bits: 0,
            in_runs: 0,
            tail: HashedKeys::default(),
            run_bytes,
        }
    }

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
        match self.runs.get(shard_of(key, self.shard_bits)) {
            Some(run) => find(run, key, self.shard_bits),
            None => false,
        }
    }

    /// Moves the tail into the runs (keeping the tail's memory for the next keys),
    /// splitting the shards first if the runs would pass twice [`RUN_BYTES`]: the tail is
    /// placed by shard (one counting pass), then each shard's part is sorted and merged
    /// with its keys of the old runs. Each old run is dropped once its shards are built,
    /// so the scratch is the tail and one run.
    fn merge(&mut self) {
        let total = self.in_runs + self.tail.len();
        let bits = shard_bits_for(total, self.run_bytes).max(self.shard_bits);
        let shards = 1usize << bits;
        let mut bounds = vec![0usize; shards + 1];
        for &key in &self.tail {
            bounds[shard_of(key, bits) + 1] += 1;
        }
        for shard in 0..shards {
            bounds[shard + 1] += bounds[shard];
        }
        let mut next = bounds.clone();
        let mut placed = vec![0u64; self.tail.len()];
        for key in self.tail.drain() {
            let slot = &mut next[shard_of(key, bits)];
            placed[*slot] = key;
            *slot += 1;
        }
        // Each old shard becomes 2^split new ones (itself when none split): its run's
        // keys, in order, by their next bits, each merged with its part of the tail.
        let split = bits - self.shard_bits;
        let mut old = std::mem::take(&mut self.runs).into_iter();
        let mut runs = Vec::with_capacity(shards);
        for old_shard in 0..1usize << self.shard_bits {
            let run = old.next().unwrap_or_default();
            let mut rest = &run[..];
            for shard in old_shard << split..(old_shard + 1) << split {
                let (mine, after) =
                    rest.split_at(rest.partition_point(|&k| shard_of(k, bits) == shard));
                let add = &mut placed[bounds[shard]..bounds[shard + 1]];
                add.sort_unstable();
                runs.push(merged(mine, add));
                rest = after;
            }
        }
        self.runs = runs;
        self.shard_bits = bits;
        self.in_runs = total;
    }
}

/// The shard bits for `keys` keys in runs of `run_bytes` to twice that.
fn shard_bits_for(keys: usize, run_bytes: usize) -> u32 {
    let runs = keys.saturating_mul(std::mem::size_of::<u64>()) / run_bytes.max(1);
    match runs {
        0 | 1 => 0,
        n => n.ilog2().min(MAX_SHARD_BITS),
    }
}

fn shard_of(key: u64, bits: u32) -> usize {
    match bits {
        0 => 0,
        b => (key >> (64 - b)) as usize,
    }
}

/// The sorted union of two sorted slices with no key in common, in an allocation of
/// exactly its length.
fn merged(run: &[u64], add: &[u64]) -> Vec<u64> {
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
    merged
}

/// Whether the sorted `run` (keys of one shard of the top `bits` bits) holds `key`:
/// starts where a uniform key would sit, moves by as many places as uniform keys would
/// lie between the key found there and `key`, gallops outwards to bracket it, then
/// searches the bracket.
fn find(run: &[u64], key: u64, bits: u32) -> bool {
    let n = run.len();
    if n == 0 {
        return false;
    }
    // How many of the run's keys lie, when uniform, in a span `d` of its shard's values
    // (below the shard's width, 2^(64 - bits), as every span between keys of one shard is).
    let expect = |d: u64| ((u128::from(d << bits) * n as u128) >> 64) as usize;
    let first = expect(key);
    let guess = match run[first].cmp(&key) {
        std::cmp::Ordering::Equal => return true,
        std::cmp::Ordering::Less => (first + expect(key - run[first])).min(n - 1),
        std::cmp::Ordering::Greater => first - expect(run[first] - key).min(first),
    };
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
    fn merged_keeps_the_run_sorted() {
        let run = merged(&[2, 4, 6], &[1, 5, 7]);
        assert_eq!(run, [1, 2, 4, 5, 6, 7]);
        let run = merged(&run, &[0]);
        assert_eq!(run[0], 0);
    }

    /// Checks what `find` and `in_runs` rely on: one run per shard, each sorted and
    /// holding only keys of its shard.
    fn assert_runs_are_shards(set: &CompactKeys) {
        if set.runs.is_empty() {
            assert_eq!(set.in_runs, 0);
            return;
        }
        assert_eq!(set.runs.len(), 1 << set.shard_bits);
        for (shard, run) in set.runs.iter().enumerate() {
            assert!(run.windows(2).all(|w| w[0] < w[1]), "run {shard} is sorted");
            assert!(run.iter().all(|&k| shard_of(k, set.shard_bits) == shard));
        }
        assert_eq!(set.runs.iter().map(Vec::len).sum::<usize>(), set.in_runs);
    }

    #[test]
    fn shards_split_as_the_runs_grow_and_runs_stay_near_their_size() {
        let run_bytes = 4096;
        let mut set = CompactKeys::with_run_bytes(run_bytes);
        let n = 5 * MIN_TAIL as u64;
        let mut bits_seen = Vec::new();
        for k in uniform(n, 7) {
            assert!(set.insert(k));
            if bits_seen.last() != Some(&set.shard_bits) {
                bits_seen.push(set.shard_bits);
                assert_runs_are_shards(&set);
            }
        }
        assert!(bits_seen.len() >= 3, "split more than once: {bits_seen:?}");
        assert_runs_are_shards(&set);
        // Between one and two run sizes each, on average, plus the sixteenth merged since.
        let mean = set.in_runs * 8 / set.runs.len();
        assert!(
            (run_bytes..=2 * run_bytes + run_bytes / 8).contains(&mean),
            "{mean} bytes per run"
        );
        assert!(uniform(n, 7).all(|k| set.contains(k)));
        assert!(uniform(10_000, 8).all(|k| !set.contains(k)));
        assert_eq!(set.len() as u64, n);
    }

    #[test]
    fn a_million_keys_sit_in_a_few_runs_of_a_mebibyte_or_more() {
        let mut set = CompactKeys::default();
        for k in uniform(1_000_000, 9) {
            set.insert_absent(k);
        }
        assert_runs_are_shards(&set);
        assert!(
            set.runs.iter().all(|run| run.len() * 8 >= RUN_BYTES),
            "runs get pages of their own"
        );
        assert!(set.runs.len() <= 8);
        assert!(uniform(1_000_000, 9).step_by(97).all(|k| set.contains(k)));
    }

    proptest! {
        #[test]
        fn find_agrees_with_binary_search(
            keys in prop::collection::vec(any::<u64>(), 0..300),
            key in any::<u64>(),
            bits in 0u32..=MAX_SHARD_BITS,
            shard in any::<u64>(),
        ) {
            // Keys of one shard: its top `bits` bits, the rest from the keys.
            let top = if bits == 0 { 0 } else { shard << (64 - bits) };
            let low = |k: u64| if bits == 0 { k } else { top | (k >> bits) };
            let mut run: Vec<u64> = keys.iter().map(|&k| low(k)).collect();
            run.sort_unstable();
            run.dedup();
            let key = low(key);
            prop_assert_eq!(find(&run, key, bits), run.binary_search(&key).is_ok());
            for &k in &run {
                prop_assert!(find(&run, k, bits));
            }
        }

        #[test]
        fn the_set_is_exact_across_merges_and_splits(
            batches in prop::collection::vec(prop::collection::vec(any::<u64>(), 0..200), 1..12),
            absent in prop::collection::vec(any::<u64>(), 0..50),
            run_bytes in 8usize..256,
        ) {
            let mut set = CompactKeys::with_run_bytes(run_bytes);
            let mut want = std::collections::BTreeSet::new();
            for batch in &batches {
                for &k in batch {
                    prop_assert_eq!(set.insert(k), want.insert(k));
                }
                set.merge();
                assert_runs_are_shards(&set);
            }
            prop_assert_eq!(set.len(), want.len());
            let mut all: Vec<u64> = set.iter().collect();
            all.sort_unstable();
            prop_assert_eq!(all, want.iter().copied().collect::<Vec<_>>());
            for k in absent {
                prop_assert_eq!(set.contains(k), want.contains(&k));
            }
        }
    }
}
