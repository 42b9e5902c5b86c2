//! The compact form, version 2 (`.ribbon2`, `BCR2`): a filter at any false-positive
//! rate a client names, within a few percent of the floor of `log2(1/fpp)` bits per key.
//!
//! Two things close the gap of version 1 (`.ribbon`, whole bits per key, one 64-wide
//! system). First, fractional bits: a selector hash puts a key in part A, of `k + 1`
//! fingerprint bits, or part B, of `k`, so a [`Grade`] `(k, split)` costs `k + split/256`
//! bits a key for a false-positive rate of `2^-k * (1 - split/512)`. Second, every part
//! is cut into shards of a few thousand keys, each its own 128-wide system in ribbon form
//! (the exact module's `system`), so the slack a standard ribbon needs stays that of a small
//! system however many keys an hour holds; each shard has a seed of its own.
//! Everything a decoder needs is in docs/PROTOCOL.md (section 12, "Version 2").

mod blocks;
mod build;
mod wire;

use super::{mix64, Key};
use crate::exact::system::{low_mask, parity64, salt, value_mask, width, Row};

/// Salt tags of the parts' systems.
const TAG_A: u32 = 1;
const TAG_B: u32 = 2;

/// Selector values: a key is in part A when `selector < split`.
pub(crate) const SELECTOR_RANGE: u32 = 256;
/// Fingerprint bits of part B at most (part A has one more, at most 32).
pub const MAX_K: u32 = 31;

/// A precision on the grid of version 2: part A's keys carry `k + 1` fingerprint bits,
/// part B's `k`, and a key is in part A with probability `split / 256`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grade {
    /// Part B's fingerprint bits (part A's carry one more).
    pub k: u32,
    /// Of 256: the share of keys in part A.
    pub split: u32,
}

impl Grade {
    /// The cheapest grade whose false-positive rate is at most `p`: `k = floor(log2(1/p))`
    /// and `split = ceil(512 * (1 - p * 2^k))` (then `2^-k * (1 - split/512) <= p`), or
    /// `None` unless `2^-31 <= p < 1`. Every `p` maps to exactly one grade, so a requested
    /// precision names one body.
    pub fn for_fpp(p: f64) -> Option<Grade> {
        if !(p.is_finite() && p >= (-31f64).exp2() && p < 1.0) {
            return None;
        }
        let mut k = (-p.log2()).floor() as i64;
        // Guard the float: 2^-k must be the largest power of two at least p.
        while k > 0 && (-(k as f64)).exp2() < p {
            k -= 1;
        }
        while (-((k + 1) as f64)).exp2() >= p {
            k += 1;
        }
        let scaled = p * (k as f64).exp2(); // in (0.5, 1]
        let split = (512.0 * (1.0 - scaled)).ceil().max(0.0) as u32;
        let grade = if split >= SELECTOR_RANGE {
            Grade {
                k: k as u32 + 1,
                split: 0,
            }
        } else {
            Grade { k: k as u32, split }
        };
        (grade.k <= MAX_K && (grade.k < MAX_K || grade.split == 0)).then_some(grade)
    }

    /// The false-positive rate: `2^-k * (1 - split/512)`.
    pub fn fpp(self) -> f64 {
        (-f64::from(self.k)).exp2() * (1.0 - f64::from(self.split) / 512.0)
    }

    /// Fingerprint bits a key costs on average: `k + split/256`.
    pub fn bits_per_key(self) -> f64 {
        f64::from(self.k) + f64::from(self.split) / f64::from(SELECTOR_RANGE)
    }

    /// One number for the grade, `256 * k + split`, ordered as precision.
    pub fn code(self) -> u32 {
        self.k * SELECTOR_RANGE + self.split
    }

    /// The grade of a [`Grade::code`].
    pub fn from_code(code: u32) -> Option<Grade> {
        let grade = Grade {
            k: code / SELECTOR_RANGE,
            split: code % SELECTOR_RANGE,
        };
        (grade.k <= MAX_K && (grade.k < MAX_K || grade.split == 0)).then_some(grade)
    }
}

