//! The Bloom filter itself: a bit array of `m` bits probed at `k` positions per ID.
//!
//! Bits are kept in little-endian `u64` words, so bit `j` is bit `j % 64` of word
//! `j / 64`; written out little-endian, that is bit `j % 8` of byte `j / 8`, exactly
//! the wire layout. Words make union, intersection and popcount word-wide.

use super::hash::Modulus;
use super::{build, sizing, FilterError, HashScheme, Key, Params};
use std::borrow::Cow;

/// A Bloom filter with the "sha1-km32" scheme. It also counts its set bits, so fill
/// and the false-positive estimate cost nothing to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    params: Params,
    hash: HashScheme,
    words: Vec<u64>,
    /// Number of set bits, kept exact on every insert and combine.
    ones: u64,
    /// `params.m` prepared for division-free reduction of every key's hashes.
    modulus: Modulus,
}

impl Filter {
    /// An empty filter of the given shape.
    pub fn new(params: Params) -> Filter {
        Filter {
            params,
            hash: HashScheme::Sha1Km32,
            words: vec![0; (params.m as usize).div_ceil(64)],
            ones: 0,
            modulus: Modulus::new(params.m),
        }
    }

    /// An empty filter sized for `n` IDs at false-positive probability `p`.
    ///
    /// # Errors
    /// As [`Params::optimal`].
    pub fn with_capacity(n: u64, p: f64) -> Result<Filter, FilterError> {
        Params::optimal(n, p).map(Filter::new)
    }

