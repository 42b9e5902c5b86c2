use super::build::rows_for;
use super::*;
use proptest::prelude::*;

fn keys(n: usize, tag: &str) -> Vec<Key> {
    (0..n).map(|i| Key::of(&format!("{tag}{i}"))).collect()
}

#[test]
fn every_precision_maps_to_the_cheapest_grade_at_or_below_it() {
    for p in [
        0.05,
        0.01,
        0.001,
        1e-4,
        (-16f64).exp2(),
        (-20f64).exp2(),
        0.3,
        0.5,
    ] {
        let grade = Grade::for_fpp(p).unwrap();
        assert!(grade.fpp() <= p, "{p}: {grade:?} has {}", grade.fpp());
        // One step cheaper would be over the precision asked for.
        let cheaper = Grade::from_code(grade.code() - 1).unwrap();
        assert!(cheaper.fpp() > p, "{p}: {cheaper:?} would do");
        assert_eq!(Grade::from_code(grade.code()), Some(grade));
    }
    assert_eq!(Grade::for_fpp(1.0 / 128.0), Some(Grade { k: 7, split: 0 }));
    assert_eq!(Grade::for_fpp(0.01), Some(Grade { k: 6, split: 185 }));
    assert_eq!(
        Grade::for_fpp((-31f64).exp2()),
        Some(Grade { k: 31, split: 0 })
    );
    for bad in [0.0, 1.0, -0.1, f64::NAN, f64::INFINITY, 1e-10] {
        assert_eq!(Grade::for_fpp(bad), None, "{bad}");
    }
}

#[test]
fn every_member_is_found_at_every_size_and_grade() {
    for n in [0, 1, 2, 5, 100, 128, 129, 500, 3_000, 20_000] {
        let keys = keys(n, "m");
        for p in [0.5, 0.05, 0.01, 0.001, (-20f64).exp2()] {
            let grade = Grade::for_fpp(p).unwrap();
            let filter = Ribbon2::build(&keys, grade).unwrap();
            assert_eq!(filter.n() as usize, n);
            assert!(keys.iter().all(|&k| filter.contains(k)), "n = {n}, p = {p}");
            let back = Ribbon2::from_bytes(&filter.to_bytes()).unwrap();
            assert_eq!(back, filter);
            assert_eq!(filter.to_bytes().len(), filter.byte_len());
        }
    }
}

#[test]
fn any_precision_from_2_to_the_minus_20_to_five_percent_is_within_5_percent_of_its_floor() {
    // 24 precisions spread over the range, powers of two or not, at the two
    // smallest sizes (the larger ones: benches/ribbon2.rs and benches/harness/ribbon2.sh).
    for n in [3_000, 30_000] {
        let keys = keys(n, "floor");
        for i in 0..24 {
            let bits = 4.3219 + (20.0 - 4.3219) * f64::from(i) / 23.0 + 0.013 * f64::from(i % 5);
            let p = (-bits.min(20.0)).exp2();
            let grade = Grade::for_fpp(p).unwrap();
            assert!(grade.fpp() <= p);
            let f = Ribbon2::build(&keys, grade).unwrap();
            let floor = n as f64 * (1.0 / p).log2() / 8.0;
            let ratio = f.byte_len() as f64 / floor;
            assert!(ratio <= 1.05, "n {n} p {p:e}: {ratio:.4}x the floor");
            assert!(keys.iter().all(|&k| f.contains(k)), "n {n} p {p:e}");
        }
    }
}

#[test]
fn the_false_positive_rate_is_the_grades() {
    let members = keys(30_000, "in");
    for p in [0.05, 0.01, 0.003] {
        let grade = Grade::for_fpp(p).unwrap();
        let filter = Ribbon2::build(&members, grade).unwrap();
        let trials = 400_000;
        let hits = (0..trials)
            .filter(|i| filter.contains_id(&format!("out{i}")))
            .count() as f64;
        let expected = trials as f64 * grade.fpp();
        // Five standard deviations either side.
        let sd = expected.sqrt();
        assert!(
            (hits - expected).abs() < 5.0 * sd,
            "{p}: {hits} vs {expected}"
        );
    }
}

#[test]
fn the_same_keys_give_the_same_bytes() {
    let mut keys = keys(10_000, "d");
    let grade = Grade::for_fpp(0.01).unwrap();
    let one = Ribbon2::build(&keys, grade).unwrap().to_bytes();
    keys.reverse();
    assert_eq!(Ribbon2::build(&keys, grade).unwrap().to_bytes(), one);
}

