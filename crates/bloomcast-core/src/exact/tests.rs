use super::*;
use crate::bloom::Key;
use proptest::prelude::*;

/// `n` distinct keys from a counter: the SHA-1 of `prefix:i`.
fn keys(prefix: &str, n: usize) -> Vec<Key> {
    (0..n).map(|i| Key::of(&format!("{prefix}:{i}"))).collect()
}

/// Pseudo-random keys (sha1-km32 keys are uniform), fast enough for big universes.
fn random_keys(seed: u64, n: usize) -> Vec<Key> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            Key::from_u64(state)
        })
        .collect()
}

/// Builds over `universe` with every `stride`-th key changed and checks every answer.
fn check_exact(universe: &[Key], changed: &[Key]) -> Exact {
    let exact = Exact::build(universe.to_vec(), changed).unwrap();
    let set: std::collections::HashSet<Key> = changed.iter().copied().collect();
    for key in universe {
        assert_eq!(exact.changed(*key), set.contains(key), "wrong answer");
    }
    let back = Exact::from_bytes(&exact.to_bytes()).unwrap();
    assert_eq!(back, exact);
    exact
}

fn every(keys: &[Key], fraction: f64) -> Vec<Key> {
    let r = (keys.len() as f64 * fraction).round() as usize;
    keys[..r].to_vec()
}

#[test]
fn small_universes_get_every_answer_right() {
    for n in [0, 1, 2, 3, 10, 100, 127, 128, 129, 500, 1000] {
        let universe = keys(&format!("u{n}"), n);
        for fraction in [0.0, 0.01, 0.1, 0.3, 0.5, 0.9, 1.0] {
            check_exact(&universe, &every(&universe, fraction));
        }
    }
}

#[test]
fn universes_of_thousands_to_hundreds_of_thousands_at_every_fraction() {
    for n in [1_000, 10_000, 200_000] {
        let universe = random_keys(n as u64, n);
        for fraction in [0.0001, 0.001, 0.01, 0.05, 0.2, 0.5] {
            check_exact(&universe, &every(&universe, fraction));
        }
    }
}

#[test]
fn two_million_ids_at_every_fraction() {
    let n = 2_000_000;
    let universe = random_keys(7, n);
    for fraction in [0.0001, 0.001, 0.01, 0.1, 0.5] {
        check_exact(&universe, &every(&universe, fraction));
    }
}

#[test]
fn changed_keys_missing_from_the_universe_are_added_and_duplicates_are_harmless() {
    let universe = keys("dup", 300);
    let mut changed = keys("dup", 20);
    changed.extend(keys("outside", 5));
    changed.extend(keys("dup", 20));
    let mut doubled = universe.clone();
    doubled.extend(universe.iter().copied());
    let exact = Exact::build(doubled, &changed).unwrap();
    assert_eq!(exact.universe(), 305);
    assert_eq!(exact.changed_count(), 25);
    for key in &changed {
        assert!(exact.changed(*key));
    }
    for key in &universe[20..] {
        assert!(!exact.changed(*key));
    }
}

#[test]
fn the_same_sets_give_the_same_bytes_in_any_order() {
    let universe = keys("order", 5_000);
    let changed = every(&universe, 0.07);
    let one = Exact::build(universe.clone(), &changed).unwrap().to_bytes();
    let mut shuffled = universe.clone();
    shuffled.reverse();
    let mut changed_back = changed.clone();
    changed_back.reverse();
    let two = Exact::build(shuffled, &changed_back).unwrap().to_bytes();
    assert_eq!(one, two);
}

#[test]
fn a_borrowed_universe_builds_the_same_bytes_sorted_or_not() {
    let universe = keys("over", 5_000);
    let changed = every(&universe, 0.3);
    let built = Exact::build(universe.clone(), &changed).unwrap().to_bytes();
    let mut sorted = universe.clone();
    sorted.sort_unstable();
    assert_eq!(
        Exact::build_over(&sorted, &changed).unwrap().to_bytes(),
        built
    );
    // Unsorted, with repeats, or missing a changed key: copied and completed first.
    let mut repeated = universe.clone();
    repeated.extend_from_slice(&universe[..100]);
    assert_eq!(
        Exact::build_over(&repeated, &changed).unwrap().to_bytes(),
        built
    );
    let without: Vec<Key> = (sorted.iter())
        .filter(|k| **k != changed[0])
        .copied()
        .collect();
    assert_eq!(
        Exact::build_over(&without, &changed).unwrap().to_bytes(),
        built
    );
}

