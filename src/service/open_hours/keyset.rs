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
//! A run is searched from where a uniform key would sit (`find`).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

mod find;
#[cfg(test)]
mod tests;

use find::find;

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
/// At mimalloc's largest size class (512 KiB) and above, so each run has pages of its
/// own. A merge holds one new run beside the old ones: half a MiB, not the two of runs
/// twice this size (measured at 1M IDs ingested: 15.1 B/ID at the peak against 16.2).
const RUN_BYTES: usize = 1 << 19;
/// At most 2^12 runs: 4,096 runs hold 537M keys before passing two `RUN_BYTES` (runs
/// only grow longer past that).
const MAX_SHARD_BITS: u32 = 12;
/// The tail is merged once it passes the larger of this and a sixteenth of the runs.
/// Up to 2^20 keys this sets how often every run is rewritten: at 2^14, an hour of 1M IDs
/// ingested 2-13% slower than at 2^16 in 9 of 10 interleaved pairs, and peaked no lower
/// (docs/BENCHMARKS.md, "Open hour memory").
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

    /// Heap bytes it holds: the runs' allocations and the tail's table (a control byte
    /// beside each key's slot, and the eighth of the slots a table keeps free).
    pub(super) fn heap_bytes(&self) -> u64 {
        let word = std::mem::size_of::<u64>();
        let runs: usize = self
            .runs
            .iter()
            .map(|run| run.capacity() * word)
            .sum::<usize>()
            + self.runs.capacity() * std::mem::size_of::<Vec<u64>>();
        let tail = self.tail.capacity() * (word + 1) * 8 / 7;
        (runs + tail) as u64
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
