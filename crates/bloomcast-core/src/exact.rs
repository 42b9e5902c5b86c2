//! Exact hours: for every ID of a known universe, whether it changed in an hour, with
//! neither false negatives nor false positives, in close to the information-theoretic
//! floor of `log2(C(N, r))` bits for `r` changed of `N`.
//!
//! Two levels, as in CRLite's Clubcard: a filter of the changed keys lets through every
//! changed key and a few unchanged ones (its false positives over the universe, which
//! the builder knows); a retrieval level then stores one answer bit for each key the
//! filter lets through. Every level is a linear system over GF(2) in ribbon form
//! (`system.rs`). The filter is split in two parts of `k + 1` and `k` fingerprint bits,
//! chosen per key by a selector hash, so the bits per changed key can be fractional.
//! Where more than half the universe changed, the levels hold the unchanged keys instead
//! and every answer is negated (a version 2 body): the floor is the same either way
//! (`C(N, r) = C(N, N - r)`), and the levels are near it only for the smaller side.
//! Everything a decoder needs is in docs/PROTOCOL.md ("Exact hours").

mod build;
pub(crate) mod system;
pub(crate) mod wire;

use crate::bloom::{mix64, Key};
use system::{salt, value_mask, Layout, Row};

/// Salt tags of the three systems and of the selector.
const TAG_A: u32 = 1;
const TAG_B: u32 = 2;
const TAG_RETRIEVAL: u32 = 3;
const TAG_SELECT: u32 = 4;

/// Selector values: a key is in part A when `selector(key) < split`.
pub(crate) const SELECTOR_RANGE: u32 = 256;
/// Fingerprint bits of part B at most (part A has one more).
pub const MAX_K: u32 = 31;

/// A built (or decoded) exact body: immutable, queried by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exact {
    k: u32,
    split: u32,
    universe: u32,
    changed: u32,
    /// Whether the levels hold the unchanged keys, every answer negated (version 2).
    complemented: bool,
    seeds: [u32; 3],
    a: Layout,
    b: Layout,
    retrieval: Layout,
    /// The solutions, bit-contiguous (A, B, retrieval), little-endian words, with two
    /// zero words past the end so every 128-bit window reads whole.
    words: Vec<u64>,
}

impl Exact {
    /// IDs of the universe it answers for (changed ones included).
    pub fn universe(&self) -> u32 {
        self.universe
    }
    /// IDs that changed.
    pub fn changed_count(&self) -> u32 {
        self.changed
    }
    /// Fingerprint bits of part B (part A has `k + 1`).
    pub fn k(&self) -> u32 {
        self.k
    }
    /// Keys whose selector is below this are in part A (of 256).
    pub fn split(&self) -> u32 {
        self.split
    }
    /// Rows of the three systems: part A, part B, retrieval.
    pub fn rows(&self) -> [u32; 3] {
        [self.a.m, self.b.m, self.retrieval.m]
    }
    /// The seeds the three systems were built with.
    pub fn seeds(&self) -> [u32; 3] {
        self.seeds
    }
    /// Whether the levels hold the unchanged keys and every answer is negated: a
    /// version 2 body, built where more than half the universe changed.
    pub fn complemented(&self) -> bool {
        self.complemented
    }

    /// Whether the key changed. Exact for every key of the universe the body was built
    /// over; arbitrary for any other key (in a complemented body, "changed" for all but
    /// a few).
    #[inline]
    pub fn changed(&self, key: Key) -> bool {
        self.held(key.to_u64()) != self.complemented
    }

    /// Whether the levels answer 1 for the key: it is one of the keys they hold.
    #[inline]
    fn held(&self, key: u64) -> bool {
        if !self.passes_filter(key) {
            return false;
        }
        let row = Row::of(key, salt(TAG_RETRIEVAL, self.seeds[2]), self.retrieval.m);
        self.retrieval.eval(&self.words, &row) == 1
    }

    /// Whether the ID changed (exact for IDs of the universe).
    pub fn changed_id(&self, id: &str) -> bool {
        self.changed(Key::of(id))
    }

    /// Whether the key passes the filter level (every changed key does).
    fn passes_filter(&self, key: u64) -> bool {
        passes(key, self.split, [&self.a, &self.b], self.seeds, &self.words)
    }
}

/// The selector of a key: `mix64(key ^ salt(4, 0)) >> 56`, in `0..256`.
#[inline]
pub fn selector(key: u64) -> u32 {
    (mix64(key ^ salt(TAG_SELECT, 0)) >> 56) as u32
}

/// The filter level's test, shared by queries and the builder.
#[inline]
fn passes(key: u64, split: u32, parts: [&Layout; 2], seeds: [u32; 3], words: &[u64]) -> bool {
    let (layout, tag, seed) = if selector(key) < split {
        (parts[0], TAG_A, seeds[0])
    } else {
        (parts[1], TAG_B, seeds[1])
    };
    if layout.bits == 0 {
        return true;
    }
    let row = Row::of(key, salt(tag, seed), layout.m);
    layout.eval(words, &row) == row.fingerprint & value_mask(layout.bits)
}

/// `log2(C(n, r))`: the fewest bits that can tell which `r` of `n` IDs changed.
pub fn floor_bits(n: u64, r: u64) -> f64 {
    if r == 0 || r >= n {
        return 0.0;
    }
    (ln_factorial(n) - ln_factorial(r) - ln_factorial(n - r)) / std::f64::consts::LN_2
}

/// `ln(n!)`, exact sums below 256 and Stirling's series above.
fn ln_factorial(n: u64) -> f64 {
    if n < 256 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x * x * x)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;
