//! The body of `.ribbon2` responses: a short header, then the shards' solutions,
//! bit-contiguous.
//!
//! ```text
//! 0   4  magic "BCR2"
//! 4   1  k, fingerprint bits of part B (0..=31); part A has k + 1
//! 5   1  split (0..=255): keys whose selector is below it are in part A
//! 6   ..  unsigned LEB128 varints (each < 2^32, minimal): n, shards of part A (sA),
//!         shards of part B (sB); then for each shard, part A's first: its rows m (a
//!         varint) and its seed (one byte)
//! H   the solutions, shard after shard, each column-major (bit b*m + i of the shard's
//!     bits is bit b of row i), all bit-contiguous from bit 0 of byte H, least
//!     significant bit first; padding zero
//! ```

use super::blocks::Described;
use super::{Grade, Ribbon2, MAX_K};
use crate::bloom::FilterError;
use crate::exact::wire::{put_varint, varint};

pub const MAGIC: [u8; 4] = *b"BCR2";

impl Ribbon2 {
    /// Bytes of [`Ribbon2::to_bytes`] without building them.
    pub fn byte_len(&self) -> usize {
        self.header().len() + self.solution_bits().div_ceil(8) as usize
    }

    /// Bytes of the header alone.
    pub fn header_len(&self) -> usize {
        self.header().len()
    }

    fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 6 * self.shards.len());
        out.extend_from_slice(&MAGIC);
        out.push(self.grade.k as u8);
        out.push(self.grade.split as u8);
        let (a, b) = self.shard_counts();
        for v in [self.n, a, b] {
            put_varint(&mut out, v);
        }
        for shard in self.described() {
            put_varint(&mut out, shard.m);
            out.push(shard.seed);
        }
        out
    }

    /// The self-describing body.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.header();
        let len = self.solution_bits().div_ceil(8) as usize;
        out.reserve(len);
        out.extend(
            self.columns()
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take(len),
        );
        out
    }

    /// Reads a body back, checking every field.
    ///
    /// # Errors
    /// [`FilterError::BadRibbon`] naming the first thing wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Ribbon2, FilterError> {
        let bad = |what: String| Err(FilterError::BadRibbon(what));
        if bytes.len() < 6 {
            return bad(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if bytes[0..4] != MAGIC {
            return bad("magic is not \"BCR2\"".into());
        }
        let k = u32::from(bytes[4]);
        let split = u32::from(bytes[5]);
        if k > MAX_K || (k == MAX_K && split != 0) {
            return bad(format!(
                "k = {k}, split = {split}: part A would exceed 32 bits"
            ));
        }
        let grade = Grade { k, split };
        let mut at = 6;
        let mut fields = [0u32; 3];
        for (field, name) in fields.iter_mut().zip(["n", "sA", "sB"]) {
            *field = match varint(bytes, &mut at, name) {
                Ok(v) => v,
                Err(what) => return bad(what),
            };
        }
        let [n, in_a, in_b] = fields;
        if split == 0 && in_a != 0 {
            return bad(format!("sA = {in_a} with split = 0 (part A holds no key)"));
        }
        // Every shard takes at least two header bytes: a count past that is a lie.
        let total = u64::from(in_a) + u64::from(in_b);
        if total > (bytes.len() - at) as u64 / 2 {
            return bad(format!(
                "{total} shards do not fit in {} bytes",
                bytes.len()
            ));
        }
        let mut shards = Vec::with_capacity(total as usize);
        let mut offset = 0u64;
        for i in 0..total {
            let part_a = i < u64::from(in_a);
            let m = match varint(bytes, &mut at, "a shard's m") {
                Ok(v) => v,
                Err(what) => return bad(what),
            };
            let Some(&seed) = bytes.get(at) else {
                return bad("the header ends inside a shard's seed".into());
            };
            at += 1;
            let bits = if part_a { k + 1 } else { k };
            if bits == 0 && m != 0 {
                return bad(format!("a shard of part B has m = {m} with k = 0"));
            }
            offset += u64::from(m) * u64::from(bits);
            shards.push(Described { m, bits, seed });
        }
        let body = &bytes[at..];
        let expected = offset.div_ceil(8);
        if body.len() as u64 != expected {
            return bad(format!(
                "solutions of {} bytes, expected {expected} for the shards' rows",
                body.len()
            ));
        }
        if offset % 8 != 0 && body[expected as usize - 1] >> (offset % 8) != 0 {
            return bad("padding bits past the solutions are set".into());
        }
        let columns = crate::bloom::bits::le_words(body, 1);
        Ok(Ribbon2::assemble(n, grade, in_a, &shards, &columns))
    }
}
