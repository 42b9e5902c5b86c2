//! The false-positive rate of the sha1-km32 probe sequence, which is not `(X/m)^k`.
//!
//! An ID never inserted probes `(h1 + i*h2) mod m` for `i < k`: with `r = h2 mod m`, an
//! arithmetic progression (AP) of `min(k, m / gcd(r, m))` distinct bits, not `k`
//! independent ones. So `(X/m)^k` understates the rate, the more so the smaller the
//! filter:
//! - a residue `r` of order `d = m / gcd(r, m)` below `k` probes only `d` bits: `r = 0`
//!   (one bit) for every `m`, and `φ(d)` residues more for each divisor `d < k` of `m`;
//! - an inserted ID's own AP is all set, so an absent ID whose residues trace the same AP
//!   (forwards or backwards) is a false positive at any fill, and an AP that shares a run
//!   or a comb of several bits with an inserted one needs only the rest set.
//!
//! Here: the expected rate of a shape for `n` IDs ([`expected_fpp`], what the sizing rule
//! of `rule` minimises `m` under), and the rate of a built filter, computed exactly up to
//! 4,096 bits (`EXACT_BITS`; `exact`) and estimated from its fill above ([`estimate`]).
//! docs/PROTOCOL.md sections 3 and 8 state both for client authors.

use super::{sizing, Filter, Params};

mod exact;

pub(crate) use exact::exact;

/// The exact false-positive rate of `filter` for an ID never inserted, at any size:
/// what [`Filter::fpp`] gives up to 4,096 bits. Its cost grows as
/// `m^2 log2(k) / 64` word operations (a second or so at a million bits).
pub fn exact_rate(filter: &Filter) -> f64 {
    exact(filter.words(), filter.params())
}

/// Filters up to this many bits have their rate computed exactly, over every pair of
/// residues `(h1 mod m, h2 mod m)` (a few milliseconds at this size); larger ones have it
/// estimated from their fill, where the structure the estimate models is a few percent
/// of the rate or less (the tests beside this module measure both).
pub(crate) const EXACT_BITS: u32 = 4096;

/// The share of IDs whose `h2 mod m` is 0, which probe one bit `k` times:
/// `ceil(2^32 / m) / 2^32` (exactly, for `h2` uniform over `u32`).
pub(crate) fn zero_step_share(m: u32) -> f64 {
    (1u64 << 32).div_ceil(u64::from(m)) as f64 / 4_294_967_296.0
}

