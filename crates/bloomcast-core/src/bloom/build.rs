//! Setting the bits of many keys at once, fast at any filter size.
//!
//! Each key sets k bits spread over the whole array. Once the array outgrows the L2
//! cache, inserting keys one by one makes nearly every one of those bits a cache miss:
//! a build of millions of keys then waits on memory, not arithmetic. Three regimes,
//! chosen by the array's size: up to L2, keys are set directly; up to about half of
//! L3, directly but with each key's lines prefetched some keys ahead so the misses
//! overlap; beyond, the keys' positions are partitioned by the region of the array
//! they fall in (a counting sort on the positions' high bits), then set region by
//! region, each region small enough to stay in L1 while its bits are set.
//!
//! The bits are exactly those of inserting the keys one by one, in any order and with
//! any repetitions: setting a bit is idempotent and commutative. That is what lets a
//! union skip deduplicating its keys before building, and lets the sizing loop and
//! sealing use this path without changing a single published byte.

use super::hash::Modulus;
use super::prefetch::prefetch;
use super::Key;

/// Bits per region, at least: 2^18 bits is 32 KiB of filter, the size of L1, so the
/// bits of a region are set at L1 speed (measured: faster than 2^16 and 2^20).
const REGION_SHIFT: u32 = 18;

/// Regions, at most: placing positions writes to one stream per region, and past a
/// few hundred streams every write misses cache and TLB (profiled at 58.7M keys:
/// half the build in that store with 1950 regions; 256 took 4.6 s where 1950 took
/// 6.4 and 64 took 5.6). Larger filters get larger regions.
const MAX_REGIONS: u32 = 256;

/// Arrays up to this many words (1 MiB) stay in L2 anyway: keys are set directly.
const DIRECT_WORDS: usize = 1 << 17;

/// Arrays up to this many words (16 MiB) fit in the L3 of the machines measured
/// (32 MiB, shared): keys are set directly with their cache lines prefetched a few
/// keys ahead, which beat partitioning at 9.6M keys (about 420 against 760 ms per
/// union). Larger arrays miss L3 too, and partitioning wins (6.3 against 10.7 s at
/// 58.7M keys).
const PREFETCH_WORDS: usize = 1 << 21;

/// Keys whose lines are prefetched before their bits are set: 16 keys is about 110
/// lines in flight at k = 7, enough to cover L3 latency (measured 4, 8, 16, 32: 16 best).
const AHEAD: usize = 16;

/// Positions buffered per chunk, at most: 64 MiB of `u32`. Per chunk the filter is
/// swept once region by region, so the buffer must hold several positions per cache
/// line of filter for that sweep to cost less than the positions themselves
/// (measured at 58.7M keys: 6.3 s with this cap, 8.4 s with a quarter of it).
const MAX_CHUNK_POSITIONS: usize = 1 << 24;

/// Sets the bits of every key of every set in `words`, an array of `modulus.m()` bits
/// probed at `k` positions per key.
pub(crate) fn set_keys(words: &mut [u64], modulus: Modulus, k: u32, sets: &[&[Key]]) {
    if words.len() <= DIRECT_WORDS {
        for key in sets.iter().flat_map(|set| set.iter()) {
            for pos in key.positions_mod(modulus, k) {
                set_bit(words, pos);
            }
        }
    } else if words.len() <= PREFETCH_WORDS {
        set_prefetching(words, modulus, k, sets);
    } else {
        // Four positions per filter word (256 per 64-byte line): sweeping the filter
        // once per chunk then costs about a byte of memory traffic per position.
        let chunk_positions = (words.len() * 4).min(MAX_CHUNK_POSITIONS);
        let chunk_keys = (chunk_positions / k as usize).max(1);
        set_partitioned(words, modulus, k, sets, chunk_keys);
    }
}

#[inline(always)]
fn set_bit(words: &mut [u64], pos: u32) {
    words[(pos >> 6) as usize] |= 1u64 << (pos & 63);
}

/// Direct setting, with the positions of the key [`AHEAD`] keys on computed into a
/// ring and their cache lines prefetched, so misses overlap instead of queueing.
fn set_prefetching(words: &mut [u64], modulus: Modulus, k: u32, sets: &[&[Key]]) {
    let k = k as usize;
    let mut ring = vec![0u32; AHEAD * k];
    let load = |slot: usize, key: &Key, words: &[u64], ring: &mut [u32]| {
        let slot = &mut ring[slot * k..(slot + 1) * k];
        for (to, pos) in slot.iter_mut().zip(key.positions_mod(modulus, k as u32)) {
            *to = pos;
            prefetch(words, pos);
        }
    };
    let keys = sets.iter().flat_map(|set| set.iter());
    let mut ahead = keys.clone();
    for (slot, key) in ahead.by_ref().take(AHEAD).enumerate() {
        load(slot, key, words, &mut ring);
    }
    for (i, _) in keys.enumerate() {
        let slot = i % AHEAD;
        for j in 0..k {
            set_bit(words, ring[slot * k + j]);
        }
        if let Some(key) = ahead.next() {
            load(slot, key, words, &mut ring);
        }
    }
}

