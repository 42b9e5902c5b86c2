//! The key set's behaviour: exact across merges and shard splits, runs the size they
//! are meant to be, and the hasher that passes keys through.

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
