//! The partitioned Bloom filter: the `m` bits split into `k` ranges of `m/k` bits,
//! one per hash function, so every ID sets exactly one bit in each range.
//!
//! Layout, with `p = floor(m / k)` bits per range and the same sha1-km32 [`Key`]
//! `(h1, h2)` as [`super::Filter`]: hash function `i` (for `i` in `0..k`) sets bit
//!
//! ```text
//! i*p + ((h1 + i*h2) mod p)
//! ```
//!
//! computed in exact (64-bit) arithmetic. Bits `k*p .. m` (fewer than `k` of them,
//! none when `k` divides `m`) are never set. Bit `j` is bit `j % 64` of word `j / 64`,
//! as in [`super::Filter`]. This variant is not part of wire format v1; it lives in
//! the library for clients that keep their own filters and intersect them, since its
//! functions never collide with one another.

use super::hash::Modulus;
use super::{sizing, FilterError, HashScheme, Key, Params};

/// A partitioned Bloom filter of shape `(m, k)` with the sha1-km32 key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionedFilter {
    params: Params,
    hash: HashScheme,
    words: Vec<u64>,
    /// Number of set bits, kept exact on every insert and combine.
    ones: u64,
    /// `m / k`, the size of each range, prepared for division-free reduction.
    part: Modulus,
}

impl PartitionedFilter {
    /// An empty filter of the given shape.
    ///
    /// # Errors
    /// [`FilterError::PartitionTooSmall`] when `m < k`, which leaves a range no bits.
    pub fn new(params: Params) -> Result<PartitionedFilter, FilterError> {
        let part = params.m / params.k;
        if part == 0 {
            return Err(FilterError::PartitionTooSmall {
                m: params.m,
                k: params.k,
            });
        }
        Ok(PartitionedFilter {
            params,
            hash: HashScheme::Sha1Km32,
            words: vec![0; (params.m as usize).div_ceil(64)],
            ones: 0,
            part: Modulus::new(part),
        })
    }

