//! The exact form against the crate that does the same job, in one run (the "keep or
//! delete" rule, docs/BENCHMARKS.md): Mozilla's `clubcard` (0.3, CRLite's exact filter,
//! 256-wide bands) and `bloomcast::exact` over the same random universes and changed
//! sets, each checked exact over its whole universe: bytes against `log2(C(N, r))/8`
//! (ours with its header; clubcard's `approximate_size_of`, its solution words alone) and
//! build time on one core.
//!
//! ```text
//! cargo run --release --example exact_vs_clubcard
//! ```

use bloomcast::bloom::Key;
use bloomcast::exact::{floor_bits, Exact};
use clubcard::builder::{ApproximateRibbon, ClubcardBuilder, ExactRibbon};
use clubcard::{ApproximateSizeOf, AsQuery, Equation, Filterable, Queryable};
use std::time::Instant;

/// Band words of clubcard's equations (its own example's choice).
const W: usize = 4;
const BLOCK: [u8; 0] = [];

struct Universe;
impl ApproximateSizeOf for Universe {}

/// A universe key as clubcard takes it: its equations come from mixing the key.
struct Item {
    key: u64,
    included: bool,
    bytes: [u8; 8],
}

impl AsQuery<W> for Item {
    fn as_query(&self, m: usize) -> Equation<W> {
        let mut a = [0u64; W];
        let mut z = self.key;
        for x in &mut a {
            z = mix64(z ^ 0x9e37_79b9_7f4a_7c15);
            *x = z;
        }
        a[0] |= 1;
        let s = (mix64(z) as usize) % m.max(1);
        Equation::inhomogeneous(s, a, u8::from(!self.included))
    }
    fn block(&self) -> &[u8] {
        &BLOCK
    }
    fn discriminant(&self) -> &[u8] {
        &self.bytes
    }
}

impl Filterable<W> for Item {
    fn included(&self) -> bool {
        self.included
    }
}

impl Queryable<W> for Item {
    type UniverseMetadata = Universe;
    type PartitionMetadata = ();
    fn in_universe(&self, _: &Universe) -> bool {
        true
    }
}

fn main() {
    println!("| N | r/N | floor B | bloomcast B | x floor | build ms | clubcard B | x floor | build ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in [10_000usize, 100_000, 2_000_000] {
        let mut state = n as u64;
        let keys: Vec<u64> = (0..n)
            .map(|_| {
                state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
                state
            })
            .collect();
        for fraction in [0.001, 0.01, 0.1, 0.2, 0.5] {
            let r = (n as f64 * fraction).round() as usize;
            let floor = floor_bits(n as u64, r as u64) / 8.0;

            let universe: Vec<Key> = keys.iter().map(|&k| Key::from_u64(k)).collect();
            let changed = universe[..r].to_vec();
            let start = Instant::now();
            let ours = Exact::build(universe.clone(), &changed).expect("builds");
            let ours_ms = start.elapsed().as_secs_f64() * 1e3;
            for (i, key) in universe.iter().enumerate() {
                assert_eq!(ours.changed(*key), i < r);
            }

            let item = |i: usize| Item {
                key: keys[i],
                included: i < r,
                bytes: keys[i].to_le_bytes(),
            };
            let start = Instant::now();
            let mut builder = ClubcardBuilder::new();
            let mut approx = builder.new_approx_builder(&BLOCK);
            for i in 0..r {
                approx.insert(item(i));
            }
            approx.set_universe_size(n);
            builder.collect_approx_ribbons(vec![ApproximateRibbon::from(approx)]);
            let mut exact = builder.new_exact_builder(&BLOCK);
            for i in 0..n {
                exact.insert(item(i));
            }
            builder.collect_exact_ribbons(vec![ExactRibbon::from(exact)]);
            let theirs = builder.build::<Item>(Universe, ());
            let theirs_ms = start.elapsed().as_secs_f64() * 1e3;
            for i in 0..n {
                assert_eq!(theirs.unchecked_contains(&item(i)), i < r);
            }
            let (ours_b, theirs_b) = (ours.byte_len(), theirs.approximate_size_of());
            println!(
                "| {n} | {:.1}% | {floor:.0} | {ours_b} | {:.3} | {ours_ms:.0} | {theirs_b} | {:.3} | {theirs_ms:.0} |",
                fraction * 100.0,
                ours_b as f64 / floor,
                theirs_b as f64 / floor,
            );
        }
    }
}

/// The SplitMix64 finaliser (bloomcast-core's `mix64`, which the ribbon and exact key
/// schemes use), here the step of this example's fixed random sequence.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
