//! One linear system over GF(2) in ribbon form (Dillinger & Walzer, 2021): `m` rows of
//! solution, each key an equation whose coefficients are a band of `w = min(m, 128)`
//! consecutive rows. A system of at most 128 rows is dense (every band is the whole
//! system), which is what lets a handful of keys be stored with no slack at all.
//!
//! Both levels of an exact body are such systems: the filters (value = the key's
//! fingerprint) and the retrieval level (value = the key's one answer bit).

use crate::bloom::mix64;

/// Widest band: coefficients are one u128.
pub(crate) const MAX_WIDTH: u32 = 128;
/// Value bits a system may carry per key.
pub const MAX_BITS: u32 = 32;

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Where and how one key sits in a system of `m` rows hashed with `salt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// First row of the band, in `0..=m-w`.
    pub start: u32,
    /// Bit j selects row `start + j`; bit 0 is set unless `m = 0`.
    pub coeff: u128,
    /// The key's fingerprint (filters use its low bits).
    pub fingerprint: u64,
}

impl Row {
    /// `a = mix64(key ^ salt)`, `b = mix64(a ^ G)`, `c = mix64(b ^ G)`, `d = mix64(c ^ G)`;
    /// `start = (a * (m - w + 1)) >> 64`, `coeff = (b | c << 64)` cut to `w` bits with
    /// bit 0 set, `fingerprint = d`.
    #[inline]
    pub fn of(key: u64, salt: u64, m: u32) -> Row {
        let a = mix64(key ^ salt);
        let b = mix64(a ^ GOLDEN);
        let c = mix64(b ^ GOLDEN);
        let d = mix64(c ^ GOLDEN);
        let w = width(m);
        let starts = u128::from(m - w + 1);
        let coeff = if w == 0 {
            0
        } else {
            (u128::from(b) | u128::from(c) << 64) & low_mask(w) | 1
        };
        Row {
            start: ((u128::from(a) * starts) >> 64) as u32,
            coeff,
            fingerprint: d,
        }
    }
}

/// The salt of a system: `mix64(tag << 32 | seed)`.
#[inline]
pub fn salt(tag: u32, seed: u32) -> u64 {
    mix64(u64::from(tag) << 32 | u64::from(seed))
}

/// Band width of a system of `m` rows.
#[inline]
pub fn width(m: u32) -> u32 {
    m.min(MAX_WIDTH)
}

/// Mask of the low `w` bits of a coefficient.
#[inline]
pub(crate) fn low_mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

/// Mask of the low `bits` bits.
#[inline]
pub fn value_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A system's place in a body's bits: `bits` columns of `m` rows from bit `offset`,
/// column-major (bit `offset + b*m + i` is bit b of row i).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Rows.
    pub m: u32,
    /// Columns: the bits solved for per row.
    pub bits: u32,
    /// The body bit where the first column starts.
    pub offset: u64,
}

impl Layout {
    /// Bits of solution it occupies.
    pub fn bits_len(&self) -> u64 {
        u64::from(self.m) * u64::from(self.bits)
    }

    /// The key's value: bit b is the parity of its band in column b.
    #[inline]
    pub fn eval(&self, words: &[u64], row: &Row) -> u64 {
        if self.m == 0 {
            return 0;
        }
        let mut got = 0u64;
        for b in 0..self.bits {
            let t = self.offset + u64::from(b) * u64::from(self.m) + u64::from(row.start);
            got |= u64::from(parity(window(words, t) & row.coeff)) << b;
        }
        got
    }
}

/// The parity of a 128-bit word, without a popcount instruction: fold to 64 bits, pair
/// bits up to nibbles, and let one multiplication sum the nibbles' parities.
#[inline]
pub(crate) fn parity(x: u128) -> u32 {
    parity64(x as u64 ^ (x >> 64) as u64)
}

/// The parity of a 64-bit word, as [`parity`].
#[inline]
pub(crate) fn parity64(mut x: u64) -> u32 {
    x ^= x >> 1;
    x ^= x >> 2;
    x = (x & 0x1111_1111_1111_1111).wrapping_mul(0x1111_1111_1111_1111);
    ((x >> 60) & 1) as u32
}

/// The 128 bits from bit `t` on. `words` ends with two zero words past the data.
#[inline]
fn window(words: &[u64], t: u64) -> u128 {
    let word = (t / 64) as usize;
    let shift = (t % 64) as u32;
    let w0 = words[word];
    let w1 = words[word + 1];
    let w2 = words[word + 2];
    let low = u128::from(w0) | u128::from(w1) << 64;
    if shift == 0 {
        low
    } else {
        low >> shift | u128::from(w2) << (128 - shift)
    }
}

/// The banded system being eliminated: row i holds a coefficient whose bit 0 is row i
/// itself, and the right-hand side.
pub struct Band<V> {
    m: u32,
    coeff: Vec<u128>,
    rhs: Vec<V>,
}

/// A right-hand side: `u8` for one answer bit, `u32` for fingerprints.
pub trait Rhs: Copy + Default + PartialEq + std::ops::BitXor<Output = Self> + Into<u32> {}
impl Rhs for u8 {}
impl Rhs for u32 {}

impl<V: Rhs> Band<V> {
    /// An empty system of `m` rows.
    pub fn new(m: u32) -> Band<V> {
        Band {
            m,
            coeff: vec![0; m as usize],
            rhs: vec![V::default(); m as usize],
        }
    }

    /// Clears every row and sets the size to `m` rows for another attempt.
    pub fn reset(&mut self, m: u32) {
        self.m = m;
        self.coeff.clear();
        self.coeff.resize(m as usize, 0);
        self.rhs.clear();
        self.rhs.resize(m as usize, V::default());
    }

    /// Clears every row for another attempt.
    pub fn clear(&mut self) {
        self.coeff.fill(0);
        self.rhs.fill(V::default());
    }

    /// Bytes a band of `m` rows holds.
    pub fn bytes(m: u64) -> u64 {
        m * (std::mem::size_of::<u128>() + std::mem::size_of::<V>()) as u64
    }

    /// Its rows.
    pub fn m(&self) -> u32 {
        self.m
    }

    /// Adds one equation; false when the system became inconsistent.
    #[inline]
    pub fn add(&mut self, row: &Row, value: V) -> bool {
        let mut c = row.coeff;
        let mut v = value;
        if c == 0 {
            return v == V::default();
        }
        let mut i = row.start as usize;
        loop {
            let existing = self.coeff[i];
            if existing == 0 {
                self.coeff[i] = c;
                self.rhs[i] = v;
                return true;
            }
            c ^= existing;
            v = v ^ self.rhs[i];
            if c == 0 {
                // Dependent on rows already placed: consistent only if the sides agree.
                return v == V::default();
            }
            let tz = c.trailing_zeros();
            i += tz as usize;
            c >>= tz;
        }
    }

    /// Back-substitution from the last row up into `words` at `layout` (free rows are
    /// zero). `words` must be zero there.
    pub fn solve_into(&self, layout: Layout, words: &mut [u64]) {
        debug_assert_eq!(layout.m, self.m);
        let m = self.m as usize;
        // state[b] bit j = bit b of solution row i + j.
        let mut state = [0u128; MAX_BITS as usize];
        for i in (0..m).rev() {
            let c = self.coeff[i];
            let rhs: u32 = self.rhs[i].into();
            for (b, column) in state.iter_mut().enumerate().take(layout.bits as usize) {
                *column <<= 1;
                let bit = if c == 0 {
                    0
                } else {
                    (parity(c & *column) ^ (rhs >> b)) & 1
                };
                *column |= u128::from(bit);
                if bit != 0 {
                    let t = layout.offset as usize + b * m + i;
                    words[t / 64] |= 1 << (t % 64);
                }
            }
        }
    }
}