    /// A filter of the given shape holding every key.
    ///
    /// # Errors
    /// As [`PartitionedFilter::new`].
    pub fn from_keys<'a>(
        params: Params,
        keys: impl IntoIterator<Item = &'a Key>,
    ) -> Result<PartitionedFilter, FilterError> {
        let mut filter = PartitionedFilter::new(params)?;
        for key in keys {
            filter.insert_key(*key);
        }
        Ok(filter)
    }

    /// The k bit positions of a key, in order `i = 0..k`: `i*p + ((h1 + i*h2) mod p)`.
    #[inline]
    pub fn positions(&self, key: Key) -> impl Iterator<Item = u32> {
        let p = self.part.m();
        key.positions_mod(self.part, self.params.k)
            .enumerate()
            .map(move |(i, offset)| i as u32 * p + offset)
    }

    /// Adds an ID. Returns `true` if any bit changed (the ID was certainly new).
    #[inline]
    pub fn insert(&mut self, id: &str) -> bool {
        self.insert_key(Key::of(id))
    }

    /// Adds a pre-hashed ID. Returns `true` if any bit changed.
    #[inline]
    pub fn insert_key(&mut self, key: Key) -> bool {
        let mut newly_set = 0;
        let p = self.part.m();
        for (i, offset) in key.positions_mod(self.part, self.params.k).enumerate() {
            let pos = i as u32 * p + offset;
            newly_set += super::bits::set(&mut self.words, pos);
        }
        self.ones += newly_set;
        newly_set != 0
    }

    /// `false` means the ID was never inserted; `true` means it may have been.
    #[inline]
    pub fn contains(&self, id: &str) -> bool {
        self.contains_key(Key::of(id))
    }

    /// [`PartitionedFilter::contains`] for a pre-hashed ID.
    #[inline]
    pub fn contains_key(&self, key: Key) -> bool {
        let p = self.part.m();
        key.positions_mod(self.part, self.params.k)
            .enumerate()
            .all(|(i, offset)| {
                let pos = i as u32 * p + offset;
                super::bits::get(&self.words, pos)
            })
    }

    /// Bitwise OR: afterwards this filter contains everything either contained.
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn union_with(&mut self, other: &PartitionedFilter) -> Result<(), FilterError> {
        self.combine(other, |a, b| a | b)
    }

    /// Bitwise AND: afterwards this filter may contain only what both may contain.
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn intersect_with(&mut self, other: &PartitionedFilter) -> Result<(), FilterError> {
        self.combine(other, |a, b| a & b)
    }

    fn combine(
        &mut self,
        other: &PartitionedFilter,
        op: impl Fn(u64, u64) -> u64,
    ) -> Result<(), FilterError> {
        self.check_shape(other)?;
        self.ones = super::bits::combine(&mut self.words, &other.words, op);
        Ok(())
    }

    fn check_shape(&self, other: &PartitionedFilter) -> Result<(), FilterError> {
        super::bits::same_shape((self.params, self.hash), (other.params, other.hash))
    }

    /// Estimates of `|A|`, `|B|`, `|A ∪ B|` and `|A ∩ B|` from this filter (A) and
    /// `other` (B), without combining them; see [`super::Overlap`].
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn overlap(&self, other: &PartitionedFilter) -> Result<super::Overlap, FilterError> {
        self.check_shape(other)?;
        let union_ones = super::estimate::or_ones(&self.words, &other.words);
        let estimate = |ones| sizing::estimated_cardinality_partitioned(ones, self.params);
        Ok(super::Overlap::from_estimates(
            estimate(self.ones),
            estimate(other.ones),
            estimate(union_ones),
        ))
    }

    /// The filter's shape: size and probes.
    pub fn params(&self) -> Params {
        self.params
    }

    /// The hash scheme that maps an ID to its probes.
    pub fn hash(&self) -> HashScheme {
        self.hash
    }

    /// Bits per range, `floor(m / k)`.
    pub fn partition_bits(&self) -> u32 {
        self.part.m()
    }

    /// Number of set bits.
    pub fn ones(&self) -> u64 {
        self.ones
    }

    /// Estimated false-positive probability at the current fill: the product over
    /// ranges of each range's fill, approximated by `(X / (k p))^k`. Like the fill
    /// formula of [`super::Filter`] it treats the probes as independent, which they are
    /// not in small ranges: an absent ID whose `(h1, h2) mod p` equal an inserted one's
    /// finds every bit set, about `n / p^2` more (negligible at the sizes this type is
    /// meant for, thousands of IDs and more; see `probes` for the v1 filter's account).
    pub fn fpp(&self) -> f64 {
        let used = u64::from(self.part.m()) * u64::from(self.params.k);
        (self.ones as f64 / used as f64).powi(self.params.k as i32)
    }

    /// Estimate of how many distinct IDs were inserted; see
    /// `sizing::estimated_cardinality_partitioned`.
    pub fn estimated_count(&self) -> f64 {
        sizing::estimated_cardinality_partitioned(self.ones, self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_function_sets_one_bit_in_its_own_range() {
        let params = Params { m: 1000, k: 7 };
        let mut f = PartitionedFilter::new(params).unwrap();
        let key = Key::of("hello");
        f.insert_key(key);
        let p: u32 = 1000 / 7;
        let positions: Vec<u32> = f.positions(key).collect();
        for (i, pos) in positions.iter().enumerate() {
            let i = i as u64;
            let expected =
                i * u64::from(p) + (u64::from(key.h1) + i * u64::from(key.h2)) % u64::from(p);
            assert_eq!(u64::from(*pos), expected);
            assert!((i * u64::from(p)..(i + 1) * u64::from(p)).contains(&expected));
        }
        assert_eq!(f.ones(), 7);
        assert!(f.contains("hello"));
    }

    #[test]
    fn fewer_bits_than_functions_is_refused() {
        let err = PartitionedFilter::new(Params { m: 8, k: 9 }).unwrap_err();
        assert_eq!(err, FilterError::PartitionTooSmall { m: 8, k: 9 });
    }

    #[test]
    fn different_shapes_do_not_combine() {
        let mut a = PartitionedFilter::new(Params { m: 700, k: 7 }).unwrap();
        let b = PartitionedFilter::new(Params { m: 700, k: 5 }).unwrap();
        assert!(matches!(
            a.intersect_with(&b),
            Err(FilterError::Incompatible { .. })
        ));
        assert!(matches!(
            a.overlap(&b),
            Err(FilterError::Incompatible { .. })
        ));
    }

    #[test]
    fn the_tail_past_k_ranges_is_never_set() {
        let params = Params { m: 103, k: 10 };
        let mut f = PartitionedFilter::new(params).unwrap();
        for i in 0..1000 {
            f.insert(&i.to_string());
        }
        assert_eq!(f.ones(), 100, "saturates exactly the k*p = 100 used bits");
        assert_eq!(f.words[1] >> (100 - 64), 0);
    }
}
