//! A filter's shape and the classical formulas that describe it.
//!
//! Pure functions of numbers: the shape and its wire ranges, the classical optimal size
//! (what a client building its own filter starts from, and the rule servers used before
//! the probe-sequence rule of `rule`), the fill formula `(X/m)^k` that rule advertised,
//! and the Swamidass–Baldi cardinality estimate.

use super::FilterError;
use std::f64::consts::LN_2;

/// The smallest filter the wire format allows, in bits.
pub const MIN_M: u32 = 8;
/// The largest k the wire format allows.
pub const MAX_K: u32 = 64;

/// A filter's shape: `m` bits probed at `k` positions per ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Params {
    /// The size in bits.
    pub m: u32,
    /// The probes per ID.
    pub k: u32,
}

impl Params {
    /// Checks the wire format's ranges: `1 <= k <= 64`, `8 <= m < 2^32`.
    pub fn new(m: u64, k: u64) -> Result<Params, FilterError> {
        if !(u64::from(MIN_M)..(1u64 << 32)).contains(&m) {
            return Err(FilterError::MOutOfRange(m));
        }
        if !(1..=u64::from(MAX_K)).contains(&k) {
            return Err(FilterError::KOutOfRange(k));
        }
        Ok(Params {
            m: m as u32,
            k: k as u32,
        })
    }

    /// The classical optimal shape for `n` expected IDs at false-positive probability
    /// `p`: `m = ceil(-n ln p / (ln 2)^2)`, `k = round((m / n) ln 2)`. It assumes `k`
    /// independent probes, which the sha1-km32 sequence is not in small filters (see
    /// `probes`); served filters are sized by [`Params::sized`].
    ///
    /// `n = 0` is sized as `n = 1`, so an empty hour still gets a well-formed filter;
    /// `m` is at least [`MIN_M`] and `k` is clamped to `1..=64`.
    ///
    /// # Errors
    /// [`FilterError::BadProbability`] unless `0 < p < 1`; [`FilterError::MOutOfRange`]
    /// when the filter would need 2^32 bits or more.
    pub fn optimal(n: u64, p: f64) -> Result<Params, FilterError> {
        if !(p > 0.0 && p < 1.0) {
            return Err(FilterError::BadProbability(p));
        }
        let n = n.max(1) as f64;
        let m = (-n * p.ln() / (LN_2 * LN_2)).ceil();
        if m >= 4_294_967_296.0 {
            return Err(FilterError::MOutOfRange(m as u64));
        }
        let m = (m as u32).max(MIN_M);
        Ok(Params {
            m,
            k: optimal_k(n, m),
        })
    }

    /// The best `k` for `n` IDs in exactly `m` bits (used when `m` is chosen otherwise).
    pub fn for_count(n: u64, m: u32) -> Params {
        Params {
            m: m.max(MIN_M),
            k: optimal_k(n.max(1) as f64, m.max(MIN_M)),
        }
    }

    /// Bytes of the filter body: `ceil(m / 8)`.
    pub fn byte_len(self) -> usize {
        (self.m as usize).div_ceil(8)
    }

    /// The expected false-positive probability of the probe sequence once `n` distinct
    /// IDs are in ([`super::probes::expected_fpp`]); at large sizes, the classical
    /// `(1 - e^(-kn/m))^k` and a little more.
    pub fn expected_fpp(self, n: u64) -> f64 {
        super::probes::expected_fpp(self, n)
    }
}

fn optimal_k(n: f64, m: u32) -> u32 {
    let k = (f64::from(m) / n * LN_2).round();
    k.clamp(1.0, f64::from(MAX_K)) as u32
}

/// Standard deviations by which a size's expected fill must pass the fill its target
/// allows before [`surely_too_full`] calls it: the normal tail beyond 8 sigma is below
/// 10^-15.
const SURE_SIGMAS: f64 = 8.0;

/// Whether `n` distinct keys in a filter of `params` are all but certain to set more
/// bits than a false-positive probability of `p` allows (`(X/m)^k > p`), so building
/// that size only to measure its fill would be wasted work.
///
/// The count of set bits `X` after `kn` hashes into `m` bits has mean `m(1 - q)` and
/// variance about `m q (1 - (1 + λ) q)`, with `λ = kn/m` and `q = e^(-λ)` (the
/// occupancy problem); its distribution is close to normal at these sizes. A size is
/// "surely too full" when the mean exceeds the allowed count by more than
/// `SURE_SIGMAS` (8) standard deviations. Large unions at the optimal size are exactly
/// this case (at 8.45M keys and p = 0.01 the mean is 9 sigma over), so skipping the
/// build changes which sizes are tried, never which one is chosen, except with a
/// probability below 10^-15; the size that is built is still checked by its real fill.
pub fn surely_too_full(n: u64, params: Params, p: f64) -> bool {
    let (m, k) = (f64::from(params.m), f64::from(params.k));
    let lambda = k * n as f64 / m;
    let q = (-lambda).exp();
    let mean = m * (1.0 - q);
    let sd = (m * q * (1.0 - (1.0 + lambda) * q)).max(0.0).sqrt();
    let allowed = m * p.powf(1.0 / k);
    mean - allowed > SURE_SIGMAS * sd.max(1.0)
}

