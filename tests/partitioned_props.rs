//! Properties of the partitioned filter and of the set-size estimates of both
//! variants: no false negatives, unions and intersections that keep what they must,
//! and cardinality, union and intersection estimates within a few percent at
//! reasonable fills.

use bloomcast::bloom::{Filter, FilterError, Key, Params, PartitionedFilter};
use proptest::prelude::*;

fn ids(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,8}:[0-9]{1,9}",
            prop::collection::vec(any::<char>(), 0..16).prop_map(String::from_iter),
        ],
        0..max,
    )
}

/// Shapes from the tiniest legal partitioned filter (one bit per range) to a roomy one.
fn params() -> impl Strategy<Value = Params> {
    (1u64..=64, 1u64..5_000).prop_map(|(k, extra)| Params::new((k + extra).max(8), k).unwrap())
}

fn partitioned(params: Params, ids: &[String]) -> PartitionedFilter {
    let mut filter = PartitionedFilter::new(params).unwrap();
    for id in ids {
        filter.insert(id);
    }
    filter
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_inserted_id_is_ever_reported_absent(ids in ids(64), params in params()) {
        let filter = partitioned(params, &ids);
        for id in &ids {
            prop_assert!(filter.contains(id), "false negative for {id:?}");
        }
    }

    #[test]
    fn every_id_sets_one_bit_in_each_range(id in "\\PC{0,32}", params in params()) {
        let filter = partitioned(params, std::slice::from_ref(&id));
        let p = params.m / params.k;
        let positions: Vec<u32> = filter.positions(Key::of(&id)).collect();
        prop_assert_eq!(positions.len() as u32, params.k);
        for (i, pos) in positions.iter().enumerate() {
            prop_assert_eq!(pos / p, i as u32);
        }
        prop_assert_eq!(filter.ones(), u64::from(params.k));
    }

    #[test]
    fn union_contains_everything_either_side_contained(
        a in ids(48), b in ids(48), params in params()
    ) {
        let mut union = partitioned(params, &a);
        union.union_with(&partitioned(params, &b)).unwrap();
        for id in a.iter().chain(&b) {
            prop_assert!(union.contains(id));
        }
        let both: Vec<String> = a.iter().chain(&b).cloned().collect();
        prop_assert_eq!(union, partitioned(params, &both));
    }

    #[test]
    fn intersection_keeps_what_both_contained(
        common in ids(24), a in ids(24), b in ids(24), params in params()
    ) {
        let left: Vec<String> = common.iter().chain(&a).cloned().collect();
        let right: Vec<String> = common.iter().chain(&b).cloned().collect();
        let mut both = partitioned(params, &left);
        both.intersect_with(&partitioned(params, &right)).unwrap();
        for id in &common {
            prop_assert!(both.contains(id), "lost common {id:?}");
        }
        // Every bit of the intersection of the sets is in the AND of the filters.
        let exact = partitioned(params, &common);
        let mut check = exact.clone();
        check.intersect_with(&both).unwrap();
        prop_assert_eq!(check, exact);
    }

    #[test]
    fn shapes_that_differ_in_m_or_k_never_combine(params in params(), dm in 1u32..100) {
        let other = Params::new(u64::from(params.m + dm), u64::from(params.k)).unwrap();
        let mut a = PartitionedFilter::new(params).unwrap();
        let b = PartitionedFilter::new(other).unwrap();
        let refused = matches!(a.union_with(&b), Err(FilterError::Incompatible { .. }));
        prop_assert!(refused);
        let f = Filter::new(params);
        let refused = matches!(f.overlap(&Filter::new(other)), Err(FilterError::Incompatible { .. }));
        prop_assert!(refused);
    }
}

fn keys(prefix: &str, range: std::ops::Range<u32>) -> Vec<Key> {
    range.map(|i| Key::of(&format!("{prefix}{i}"))).collect()
}

fn within(estimate: f64, truth: f64, tolerance: f64) -> bool {
    (estimate - truth).abs() <= tolerance * truth
}

#[test]
fn partitioned_cardinality_is_within_a_few_percent_at_reasonable_fills() {
    let params = Params::optimal(10_000, 0.01).unwrap();
    for n in [1_000u32, 5_000, 10_000, 15_000] {
        let filter = PartitionedFilter::from_keys(params, &keys("user:", 0..n)).unwrap();
        let estimate = filter.estimated_count();
        assert!(
            within(estimate, f64::from(n), 0.03),
            "n {n}: estimate {estimate}"
        );
    }
}

#[test]
fn union_and_intersection_estimates_are_within_a_few_percent_for_both_variants() {
    // |A| = |B| = 6000 with 3000 in common: |A ∪ B| = 9000, |A ∩ B| = 3000, in filters
    // sized for 10,000 IDs at 1% (the union at 90% of capacity).
    let params = Params::optimal(10_000, 0.01).unwrap();
    let a: Vec<Key> = keys("common:", 0..3000)
        .into_iter()
        .chain(keys("a:", 0..3000))
        .collect();
    let b: Vec<Key> = keys("common:", 0..3000)
        .into_iter()
        .chain(keys("b:", 0..3000))
        .collect();
    let standard = Filter::from_keys(params, &a)
        .overlap(&Filter::from_keys(params, &b))
        .unwrap();
    let parted = PartitionedFilter::from_keys(params, &a)
        .unwrap()
        .overlap(&PartitionedFilter::from_keys(params, &b).unwrap())
        .unwrap();
    for (name, o) in [("standard", standard), ("partitioned", parted)] {
        assert!(within(o.a, 6000.0, 0.03), "{name}: {o:?}");
        assert!(within(o.b, 6000.0, 0.03), "{name}: {o:?}");
        assert!(within(o.union, 9000.0, 0.03), "{name}: {o:?}");
        // The difference of three estimates carries their errors: a few percent of
        // the union, which is about 8% of an intersection a third its size.
        assert!(within(o.intersection, 3000.0, 0.08), "{name}: {o:?}");
    }
}

#[test]
fn disjoint_sets_estimate_an_intersection_near_zero() {
    let params = Params::optimal(10_000, 0.01).unwrap();
    let a = Filter::from_keys(params, &keys("a:", 0..4000));
    let b = Filter::from_keys(params, &keys("b:", 0..4000));
    let o = a.overlap(&b).unwrap();
    assert!(o.intersection < 0.02 * 8000.0, "{o:?}");
    let same = a.overlap(&a).unwrap();
    assert_eq!(same.intersection, same.a, "A ∩ A is A");
}
