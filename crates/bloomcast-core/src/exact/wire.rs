//! The body of `.exact` responses: a 40-byte little-endian header, then the three
//! solutions, bit-contiguous.
//!
//! ```text
//! 0   4  magic "BCX1"
//! 4   1  version (1)
//! 5   1  k, fingerprint bits of part B (0..=31); part A has k + 1
//! 6   2  split (u16 LE, 0..=255): keys whose selector is below it are in part A
//! 8   4  universe, IDs the body answers for (u32 LE)
//! 12  4  changed, IDs that changed (u32 LE)
//! 16  4  mA, rows of part A (u32 LE)
//! 20  4  mB, rows of part B (u32 LE; 0 when k = 0)
//! 24  4  mR, rows of the retrieval level (u32 LE)
//! 28  4  seed A, 32 4 seed B, 36 4 seed R (u32 LE)
//! 40  ceil(((k+1)*mA + k*mB + mR) / 8)  solutions: part A's columns, part B's, the
//!         retrieval level's, each column-major (bit b*m + i is bit b of row i), all
//!         bit-contiguous from bit 0 of byte 40, least significant bit first; padding zero
//! ```

use super::system::{Layout, MAX_BITS};
use super::{Exact, MAX_K, SELECTOR_RANGE};
use crate::bloom::FilterError;

pub(super) const MAGIC: [u8; 4] = *b"BCX1";
pub(super) const VERSION: u8 = 1;
/// Bytes before the solutions.
pub const HEADER: usize = 40;

impl Exact {
    /// Bits of solution.
    fn solution_bits(&self) -> u64 {
        self.retrieval.offset + self.retrieval.bits_len()
    }

    /// Bytes of [`Exact::to_bytes`] without building them.
    pub fn byte_len(&self) -> usize {
        HEADER + self.solution_bits().div_ceil(8) as usize
    }

    /// The self-describing body.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.k as u8);
        out.extend_from_slice(&(self.split as u16).to_le_bytes());
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
            out.extend_from_slice(&v.to_le_bytes());
        }
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
        if bytes.len() < HEADER {
            return bad(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if bytes[0..4] != MAGIC {
            return bad("magic is not \"BCX1\"".into());
        }
        if bytes[4] != VERSION {
            return bad(format!("version {} (this client knows 1)", bytes[4]));
        }
        let k = u32::from(bytes[5]);
        if k > MAX_K {
            return bad(format!("k = {k} outside 0..=31"));
        }
        let split = u32::from(u16::from_le_bytes([bytes[6], bytes[7]]));
        if split >= SELECTOR_RANGE {
            return bad(format!("split = {split} outside 0..=255"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let (universe, changed) = (u32_at(8), u32_at(12));
        let (m_a, m_b, m_r) = (u32_at(16), u32_at(20), u32_at(24));
        let seeds = [u32_at(28), u32_at(32), u32_at(36)];
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
        let body = &bytes[HEADER..];
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
        let mut words: Vec<u64> = body
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        words.extend([0, 0]);
        Ok(Exact {
            k,
            split,
            universe,
            changed,
            seeds,
            a,
            b,
            retrieval,
            words,
        })
    }
}