    /// A filter of the given shape holding every key.
    pub fn from_keys<'a>(params: Params, keys: impl IntoIterator<Item = &'a Key>) -> Filter {
        let mut filter = Filter::new(params);
        for key in keys {
            filter.insert_key(*key);
        }
        filter
    }

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
        let distinct = super::distinct_count(&[keys]);
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

    /// A filter over bits set elsewhere, counting them once.
    fn from_words(params: Params, words: Vec<u64>) -> Filter {
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        Filter {
            params,
            hash: HashScheme::Sha1Km32,
            words,
            ones,
            modulus: Modulus::new(params.m),
        }
    }

    /// Assembles a filter from wire parts, validating everything `decode` must.
    pub(crate) fn from_le_bytes(
        params: Params,
        hash: HashScheme,
        bytes: &[u8],
    ) -> Result<Filter, FilterError> {
        let expected = params.byte_len();
        if bytes.len() != expected {
            return Err(FilterError::WrongLength {
                m: params.m,
                expected,
                actual: bytes.len(),
            });
        }
        let mut words = vec![0u64; (params.m as usize).div_ceil(64)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(buf);
        }
        let tail = params.m % 64;
        if tail != 0 {
            let last = words[words.len() - 1];
            if last >> tail != 0 {
                return Err(FilterError::BitsPastM { m: params.m });
            }
        }
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        Ok(Filter {
            params,
            hash,
            words,
            ones,
            modulus: Modulus::new(params.m),
        })
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
        for pos in key.positions_mod(self.modulus, self.params.k) {
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

    /// [`Filter::contains`] for a pre-hashed ID.
    #[inline]
    pub fn contains_key(&self, key: Key) -> bool {
        key.positions_mod(self.modulus, self.params.k)
            .all(|pos| super::bits::get(&self.words, pos))
    }

    /// The IDs that are definitely absent: they were certainly never inserted.
    pub fn definitely_absent<'a, I>(&self, ids: I) -> Vec<&'a str>
    where
        I: IntoIterator<Item = &'a str>,
    {
        ids.into_iter().filter(|id| !self.contains(id)).collect()
    }

    /// The IDs that may be present: every inserted one among them, plus false positives.
    pub fn maybe_present<'a, I>(&self, ids: I) -> Vec<&'a str>
    where
        I: IntoIterator<Item = &'a str>,
    {
        ids.into_iter().filter(|id| self.contains(id)).collect()
    }

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
    /// `other` (B), without combining them; see [`super::Overlap`].
    ///
    /// # Errors
    /// [`FilterError::Incompatible`] unless m, k and hash are equal.
    pub fn overlap(&self, other: &Filter) -> Result<super::Overlap, FilterError> {
        self.check_shape(other)?;
        let union_ones = super::estimate::or_ones(&self.words, &other.words);
        let estimate = |ones| sizing::estimated_cardinality(ones, self.params);
        Ok(super::Overlap::from_estimates(
            estimate(self.ones),
            estimate(other.ones),
            estimate(union_ones),
        ))
    }

    fn check_shape(&self, other: &Filter) -> Result<(), FilterError> {
        super::bits::same_shape((self.params, self.hash), (other.params, other.hash))
    }

    fn combine(&mut self, other: &Filter, op: impl Fn(u64, u64) -> u64) -> Result<(), FilterError> {
        self.check_shape(other)?;
        self.ones = super::bits::combine(&mut self.words, &other.words, op);
        Ok(())
    }

    pub fn params(&self) -> Params {
        self.params
    }

    pub fn m(&self) -> u32 {
        self.params.m
    }

    pub fn k(&self) -> u32 {
        self.params.k
    }

    pub fn hash(&self) -> HashScheme {
        self.hash
    }

    /// Number of set bits.
    pub fn ones(&self) -> u64 {
        self.ones
    }

    /// Fraction of bits set, in `[0, 1]`.
    pub fn fill_ratio(&self) -> f64 {
        self.ones as f64 / f64::from(self.params.m)
    }

    /// Estimated false-positive probability at the current fill, `(X/m)^k`.
    pub fn fpp(&self) -> f64 {
        sizing::fpp_at_fill(self.ones, self.params)
    }

    /// Swamidass–Baldi estimate of how many distinct IDs were inserted.
    pub fn estimated_count(&self) -> f64 {
        sizing::estimated_cardinality(self.ones, self.params)
    }

    /// [`Filter::to_bytes`] without a copy where the words' memory is already in wire
    /// order (little-endian targets): what is hashed and hex-coded for each new version
    /// of an open union is then read in place, not copied to fresh pages first.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        #[cfg(target_endian = "little")]
        {
            use zerocopy::IntoBytes;
            Cow::Borrowed(&self.words.as_bytes()[..self.params.byte_len()])
        }
        #[cfg(not(target_endian = "little"))]
        {
            Cow::Owned(self.to_bytes())
        }
    }

    /// The filter body in wire order: `ceil(m/8)` bytes, bit `j` in byte `j/8`
    /// under mask `1 << (j % 8)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.params.byte_len());
        for word in &self.words {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.truncate(self.params.byte_len());
        out
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

    fn params(m: u32, k: u32) -> Params {
        Params { m, k }
    }

    #[test]
    fn the_bytes_read_in_place_are_the_wire_bytes_at_any_m() {
        for m in [1, 7, 8, 63, 64, 65, 1000, 4099] {
            let mut f = Filter::new(params(m, 3));
            for i in 0..m / 4 {
                f.insert(&i.to_string());
            }
            assert_eq!(f.bytes(), f.to_bytes(), "m = {m}");
            assert_eq!(f.bytes().len(), f.params.byte_len(), "m = {m}");
        }
    }

    #[test]
    fn an_inserted_id_is_contained_and_sets_its_exact_bits() {
        let mut f = Filter::new(params(100, 3));
        assert!(f.insert("hello"));
        assert!(f.contains("hello"));
        let bytes = f.to_bytes();
        for pos in Key::of("hello").positions(100, 3) {
            assert_ne!(bytes[(pos / 8) as usize] & (1 << (pos % 8)), 0, "bit {pos}");
        }
        assert_eq!(
            u64::from(bytes.iter().map(|b| b.count_ones()).sum::<u32>()),
            f.ones()
        );
    }

    #[test]
    fn reinserting_changes_nothing() {
        let mut f = Filter::new(params(1000, 7));
        assert!(f.insert("a"));
        let snapshot = f.clone();
        assert!(!f.insert("a"));
        assert_eq!(f, snapshot);
    }

    #[test]
    fn an_empty_filter_contains_nothing() {
        let f = Filter::new(params(64, 4));
        assert!(!f.contains(""));
        assert!(!f.contains("anything"));
        assert_eq!(f.fpp(), 0.0);
        assert_eq!(f.estimated_count(), 0.0);
    }

    #[test]
    fn absent_and_present_split_a_batch() {
        let mut f = Filter::with_capacity(100, 0.001).unwrap();
        f.insert("in-1");
        f.insert("in-2");
        let ids = ["in-1", "out-1", "in-2", "out-2"];
        let present = f.maybe_present(ids);
        assert!(present.contains(&"in-1") && present.contains(&"in-2"));
        let absent = f.definitely_absent(ids);
        assert!(!absent.contains(&"in-1") && !absent.contains(&"in-2"));
        assert_eq!(present.len() + absent.len(), ids.len());
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
