//! The body of `.exact` responses: a short header, then the three solutions,
//! bit-contiguous.
//!
//! ```text
//! 0   4  magic "BCX1"
//! 4   1  version: 1, or 2 when the levels hold the unchanged keys (every answer negated)
//! 5   1  k, fingerprint bits of part B (0..=31); part A has k + 1
//! 6   1  split (0..=255): keys whose selector is below it are in part A
//! 7   ..  eight unsigned LEB128 varints (each < 2^32, minimal): universe N, changed r,
//!         rows mA, mB (0 when k = 0), mR, seeds sA, sB, sR
//! H   ceil(((k+1)*mA + k*mB + mR) / 8)  solutions: part A's columns, part B's, the
//!         retrieval level's, each column-major (bit b*m + i is bit b of row i), all
//!         bit-contiguous from bit 0 of byte H, least significant bit first; padding zero
//! ```
//!
//! The header is 15 to 47 bytes: small hours stay smaller than their Bloom filter.

use super::system::{Layout, MAX_BITS};
use super::{Exact, MAX_K};
use crate::bloom::FilterError;

pub(super) const MAGIC: [u8; 4] = *b"BCX1";
/// The version of a body whose levels hold the changed keys.
pub(super) const VERSION: u8 = 1;
/// The version of a complemented body: its levels hold the unchanged keys.
pub(super) const VERSION_COMPLEMENTED: u8 = 2;
/// Bytes of the header at most (at least 15).
pub const MAX_HEADER: usize = 7 + 8 * 5;

/// Appends `v` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a minimal unsigned LEB128 varint below 2^32 at `*at`, moving past it.
pub(crate) fn varint(bytes: &[u8], at: &mut usize, name: &str) -> Result<u32, String> {
    let mut v: u64 = 0;
    for i in 0..5 {
        let Some(&b) = bytes.get(*at + i) else {
            return Err(format!("the header ends inside {name}"));
        };
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err(format!("{name} is not minimally encoded"));
            }
            *at += i + 1;
            return u32::try_from(v).map_err(|_| format!("{name} is 2^32 or more"));
        }
    }
    Err(format!("{name} is longer than 5 bytes"))
}

impl Exact {
    /// Bits of solution.
    fn solution_bits(&self) -> u64 {
        self.retrieval.offset + self.retrieval.bits_len()
    }

    /// Bytes of [`Exact::to_bytes`] without building them.
    pub fn byte_len(&self) -> usize {
        self.header().len() + self.solution_bits().div_ceil(8) as usize
    }

    /// Bytes of the header alone.
    pub fn header_len(&self) -> usize {
        self.header().len()
    }

    fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_HEADER);
        out.extend_from_slice(&MAGIC);
        out.push(if self.complemented {
            VERSION_COMPLEMENTED
        } else {
            VERSION
        });
        out.push(self.k as u8);
        out.push(self.split as u8);
        for v in [
            self.universe,
            self.changed,
            self.a.m,
            self.b.m,
            self.retrieval.m,
            self.seeds[0],
            self.seeds[1],
            self.seeds[2],
        ] {
            put_varint(&mut out, v);
        }
        out
    }

    /// The self-describing body.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.header();
        let len = self.solution_bits().div_ceil(8) as usize;
        out.extend(self.words.iter().flat_map(|w| w.to_le_bytes()).take(len));
        out
    }

    /// Reads a body back, checking every field.
    ///
    /// # Errors
    /// [`FilterError::BadExact`] naming the first thing wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Exact, FilterError> {
        let bad = |what: String| Err(FilterError::BadExact(what));
        if bytes.len() < 7 {
            return bad(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if bytes[0..4] != MAGIC {
            return bad("magic is not \"BCX1\"".into());
        }
        let complemented = match bytes[4] {
            VERSION => false,
            VERSION_COMPLEMENTED => true,
            v => return bad(format!("version {v} (this client knows 1 and 2)")),
        };
        let k = u32::from(bytes[5]);
        if k > MAX_K {
            return bad(format!("k = {k} outside 0..=31"));
        }
        let split = u32::from(bytes[6]);
        let mut at = 7;
        let mut fields = [0u32; 8];
        for (field, name) in fields
            .iter_mut()
            .zip(["N", "r", "mA", "mB", "mR", "sA", "sB", "sR"])
        {
            *field = match varint(bytes, &mut at, name) {
                Ok(v) => v,
                Err(what) => return bad(what),
            };
        }
        let [universe, changed, m_a, m_b, m_r, s_a, s_b, s_r] = fields;
        let seeds = [s_a, s_b, s_r];
        if k == 0 && m_b != 0 {
            return bad(format!("mB = {m_b} with k = 0 (part B has no columns)"));
        }
        debug_assert!(k < MAX_BITS);
        let a = Layout {
            m: m_a,
            bits: k + 1,
            offset: 0,
        };
        let b = Layout {
            m: m_b,
            bits: k,
            offset: a.bits_len(),
        };
        let retrieval = Layout {
            m: m_r,
            bits: 1,
            offset: b.offset + b.bits_len(),
        };
        let bits = retrieval.offset + retrieval.bits_len();
        let body = &bytes[at..];
        let expected = bits.div_ceil(8);
        if body.len() as u64 != expected {
            return bad(format!(
                "solutions of {} bytes, expected {expected} for mA = {m_a}, mB = {m_b}, mR = {m_r}, k = {k}",
                body.len()
            ));
        }
        if bits % 8 != 0 && body[expected as usize - 1] >> (bits % 8) != 0 {
            return bad("padding bits past the solutions are set".into());
        }
        let words = crate::bloom::bits::le_words(body, 2);
        Ok(Exact {
            k,
            split,
            universe,
            changed,
            complemented,
            seeds,
            a,
            b,
            retrieval,
            words,
        })
    }
}
