//! Exact hours against their floor (issue 35's size, build and decode goals): for
//! universes of 10,000 to 2,000,000 IDs and change fractions from 0.1% to 97%, the body
//! (less its header of 15 to 47 bytes) against `log2(C(N, r))/8`, against the same hour's 1% Bloom
//! `.bin` gzip (best level, as the server seals it) and its 1% ribbon; then one build of
//! N = 10M, r = 1M (`BIG_R` for another r): time, peak heap per universe ID (every
//! allocation counted, the universe's 8 bytes and the changed keys' 8 each included) and
//! queries per second on one core. Beside each body, what the two levels would cost with
//! ideal systems (no slack, any fractional number of filter bits): the least any body of
//! this construction (ours, Clubcard's) can be, and the shares changed at which even
//! that is within 1.05x of the floor.
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
        ideal_within_goal();
    }
    if arg != "--no-big" {
        big();
    }
}

fn sizes() {
    println!("| N | r/N | r | floor B | exact B | x floor | two levels, ideal: x floor | 1% Bloom .bin gzip B | 1% ribbon B | k | split | build ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
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
                "| {n} | {:.1}% | {r} | {floor:.0} | {body} | {:.3} | {:.3} | {bloom_gz} | {ribbon} | {} | {} | {ms:.1} |",
                fraction * 100.0,
                body as f64 / floor,
                two_levels_ideal_bits(n as u64, r as u64) / 8.0 / floor,
                exact.k(),
                exact.split(),
            );
        }
    }
}

/// The fewest bits the two levels can take for `r` changed of `n` with ideal systems:
/// the smaller side (`h` keys) held by a filter of false-positive rate `e`, at
/// `log2(1/e)` bits a key (no slack, fractional bits), then one answer bit for each key
/// it lets through, `h + (n - h) e`. The least over `e` is at `e = h / ((n - h) ln 2)`
/// (capped at 1: no filter, one bit for every key). A filter cascade before the
/// retrieval level does no better: each further filter is best left out.
fn two_levels_ideal_bits(n: u64, r: u64) -> f64 {
    let h = r.min(n - r) as f64;
    let rest = n as f64 - h;
    if h == 0.0 {
        return 0.0;
    }
    let e = (h / (rest * std::f64::consts::LN_2)).min(1.0);
    h * (1.0 / e).log2() + h + rest * e
}

/// The two levels with a second filter between them, ideal: the first holds the smaller
/// side (`h`) at rate `e1`, the second the other side's keys it lets through
/// (`(n - h) e1`), rejecting the held keys at rate `e2`, then one answer bit for each key
/// both let through. The least over a grid of both rates (1 included: no filter).
fn cascade_ideal_bits(n: u64, r: u64) -> f64 {
    let h = r.min(n - r) as f64;
    let rest = n as f64 - h;
    let rates: Vec<f64> = (0..=2_000)
        .map(|i| (-f64::from(i) / 100.0).exp2())
        .collect();
    let mut best = f64::INFINITY;
    for &e1 in &rates {
        let through = rest * e1;
        for &e2 in &rates {
            let bits = h * (1.0 / e1).log2() + through * (1.0 / e2).log2() + through + h * e2;
            best = best.min(bits);
        }
    }
    best
}

/// The shares changed (of N = 11.6M, the catch-up's universe) at which the two levels
/// with ideal systems are within 1.05x of the floor, scanned in steps of 0.01%.
fn ideal_within_goal() {
    let n = 11_600_000u64;
    let ratio = |step: u64| {
        let r = n * step / 10_000;
        two_levels_ideal_bits(n, r) / floor_bits(n, r)
    };
    let ratios: Vec<(u64, f64)> = (1..10_000u64).map(|step| (step, ratio(step))).collect();
    // Runs of consecutive steps within 1.05x, as (first, last).
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for &(step, _) in ratios.iter().filter(|(_, x)| *x <= 1.05) {
        match spans.last_mut() {
            Some((_, last)) if *last + 1 == step => *last = step,
            _ => spans.push((step, step)),
        }
    }
    let spans: Vec<String> = spans
        .iter()
        .map(|(a, b)| format!("{:.2}%..{:.2}%", *a as f64 / 100.0, *b as f64 / 100.0))
        .collect();
    let (worst_step, worst) = ratios
        .iter()
        .copied()
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    println!(
        "\nTwo levels with ideal systems, N = {n}: within 1.05x of the floor only at {} changed; worst {:.3}x at {:.2}%",
        spans.join(", "),
        worst,
        worst_step as f64 / 100.0
    );
    for step in [10u64, 100, 1_000, 1_507, 3_000] {
        let r = n * step / 10_000;
        println!(
            "  at {:.2}%: two levels {:.4}x, with a second filter between them {:.4}x",
            step as f64 / 100.0,
            ratio(step),
            cascade_ideal_bits(n, r) / floor_bits(n, r)
        );
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
