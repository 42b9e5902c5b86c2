//! A standard Ribbon filter (Dillinger & Walzer, 2021) over sha1-km32 keys: the compact
//! representation of a sealed hour, within a few percent of the information-theoretic
//! floor of `n * r` bits for a false-positive rate of `2^-r`.
//!
//! Each key names a start row, a 64-bit coefficient band and an r-bit fingerprint
//! ([`Slot::of`]); the body stores a solution `S` of `m` rows of r bits such that, for
//! every key, the XOR of the rows its band selects equals its fingerprint. A query
//! recomputes that XOR: equal for every member, equal by chance (`2^-r`) otherwise.
//! Everything a decoder needs is in docs/PROTOCOL.md ("Compact filters").

mod build;
mod wire;

use super::Key;

/// Band width: coefficient rows are one u64.
pub const WIDTH: u32 = 64;
/// Fingerprint bits a body may carry (`fpp` from 2^-1 to 2^-32).
pub const MIN_R: u32 = 1;
pub const MAX_R: u32 = 32;

/// The multiply-xorshift finaliser of SplitMix64: the only mixing function of the
/// scheme, so an independent client needs nothing else.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The constant XORed in between the three mixes.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Where and how one key sits in a ribbon of `m` rows built with `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// First row of the band, in `0..=m-64`.
    pub start: u32,
    /// Bit j selects row `start + j`; bit 0 is always set.
    pub coeff: u64,
    /// The low r bits of this are the fingerprint.
    pub fingerprint: u64,
}

impl Slot {
    /// `a = mix64(key ^ seed)`, `b = mix64(a ^ GOLDEN)`, `c = mix64(b ^ GOLDEN)`;
    /// start = `(a * (m - 63)) >> 64`, coeff = `b | 1`, fingerprint = `c`.
    #[inline]
    pub fn of(key: Key, seed: u64, m: u32) -> Slot {
        let a = mix64(key.to_u64() ^ seed);
        let b = mix64(a ^ GOLDEN);
        let c = mix64(b ^ GOLDEN);
        let starts = u64::from(m - (WIDTH - 1));
        Slot {
            start: ((u128::from(a) * u128::from(starts)) >> 64) as u32,
            coeff: b | 1,
            fingerprint: c,
        }
    }
}

/// A built (or decoded) ribbon filter: immutable, queried by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ribbon {
    n: u32,
    m: u32,
    r: u32,
    seed: u64,
    /// The solution column-major: bit `b*m + i` is bit b of row i, packed little-endian
    /// into words, with one zero word past the end so every 64-bit window reads whole.
    words: Vec<u64>,
}

impl Ribbon {
    /// Number of keys it was built from (as declared; duplicates count once each).
    pub fn n(&self) -> u32 {
        self.n
    }
    /// Rows of the solution (at least 64).
    pub fn m(&self) -> u32 {
        self.m
    }
    /// Fingerprint bits: the false-positive rate is `2^-r`.
    pub fn r(&self) -> u32 {
        self.r
    }
    /// The seed the construction succeeded with.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The advertised false-positive probability, `2^-r`.
    pub fn fpp(&self) -> f64 {
        (-f64::from(self.r)).exp2()
    }

    /// Whether the key may be in the set: never false for a member.
    #[inline]
    pub fn contains(&self, key: Key) -> bool {
        let slot = Slot::of(key, self.seed, self.m);
        let mask = fingerprint_mask(self.r);
        let mut got = 0u64;
        for b in 0..self.r {
            let window = self.window(u64::from(b) * u64::from(self.m) + u64::from(slot.start));
            got |= u64::from((window & slot.coeff).count_ones() & 1) << b;
        }
        got == slot.fingerprint & mask
    }

    /// Whether the ID may be in the set.
    pub fn contains_id(&self, id: &str) -> bool {
        self.contains(Key::of(id))
    }

    /// The 64 bits of the solution from bit `t` on.
    #[inline]
    fn window(&self, t: u64) -> u64 {
        let word = (t / 64) as usize;
        let shift = t % 64;
        let low = self.words[word] >> shift;
        if shift == 0 {
            low
        } else {
            low | (self.words[word + 1] << (64 - shift))
        }
    }
}

/// The fingerprint bits `r` for a requested false-positive probability: the fewest
/// bits with `2^-r <= p`, or `None` outside `[2^-MAX_R, 1)`.
pub fn bits_for_fpp(p: f64) -> Option<u32> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    // A small tolerance so that p = 2^-r exactly (after decimal rounding) maps to r.
    let r = (-p.log2() - 1e-9).ceil().max(f64::from(MIN_R)) as u32;
    (r <= MAX_R).then_some(r)
}

#[inline]
fn fingerprint_mask(r: u32) -> u64 {
    (1u64 << r) - 1
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;
