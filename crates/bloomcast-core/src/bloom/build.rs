//! Setting the bits of many keys at once, fast at any filter size.
//!
//! Each key sets k bits spread over the whole array. Once the array outgrows the L2
//! cache, inserting keys one by one makes nearly every one of those bits a cache miss:
//! a build of millions of keys then waits on memory, not arithmetic. Two regimes,
//! chosen by the array's size: up to half of L2, keys are set directly; beyond, each
//! chunk of keys has its positions placed by the region of the array they fall in,
//! then set region by region, each region small enough to stay in L2 while its bits
//! are set.
//!
//! The bits are exactly those of inserting the keys one by one, in any order and with
//! any repetitions: setting a bit is idempotent and commutative. That is what lets a
//! union skip deduplicating its keys before building, and lets the sizing loop and
//! sealing use this path without changing a single published byte.

use super::hash::Modulus;
use super::Key;

/// Bits per region: 2^21 bits is 256 KiB of filter, a quarter to an eighth of the L2
/// of the machines measured (1 and 2 MiB), so a region stays there while its bits are
/// set. Measured on the 2 MiB one with 128 KiB, 512 KiB and 1 MiB regions beside it, at
/// 9.6M and 58.7M keys: 256 KiB was the fastest at both sizes. Against the two builds
/// it replaced (keys set directly with their lines prefetched, and positions counted
/// then placed by L1-sized region): 25-30% less time at 58.7M keys, the same at 9.6M
/// (docs/BENCHMARKS.md, "Unions").
const REGION_SHIFT: u32 = 21;

/// Arrays up to this many words (1 MiB) stay in L2 anyway: keys are set directly.
const DIRECT_WORDS: usize = 1 << 17;

/// Positions placed per chunk, at most: 64 MiB of `u32`. Per chunk the filter is
/// swept once region by region, so a chunk must hold several positions per cache line
/// of filter for that sweep to cost less than the positions themselves.
const MAX_CHUNK_POSITIONS: usize = 1 << 24;

/// Sets the bits of every key of every set in `words`, an array of `modulus.m()` bits
/// probed at `k` positions per key.
#[cfg(test)]
fn set_keys(words: &mut [u64], modulus: Modulus, k: u32, sets: &[&[Key]]) {
    let mut setter = Setter::new(words, modulus, k);
    setter.add(sets);
    setter.finish();
}

#[inline(always)]
fn set_bit(words: &mut [u64], pos: u32) {
    words[(pos >> 6) as usize] |= 1u64 << (pos & 63);
}

/// Sets the bits of keys handed over in any number of calls (a union read part by
/// part), as one [`set_keys`] over all of them would.
pub(crate) struct Setter<'w> {
    words: &'w mut [u64],
    modulus: Modulus,
    k: u32,
    /// The positions placed and not set yet, beyond the direct regime.
    rooms: Option<Rooms>,
}

/// The regioned build: per chunk of keys, each position is placed in its region's room
/// in a buffer as it is computed, then the rooms are set region by region. Keys are
/// uniform, so a room an eighth larger than a region's share of the chunk is nearly
/// never full; a position that finds its room full (keys that are not uniform: many
/// repeats) is set at once, which sets the same bit.
struct Rooms {
    /// `room` positions per region, region after region.
    placed: Vec<u32>,
    /// How many of each region's room are placed.
    filled: Vec<usize>,
    room: usize,
    /// Keys per chunk, and how many of the chunk are placed.
    chunk_keys: usize,
    in_chunk: usize,
}

impl<'w> Setter<'w> {
    pub(crate) fn new(words: &'w mut [u64], modulus: Modulus, k: u32) -> Setter<'w> {
        // Two positions per filter word (128 per 64-byte line), in a buffer about the
        // size of the filter: the sweep then costs about two bytes of memory traffic
        // per position (measured against four per word: the same time, twice the
        // memory).
        let rooms = (words.len() > DIRECT_WORDS)
            .then(|| Rooms::new(modulus, k, (words.len() * 2).min(MAX_CHUNK_POSITIONS)));
        Setter {
            words,
            modulus,
            k,
            rooms,
        }
    }

    #[cfg(test)]
    fn with_chunk(words: &'w mut [u64], modulus: Modulus, k: u32, chunk_positions: usize) -> Self {
        let rooms = Some(Rooms::new(modulus, k, chunk_positions));
        Setter {
            words,
            modulus,
            k,
            rooms,
        }
    }

    /// Sets (or places, to be set by region) the bits of every key of `sets`.
    pub(crate) fn add(&mut self, sets: &[&[Key]]) {
        self.add_keys(sets.iter().flat_map(|set| set.iter()));
    }

    /// [`Setter::add`] for keys one by one.
    pub(crate) fn add_keys<'k>(&mut self, keys: impl IntoIterator<Item = &'k Key>) {
        let (modulus, k) = (self.modulus, self.k);
        let Some(rooms) = &mut self.rooms else {
            for key in keys {
                for pos in key.positions_mod(modulus, k) {
                    set_bit(self.words, pos);
                }
            }
            return;
        };
        for key in keys {
            for pos in key.positions_mod(modulus, k) {
                let region = (pos >> REGION_SHIFT) as usize;
                let at = rooms.filled[region];
                if at < rooms.room {
                    rooms.placed[region * rooms.room + at] = pos;
                    rooms.filled[region] = at + 1;
                } else {
                    set_bit(self.words, pos);
                }
            }
            rooms.in_chunk += 1;
            if rooms.in_chunk == rooms.chunk_keys {
                rooms.sweep(self.words);
            }
        }
    }

