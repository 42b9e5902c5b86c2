//! Set sizes from filters alone: `|A|`, `|B|`, `|A ∪ B|` and `|A ∩ B|` from two
//! filters of the same shape, without the keys.
//!
//! Each cardinality is the Swamidass–Baldi estimate of a fill (for the partitioned
//! variant, its per-range equivalent). The union is read from the fill of `A OR B`,
//! which is exactly the filter of `A ∪ B`; the intersection is then
//! `|A| + |B| - |A ∪ B|` (Swamidass & Baldi 2007; Papapetrou, Siberski and Nejdl
//! 2010). The AND of the two filters is *not* used: bits set by different IDs of A
//! and of B collide in it, so its fill overestimates the intersection.

/// Estimated sizes of two sets and of their union and intersection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    /// Estimated `|A|`.
    pub a: f64,
    /// Estimated `|B|`.
    pub b: f64,
    /// Estimated `|A ∪ B|`, from the fill of `A OR B`.
    pub union: f64,
    /// Estimated `|A ∩ B|`: `|A| + |B| - |A ∪ B|`, clamped to `0 ..= min(|A|, |B|)`
    /// since noise in the three fills can push the difference just outside.
    /// NaN when the union's filter is saturated (every bit set): nothing can be said.
    pub intersection: f64,
}

impl Overlap {
    /// Combines three cardinality estimates by inclusion–exclusion.
    pub fn from_estimates(a: f64, b: f64, union: f64) -> Overlap {
        let intersection = if union.is_finite() {
            (a + b - union).clamp(0.0, a.min(b))
        } else {
            f64::NAN
        };
        Overlap {
            a,
            b,
            union,
            intersection,
        }
    }

    /// Estimated Jaccard similarity `|A ∩ B| / |A ∪ B|` (0 for two empty sets).
    pub fn jaccard(&self) -> f64 {
        if self.union > 0.0 {
            self.intersection / self.union
        } else {
            0.0
        }
    }
}

/// Set bits of `a OR b`, counted without building it.
pub(crate) fn or_ones(a: &[u64], b: &[u64]) -> u64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| u64::from((x | y).count_ones()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusion_exclusion_is_clamped_to_what_is_possible() {
        assert_eq!(Overlap::from_estimates(10.0, 20.0, 25.0).intersection, 5.0);
        assert_eq!(Overlap::from_estimates(10.0, 20.0, 31.0).intersection, 0.0);
        assert_eq!(Overlap::from_estimates(10.0, 20.0, 19.0).intersection, 10.0);
        assert!(Overlap::from_estimates(10.0, f64::INFINITY, f64::INFINITY)
            .intersection
            .is_nan());
    }

    #[test]
    fn or_ones_counts_the_union_of_bits() {
        assert_eq!(or_ones(&[0b1100, u64::MAX], &[0b0110, 0]), 3 + 64);
    }
}