#[test]
fn bodies_stay_within_fifteen_percent_of_the_floor_at_any_share_changed() {
    for n in [10_000u64, 100_000] {
        let universe = random_keys(n * 3, n as usize);
        for fraction in [
            0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.83, 0.97,
        ] {
            let changed = every(&universe, fraction);
            let exact = Exact::build(universe.clone(), &changed).unwrap();
            let floor = floor_bits(n, changed.len() as u64) / 8.0;
            let body = (exact.byte_len() - exact.header_len()) as f64;
            assert!(
                body <= 1.15 * floor,
                "n {n} r/N {fraction}: {body} bytes against a floor of {floor:.1}"
            );
        }
    }
}

#[test]
fn a_body_is_complemented_exactly_where_more_than_half_the_universe_changed() {
    let universe = random_keys(11, 20_000);
    for (fraction, complemented) in [(0.3, false), (0.5, false), (0.5001, true), (1.0, true)] {
        let changed = every(&universe, fraction);
        let exact = check_exact(&universe, &changed);
        assert_eq!(exact.complemented(), complemented, "{fraction}");
        assert_eq!(exact.changed_count() as usize, changed.len());
        let version = if complemented { 2 } else { 1 };
        assert_eq!(exact.to_bytes()[4], version, "{fraction}");
    }
    // Every ID changed: the levels hold nothing and the body is its header.
    let all = Exact::build(universe.clone(), &universe).unwrap();
    assert_eq!(all.byte_len(), all.header_len());
}

#[test]
fn an_uncomplemented_build_is_version_one_and_as_exact_but_larger() {
    let universe = random_keys(12, 20_000);
    let changed = every(&universe, 0.83);
    let plain = Exact::build_over_uncomplemented(&universe, &changed).unwrap();
    assert!(!plain.complemented());
    assert_eq!(plain.to_bytes()[4], 1);
    for (i, key) in universe.iter().enumerate() {
        assert_eq!(plain.changed(*key), i < changed.len());
    }
    let complemented = Exact::build_over(&universe, &changed).unwrap();
    assert!(complemented.byte_len() * 4 < plain.byte_len() * 3);
    // At most half changed, both are the same bytes.
    let half = every(&universe, 0.5);
    assert_eq!(
        Exact::build_over_uncomplemented(&universe, &half)
            .unwrap()
            .to_bytes(),
        Exact::build_over(&universe, &half).unwrap().to_bytes()
    );
}

#[test]
fn floor_bits_matches_small_binomials() {
    assert_eq!(floor_bits(10, 0), 0.0);
    assert!((floor_bits(10, 3) - 120f64.log2()).abs() < 1e-9);
    assert!((floor_bits(1000, 500) - 994.2).abs() < 0.5);
    // Stirling above 256 agrees with the exact sum at the edge.
    let exact: f64 = (2..=300u64).map(|i| (i as f64).ln()).sum();
    assert!((ln_factorial(300) - exact).abs() < 1e-6);
}

#[test]
fn malformed_bodies_are_refused_with_the_reason() {
    let exact = Exact::build(keys("w", 1000), &keys("w", 50)).unwrap();
    let good = exact.to_bytes();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..5].to_vec(), "shorter than the header"),
        ([b"XXXX", &good[4..]].concat(), "magic"),
        (
            {
                let mut b = good.clone();
                b[4] = 3;
                b
            },
            "version 3",
        ),
        (
            {
                let mut b = good.clone();
                b[5] = 40;
                b
            },
            "k = 40",
        ),
        (
            [&good[..7], &[0x80, 0x00], &good[8..]].concat(),
            "not minimally encoded",
        ),
        (
            [&good[..7], &[0xff, 0xff, 0xff, 0xff, 0x7f]].concat(),
            "2^32 or more",
        ),
        (good[..8].to_vec(), "the header ends inside"),
        (good[..good.len() - 1].to_vec(), "expected"),
    ];
    for (bytes, reason) in cases {
        let err = Exact::from_bytes(&bytes).unwrap_err().to_string();
        assert!(err.contains(reason), "{err} should say {reason}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_member_of_random_universes_is_answered_exactly(
        seed in any::<u64>(),
        n in 0usize..3000,
        per_mille in 0u32..=1000,
    ) {
        let universe = random_keys(seed, n);
        let changed = every(&universe, f64::from(per_mille) / 1000.0);
        check_exact(&universe, &changed);
    }
}

