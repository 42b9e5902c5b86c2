//! The union builder against the definitions it replaces: deduplicate every key of
//! every hour, then size with a key-by-key loop. Sealed hours and closed unions served
//! before the probe-sequence rule were published from the classical loop's bytes, and
//! are rebuilt by it; every other from the rule's. The fast path must reproduce both
//! bit for bit, with the exact distinct count.

use bloomcast::bloom::{
    distinct_count, fpp_at_fill, union_by, union_of, Filter, FilterError, Key, Params, Sizing,
};
use proptest::prelude::*;

/// The classical sizing loop as it was before the fast build: every candidate size
/// rebuilt key by key from the sorted distinct keys, until `(X/m)^k` is within `p`.
fn classic(keys: &[Key], p: f64) -> Result<Filter, FilterError> {
    let n = keys.len() as u64;
    let mut params = Params::optimal(n, p)?;
    loop {
        let filter = Filter::from_keys(params, keys);
        if fpp_at_fill(filter.ones(), params) <= p {
            return Ok(filter.sized_by_rule(Sizing::Classic));
        }
        let m = u64::from(params.m);
        let m = m + (m / 32).max(1);
        if m >= 1 << 32 {
            return Err(FilterError::MOutOfRange(m));
        }
        params = Params::for_count(n, m as u32);
    }
}

/// The probe-sequence rule key by key: its size for the count, grown until the rate at
/// the actual fill is within `p`.
fn probes(keys: &[Key], p: f64) -> Result<Filter, FilterError> {
    let n = keys.len() as u64;
    let mut params = Params::sized(n, p)?;
    loop {
        let filter = Filter::from_keys(params, keys);
        if filter.fpp() <= p {
            return Ok(filter);
        }
        params = params.grown_for(n)?;
    }
}

fn distinct_sorted(sets: &[Vec<Key>]) -> Vec<Key> {
    let mut all: Vec<Key> = sets.concat();
    all.sort_unstable();
    all.dedup();
    all
}

/// Keys drawn from a small pool, so hours overlap and repeat keys.
fn key(pool: u64) -> impl Strategy<Value = Key> {
    (0..pool).prop_map(|i| Key::of(&format!("id:{i}")))
}

/// An hour as the union sees it: sealed hours sorted and distinct, the open hour (or
/// any other caller's set) in arbitrary order with repeats.
fn hour(pool: u64) -> impl Strategy<Value = Vec<Key>> {
    (prop::collection::vec(key(pool), 0..400), any::<bool>()).prop_map(|(mut keys, sealed)| {
        if sealed {
            keys.sort_unstable();
            keys.dedup();
        }
        keys
    })
}

fn as_slices(sets: &[Vec<Key>]) -> Vec<&[Key]> {
    sets.iter().map(Vec::as_slice).collect()
}

/// splitmix64: uniform keys without hashing a million IDs in a debug build.
fn uniform_keys(n: usize, seed: u64) -> Vec<Key> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            Key::from_u64(z ^ (z >> 31))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_union_is_bit_identical_to_sizing_its_distinct_keys(
        sets in prop::collection::vec(hour(1500), 0..8),
        p in prop_oneof![Just(0.01), 1e-6..0.5f64],
    ) {
        let keys = distinct_sorted(&sets);
        let (filter, count) = union_of(&as_slices(&sets), p).expect("sizable");
        prop_assert_eq!(count, keys.len() as u64);
        let expected = probes(&keys, p).expect("sizable");
        prop_assert_eq!(filter.to_bytes(), expected.to_bytes());
        prop_assert_eq!(&filter, &expected);
        prop_assert!(filter.fpp() <= p);
        prop_assert!(keys.iter().all(|k| filter.contains_key(*k)));
        let (old, _) = union_by(&as_slices(&sets), p, Sizing::Classic).expect("sizable");
        prop_assert_eq!(old, classic(&keys, p).expect("sizable"));
    }

    #[test]
    fn the_distinct_count_ignores_order_repeats_and_overlap(
        sets in prop::collection::vec(hour(3000), 0..12),
    ) {
        prop_assert_eq!(distinct_count(&as_slices(&sets)), distinct_sorted(&sets).len() as u64);
    }

    #[test]
    fn sized_within_is_unchanged_for_any_order(
        mut keys in prop::collection::vec(key(5000), 0..3000),
        p in 1e-4..0.3f64,
    ) {
        keys.sort_unstable();
        keys.dedup();
        let expected = probes(&keys, p).expect("sizable");
        let old = classic(&keys, p).expect("sizable");
        keys.reverse();
        prop_assert_eq!(Filter::sized_within(&keys, p).expect("sizable"), expected);
        prop_assert_eq!(Filter::sized_by(&keys, p, Sizing::Classic).expect("sizable"), old);
    }
}

#[test]
fn a_union_too_big_for_cache_is_bit_identical_too() {
    // Over a million keys: the filter outgrows L2, so the partitioned build runs, with
    // its chunks and regions.
    let hours: Vec<Vec<Key>> = (0..3)
        .map(|h| {
            let mut keys = uniform_keys(450_000, h);
            // Each hour repeats some keys of the one before.
            keys.extend(uniform_keys(50_000, h.saturating_sub(1)));
            keys.sort_unstable();
            keys.dedup();
            keys
        })
        .collect();
    let keys = distinct_sorted(&hours);
    let (filter, count) = union_of(&as_slices(&hours), 0.01).expect("sizable");
    assert_eq!(count, keys.len() as u64);
    let expected = probes(&keys, 0.01).expect("sizable");
    assert_eq!(filter, expected);
    assert_eq!(
        Filter::sized_within(&keys, 0.01).expect("sizable"),
        expected
    );
}

#[test]
fn skipping_sizes_that_surely_fail_chooses_what_building_them_would() {
    // At p = 0.1 and a million keys the optimal size's mean fill is 9 sigma past what
    // 0.1 allows, so the classical builder skips it without building; the reference
    // builds every size key by key. Same filter, and the skipped size really fails.
    let keys = {
        let mut k = uniform_keys(1_000_000, 7);
        k.sort_unstable();
        k.dedup();
        k
    };
    let n = keys.len() as u64;
    let optimal = Params::optimal(n, 0.1).unwrap();
    // That the builder skips this size unbuilt is checked in bloomcast-core's sizing
    // tests (`surely_too_full` is internal to the core).
    let skipped = Filter::from_keys(optimal, &keys);
    assert!(fpp_at_fill(skipped.ones(), optimal) > 0.1);
    let expected = classic(&keys, 0.1).expect("sizable");
    assert!(expected.m() > optimal.m);
    let built = union_by(&[&keys], 0.1, Sizing::Classic).expect("sizable").0;
    assert_eq!(built, expected);
}
