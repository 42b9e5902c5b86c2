//! Construction: route every key to its part and shard, then solve each shard's system
//! in storage order, trying its seeds 0 to 255 at one size and growing it only when all
//! 256 fail. Deterministic: the same keys at the same grade give the same bytes.

use super::blocks::Described;
use super::{row, row_base, shard_index, shard_salt, Grade, Ribbon2};
use crate::bloom::{FilterError, Key};
use crate::exact::system::{value_mask, Band, Layout, MAX_WIDTH};

/// Keys a shard holds on average: the slack a standard ribbon needs grows with its
/// length, so short systems are cheaper; each shard costs 2 to 4 header bytes.
pub const SHARD_KEYS: u64 = 4096;

/// Rows of the first size tried for a shard of `n` keys: `n` while dense (at most 128
/// rows), else `n + ceil(n * SLACK) + EXTRA_ROWS`.
pub fn rows_for(n: u64) -> u32 {
    if n <= u64::from(MAX_WIDTH) {
        return n as u32;
    }
    (n + (n as f64 * SLACK).ceil() as u64 + EXTRA_ROWS).min(u64::from(u32::MAX)) as u32
}

/// Slack of the first size. At 4,096 keys a seed succeeds often enough there that a
/// shard tries a few seeds on average (examples/ribbon2_sizes.rs prints the build
/// times): less slack costs build time, more costs bytes. 256 seeds all failing, the
/// one case where a shard grows, has never been seen.
const SLACK: f64 = 0.005;
const EXTRA_ROWS: u64 = 4;

/// The size after 256 seeds failed: 0.5% and one row more.
fn grown(m: u32) -> u32 {
    m + m / 200 + 1
}

/// Shards of a part of `n` keys: `ceil(n / SHARD_KEYS)`.
pub fn shards_for(n: u64) -> u32 {
    n.div_ceil(SHARD_KEYS) as u32
}

impl Ribbon2 {
    /// Builds a filter holding every key at `grade`. Duplicates are harmless.
    ///
    /// # Errors
    /// More keys than a u32 can count.
    pub fn build(keys: &[Key], grade: Grade) -> Result<Ribbon2, FilterError> {
        if keys.len() > (u32::MAX / 2) as usize {
            return Err(FilterError::BadDocument(format!(
                "{} keys are too many for one ribbon",
                keys.len()
            )));
        }
        // Part sizes fix the shard counts; then each key goes to its shard.
        let in_a = keys
            .iter()
            .filter(|k| (super::selector(k.to_u64())) < grade.split)
            .count() as u64;
        let shards_a = shards_for(in_a);
        let shards_b = if grade.k == 0 {
            // Part B of 0 bits passes every key: one empty shard.
            u32::from(in_a < keys.len() as u64)
        } else {
            shards_for(keys.len() as u64 - in_a)
        };
        let total = (shards_a + shards_b) as usize;
        // Every key has a shard: its part has keys, so shards.
        let index =
            |key: u64| shard_index(key, grade.split, shards_a, total as u32).unwrap_or_default();
        let mut starts = vec![0usize; total + 1];
        for key in keys {
            starts[index(key.to_u64()) + 1] += 1;
        }
        for i in 0..total {
            starts[i + 1] += starts[i];
        }
        let mut grouped = vec![0u64; keys.len()];
        let mut next = starts.clone();
        for key in keys {
            let key = key.to_u64();
            let i = index(key);
            grouped[next[i]] = key;
            next[i] += 1;
        }
        drop(next);

        let mut described = Vec::with_capacity(total);
        let mut columns = vec![0u64; 2];
        let mut offset = 0u64;
        let mut band = Band::<u32>::new(0);
        for i in 0..total {
            let part_a = i < shards_a as usize;
            let bits = if part_a { grade.k + 1 } else { grade.k };
            let shard_keys = &grouped[starts[i]..starts[i + 1]];
            let (m, seed) = if bits == 0 {
                (0, 0)
            } else {
                solve(shard_keys, part_a, bits, &mut band)
            };
            let layout = Layout { m, bits, offset };
            offset += layout.bits_len();
            columns.resize(offset.div_ceil(64) as usize + 2, 0);
            if m > 0 {
                band.solve_into(layout, &mut columns);
            }
            described.push(Described { m, bits, seed });
        }
        drop((band, grouped));
        Ok(Ribbon2::assemble(
            keys.len() as u32,
            grade,
            shards_a,
            &described,
            &columns,
        ))
    }
}

impl Ribbon2 {
    /// The body's bytes for `n` keys at `grade`, predicted without building: each part
    /// split evenly in its shards, each shard at its first size (a growth, never seen,
    /// would add 0.5% of a shard). What a client weighs before fetching.
    pub fn predicted_bytes(n: u64, grade: Grade) -> u64 {
        let in_a = n * u64::from(grade.split) / u64::from(super::SELECTOR_RANGE);
        let mut header = 6 + varint_len(n);
        let mut bits = 0u64;
        for (keys, width) in [(in_a, grade.k + 1), (n - in_a, grade.k)] {
            let shards = if width == 0 {
                u64::from(keys > 0)
            } else {
                u64::from(shards_for(keys))
            };
            header += varint_len(shards);
            for i in 0..shards {
                // The keys spread as evenly as integers allow.
                let share = keys / shards + u64::from(i < keys % shards);
                let m = if width == 0 {
                    0
                } else {
                    u64::from(rows_for(share))
                };
                header += varint_len(m) + 1;
                bits += m * u64::from(width);
            }
        }
        header + bits.div_ceil(8)
    }

    /// The most memory [`Ribbon2::build`] of `n` keys at `grade` holds at once, in
    /// bytes: the keys grouped by shard (8 bytes each), one shard's band, and the
    /// solution three times over (as solved, as blocks, and as the body rendered from
    /// them), each at the grade's bits with a fifth to spare. What a server reserves
    /// before a build; the keys themselves are the caller's.
    pub fn build_bytes(n: u64, grade: Grade) -> u64 {
        let solution = (n as f64 * (grade.bits_per_key() + 1.0) * 1.2 / 8.0) as u64;
        let band = Band::<u32>::bytes(u64::from(rows_for(2 * SHARD_KEYS)));
        8 * n + band + 3 * solution + 64 * 1024
    }
}

/// Bytes of `v` as an unsigned LEB128 varint.
fn varint_len(v: u64) -> u64 {
    u64::from((64 - v.leading_zeros()).div_ceil(7).max(1))
}

/// Eliminates one shard's system into `band`: its rows and seed.
fn solve(keys: &[u64], part_a: bool, bits: u32, band: &mut Band<u32>) -> (u32, u8) {
    let mask = value_mask(bits);
    let mut m = rows_for(keys.len() as u64);
    loop {
        for seed in 0..=u8::MAX {
            band.reset(m);
            let salted = shard_salt(part_a, seed);
            let ok = keys.iter().all(|&key| {
                let row = row(row_base(key), salted, m);
                band.add(&row, (row.fingerprint & mask) as u32)
            });
            if ok {
                return (m, seed);
            }
        }
        m = grown(m);
    }
}