/// The fill formula `(X/m)^k` for `X` set bits: the probability that `k` independent
/// positions are all set, which is what the classical rule advertised as `fpp`. The
/// sha1-km32 probe sequence's rate is higher, much higher in small filters (see
/// `probes`).
pub fn fpp_at_fill(ones: u64, params: Params) -> f64 {
    (ones as f64 / f64::from(params.m)).powi(params.k as i32)
}

/// Swamidass–Baldi estimate of the number of distinct IDs: `-(m/k) ln(1 - X/m)`.
/// Infinite when every bit is set.
pub fn estimated_cardinality(ones: u64, params: Params) -> f64 {
    let (m, k) = (f64::from(params.m), f64::from(params.k));
    -(m / k) * (1.0 - ones as f64 / m).ln()
}

/// The partitioned filter's estimate: each ID sets exactly one bit in each of the k
/// ranges of `p = floor(m/k)` bits, so each range alone gives `-p ln(1 - X_i/p)`;
/// pooling the ranges' fills, `n ≈ -p ln(1 - X/(k p))` for `X` set bits in all.
/// Infinite when every used bit is set.
#[cfg(feature = "partitioned")]
pub(crate) fn estimated_cardinality_partitioned(ones: u64, params: Params) -> f64 {
    let p = f64::from(params.m / params.k);
    let used = p * f64::from(params.k);
    -p * (1.0 - ones as f64 / used).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimal_reproduces_the_published_examples() {
        assert_eq!(
            Params::optimal(3000, 0.01).unwrap(),
            Params { m: 28_756, k: 7 }
        );
        assert_eq!(Params::optimal(100, 0.01).unwrap(), Params { m: 959, k: 7 });
        assert_eq!(
            Params::optimal(95, 0.005).unwrap(),
            Params { m: 1048, k: 8 }
        );
    }

    #[test]
    fn optimal_handles_zero_and_tiny_counts() {
        let zero = Params::optimal(0, 0.01).unwrap();
        assert_eq!(zero, Params::optimal(1, 0.01).unwrap());
        assert!(zero.m >= MIN_M && (1..=MAX_K).contains(&zero.k));
        let loose = Params::optimal(0, 0.9).unwrap();
        // m is floored at 8 bits, and k is then optimal for one ID in 8 bits.
        assert_eq!(loose, Params { m: MIN_M, k: 6 });
    }

    #[test]
    fn optimal_rejects_impossible_probabilities_and_sizes() {
        for p in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert!(matches!(
                Params::optimal(10, p),
                Err(FilterError::BadProbability(_))
            ));
        }
        assert!(matches!(
            Params::optimal(1 << 40, 0.01),
            Err(FilterError::MOutOfRange(_))
        ));
    }

    #[test]
    fn new_enforces_wire_ranges() {
        assert!(Params::new(8, 1).is_ok());
        assert!(Params::new(u64::from(u32::MAX), 64).is_ok());
        assert!(matches!(
            Params::new(7, 1),
            Err(FilterError::MOutOfRange(7))
        ));
        assert!(matches!(
            Params::new(1 << 32, 1),
            Err(FilterError::MOutOfRange(_))
        ));
        assert!(matches!(
            Params::new(64, 0),
            Err(FilterError::KOutOfRange(0))
        ));
        assert!(matches!(
            Params::new(64, 65),
            Err(FilterError::KOutOfRange(65))
        ));
    }

    #[test]
    fn estimates_behave_at_the_extremes() {
        let p = Params { m: 1000, k: 7 };
        assert_eq!(fpp_at_fill(0, p), 0.0);
        assert_eq!(fpp_at_fill(1000, p), 1.0);
        assert_eq!(estimated_cardinality(0, p), 0.0);
        assert!(estimated_cardinality(1000, p).is_infinite());
        // Half the bits set in an optimally sized filter is about n = m ln2 / k IDs.
        let est = estimated_cardinality(500, p);
        assert!((est - 99.0).abs() < 1.0, "{est}");
    }

    #[test]
    fn byte_len_rounds_up() {
        assert_eq!(Params { m: 8, k: 1 }.byte_len(), 1);
        assert_eq!(Params { m: 9, k: 1 }.byte_len(), 2);
        assert_eq!(Params { m: 28_756, k: 7 }.byte_len(), 3595);
    }

    #[test]
    fn a_million_keys_at_a_tenth_skip_the_optimal_size_unbuilt() {
        // The case of tests/union_props.rs's skipping_sizes_that_surely_fail_chooses_what_building_them_would.
        let n = 1_000_000;
        assert!(surely_too_full(n, Params::optimal(n, 0.1).unwrap(), 0.1));
    }

    #[test]
    fn only_sizes_far_past_their_fill_are_surely_too_full() {
        // Small hours: whether the optimal size passes is up to the keys.
        let small = Params::optimal(3000, 0.01).unwrap();
        assert!(!surely_too_full(3000, small, 0.01));
        // A 9.6M-key union (8.45M distinct) at p = 0.01: the optimal size's mean fill
        // is 9 sigma past what 0.01 allows; the next size is far inside it.
        let n = 8_450_000;
        let big = Params::optimal(n, 0.01).unwrap();
        assert!(big.expected_fpp(n) > 0.01);
        assert!(surely_too_full(n, big, 0.01));
        let next = Params::for_count(n, big.m + big.m / 32);
        assert!(!surely_too_full(n, next, 0.01));
        // At p = 0.001 the optimal size expects to pass: never skipped.
        assert!(!surely_too_full(
            n,
            Params::optimal(n, 0.001).unwrap(),
            0.001
        ));
    }
}