/// One shard in memory: its rows, fingerprint bits, seed, and where its blocks start.
///
/// The body stores each shard column-major (as section 12 says); in memory a shard is
/// blocks of 64 rows, each block its `bits` column words side by side, so that a query
/// reads one short run of words whatever the number of bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shard {
    m: u32,
    bits: u32,
    seed: u8,
    salt: u64,
    /// Index in `blocks` of the shard's first block.
    base: usize,
}

/// A built (or decoded) version 2 filter: immutable, queried by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ribbon2 {
    n: u32,
    grade: Grade,
    /// Part A's shards, then part B's, in the order of their solutions.
    shards: Vec<Shard>,
    in_a: u32,
    /// Every shard's blocks, then zero words so a query past the last block reads zero.
    blocks: Vec<u64>,
}

/// Zero words after the last block: two blocks of the widest shard.
const TAIL: usize = 2 * 32;
const GROUP: usize = 4;

/// Where a key goes: its part (A when true) and its shard in that part. The key is
/// already uniform (SHA-1's), so its own bits route it: selector = `key >> 56`, shard =
/// `((key mod 2^56) * shards) >> 56`.
#[cfg(test)]
pub(crate) fn route(key: u64, split: u32, shards_a: u32, shards_b: u32) -> (bool, u32) {
    let in_a = selector(key) < split;
    let index = shard_index(key, split, shards_a, shards_a + shards_b).unwrap_or(0) as u32;
    (in_a, if in_a { index } else { index - shards_a })
}

/// Where a key goes, as an index among all `total` shards, part A's `shards_a` first
/// (part A when `key >> 56 < split`; the shard in its part
/// `((key mod 2^56) * shards) >> 56`); `None`
/// when the key's part has no shard (holds no key). Without a branch on the part, which
/// is a coin toss at most grades: the builder and every query route through it.
#[inline(always)]
pub(crate) fn shard_index(key: u64, split: u32, shards_a: u32, total: u32) -> Option<usize> {
    let in_a = u64::from(selector(key) < split);
    let (a, total) = (u64::from(shards_a), u64::from(total));
    // Part A: shards 0..a; part B: shards a..total.
    let count = in_a * a + (1 - in_a) * (total - a);
    let first = (1 - in_a) * a;
    let within = (u128::from(key & ((1 << 56) - 1)) * u128::from(count)) >> 56;
    (count != 0).then_some((first + within as u64) as usize)
}

impl Ribbon2 {
    /// Keys it was built from (as declared; duplicates count once each).
    pub fn n(&self) -> u32 {
        self.n
    }
    /// Its precision.
    pub fn grade(&self) -> Grade {
        self.grade
    }
    /// The false-positive rate, `2^-k * (1 - split/512)`.
    pub fn fpp(&self) -> f64 {
        self.grade.fpp()
    }
    /// Shards of part A and of part B.
    pub fn shard_counts(&self) -> (u32, u32) {
        (self.in_a, self.shards.len() as u32 - self.in_a)
    }
    /// Rows of all shards together.
    pub fn rows(&self) -> u64 {
        self.shards.iter().map(|s| u64::from(s.m)).sum()
    }

    /// Whether the key may be in the set: never false for a member.
    #[inline]
    pub fn contains(&self, key: Key) -> bool {
        let key = key.to_u64();
        let base = row_base(key);
        let Some(index) = self.shard_of(key) else {
            return false;
        };
        let shard = &self.shards[index];
        self.matches(shard, &row(base, shard.salt, shard.m))
    }

    /// The index of the key's shard ([`shard_index`]).
    #[inline(always)]
    fn shard_of(&self, key: u64) -> Option<usize> {
        shard_index(key, self.grade.split, self.in_a, self.shards.len() as u32)
    }

