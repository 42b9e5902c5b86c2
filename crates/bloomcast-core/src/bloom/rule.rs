//! The sizing rule of served filters: the smallest prime `m`, with its best `k`, whose
//! expected false-positive rate for the probe sequence ([`probes::expected_fpp`]) is
//! within the target.
//!
//! A prime `m` gives every nonzero step `h2 mod m` `k` distinct probes, so only `h2 mod
//! m = 0` probes one bit; `m > 2k^2` keeps the expected rate's overlap counts exact. For
//! few IDs the smallest such filter has a small `k` (one ID at 0.01 is 29 bits probed
//! three times: its own AP, not the fill, is what an absent ID mostly hits); from a few
//! hundred IDs on it is within a few percent of the classical optimum. Growth ([`Params::grown_for`])
//! takes the next prime past a 32nd more bits, with the best `k` for it.

use super::probes::{self, Shares};
use super::{FilterError, Params, MAX_K, MIN_M};

/// Which rule sized a filter, and with it how its `fpp` is reckoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Sizing {
    /// This rule ([`Params::sized`], grown by [`Params::grown_for`] until the rate at the
    /// actual fill is within the target); `fpp` is the probe sequence's rate.
    #[default]
    Probes,
    /// The rule of filters served before it: [`Params::optimal`], grown by a 32nd with
    /// [`Params::for_count`] until `(X/m)^k` is within the target; `fpp` is `(X/m)^k`.
    /// A server keeps it for the hours (and days) it served under it, whose bytes are
    /// immutable: they are rebuilt, and described, exactly as they were.
    Classic,
}

/// The largest prime below 2^32: no filter the wire format allows is larger.
const LARGEST: u32 = 4_294_967_291;

impl Params {
    /// The shape served for `n` distinct IDs at false-positive probability `p`: of every
    /// prime `m > max(7, 2k^2)` and `k <= 64` whose [`probes::expected_fpp`] for `n` IDs
    /// is at most `p`, the smallest `m`, and for it the `k` with the lowest expected
    /// rate. `n = 0` is sized as `n = 1`.
    ///
    /// # Errors
    /// [`FilterError::BadProbability`] unless `0 < p < 1`; [`FilterError::MOutOfRange`]
    /// when no filter below 2^32 bits reaches `p`.
    ///
    /// ```
    /// use bloomcast_core::bloom::Params;
    /// assert_eq!(Params::sized(1, 0.01).unwrap(), Params { m: 29, k: 3 });
    /// assert_eq!(Params::sized(3000, 0.01).unwrap(), Params { m: 28_837, k: 7 });
    /// ```
    pub fn sized(n: u64, p: f64) -> Result<Params, FilterError> {
        if !(p > 0.0 && p < 1.0) {
            return Err(FilterError::BadProbability(p));
        }
        let n = n.max(1);
        let mut best: Option<(Params, f64)> = None;
        for k in 1..=MAX_K {
            // The smallest m grows with k past its best; a few more k make sure of it.
            if best.is_some_and(|(b, _)| k > b.k + 4) {
                break;
            }
            let overlaps = probes::overlap_counts(k);
            let expected = |m: u32| expected_prime(m, k, n, &overlaps);
            let Some(m) = smallest_within(floor(k), |m| expected(m) <= p) else {
                continue;
            };
            let rate = expected(m);
            if best.is_none_or(|(b, r)| m < b.m || (m == b.m && rate < r)) {
                best = Some((Params { m, k }, rate));
            }
        }
        best.map(|(params, _)| params)
            .ok_or(FilterError::MOutOfRange(1 << 32))
    }

    /// The shape a filter of `n` IDs grows to from `self` when its rate at its actual
    /// fill is past the target: the next prime from `m + max(1, m/32)`, with the `k`
    /// whose expected rate for `n` IDs is lowest there.
    ///
    /// # Errors
    /// [`FilterError::MOutOfRange`] past the largest prime below 2^32.
    pub fn grown_for(self, n: u64) -> Result<Params, FilterError> {
        let m = u64::from(self.m);
        let at_least = m + (m / 32).max(1);
        let m = u32::try_from(at_least)
            .ok()
            .and_then(next_prime)
            .ok_or(FilterError::MOutOfRange(at_least))?;
        Ok(Params::best_k(m, n.max(1)))
    }

    /// `m` with the `k` (up to `sqrt(m/2)`, so that `m > 2k^2`) whose expected rate for
    /// `n` IDs is lowest; `m` is taken as a prime.
    fn best_k(m: u32, n: u64) -> Params {
        let mut best = (Params { m, k: 1 }, f64::INFINITY);
        for k in (1..=MAX_K).take_while(|&k| k == 1 || floor(k) <= m) {
            let rate = expected_prime(m, k, n, &probes::overlap_counts(k));
            if rate < best.1 {
                best = (Params { m, k }, rate);
            }
        }
        best.0
    }
}

/// The smallest `m` the rule allows for `k`: above `2k^2` and at least [`MIN_M`].
fn floor(k: u32) -> u32 {
    (2 * k * k + 1).max(MIN_M)
}

/// [`probes::expected_fpp`] for a prime `m` (no divisor below `k` to count), decreasing
/// in `m` for every `m`, so that the smallest prime within a target can be searched.
fn expected_prime(m: u32, k: u32, n: u64, overlaps: &[u64]) -> f64 {
    let params = Params { m, k };
    let shares = Shares::prime(params);
    probes::expected_with(params, n, &shares, overlaps)
}

