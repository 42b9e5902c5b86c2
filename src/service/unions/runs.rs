//! A union's keys as runs, one per hour read, handed to the union's builder part by
//! part ([`KeyParts`]), so that a build holds its output and one part of its input
//! rather than every key of its range.
//!
//! A range of few keys is one part, its runs held in memory as read. Past
//! [`PART_KEYS`] keys, the keys are cut into parts by the top bits of their rank in an
//! [`Order`] (uniform: they are SHA-1 prefixes): each run is sorted in it (sealed hours
//! come sorted in the keys' own), cut at the part bounds by binary search and
//! written to a temporary file (unlinked at once, in the system's temporary directory:
//! `TMPDIR`), and each part is read back from every run in turn, once to count the
//! union's distinct keys and once per size its build tries. No key is in two parts,
//! so the parts' distinct counts add up to the union's.
//!
//! Lock order: no lock.

use crate::bloom::{Key, KeyParts};
use crate::service::{Result, ServiceError};
use crate::store::{blob_to_keys, keys_to_blob};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Keys per part the cut aims at (512 KiB of keys): a range of more is built from a
/// file. Smaller parts hold less but take more reads (one per run and part); at 24
/// hours of 400,000 keys, 256 parts of about 37,500 keys, 6,144 reads of 12 KiB.
pub(in crate::service) const PART_KEYS: u64 = 1 << 16;

/// What reading a part of runs of `keys` in all holds at most, for reserving it: the
/// part's keys (parts of uniform keys stay well within twice their share) and the
/// bytes of one run's share of it as read.
pub(in crate::service) fn part_bytes(keys: u64) -> u64 {
    let key = std::mem::size_of::<Key>() as u64;
    let parts = keys.div_ceil(PART_KEYS).max(1).next_power_of_two();
    3 * keys.div_ceil(parts) * key
}

/// The order of a spilled run's keys, which cuts the parts: a part is a range of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::service) enum Order {
    /// The keys' own: sealed hours come in it, so they are written as they are read
    /// (a Bloom filter's bits do not care about the order of parts).
    Keys,
    /// Their low 56 bits, then their top byte: a version 2 compact body routes keys to
    /// shards by those 56 bits (`bloom::ribbon2`), so parts in this order hand its
    /// builder each shard's keys in turn. Each run is sorted once so.
    Shards,
}

impl Order {
    /// Where `key` sorts.
    fn rank(self, key: &Key) -> u64 {
        match self {
            Order::Keys => key.to_u64(),
            Order::Shards => key.to_u64().rotate_left(8),
        }
    }
}

/// The runs of one union build.
pub(in crate::service) struct Runs {
    /// Parts are the values of the top `bits` of the keys' rank in `order` (0: one part,
    /// held).
    bits: u32,
    order: Order,
    /// The spilled runs' keys, created with the first.
    file: Option<File>,
    /// Bytes written to `file`.
    written: u64,
    runs: Vec<Run>,
    /// A spilled run's part as read back, one per run, reused part after part.
    read: Vec<Vec<Key>>,
    bytes: Vec<u8>,
}

struct Run {
    /// The keys, when held in memory (one part).
    held: Option<Vec<Key>>,
    /// Where the run starts in the file, in keys.
    offset: u64,
    /// `bounds[b]..bounds[b + 1]` is part `b` of the run.
    bounds: Vec<usize>,
}