#[test]
fn the_memory_a_build_reserves_fits_the_default_budget_up_to_five_million_ids() {
    // The builds' part of the default cache_bytes (512 MiB): a third of what the read
    // path's 1/32 leaves.
    let budget = (512u64 << 20) * 31 / 32 / 3;
    for per_mille in [1, 10, 100, 200, 300, 500, 1000] {
        let bytes = Exact::build_bytes(5_000_000, 5_000 * per_mille);
        assert!(bytes <= budget, "{per_mille}: {bytes} > {budget}");
    }
    // N = 10M at 10% fits too; at 50% it needs a larger budget.
    assert!(Exact::build_bytes(10_000_000, 1_000_000) <= budget);
    assert!(Exact::build_bytes(10_000_000, 5_000_000) > budget);
}

#[test]
fn a_build_of_up_to_r_changed_reserves_at_least_any_such_build() {
    for n in [0u64, 1, 10, 1_000, 100_000, 11_600_000] {
        for up_to in [
            0,
            n / 3,
            n / 2,
            n / 2 + 1,
            2 * n / 3,
            83 * n / 100,
            n,
            2 * n,
        ] {
            let bound = Exact::build_bytes_up_to(n, up_to);
            for r in (0..=up_to.min(n)).step_by((n as usize / 97).max(1)) {
                assert!(
                    Exact::build_bytes(n, r) <= bound,
                    "n {n}, r {r} of at most {up_to}"
                );
            }
            assert!(Exact::build_bytes(n, up_to) <= bound);
        }
    }
}

/// The slack of the systems ([`super::build::rows_for`]): for systems of n equations with
/// 128-wide bands, how often one seed succeeds at `m = n * (1 + rate) + rows` with one
/// answer bit (the retrieval level) and with 8 fingerprint bits (a filter part), then
/// at `rows_for(n)` itself, where the build's retry policy counts on one seed in two.
/// A measurement of minutes, compiled only when asked for:
///
/// ```text
/// RUSTFLAGS="--cfg bloomcast_margins" cargo test --release -p bloomcast-core margin -- --nocapture
/// ```
#[test]
#[cfg(bloomcast_margins)]
fn one_seed_succeeds_half_the_time_at_the_systems_slack_margin() {
    use super::system::{salt, value_mask, Band, Row};
    let trials_1k: u64 = std::env::var("TRIALS_AT_1000").map_or(2000, |s| s.parse().unwrap());
    let success = |n: u64, m: u32, trials: u64, state: &mut u64| {
        let mut ok = [0u64; 2];
        for t in 0..trials {
            let keys: Vec<u64> = (0..n)
                .map(|_| {
                    *state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
                    *state
                })
                .collect();
            for (i, bits) in [1u32, 8].into_iter().enumerate() {
                let mut band = Band::<u32>::new(m);
                let salted = salt(3, t as u32);
                let good = keys.iter().all(|&key| {
                    let row = Row::of(key, salted, m);
                    band.add(&row, (row.fingerprint & value_mask(bits)) as u32)
                });
                ok[i] += u64::from(good);
            }
        }
        ok.map(|k| k as f64 / trials as f64)
    };
    println!("| n | rate | rows | m/n | success, 1 bit | success, 8 bits | trials |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut state = 1u64;
    for n in [200u64, 1_000, 10_000, 100_000, 1_000_000] {
        let trials = (trials_1k * 1_000 / n).clamp(20, 4000);
        let sweep = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05].map(|rate| {
            let rows = if rate == 0.0 { 8.0 } else { 16.0 };
            let m = (n as f64 * (1.0 + rate) + rows).ceil() as u32;
            (format!("{rate}"), format!("{rows}"), m)
        });
        let chosen = (
            "rows_for".to_string(),
            "8".to_string(),
            super::build::rows_for(n),
        );
        for (rate, rows, m) in sweep.into_iter().chain([chosen]) {
            let [one, eight] = success(n, m, trials, &mut state);
            println!(
                "| {n} | {rate} | {rows} | {:.4} | {one:.3} | {eight:.3} | {trials} |",
                f64::from(m) / n as f64,
            );
            if rate == "rows_for" {
                assert!(
                    one.min(eight) >= 0.5,
                    "at rows_for({n}) one seed succeeds in {one:.3} / {eight:.3} of systems"
                );
            }
        }
    }
}
