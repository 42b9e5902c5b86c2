//! Sizing a filter to its keys: the smallest `m`, grown from the rule's size for the
//! count, whose false-positive probability at the filter's actual fill is within the
//! target.

use super::Filter;
use crate::bloom::hash::Modulus;
use crate::bloom::union::{Held, KeyParts, PartsError};
use crate::bloom::{build, distinct_count, sizing, FilterError, Key, Params, Sizing};

impl Filter {
    /// The smallest filter, starting from [`Params::sized`] for `keys.len()` IDs at `p`
    /// and growing by [`Params::grown_for`], whose false-positive probability *at its
    /// actual fill* ([`Filter::fpp`]) is at most `p`. The rule's size meets `p` on
    /// average over the keys; this guarantees it for these keys. Deterministic in the
    /// set of keys, whatever their order.
    ///
    /// # Errors
    /// As [`Params::sized`], or [`FilterError::MOutOfRange`] if no filter below 2^32
    /// bits reaches `p`.
    pub fn sized_within(keys: &[Key], p: f64) -> Result<Filter, FilterError> {
        Filter::sized_by(keys, p, Sizing::Probes)
    }

    /// [`Filter::sized_within`] by either rule: [`Sizing::Classic`] rebuilds, bit for
    /// bit, what the classical rule built from these keys.
    ///
    /// # Errors
    /// As [`Filter::sized_within`] (or [`Params::optimal`] for the classical rule).
    pub fn sized_by(keys: &[Key], p: f64, sizing: Sizing) -> Result<Filter, FilterError> {
        let distinct = distinct_count(&[keys]);
        Filter::sized_over(keys.len() as u64, distinct, &mut Held(&[keys]), p, sizing)
            .map_err(PartsError::into_filter)
    }

    /// [`Filter::sized_within`] for `n` distinct keys handed over part by part as key
    /// sets, which may overlap and repeat keys: the bits do not depend on order or
    /// repetition, only the count does, so the caller counts and this builds.
    ///
    /// Only the actual fill decides whether a size passes, so each candidate is built
    /// in full ([`build::Setter`] makes a build cheap), except one whose fill is all
    /// but certain to fail. `n` sizes the filter; `distinct` is the exact count of
    /// distinct keys in `parts`,
    /// which predicts the fill of a size before it is built (a size surely too full is
    /// skipped: [`sizing::surely_too_full`]).
    pub(crate) fn sized_over<P: KeyParts + ?Sized>(
        n: u64,
        distinct: u64,
        parts: &mut P,
        p: f64,
        sizing: Sizing,
    ) -> Result<Filter, PartsError<P::Error>> {
        let mut params = match sizing {
            Sizing::Probes => Params::sized(n, p)?,
            Sizing::Classic => Params::optimal(n, p)?,
        };
        let next = |params: Params| match sizing {
            Sizing::Probes => params.grown_for(n),
            Sizing::Classic => grown(n, params),
        };
        loop {
            // The classical start is the optimum, which large unions' fill surely
            // passes; the rule's start already meets `p` on average.
            if sizing == Sizing::Classic && sizing::surely_too_full(distinct, params, p) {
                params = next(params).map_err(PartsError::Filter)?;
                continue;
            }
            let mut words = vec![0u64; (params.m as usize).div_ceil(64)];
            let mut setter = build::Setter::new(&mut words, Modulus::new(params.m), params.k);
            parts
                .for_each_part(&mut |part| setter.add(part))
                .map_err(PartsError::Read)?;
            setter.finish();
            let filter = Filter::from_words(params, words).sized_by_rule(sizing);
            if filter.fpp() <= p {
                return Ok(filter);
            }
            params = next(params).map_err(PartsError::Filter)?;
        }
    }
}

/// The next size the classical rule tries: `m` grown by a thirty-second.
fn grown(n: u64, params: Params) -> Result<Params, FilterError> {
    let m = u64::from(params.m);
    let m = m + (m / 32).max(1);
    if m >= 1 << 32 {
        return Err(FilterError::MOutOfRange(m));
    }
    Ok(Params::for_count(n, m as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_within_never_advertises_more_than_the_target() {
        for n in [0usize, 1, 7, 100, 3000, 20_000] {
            let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("id-{i}"))).collect();
            let f = Filter::sized_within(&keys, 0.01).unwrap();
            assert!(f.fpp() <= 0.01, "n {n}: fpp {}", f.fpp());
            assert!(f.m() >= Params::sized(n as u64, 0.01).unwrap().m);
            assert!(keys.iter().all(|k| f.contains_key(*k)));
        }
    }

    #[test]
    fn every_quiet_hour_is_sized_so_its_exact_rate_is_within_the_target() {
        for n in 1..=60 {
            let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("quiet-{n}-{i}"))).collect();
            let f = Filter::sized_within(&keys, 0.01).unwrap();
            assert!(
                f.m() <= crate::bloom::probes::EXACT_BITS,
                "fpp is the exact rate"
            );
            assert!(f.fpp() <= 0.01, "n {n}: {:?} fpp {}", f.params(), f.fpp());
            assert_eq!(f.sizing(), Sizing::Probes);
        }
    }

    #[test]
    fn the_classical_rule_rebuilds_its_filters_bit_for_bit_with_their_fill_figure() {
        // The rule as it ran: the optimum, grown by a 32nd until (X/m)^k <= p.
        let classical = |keys: &[Key], p: f64| {
            let n = keys.len() as u64;
            let mut params = Params::optimal(n, p).unwrap();
            loop {
                let filter = Filter::from_keys(params, keys);
                if sizing::fpp_at_fill(filter.ones(), params) <= p {
                    return filter;
                }
                let m = params.m + (params.m / 32).max(1);
                params = Params::for_count(n, m);
            }
        };
        for n in [0usize, 1, 2, 5, 50, 3000] {
            let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("old-{i}"))).collect();
            let old = classical(&keys, 0.01);
            let again = Filter::sized_by(&keys, 0.01, Sizing::Classic).unwrap();
            assert_eq!(again.to_bytes(), old.to_bytes(), "n {n}");
            assert_eq!(again.params(), old.params(), "n {n}");
            assert_eq!(again.fpp(), sizing::fpp_at_fill(old.ones(), old.params()));
        }
        // Issue 52's hour of one ID, as served: 10 bits, k = 7, fpp 0.0078125.
        let one = Filter::sized_by(&[Key::of("1")], 0.01, Sizing::Classic).unwrap();
        assert_eq!((one.m(), one.k()), (10, 7));
    }

    #[test]
    fn sized_within_ignores_key_order() {
        let mut keys: Vec<Key> = (0..500).map(|i| Key::of(&i.to_string())).collect();
        let a = Filter::sized_within(&keys, 0.01).unwrap();
        keys.reverse();
        assert_eq!(a, Filter::sized_within(&keys, 0.01).unwrap());
    }
}
