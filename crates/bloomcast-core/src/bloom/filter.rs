//! The Bloom filter itself: a bit array of `m` bits probed at `k` positions per ID.
//!
//! Bits are kept in little-endian `u64` words, so bit `j` is bit `j % 64` of word
//! `j / 64`; written out little-endian, that is bit `j % 8` of byte `j / 8`, exactly
//! the wire layout. Words make union, intersection and popcount word-wide.
//!
//! Here: the filter's shape, adding and testing IDs, and what it says about its fill.
//! Beside it: `sized` (the smallest filter that keeps its advertised false-positive
//! probability), `combine` (union, intersection and overlap of equal shapes) and
//! `bytes` (the body in wire order, out and in).

use super::hash::Modulus;
use super::{probes, sizing, FilterError, HashScheme, Key, Params, Sizing};

mod bytes;
mod combine;
mod sized;

/// A Bloom filter with the "sha1-km32" scheme. It also counts its set bits, so fill
/// costs nothing to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    params: Params,
    hash: HashScheme,
    words: Vec<u64>,
    /// Number of set bits, kept exact on every insert and combine.
    ones: u64,
    /// `params.m` prepared for division-free reduction of every key's hashes.
    modulus: Modulus,
    /// The rule that sized it, which says how [`Filter::fpp`] is reckoned: a filter
    /// served under the classical rule keeps the figure it was served with.
    sizing: Sizing,
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
            sizing: Sizing::Probes,
        }
    }

    /// An empty filter sized for `n` IDs at false-positive probability `p`
    /// ([`Params::sized`]).
    ///
    /// # Errors
    /// As [`Params::sized`].
    pub fn with_capacity(n: u64, p: f64) -> Result<Filter, FilterError> {
        Params::sized(n, p).map(Filter::new)
    }

    /// A filter of the given shape holding every key: their bits set at once (by region
    /// when the filter outgrows the cache, `build`), then counted.
    pub fn from_keys<'a>(params: Params, keys: impl IntoIterator<Item = &'a Key>) -> Filter {
        let mut words = vec![0u64; (params.m as usize).div_ceil(64)];
        let mut setter = super::build::Setter::new(&mut words, Modulus::new(params.m), params.k);
        setter.add_keys(keys);
        setter.finish();
        Filter::from_words(params, words)
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
            sizing: Sizing::Probes,
        }
    }

    /// This filter, with its [`Filter::fpp`] reckoned as `sizing` says: a server gives
    /// a filter it sized by the classical rule [`Sizing::Classic`], so that it is served
    /// as it always was.
    pub fn sized_by_rule(mut self, sizing: Sizing) -> Filter {
        self.sizing = sizing;
        self
    }

    /// The rule its [`Filter::fpp`] is reckoned by ([`Sizing::Probes`] unless told).
    pub fn sizing(&self) -> Sizing {
        self.sizing
    }

    /// The bits, `j` in word `j / 64`.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
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

    /// The filter's shape: size and probes.
    pub fn params(&self) -> Params {
        self.params
    }

    /// The size in bits.
    pub fn m(&self) -> u32 {
        self.params.m
    }

    /// The probes per ID.
    pub fn k(&self) -> u32 {
        self.params.k
    }

    /// The hash scheme that maps an ID to its probes.
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

    /// The false-positive probability of an ID never inserted, for the sha1-km32 probe
    /// sequence (docs/PROTOCOL.md section 8): exact up to 4,096 bits,
    /// estimated from the fill above ([`probes::estimate`]). Under
    /// [`Sizing::Classic`], the figure that rule served: `(X/m)^k`.
    pub fn fpp(&self) -> f64 {
        match self.sizing {
            Sizing::Classic => sizing::fpp_at_fill(self.ones, self.params),
            Sizing::Probes if self.params.m <= probes::EXACT_BITS => {
                probes::exact(&self.words, self.params)
            }
            Sizing::Probes => probes::estimate(self.ones, self.params),
        }
    }

    /// Swamidass–Baldi estimate of how many distinct IDs were inserted.
    pub fn estimated_count(&self) -> f64 {
        sizing::estimated_cardinality(self.ones, self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(m: u32, k: u32) -> Params {
        Params { m, k }
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
}
