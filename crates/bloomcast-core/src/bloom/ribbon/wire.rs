//! The body of `.ribbon` responses: a 24-byte little-endian header, then the solution.
//!
//! ```text
//! 0   4  magic "BCR1"
//! 4   1  version (1)
//! 5   1  r, fingerprint bits (1..=32)
//! 6   2  reserved, zero
//! 8   4  n, keys (u32 LE)
//! 12  4  m, rows (u32 LE, >= 64)
//! 16  8  seed (u64 LE)
//! 24  ceil(r*m/8)  solution, column-major: bit t = b*m + i is bit b of row i,
//!                  at byte t/8, bit t%8 (least significant first); padding zero
//! ```

use super::{Ribbon, MAX_R, MIN_R, WIDTH};
use crate::bloom::FilterError;

pub(super) const MAGIC: [u8; 4] = *b"BCR1";
pub(super) const VERSION: u8 = 1;
const HEADER: usize = 24;

impl Ribbon {
    /// Bytes of [`Ribbon::to_bytes`] without building them.
    pub fn byte_len(&self) -> usize {
        HEADER + solution_bytes(self.m, self.r)
    }

    /// The self-describing body.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.r as u8);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.n.to_le_bytes());
        out.extend_from_slice(&self.m.to_le_bytes());
        out.extend_from_slice(&self.seed.to_le_bytes());
        let len = solution_bytes(self.m, self.r);
        out.extend(self.words.iter().flat_map(|w| w.to_le_bytes()).take(len));
        out
    }

    /// Reads a body back, checking every field.
    ///
    /// # Errors
    /// [`FilterError::BadRibbon`] naming the first thing wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Ribbon, FilterError> {
        let bad = |what: String| Err(FilterError::BadRibbon(what));
        if bytes.len() < HEADER {
            return bad(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if bytes[0..4] != MAGIC {
            return bad("magic is not \"BCR1\"".into());
        }
        if bytes[4] != VERSION {
            return bad(format!("version {} (this client knows 1)", bytes[4]));
        }
        let r = u32::from(bytes[5]);
        if !(MIN_R..=MAX_R).contains(&r) {
            return bad(format!("r = {r} outside 1..=32"));
        }
        if bytes[6..8] != [0, 0] {
            return bad("reserved bytes are not zero".into());
        }
        let n = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let m = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
        let seed = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
        if m < WIDTH {
            return bad(format!("m = {m} is below 64"));
        }
        let body = &bytes[HEADER..];
        let expected = solution_bytes(m, r);
        if body.len() != expected {
            return bad(format!(
                "solution of {} bytes, expected {expected} for m = {m}, r = {r}",
                body.len()
            ));
        }
        let bits = u64::from(m) * u64::from(r);
        if bits % 8 != 0 && body[expected - 1] >> (bits % 8) != 0 {
            return bad("padding bits past r*m are set".into());
        }
        let words = crate::bloom::bits::le_words(body, 1);
        Ok(Ribbon {
            n,
            m,
            r,
            seed,
            words,
        })
    }
}

fn solution_bytes(m: u32, r: u32) -> usize {
    (u64::from(m) * u64::from(r)).div_ceil(8) as usize
}