/// The partitioned build: per chunk of keys, count positions per region, place them
/// region by region in a buffer (computing each key's positions a second time is
/// cheaper than storing and re-reading them), then set them region by region.
fn set_partitioned(
    words: &mut [u64],
    modulus: Modulus,
    k: u32,
    sets: &[&[Key]],
    chunk_keys: usize,
) {
    let shift = REGION_SHIFT.max((modulus.m() / MAX_REGIONS).max(1).ilog2() + 1);
    let regions = (modulus.m() >> shift) as usize + 1;
    let total: usize = sets.iter().map(|s| s.len()).sum();
    let chunk_keys = chunk_keys.min(total).max(1);
    let mut buffer = vec![0u32; chunk_keys * k as usize];
    let mut starts = vec![0usize; regions + 1];
    let mut next = vec![0usize; regions];
    for chunk in Chunks::new(sets, chunk_keys) {
        starts.fill(0);
        for key in chunk.iter().flat_map(|piece| piece.iter()) {
            for pos in key.positions_mod(modulus, k) {
                starts[(pos >> shift) as usize] += 1;
            }
        }
        let mut sum = 0;
        for (start, next) in starts.iter_mut().zip(next.iter_mut()) {
            let count = *start;
            *start = sum;
            *next = sum;
            sum += count;
        }
        starts[regions] = sum;
        for key in chunk.iter().flat_map(|piece| piece.iter()) {
            for pos in key.positions_mod(modulus, k) {
                let slot = &mut next[(pos >> shift) as usize];
                buffer[*slot] = pos;
                *slot += 1;
            }
        }
        for region in starts.windows(2) {
            for &pos in &buffer[region[0]..region[1]] {
                set_bit(words, pos);
            }
        }
    }
}

/// Cuts a list of key sets into chunks of at most `size` keys, each chunk a list of
/// slices, without copying a key.
struct Chunks<'a> {
    sets: &'a [&'a [Key]],
    set: usize,
    offset: usize,
    size: usize,
}

impl<'a> Chunks<'a> {
    fn new(sets: &'a [&'a [Key]], size: usize) -> Self {
        Chunks {
            sets,
            set: 0,
            offset: 0,
            size,
        }
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Vec<&'a [Key]>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut pieces = Vec::new();
        let mut room = self.size;
        while room > 0 && self.set < self.sets.len() {
            let rest = &self.sets[self.set][self.offset..];
            let take = rest.len().min(room);
            if take > 0 {
                pieces.push(&rest[..take]);
            }
            room -= take;
            if take == rest.len() {
                self.set += 1;
                self.offset = 0;
            } else {
                self.offset += take;
            }
        }
        (!pieces.is_empty()).then_some(pieces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u32, salt: u32) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("{salt}:{i}"))).collect()
    }

    fn one_by_one(m: u32, k: u32, sets: &[&[Key]]) -> Vec<u64> {
        let mut words = vec![0; (m as usize).div_ceil(64)];
        for key in sets.iter().flat_map(|s| s.iter()) {
            for pos in key.positions(m, k) {
                words[(pos >> 6) as usize] |= 1 << (pos & 63);
            }
        }
        words
    }

    #[test]
    fn partitioned_bits_equal_one_by_one_inserts() {
        let (a, b) = (keys(30_000, 1), keys(7_000, 2));
        let sets: &[&[Key]] = &[&a, &b[..0], &b, &a[..100]];
        // Several regions, a last region only partly used, one chunk or many; the
        // last shape is large enough for regions wider than REGION_SHIFT.
        for (m, k) in [
            (3 << 20, 7u32),
            ((5 << 20) + 77, 3),
            (1_000_003, 13),
            ((1 << 27) + 5, 5),
        ] {
            for chunk_keys in [1, 999, 1 << 20] {
                let mut words = vec![0; (m as usize).div_ceil(64)];
                set_partitioned(&mut words, Modulus::new(m), k, sets, chunk_keys);
                assert_eq!(
                    words,
                    one_by_one(m, k, sets),
                    "m {m} k {k} chunk {chunk_keys}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn any_keys_any_shape_set_the_same_bits_partitioned(
            raw in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..2000),
            split in 0usize..2000,
            m in 8u32..(4 << 20),
            k in 1u32..=64,
            chunk_keys in 1usize..500,
        ) {
            let keys: Vec<Key> = raw.into_iter().map(Key::from_u64).collect();
            let (a, b) = keys.split_at(split.min(keys.len()));
            let sets: &[&[Key]] = &[a, b, a];
            let mut words = vec![0; (m as usize).div_ceil(64)];
            set_partitioned(&mut words, Modulus::new(m), k, sets, chunk_keys);
            proptest::prop_assert_eq!(words, one_by_one(m, k, sets));
        }
    }

    #[test]
    fn prefetching_bits_equal_one_by_one_inserts() {
        let (a, b) = (keys(20_000, 1), keys(5, 2));
        for sets in [&[&a[..], &b[..0], &b, &a[..100]][..], &[&b[..]], &[]] {
            for (m, k) in [(3 << 20, 7u32), (1_000_003, 13), (64, 1)] {
                let mut words = vec![0; (m as usize).div_ceil(64)];
                set_prefetching(&mut words, Modulus::new(m), k, sets);
                assert_eq!(words, one_by_one(m, k, sets), "m {m} k {k}");
            }
        }
    }

    #[test]
    fn chunks_cover_every_key_once_in_order() {
        let (a, b, c) = (keys(10, 1), keys(0, 2), keys(25, 3));
        let sets: &[&[Key]] = &[&a, &b, &c];
        for size in [1, 3, 10, 11, 100] {
            let chunks: Vec<Vec<&[Key]>> = Chunks::new(sets, size).collect();
            assert!(chunks
                .iter()
                .all(|c| c.iter().map(|p| p.len()).sum::<usize>() <= size));
            let flat: Vec<Key> = chunks
                .iter()
                .flatten()
                .flat_map(|p| p.iter().copied())
                .collect();
            let expected: Vec<Key> = a.iter().chain(&c).copied().collect();
            assert_eq!(flat, expected, "size {size}");
        }
    }
}