    /// Whether the XOR of the rows `row` selects equals its fingerprint, column by
    /// column in groups of four: a key not stored differs in the first group 15 times in
    /// 16, so the one branch is well predicted.
    #[inline(always)]
    fn matches(&self, shard: &Shard, row: &Row) -> bool {
        let bits = shard.bits as usize;
        // The coefficient shifted to the start's place in its block: three words.
        let s = row.start % 64;
        let c = row.coeff;
        let (c0, c1, c2) = if s == 0 {
            (c as u64, (c >> 64) as u64, 0)
        } else {
            let shifted = c << s;
            (
                shifted as u64,
                (shifted >> 64) as u64,
                (c >> (128 - s)) as u64,
            )
        };
        let at = shard.base + (row.start / 64) as usize * bits;
        let (w0, rest) = self.blocks[at..at + 3 * bits].split_at(bits);
        let (w1, w2) = rest.split_at(bits);
        let mut expected = row.fingerprint;
        for ((x0, x1), x2) in w0.chunks(GROUP).zip(w1.chunks(GROUP)).zip(w2.chunks(GROUP)) {
            let mut got = 0u64;
            for (i, ((x0, x1), x2)) in x0.iter().zip(x1).zip(x2).enumerate() {
                got |= u64::from(parity64((x0 & c0) ^ (x1 & c1) ^ (x2 & c2))) << i;
            }
            if got != expected & value_mask(x0.len() as u32) {
                return false;
            }
            expected >>= GROUP;
        }
        true
    }

    /// Which of `keys` may be in the set, in order: [`Ribbon2::contains`] for each, with
    /// the hashing of a batch done before its lookups so that they overlap (for a caller
    /// checking many IDs against one hour).
    pub fn contains_each<'a>(&'a self, keys: &'a [Key]) -> impl Iterator<Item = bool> + 'a {
        const BATCH: usize = 16;
        keys.chunks(BATCH).flat_map(move |batch| {
            let mut found = [(
                usize::MAX,
                Row {
                    start: 0,
                    coeff: 0,
                    fingerprint: 0,
                },
            ); BATCH];
            for (slot, key) in found.iter_mut().zip(batch) {
                let key = key.to_u64();
                if let Some(index) = self.shard_of(key) {
                    let shard = &self.shards[index];
                    *slot = (index, row(row_base(key), shard.salt, shard.m));
                }
            }
            let mut out = [false; BATCH];
            for (hit, (index, row)) in out.iter_mut().zip(&found).take(batch.len()) {
                *hit = *index != usize::MAX && self.matches(&self.shards[*index], row);
            }
            out.into_iter().take(batch.len())
        })
    }

    /// Whether the ID may be in the set.
    pub fn contains_id(&self, id: &str) -> bool {
        self.contains(Key::of(id))
    }
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The salt of the row hash's first step, the same in every shard.
const ROW_SALT: u64 = 0x2545_f491_4f6c_dd1d;

/// The seed-independent first step of a key's row, `mix64(key ^ ROW_SALT)`, computed
/// while the key's shard is found; it is also the key's fingerprint.
#[inline]
pub(crate) fn row_base(key: u64) -> u64 {
    mix64(key ^ ROW_SALT)
}

/// Where and how a key sits in a shard of `m` rows whose seed has salt `salt`: with
/// `u = base ^ salt` (`base` = [`row_base`]), `b`, `c`, `d` = `mix64(u ^ i * G)` for
/// i = 0..2 (independent of one another, so computed at once); `start = (b * (m - w +
/// 1)) >> 64`, `coeff = (c | d << 64)` cut to `w = min(m, 128)` bits with bit 0 set,
/// `fingerprint = base`.
#[inline]
pub(crate) fn row(base: u64, salt: u64, m: u32) -> Row {
    let u = base ^ salt;
    let b = mix64(u);
    let c = mix64(u ^ GOLDEN);
    let d = mix64(u ^ GOLDEN.wrapping_mul(2));
    let w = width(m);
    let starts = u128::from(m - w + 1);
    let coeff = if w == 0 {
        0
    } else {
        (u128::from(c) | u128::from(d) << 64) & low_mask(w) | 1
    };
    Row {
        start: ((u128::from(b) * starts) >> 64) as u32,
        coeff,
        fingerprint: base,
    }
}

/// The selector of a key, `key >> 56`: part A below the split.
#[inline]
fn selector(key: u64) -> u32 {
    (key >> 56) as u32
}

/// The salt of a shard's system: `salt(tag, seed)` with tag 1 for part A, 2 for part B.
fn shard_salt(in_a: bool, seed: u8) -> u64 {
    salt(if in_a { TAG_A } else { TAG_B }, u32::from(seed))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;
