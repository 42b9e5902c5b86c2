//! Construction: route every key to its part and shard, then solve each shard's system
//! in storage order, trying its seeds 0 to 255 at one size and growing it only when all
//! 256 fail. Deterministic: the same keys at the same grade give the same bytes.

use super::blocks::{push_blocks, Described};
use super::{row, row_base, shard_index, shard_salt, Grade, Ribbon2};
use crate::bloom::union::Held;
use crate::bloom::{distinct_keys, FilterError, Key, KeyParts, PartsError};
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
    /// Builds a filter holding every key at `grade`. Duplicates count once.
    ///
    /// # Errors
    /// More keys than a u32 can count.
    pub fn build(keys: &[Key], grade: Grade) -> Result<Ribbon2, FilterError> {
        Ribbon2::build_in_parts(&mut Held(&[keys]), grade).map_err(PartsError::into_filter)
    }

    /// [`Ribbon2::build`] of the distinct keys of every part, bit for bit, holding one
    /// part and the shards it leaves open beside the output. Parts must come in the
    /// order of the keys' low 56 bits, the bits shards are cut by: every key of a part
    /// below every key of a later part in those bits (as `key.rotate_left(8)` sorts
    /// them), or be one part. Each part is handed over twice: to count, then to build.
    ///
    /// # Errors
    /// More keys than a u32 can count, or a part that could not be read.
    pub fn build_in_parts<P: KeyParts + ?Sized>(
        parts: &mut P,
        grade: Grade,
    ) -> Result<Ribbon2, PartsError<P::Error>> {
        // Part sizes fix the shard counts; then each key goes to its shard.
        let (mut n, mut in_a) = (0u64, 0u64);
        parts
            .for_each_part(&mut |part| {
                let keys = distinct_keys(part);
                n += keys.len() as u64;
                in_a += keys
                    .iter()
                    .filter(|k| super::selector(k.to_u64()) < grade.split)
                    .count() as u64;
            })
            .map_err(PartsError::Read)?;
        if n > u64::from(u32::MAX / 2) {
            return Err(PartsError::Filter(FilterError::BadDocument(format!(
                "{n} keys are too many for one ribbon"
            ))));
        }
        let shards_a = shards_for(in_a);
        let shards_b = if grade.k == 0 {
            // Part B of 0 bits passes every key: one empty shard.
            u32::from(in_a < n)
        } else {
            shards_for(n - in_a)
        };
        let mut shards = Shards::new(grade, shards_a, shards_a + shards_b);
        parts
            .for_each_part(&mut |part| shards.add(&distinct_keys(part)))
            .map_err(PartsError::Read)?;
        Ok(shards.finish(n as u32))
    }
}

/// The shards of one build, solved as their keys arrive: a shard is solved once a key
/// of a later shard of its part has been seen (or at the end), so only the last shard
/// of each part seen waits for more keys.
struct Shards {
    grade: Grade,
    shards_a: u32,
    total: u32,
    /// Per part (A, B): the shard waiting for more keys, and its keys.
    open: [(usize, Vec<u64>); 2],
    /// Per part: the shards solved, and their blocks.
    described: [Vec<Described>; 2],
    blocks: [Vec<u64>; 2],
    band: Band<u32>,
    columns: Vec<u64>,
    /// A part's keys grouped by shard, reused part after part.
    grouped: Vec<u64>,
    starts: Vec<usize>,
}

impl Shards {
    fn new(grade: Grade, shards_a: u32, total: u32) -> Shards {
        Shards {
            grade,
            shards_a,
            total,
            open: [(0, Vec::new()), (shards_a as usize, Vec::new())],
            described: [Vec::new(), Vec::new()],
            blocks: [Vec::new(), Vec::new()],
            band: Band::<u32>::new(0),
            columns: Vec::new(),
            grouped: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Takes one part's distinct keys.
    fn add(&mut self, keys: &[Key]) {
        if keys.is_empty() {
            return;
        }
        let (split, shards_a, total) = (self.grade.split, self.shards_a, self.total);
        // Every key has a shard: its part has keys, so shards.
        let index = |key: u64| shard_index(key, split, shards_a, total).unwrap_or_default();
        // Grouped by shard (one counting pass over the shards this part touches), in
        // the order the keys came.
        let (lo, hi) = keys.iter().fold((usize::MAX, 0), |(lo, hi), key| {
            let i = index(key.to_u64());
            (lo.min(i), hi.max(i))
        });
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(hi - lo + 2, 0);
        for key in keys {
            starts[index(key.to_u64()) - lo + 1] += 1;
        }
        for i in 0..=hi - lo {
            starts[i + 1] += starts[i];
        }
        self.grouped.clear();
        self.grouped.resize(keys.len(), 0);
        let mut next = starts.clone();
        for key in keys {
            let key = key.to_u64();
            let at = &mut next[index(key) - lo];
            self.grouped[*at] = key;
            *at += 1;
        }
        for i in lo..=hi {
            let (start, end) = (self.starts[i - lo], self.starts[i - lo + 1]);
            if start < end {
                let part = usize::from(i >= shards_a as usize);
                self.advance(part, i);
                self.open[part]
                    .1
                    .extend_from_slice(&self.grouped[start..end]);
            }
        }
    }

    /// Solves the open shard of `part` and every shard before `to`, `to` then open.
    fn advance(&mut self, part: usize, to: usize) {
        while self.open[part].0 < to {
            let (i, keys) = std::mem::take(&mut self.open[part]);
            self.solve(part, &keys);
            self.open[part] = (i + 1, keys);
            self.open[part].1.clear();
        }
    }

    /// Solves one shard of `part` (the next in storage order) from its keys.
    fn solve(&mut self, part: usize, keys: &[u64]) {
        let part_a = part == 0;
        let bits = if part_a {
            self.grade.k + 1
        } else {
            self.grade.k
        };
        let (m, seed) = if bits == 0 {
            (0, 0)
        } else {
            solve(keys, part_a, bits, &mut self.band)
        };
        let layout = Layout { m, bits, offset: 0 };
        let described = Described { m, bits, seed };
        if m > 0 {
            self.columns.clear();
            self.columns
                .resize(layout.bits_len().div_ceil(64) as usize + 2, 0);
            self.band.solve_into(layout, &mut self.columns);
            push_blocks(described, &self.columns, 0, &mut self.blocks[part]);
        }
        self.described[part].push(described);
    }

    /// The filter of `n` keys, every shard solved.
    fn finish(mut self, n: u32) -> Ribbon2 {
        let ends = [self.shards_a as usize, self.total as usize];
        for (part, end) in ends.into_iter().enumerate() {
            self.advance(part, end);
        }
        let [mut described, described_b] = self.described;
        described.extend(described_b);
        let [mut blocks, blocks_b] = self.blocks;
        blocks.extend(blocks_b);
        Ribbon2::from_blocks(n, self.grade, self.shards_a, &described, blocks)
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