#[test]
fn damaged_bodies_are_refused_with_the_reason() {
    let filter = Ribbon2::build(&keys(1_000, "x"), Grade::for_fpp(0.01).unwrap()).unwrap();
    let bytes = filter.to_bytes();
    let says = |b: &[u8]| Ribbon2::from_bytes(b).unwrap_err().to_string();
    assert!(says(&bytes[..3]).contains("shorter"));
    assert!(says(&[b"BCR1", &bytes[4..]].concat()).contains("magic"));
    assert!(says(&bytes[..bytes.len() - 1]).contains("expected"));
    assert!(says(&[&bytes[..], &[0]].concat()).contains("expected"));
    let mut k = bytes.clone();
    k[4] = 40;
    assert!(says(&k).contains("k = 40"));
    let mut shards = bytes.clone();
    shards[8] = 0x7f;
    assert!(Ribbon2::from_bytes(&shards).is_err());
}

#[test]
fn the_predicted_size_is_the_built_one_within_a_percent() {
    for n in [0, 1, 40, 129, 3_000, 10_000, 50_000] {
        let keys = keys(n, "p");
        for p in [0.05, 0.01, 0.001, (-20f64).exp2(), 0.5] {
            let grade = Grade::for_fpp(p).unwrap();
            let built = Ribbon2::build(&keys, grade).unwrap().byte_len() as u64;
            let predicted = Ribbon2::predicted_bytes(n as u64, grade);
            assert!(
                built.abs_diff(predicted) <= built / 100 + 2,
                "n {n} p {p}: built {built} predicted {predicted}"
            );
        }
    }
}

#[test]
fn small_shards_are_dense_and_carry_no_slack() {
    assert_eq!(rows_for(0), 0);
    assert_eq!(rows_for(100), 100);
    assert_eq!(rows_for(128), 128);
    assert!(rows_for(129) >= 129);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn no_false_negative_for_any_set(
        ids in proptest::collection::vec(any::<u64>(), 0..3_000),
        p in 1e-6f64..0.5,
    ) {
        let keys: Vec<Key> = ids.iter().map(|i| Key::of(&i.to_string())).collect();
        let filter = Ribbon2::build(&keys, Grade::for_fpp(p).unwrap()).unwrap();
        prop_assert!(filter.fpp() <= p);
        prop_assert!(keys.iter().all(|&k| filter.contains(k)));
        prop_assert_eq!(Ribbon2::from_bytes(&filter.to_bytes()).unwrap(), filter);
    }
}

/// Key sets sorted as a spilled union sorts them (`rotate_left(8)`: the low 56 bits
/// first) and cut into `1 << bits` parts by that order's top bits.
struct Ranked {
    sets: Vec<Vec<Key>>,
    bits: u32,
}

impl crate::bloom::KeyParts for Ranked {
    type Error = std::convert::Infallible;

    fn for_each_part(
        &mut self,
        each: &mut dyn FnMut(&[&[Key]]),
    ) -> Result<(), std::convert::Infallible> {
        let rank = |key: &Key| key.to_u64().rotate_left(8);
        for set in &mut self.sets {
            set.sort_unstable_by_key(rank);
        }
        for part in 0..1u64 << self.bits {
            let in_part = |key: &Key| rank(key).checked_shr(64 - self.bits).unwrap_or(0) == part;
            let slices: Vec<Vec<Key>> = self
                .sets
                .iter()
                .map(|set| set.iter().copied().filter(in_part).collect())
                .collect();
            let slices: Vec<&[Key]> = slices.iter().map(Vec::as_slice).collect();
            each(&slices);
        }
        Ok(())
    }
}

#[test]
fn a_build_part_by_part_is_the_build_of_every_key_at_once_bit_for_bit() {
    // Shards straddle parts; parts of one key, of many shards, and one part; grades
    // with both parts, with part A alone, and with part B of 0 bits.
    let a = keys(30_000, "pa");
    let b = keys(12_000, "pb");
    let mut all: Vec<Key> = a.iter().chain(&b).copied().collect();
    all.sort_unstable();
    for grade in [
        Grade { k: 6, split: 185 },
        Grade { k: 7, split: 0 },
        Grade { k: 0, split: 200 },
        Grade { k: 1, split: 255 },
    ] {
        let whole = Ribbon2::build(&all, grade).unwrap();
        for bits in [0, 3, 12] {
            let mut parts = Ranked {
                sets: vec![a.clone(), b.clone(), a[..500].to_vec(), Vec::new()],
                bits,
            };
            let built = Ribbon2::build_in_parts(&mut parts, grade).unwrap();
            assert_eq!(built.n(), 42_000);
            assert_eq!(
                built.to_bytes(),
                whole.to_bytes(),
                "{grade:?}, {bits} bits of parts"
            );
        }
    }
}

#[test]
fn duplicates_count_once() {
    let a = keys(5_000, "dup");
    let twice: Vec<Key> = a.iter().chain(&a).copied().collect();
    let grade = Grade { k: 7, split: 0 };
    let once = Ribbon2::build(&a, grade).unwrap();
    let built = Ribbon2::build(&twice, grade).unwrap();
    assert_eq!(built.n(), 5_000);
    assert_eq!(built.to_bytes(), once.to_bytes());
}
