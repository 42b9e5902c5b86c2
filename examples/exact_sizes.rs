//! Exact hours against their floor (issue 35's size, build and decode goals): for
//! universes of 10,000 to 2,000,000 IDs and change fractions from 0.1% to 97%, the body
//! (less its header of 15 to 47 bytes) against `log2(C(N, r))/8`, against the same hour's 1% Bloom
//! `.bin` gzip (best level, as the server seals it) and its 1% ribbon; then one build of
//! N = 10M, r = 1M (`BIG_R` for another r): time, peak heap per universe ID (every
//! allocation counted, the universe's 8 bytes and the changed keys' 8 each included) and
//! queries per second on one core.
//!
//! ```text
//! cargo run --release --example exact_sizes [-- --big-only | --no-big]   # BIG_R=5000000 for 50%
//! ```
//!
//! Keys are pseudo-random 64-bit keys from a fixed generator (sha1-km32 keys are
//! uniform), so runs repeat byte for byte.

use bloomcast::bloom::{Filter, Key, Ribbon};
use bloomcast::exact::{floor_bits, Exact};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = NOW.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(now, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn random_keys(seed: u64, n: usize) -> Vec<Key> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            Key::from_u64(state)
        })
        .collect()
}

fn gzip_best(data: &[u8]) -> usize {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap().len()
}

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg != "--big-only" {
        sizes();
    }
    if arg != "--no-big" {
        big();
    }
}

fn sizes() {
    println!("| N | r/N | r | floor B | exact B | x floor | 1% Bloom .bin gzip B | 1% ribbon B | k | split | build ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in [10_000usize, 100_000, 2_000_000] {
        let universe = random_keys(n as u64, n);
        for fraction in [
            0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.83, 0.97,
        ] {
            let r = (n as f64 * fraction).round() as usize;
            let changed = &universe[..r];
            let start = Instant::now();
            let exact = Exact::build(universe.clone(), changed).unwrap();
            let ms = start.elapsed().as_secs_f64() * 1e3;
            let body = exact.byte_len() - exact.header_len();
            let floor = floor_bits(n as u64, r as u64) / 8.0;
            let mut bloom = Filter::with_capacity(r as u64, 0.01).unwrap();
            for key in changed {
                bloom.insert_key(*key);
            }
            let bloom_gz = gzip_best(&bloom.to_bytes());
            let ribbon = Ribbon::build(changed, 7).unwrap().byte_len();
            println!(
                "| {n} | {:.1}% | {r} | {floor:.0} | {body} | {:.3} | {bloom_gz} | {ribbon} | {} | {} | {ms:.1} |",
                fraction * 100.0,
                body as f64 / floor,
                exact.k(),
                exact.split(),
            );
        }
    }
}

fn big() {
    let r = std::env::var("BIG_R")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000usize);
    let n = 10_000_000usize;
    let before = NOW.load(Relaxed);
    PEAK.store(before, Relaxed);
    let universe = random_keys(10, n);
    // Sorted, as a sealed hour's keys come from the store (the build reads them in place).
    let mut changed: Vec<Key> = universe[..r].to_vec();
    changed.sort_unstable();
    let start = Instant::now();
    let exact = Exact::build(universe, &changed).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let peak = PEAK.load(Relaxed) - before;
    println!(
        "\nN = {n}, r = {r}: built in {secs:.2} s; peak heap {:.1} MB (reserved by a server: {:.1} MB) = {:.1} B per universe ID (universe and changed keys included); body {} B = {:.3} x floor",
        peak as f64 / 1e6,
        Exact::build_bytes(n as u64, r as u64) as f64 / 1e6,
        peak as f64 / n as f64,
        exact.byte_len(),
        (exact.byte_len() - exact.header_len()) as f64 / (floor_bits(n as u64, r as u64) / 8.0)
    );
    let queries = random_keys(10, n);
    let start = Instant::now();
    let hits = queries.iter().filter(|k| exact.changed(**k)).count();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(hits, r);
    println!(
        "decoding: {n} queries (the universe) in {secs:.2} s = {:.1}M queries/s on one core",
        n as f64 / secs / 1e6
    );
}

/// The SplitMix64 finaliser (bloomcast-core's `mix64`, which the ribbon and exact key
/// schemes use), here the step of this example's fixed random sequence.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