    /// Sets the bits still placed.
    pub(crate) fn finish(mut self) {
        if let Some(rooms) = &mut self.rooms {
            rooms.sweep(self.words);
        }
    }
}

impl Rooms {
    fn new(modulus: Modulus, k: u32, chunk_positions: usize) -> Rooms {
        let regions = (modulus.m() >> REGION_SHIFT) as usize + 1;
        let share = chunk_positions / regions;
        let room = share + share / 8 + 256;
        Rooms {
            placed: vec![0u32; room * regions],
            filled: vec![0usize; regions],
            room,
            chunk_keys: (chunk_positions / k as usize).max(1),
            in_chunk: 0,
        }
    }

    /// Sets every position placed, region by region, and empties the rooms.
    fn sweep(&mut self, words: &mut [u64]) {
        for (placed, filled) in self.placed.chunks(self.room).zip(self.filled.iter_mut()) {
            for &pos in &placed[..*filled] {
                set_bit(words, pos);
            }
            *filled = 0;
        }
        self.in_chunk = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u32, salt: u32) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("{salt}:{i}"))).collect()
    }

    /// Every set handed over at once to a regioned setter of `chunk_positions`.
    fn by_region(
        words: &mut [u64],
        modulus: Modulus,
        k: u32,
        sets: &[&[Key]],
        chunk_positions: usize,
    ) {
        let mut setter = Setter::with_chunk(words, modulus, k, chunk_positions);
        setter.add(sets);
        setter.finish();
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
    fn regioned_bits_equal_one_by_one_inserts() {
        let (a, b) = (keys(30_000, 1), keys(7_000, 2));
        let sets: &[&[Key]] = &[&a, &b[..0], &b, &a[..100]];
        // One region or many, a last region only partly used; chunks of one key (rooms
        // of a few positions, some full), of many, and of every key at once.
        for (m, k) in [
            (3 << 20, 7u32),
            ((5 << 20) + 77, 3),
            (1_000_003, 13),
            ((1 << 27) + 5, 5),
        ] {
            for chunk_positions in [1, 999, 1 << 22] {
                let mut words = vec![0; (m as usize).div_ceil(64)];
                by_region(&mut words, Modulus::new(m), k, sets, chunk_positions);
                assert_eq!(
                    words,
                    one_by_one(m, k, sets),
                    "m {m} k {k} chunk {chunk_positions}"
                );
            }
        }
    }

    #[test]
    fn repeated_keys_overflowing_their_rooms_set_the_same_bits() {
        // One key many times puts every position of a chunk in k regions: their rooms
        // fill, and the rest are set at once.
        let one = keys(1, 9);
        let many = vec![one[0]; 50_000];
        let sets: &[&[Key]] = &[&many, &keys(3_000, 4)];
        let m = (1 << 26) + 3;
        let mut words = vec![0; (m as usize).div_ceil(64)];
        by_region(&mut words, Modulus::new(m), 7, sets, 1 << 16);
        assert_eq!(words, one_by_one(m, 7, sets));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn any_keys_any_shape_set_the_same_bits_by_region(
            raw in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..2000),
            split in 0usize..2000,
            m in 8u32..(16 << 20),
            k in 1u32..=64,
            chunk_positions in 1usize..5000,
        ) {
            let keys: Vec<Key> = raw.into_iter().map(Key::from_u64).collect();
            let (a, b) = keys.split_at(split.min(keys.len()));
            let sets: &[&[Key]] = &[a, b, a];
            let mut words = vec![0; (m as usize).div_ceil(64)];
            by_region(&mut words, Modulus::new(m), k, sets, chunk_positions);
            proptest::prop_assert_eq!(words, one_by_one(m, k, sets));
        }
    }

    #[test]
    fn every_size_sets_the_bits_of_one_by_one_inserts() {
        // Each regime through the entry point: direct, and by region.
        let a = keys(20_000, 5);
        for m in [64, 1_000_003, (DIRECT_WORDS as u32 * 64) + 64, 3 << 24] {
            let mut words = vec![0; (m as usize).div_ceil(64)];
            set_keys(&mut words, Modulus::new(m), 7, &[&a, &a[..10]]);
            assert_eq!(words, one_by_one(m, 7, &[&a, &a[..10]]), "m {m}");
        }
    }

    #[test]
    fn keys_handed_over_part_by_part_set_the_bits_of_one_set_keys() {
        // Parts of any size, some cut inside a chunk, some empty, in either regime.
        let (a, b) = (keys(30_000, 6), keys(9_000, 7));
        let sets: &[&[Key]] = &[&a, &b, &a[..50]];
        let parts: [&[&[Key]]; 4] = [
            &[&a[..7]],
            &[],
            &[&a[7..], &b[..4_000]],
            &[&b[4_000..], &a[..50]],
        ];
        for (m, chunk_positions) in [
            (1_000_003, None),
            ((5 << 20) + 77, Some(999)),
            (3 << 24, None),
        ] {
            let mut words = vec![0; (m as usize).div_ceil(64)];
            let mut setter = match chunk_positions {
                Some(chunk) => Setter::with_chunk(&mut words, Modulus::new(m), 7, chunk),
                None => Setter::new(&mut words, Modulus::new(m), 7),
            };
            for part in parts {
                setter.add(part);
            }
            setter.finish();
            assert_eq!(words, one_by_one(m, 7, sets), "m {m}");
        }
    }
}
