//! Filters of the same shape combined bit by bit: union, intersection, and the
//! estimated overlap of two filters without combining them.

use super::Filter;
use crate::bloom::{bits, estimate, sizing, FilterError, Overlap};

impl Filter {
    /// Bitwise OR: afterwards this filter contains everything either contained.
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn union_with(&mut self, other: &Filter) -> Result<(), FilterError> {
        self.combine(other, |a, b| a | b)
    }

    /// Bitwise AND: afterwards this filter may contain only what both may contain.
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn intersect_with(&mut self, other: &Filter) -> Result<(), FilterError> {
        self.combine(other, |a, b| a & b)
    }

    /// Estimates of `|A|`, `|B|`, `|A ∪ B|` and `|A ∩ B|` from this filter (A) and
    /// `other` (B), without combining them; see [`Overlap`].
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn overlap(&self, other: &Filter) -> Result<Overlap, FilterError> {
        self.check_shape(other)?;
        let union_ones = estimate::or_ones(&self.words, &other.words);
        let estimate = |ones| sizing::estimated_cardinality(ones, self.params);
        Ok(Overlap::from_estimates(
            estimate(self.ones),
            estimate(other.ones),
            estimate(union_ones),
        ))
    }

    fn check_shape(&self, other: &Filter) -> Result<(), FilterError> {
        bits::same_shape((self.params, self.hash), (other.params, other.hash))
    }

    fn combine(&mut self, other: &Filter, op: impl Fn(u64, u64) -> u64) -> Result<(), FilterError> {
        self.check_shape(other)?;
        self.ones = bits::combine(&mut self.words, &other.words, op);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{Key, Params};

    fn params(m: u32, k: u32) -> Params {
        Params { m, k }
    }

    #[test]
    fn union_and_intersection_need_equal_shapes() {
        let mut a = Filter::new(params(100, 3));
        let b = Filter::new(params(101, 3));
        let c = Filter::new(params(100, 4));
        assert!(matches!(
            a.union_with(&b),
            Err(FilterError::Incompatible { .. })
        ));
        assert!(matches!(
            a.intersect_with(&c),
            Err(FilterError::Incompatible { .. })
        ));
    }

    #[test]
    fn intersection_keeps_common_ids() {
        let mut a = Filter::with_capacity(10, 0.0001).unwrap();
        let mut b = a.clone();
        a.insert("both");
        a.insert("only-a");
        b.insert("both");
        b.insert("only-b");
        a.intersect_with(&b).unwrap();
        assert!(a.contains("both"));
        assert_eq!(
            a.ones(),
            Filter::from_keys(a.params(), &[Key::of("both")]).ones()
        );
    }
}