/// `a[j]` for `j` in `0..=k`: how many k-term APs meet the k positions of a query's AP in
/// exactly `j >= 2` of them, in a filter of prime `m > 2k^2` (`a[0] = a[1] = 0`).
///
/// With the query's positions numbered `0..k`, an AP of step ratio `t = P/Q` (lowest
/// terms, `Q >= 1`, `P != 0`) meets them at the values `x0 + P*i` of the terms in one
/// class of its indices modulo `Q` (`L` terms), where they fall in one class of `0..k`
/// modulo `|P|` (`c` positions). Sliding `L` over `c` meets `j` of them at 2 shifts for
/// `j < min(L, c)` and at `|L - c| + 1` for `j = min(L, c)`. The counts do not depend
/// on `m`, since two such fractions are equal mod a prime above `2k^2` only if equal.
pub(crate) fn overlap_counts(k: u32) -> Vec<u64> {
    let k = u64::from(k);
    let mut a = vec![0u64; k as usize + 1];
    // The classes of 0..k modulo x: (size, how many classes have it).
    let classes = |x: u64| {
        [(k / x + 1, k % x), (k / x, x - k % x)]
            .into_iter()
            .filter(|&(_, count)| count > 0)
    };
    for p in 1..k {
        for q in 1..k {
            if gcd(p, q) != 1 {
                continue;
            }
            for (l, l_classes) in classes(q) {
                for (c, c_classes) in classes(p) {
                    let both = l.min(c);
                    for j in 2..=both {
                        let shifts = if j < both { 2 } else { l.abs_diff(c) + 1 };
                        // Twice: the step ratio P/Q and its negative.
                        a[j as usize] += 2 * l_classes * c_classes * shifts;
                    }
                }
            }
        }
    }
    a
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// How an absent ID's probes fall in a filter of `m` bits: the share of IDs probing one
/// bit (`h2 mod m = 0`), the shares probing `d` bits for each divisor `1 < d < k` of `m`
/// (`φ(d) / m` each), and the rest, which probe `k` distinct bits.
#[derive(Debug, Clone)]
pub(crate) struct Shares {
    zero: f64,
    short: Vec<(u32, f64)>,
    full: f64,
}

impl Shares {
    pub(crate) fn of(params: Params) -> Shares {
        let zero = zero_step_share(params.m);
        let short: Vec<(u32, f64)> = (2..params.k.min(params.m))
            .filter(|d| params.m % d == 0)
            .map(|d| (d, f64::from(totient(d)) / f64::from(params.m)))
            .collect();
        let full = (1.0 - zero - short.iter().map(|(_, w)| w).sum::<f64>()).max(0.0);
        Shares { zero, short, full }
    }

    /// [`Shares::of`] a prime `m >= k`, which no divisor below `k` divides.
    pub(crate) fn prime(params: Params) -> Shares {
        let zero = zero_step_share(params.m);
        Shares {
            zero,
            short: Vec::new(),
            full: 1.0 - zero,
        }
    }

    /// Distinct bits an ID sets, on average, over `m`: the chance it sets a given bit.
    fn coverage(&self, params: Params) -> f64 {
        let bits = self.zero
            + self
                .short
                .iter()
                .map(|&(d, w)| f64::from(d) * w)
                .sum::<f64>()
            + self.full * f64::from(params.k.min(params.m));
        bits / f64::from(params.m)
    }
}

fn totient(d: u32) -> u32 {
    (1..=d)
        .filter(|&i| gcd(u64::from(i), u64::from(d)) == 1)
        .count() as u32
}

/// The rate at fill `f` with `n` IDs in: `z f + Σ w_d f^d + w (f^k + n w / (m (m-1))
/// Σ_{j >= min(3, k)} a_j f^(k-j))`, with `z`, `w_d`, `w` the [`Shares`] and `a` the
/// [`overlap_counts`]. The last sum counts the APs that share three or more bits (two,
/// when `k = 2`) with an inserted one, each needing only the rest set; `f^k` already
/// counts pairs as independent positions do.
fn rate(f: f64, n: f64, params: Params, shares: &Shares, overlaps: &[u64]) -> f64 {
    let (m, k) = (f64::from(params.m), params.k);
    let short: f64 = shares
        .short
        .iter()
        .map(|&(d, w)| w * f.powi(d as i32))
        .sum();
    let mut full = f.powi(k as i32);
    if k >= 2 && params.m >= 2 {
        let shared: f64 = (k.min(3)..=k)
            .map(|j| overlaps[j as usize] as f64 * f.powi((k - j) as i32))
            .sum();
        full += n * shares.full / (m * (m - 1.0)) * shared;
    }
    (shares.zero * f + short + shares.full * full).min(1.0)
}

/// The expected false-positive rate of a filter of `params` holding `n` distinct IDs,
/// over the IDs and an absent one: the rate formula of docs/PROTOCOL.md section 8 at the
/// expected fill `f = 1 - (1 - c)^n`, `c` the chance an ID sets a given bit (section 3's
/// `E(m, k, n)`). For prime `m > 2k^2` (every shape the sizing rule picks) it is never
/// below the exact expectation, and within 10% of it from a hundred IDs on (the tests
/// beside this module); for other shapes it is an estimate.
pub fn expected_fpp(params: Params, n: u64) -> f64 {
    let shares = Shares::of(params);
    expected_with(params, n, &shares, &overlap_counts(params.k))
}

/// [`expected_fpp`] with the shares and overlap counts at hand (the sizing rule tries
/// many `m` for one `k`).
pub(crate) fn expected_with(params: Params, n: u64, shares: &Shares, overlaps: &[u64]) -> f64 {
    let c = shares.coverage(params);
    let f = -((n as f64) * (-c).ln_1p()).exp_m1();
    rate(f, n as f64, params, shares, overlaps)
}

/// The estimated false-positive rate of a filter of `params` with `ones` bits set: the
/// rate formula of docs/PROTOCOL.md section 8 at its fill `X/m`, with the IDs in it
/// estimated from the fill (the Swamidass–Baldi estimate, [`Filter::estimated_count`]); 1 when every bit is set.
pub fn estimate(ones: u64, params: Params) -> f64 {
    let f = ones as f64 / f64::from(params.m);
    if f >= 1.0 {
        return 1.0;
    }
    let n = sizing::estimated_cardinality(ones, params);
    rate(f, n, params, &Shares::of(params), &overlap_counts(params.k))
}

#[cfg(test)]
mod tests;
