//! Between the body's layout and memory's: the body holds each shard column-major and
//! bit-contiguous (the simplest thing to specify and to decode anywhere); memory holds
//! it in blocks of 64 rows with the columns side by side (what a fast query reads).

use super::{shard_salt, Grade, Ribbon2, Shard, TAIL};
use crate::exact::system::value_mask;

/// A shard as the body describes it: rows, fingerprint bits and seed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Described {
    pub m: u32,
    pub bits: u32,
    pub seed: u8,
}

/// The 64 bits from bit `pos` on (`words` has a zero word past its bits).
fn read64(words: &[u64], pos: u64) -> u64 {
    let (i, s) = ((pos / 64) as usize, pos % 64);
    let low = words[i] >> s;
    if s == 0 {
        low
    } else {
        low | words.get(i + 1).copied().unwrap_or(0) << (64 - s)
    }
}

/// ORs `v` into the bits from `pos` on.
fn or64(words: &mut [u64], pos: u64, v: u64) {
    let (i, s) = ((pos / 64) as usize, pos % 64);
    words[i] |= v << s;
    if s != 0 && v >> (64 - s) != 0 {
        words[i + 1] |= v >> (64 - s);
    }
}

/// Appends the blocks of one shard `d`, whose solution is column-major from bit
/// `offset` of `columns`, to `blocks`.
pub(super) fn push_blocks(d: Described, columns: &[u64], offset: u64, blocks: &mut Vec<u64>) {
    let count = d.m.div_ceil(64);
    let base = blocks.len();
    blocks.resize(base + count as usize * d.bits as usize, 0);
    for b in 0..d.bits {
        let column = offset + u64::from(b) * u64::from(d.m);
        for j in 0..count {
            let rows = (d.m - 64 * j).min(64);
            let word = read64(columns, column + u64::from(64 * j)) & value_mask(rows);
            blocks[base + (j * d.bits + b) as usize] = word;
        }
    }
}

impl Ribbon2 {
    /// The filter from its shards and their column-major, bit-contiguous solutions.
    pub(super) fn assemble(
        n: u32,
        grade: Grade,
        in_a: u32,
        described: &[Described],
        columns: &[u64],
    ) -> Ribbon2 {
        let total: usize = described
            .iter()
            .map(|d| d.m.div_ceil(64) as usize * d.bits as usize)
            .sum();
        let mut blocks = Vec::with_capacity(total + TAIL);
        let mut offset = 0u64;
        for d in described {
            push_blocks(*d, columns, offset, &mut blocks);
            offset += u64::from(d.m) * u64::from(d.bits);
        }
        Ribbon2::from_blocks(n, grade, in_a, described, blocks)
    }

    /// The filter from its shards and their blocks, shard after shard.
    pub(super) fn from_blocks(
        n: u32,
        grade: Grade,
        in_a: u32,
        described: &[Described],
        mut blocks: Vec<u64>,
    ) -> Ribbon2 {
        blocks.resize(blocks.len() + TAIL, 0);
        let mut shards = Vec::with_capacity(described.len());
        let mut base = 0usize;
        for (i, d) in described.iter().enumerate() {
            shards.push(Shard {
                m: d.m,
                bits: d.bits,
                seed: d.seed,
                salt: shard_salt(i < in_a as usize, d.seed),
                base,
            });
            base += d.m.div_ceil(64) as usize * d.bits as usize;
        }
        Ribbon2 {
            n,
            grade,
            shards,
            in_a,
            blocks,
        }
    }

    /// Bits of the solutions in the body.
    pub(super) fn solution_bits(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| u64::from(s.m) * u64::from(s.bits))
            .sum()
    }

    /// The solutions column-major and bit-contiguous, as the body holds them.
    pub(super) fn columns(&self) -> Vec<u64> {
        let mut words = vec![0u64; self.solution_bits().div_ceil(64) as usize + 1];
        let mut offset = 0u64;
        for s in &self.shards {
            for b in 0..s.bits {
                let column = offset + u64::from(b) * u64::from(s.m);
                for j in 0..s.m.div_ceil(64) {
                    let word = self.blocks[s.base + (j * s.bits + b) as usize];
                    or64(&mut words, column + u64::from(64 * j), word);
                }
            }
            offset += u64::from(s.m) * u64::from(s.bits);
        }
        words
    }

    /// The shards as the body describes them.
    pub(super) fn described(&self) -> impl Iterator<Item = Described> + '_ {
        self.shards.iter().map(|s| Described {
            m: s.m,
            bits: s.bits,
            seed: s.seed,
        })
    }
}