/// The smallest prime `m >= from` for which `within(m)` holds, `within` holding from
/// some `m` on (checked at every integer, then the next prime taken).
fn smallest_within(from: u32, within: impl Fn(u32) -> bool) -> Option<u32> {
    let (mut lo, mut hi) = (u64::from(from), u64::from(from));
    while !within(hi.min(u64::from(LARGEST)) as u32) {
        if hi >= u64::from(LARGEST) {
            return None;
        }
        lo = hi + 1;
        hi *= 2;
    }
    let mut hi = hi.min(u64::from(LARGEST));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if within(mid as u32) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    next_prime(hi as u32)
}

/// The smallest prime `>= m`, if one is below 2^32.
pub(crate) fn next_prime(m: u32) -> Option<u32> {
    (m.max(2)..=LARGEST).find(|&c| is_prime(c))
}

/// Trial division by 2, 3 and `6i ± 1`: at most 21,846 divisions below 2^32.
pub(crate) fn is_prime(m: u32) -> bool {
    if m < 4 {
        return m >= 2;
    }
    if m % 2 == 0 || m % 3 == 0 {
        return false;
    }
    let m = u64::from(m);
    let mut d = 5u64;
    while d * d <= m {
        if m % d == 0 || m % (d + 2) == 0 {
            return false;
        }
        d += 6;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within_wire_ranges(params: Params) -> bool {
        Params::new(params.m.into(), params.k.into()).is_ok()
    }

    #[test]
    fn every_count_from_1_to_3000_gets_a_prime_size_within_the_target() {
        for n in 1..=3000 {
            let params = Params::sized(n, 0.01).unwrap();
            assert!(within_wire_ranges(params), "n {n}: {params:?}");
            assert!(
                is_prime(params.m) && params.m > 2 * params.k * params.k,
                "n {n}: {params:?}"
            );
            let rate = probes::expected_fpp(params, n);
            assert!(rate <= 0.01, "n {n}: {params:?} expects {rate}");
        }
    }

    #[test]
    fn no_smaller_prime_meets_the_target_at_any_k() {
        for p in [0.1, 0.01, 0.001] {
            for n in (1..=60).chain([100, 300, 1000]) {
                let params = Params::sized(n, p).unwrap();
                let smaller = (MIN_M..params.m).rev().find(|&m| is_prime(m)).unwrap_or(0);
                for k in (1..=MAX_K).filter(|&k| floor(k) <= smaller) {
                    let rate = expected_prime(smaller, k, n, &probes::overlap_counts(k));
                    assert!(rate > p, "p {p} n {n}: {smaller} bits, k {k} expect {rate}");
                }
            }
        }
    }

    #[test]
    fn the_sizes_of_the_published_table_are_the_rules() {
        let table = [
            (0, 0.01, 29, 3),
            (1, 0.01, 29, 3),
            (2, 0.01, 41, 3),
            (3, 0.01, 53, 4),
            (5, 0.01, 73, 4),
            (10, 0.01, 127, 4),
            (20, 0.01, 227, 6),
            (50, 0.01, 521, 6),
            (100, 0.01, 997, 6),
            (300, 0.01, 2927, 6),
            (3000, 0.01, 28_837, 7),
            (1, 0.1, 11, 2),
            (100, 0.001, 1627, 9),
        ];
        for (n, p, m, k) in table {
            assert_eq!(Params::sized(n, p).unwrap(), Params { m, k }, "n {n} p {p}");
        }
    }

    #[test]
    fn a_target_below_the_one_bit_probes_floor_is_refused() {
        // An ID with h2 mod m = 0 probes one bit, set with chance k/m for one ID in:
        // about k/m^2, which no m below 2^32 brings under 1e-20.
        assert!(matches!(
            Params::sized(1, 1e-20),
            Err(FilterError::MOutOfRange(_))
        ));
        for p in [0.0, 1.0, f64::NAN] {
            assert!(matches!(
                Params::sized(1, p),
                Err(FilterError::BadProbability(_))
            ));
        }
        // A million IDs at 1e-6: reachable, with m past the classical optimum.
        let params = Params::sized(1_000_000, 1e-6).unwrap();
        assert!(params.m > Params::optimal(1_000_000, 1e-6).unwrap().m);
        assert!(probes::expected_fpp(params, 1_000_000) <= 1e-6);
    }

    #[test]
    fn growth_takes_the_next_prime_past_a_32nd_with_its_best_k() {
        let grown = Params { m: 29, k: 3 }.grown_for(1).unwrap();
        assert_eq!(grown.m, 31);
        let grown = Params { m: 997, k: 6 }.grown_for(100).unwrap();
        assert_eq!(grown.m, 1031, "997 + 31 = 1028, and 1031 the next prime");
        assert!(
            probes::expected_fpp(grown, 100) < probes::expected_fpp(Params { m: 997, k: 6 }, 100)
        );
        assert!(matches!(
            Params { m: LARGEST, k: 7 }.grown_for(1),
            Err(FilterError::MOutOfRange(_))
        ));
    }

    #[test]
    fn is_prime_agrees_with_a_sieve_and_knows_the_largest_u32_prime() {
        let limit = 20_000usize;
        let mut composite = vec![false; limit];
        for i in 2..limit {
            if !composite[i] {
                for j in (i * i..limit).step_by(i) {
                    composite[j] = true;
                }
            }
            assert_eq!(is_prime(i as u32), !composite[i], "{i}");
        }
        assert!(!is_prime(0) && !is_prime(1));
        assert!(is_prime(LARGEST) && !is_prime(u32::MAX) && !is_prime(LARGEST - 2));
        assert_eq!(next_prime(LARGEST + 1), None);
        assert_eq!(next_prime(28_830), Some(28_837));
    }
}