impl Runs {
    /// Runs of about `expected` keys in all: cut into parts of about [`PART_KEYS`] in
    /// `order`.
    pub fn new(expected: u64, order: Order) -> Runs {
        let parts = expected.div_ceil(PART_KEYS).max(1);
        Runs {
            bits: parts.next_power_of_two().trailing_zeros(),
            order,
            file: None,
            written: 0,
            runs: Vec::new(),
            read: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Runs held in memory however many keys they hold: one part.
    pub fn held() -> Runs {
        Runs::new(0, Order::Keys)
    }

    /// These runs with `keys` as one more ([`Runs::push`]), written to their file off
    /// the runtime when spilled.
    ///
    /// # Errors
    /// `Spill` when the temporary file cannot be made or written.
    pub async fn add(mut self, keys: Vec<Key>) -> Result<Runs> {
        if !self.spilled() {
            self.push(keys).map_err(ServiceError::Spill)?;
            return Ok(self);
        }
        tokio::task::spawn_blocking(move || self.push(keys).map(|()| self))
            .await?
            .map_err(ServiceError::Spill)
    }

    /// Bytes of keys these runs hold in memory now: the held runs' (a spilled run's
    /// keys are in the file).
    pub fn held_bytes(&self) -> u64 {
        let key = std::mem::size_of::<Key>() as u64;
        self.runs
            .iter()
            .filter_map(|run| run.held.as_ref())
            .map(|keys| keys.capacity() as u64 * key)
            .sum()
    }

    /// Whether the runs go to a file.
    pub fn spilled(&self) -> bool {
        self.bits > 0
    }

    /// Adds one hour's keys, in any order, as a run: held, or sorted and written to
    /// the file.
    ///
    /// # Errors
    /// When the temporary file cannot be made or written.
    pub fn push(&mut self, mut keys: Vec<Key>) -> io::Result<()> {
        if !self.spilled() {
            let bounds = vec![0, keys.len()];
            self.runs.push(Run {
                held: Some(keys),
                offset: 0,
                bounds,
            });
            return Ok(());
        }
        let order = self.order;
        if !keys
            .windows(2)
            .all(|w| order.rank(&w[0]) < order.rank(&w[1]))
        {
            keys.sort_unstable_by_key(|key| order.rank(key));
            keys.dedup();
        }
        let top = |key: &Key| order.rank(key) >> (64 - self.bits);
        let bounds = (0..=1u64 << self.bits)
            .map(|b| keys.partition_point(|key| top(key) < b))
            .collect();
        let file = match &mut self.file {
            Some(file) => file,
            none => none.insert(tempfile::tempfile()?),
        };
        let offset = self.written / 8;
        // As the store keeps keys, a chunk at a time.
        for chunk in keys.chunks(8192) {
            let bytes = keys_to_blob(chunk);
            file.write_all_at(&bytes, self.written)?;
            self.written += bytes.len() as u64;
        }
        self.runs.push(Run {
            held: None,
            offset,
            bounds,
        });
        Ok(())
    }
}

impl KeyParts for Runs {
    type Error = io::Error;

    fn for_each_part(&mut self, each: &mut dyn FnMut(&[&[Key]])) -> io::Result<()> {
        let Runs {
            bits,
            file,
            runs,
            read,
            bytes,
            ..
        } = self;
        read.resize_with(runs.len(), Vec::new);
        for part in 0..1usize << *bits {
            for (run, into) in runs.iter().zip(read.iter_mut()) {
                into.clear();
                let (start, end) = (run.bounds[part], run.bounds[part + 1]);
                if run.held.is_some() || start == end {
                    continue;
                }
                let file = file.as_ref().expect("a spilled run has its file");
                bytes.resize((end - start) * 8, 0);
                file.read_exact_at(bytes, (run.offset + start as u64) * 8)?;
                blob_to_keys(bytes, into).map_err(io::Error::other)?;
            }
            let slices: Vec<&[Key]> = runs
                .iter()
                .zip(read.iter())
                .map(|(run, into)| match &run.held {
                    Some(keys) => &keys[..],
                    None => &into[..],
                })
                .collect();
            each(&slices);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{union_by, union_in_parts, Sizing};

    fn keys(from: u32, to: u32) -> Vec<Key> {
        (from..to).map(|i| Key::of(&format!("run-{i}"))).collect()
    }

    #[test]
    fn a_range_of_few_keys_is_held_in_one_part() {
        let mut runs = Runs::new(1000, Order::Keys);
        runs.push(keys(0, 600)).unwrap();
        runs.push(keys(500, 900)).unwrap();
        assert!(!runs.spilled());
        assert!(runs.file.is_none());
        let mut parts = 0;
        runs.for_each_part(&mut |part| {
            parts += 1;
            assert_eq!(part.len(), 2);
        })
        .unwrap();
        assert_eq!(parts, 1);
    }

    #[test]
    fn spilled_runs_build_the_union_held_runs_build_bit_for_bit() {
        // Sorted hours, an unsorted one with repeats, overlaps and an empty one, cut
        // into 8 parts.
        let mut sorted = keys(0, 40_000);
        sorted.sort_unstable();
        let mut open = keys(30_000, 70_000);
        open.extend(keys(30_000, 30_100));
        let hours = [sorted, keys(60_000, 100_000), Vec::new(), open];
        for order in [Order::Keys, Order::Shards] {
            let mut runs = Runs::new(PART_KEYS * 7, order);
            for hour in &hours {
                runs.push(hour.clone()).unwrap();
            }
            assert!(runs.spilled());
            assert_eq!(runs.bits, 3);
            let held: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
            for sizing in [Sizing::Probes, Sizing::Classic] {
                let (filter, count) = union_in_parts(&mut runs, 0.01, sizing, |c| c).unwrap();
                let (expected, expected_count) = union_by(&held, 0.01, sizing).unwrap();
                assert_eq!(count, 100_000);
                assert_eq!(expected_count, count);
                assert_eq!(
                    filter.to_bytes(),
                    expected.to_bytes(),
                    "{order:?} {sizing:?}"
                );
            }
            let grade = crate::bloom::Grade { k: 7, split: 0 };
            let mut all: Vec<Key> = held.concat();
            all.sort_unstable();
            all.dedup();
            let ribbon = crate::bloom::Ribbon2::build(&all, grade).unwrap();
            if order == Order::Shards {
                let parted = crate::bloom::Ribbon2::build_in_parts(&mut runs, grade).unwrap();
                assert_eq!(parted.to_bytes(), ribbon.to_bytes());
            }
        }
    }

    #[test]
    fn every_part_holds_only_keys_of_its_rank_s_top_bits_in_rank_order() {
        let mut runs = Runs::new(PART_KEYS * 3, Order::Shards);
        runs.push(keys(0, 5_000)).unwrap();
        runs.push(keys(2_000, 9_000)).unwrap();
        let mut part = 0u64;
        let mut seen = 0;
        runs.for_each_part(&mut |sets| {
            for set in sets {
                let rank = |key: &Key| Order::Shards.rank(key);
                assert!(set.windows(2).all(|w| rank(&w[0]) < rank(&w[1])));
                for key in set.iter() {
                    assert_eq!(rank(key) >> 62, part);
                    seen += 1;
                }
            }
            part += 1;
        })
        .unwrap();
        assert_eq!(part, 4);
        assert_eq!(seen, 12_000, "each run's keys once");
    }
}
