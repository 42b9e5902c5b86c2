//! Sizing a filter to its keys: the smallest `m`, grown from the optimal size, whose
//! false-positive probability at the filter's actual fill is within the target.

use super::Filter;
use crate::bloom::hash::Modulus;
use crate::bloom::{build, distinct_count, sizing, FilterError, Key, Params};

impl Filter {
    /// The smallest filter, starting from the optimal size for `keys.len()` IDs at `p`
    /// and growing `m` in steps of 1/32, whose false-positive probability *at its
    /// actual fill* is at most `p`. The optimal size alone lands near `p` on average
    /// and above it about half the time; this guarantees the advertised figure.
    /// Deterministic in the set of keys, whatever their order.
    ///
    /// # Errors
    /// As [`Params::optimal`], or [`FilterError::MOutOfRange`] if no filter below
    /// 2^32 bits reaches `p`.
    pub fn sized_within(keys: &[Key], p: f64) -> Result<Filter, FilterError> {
        let distinct = distinct_count(&[keys]);
        Filter::sized_over(keys.len() as u64, distinct, &[keys], p)
    }

    /// [`Filter::sized_within`] for `n` distinct keys given as several sets, which
    /// may overlap and repeat keys: the bits do not depend on order or repetition,
    /// only the count does, so the caller counts and this builds.
    ///
    /// Only the actual fill decides whether a size passes, so each candidate is built
    /// in full ([`build::set_keys`] makes a build cheap), except one whose fill is all
    /// but certain to fail. `n` sizes the filter; `distinct` is the exact count of distinct keys in `sets`,
    /// which predicts the fill of a size before it is built (a size surely too full is
    /// skipped: [`sizing::surely_too_full`]).
    pub(crate) fn sized_over(
        n: u64,
        distinct: u64,
        sets: &[&[Key]],
        p: f64,
    ) -> Result<Filter, FilterError> {
        let mut params = Params::optimal(n, p)?;
        loop {
            if sizing::surely_too_full(distinct, params, p) {
                params = grown(n, params)?;
                continue;
            }
            let mut words = vec![0u64; (params.m as usize).div_ceil(64)];
            build::set_keys(&mut words, Modulus::new(params.m), params.k, sets);
            let filter = Filter::from_words(params, words);
            if filter.fpp() <= p {
                return Ok(filter);
            }
            params = grown(n, params)?;
        }
    }
}

/// The next size [`Filter::sized_over`] tries: `m` grown by a thirty-second.
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
            assert!(f.m() >= Params::optimal(n as u64, 0.01).unwrap().m);
            assert!(keys.iter().all(|k| f.contains_key(*k)));
        }
    }

    #[test]
    fn sized_within_ignores_key_order() {
        let mut keys: Vec<Key> = (0..500).map(|i| Key::of(&i.to_string())).collect();
        let a = Filter::sized_within(&keys, 0.01).unwrap();
        keys.reverse();
        assert_eq!(a, Filter::sized_within(&keys, 0.01).unwrap());
    }
}
