//! The floor under a cold union build's CPU (issue 57's 30M keys per CPU-second): the
//! union of 24 hours of 400,000 distinct keys (9.6M) is a v1 filter of 11.5 MB at 1%
//! whose every key sets k = 7 bits anywhere in it, 67M random writes. This times, in
//! process on one core, only computing those positions, setting them directly
//! (with and without each line prefetched a batch of keys ahead, with and without
//! transparent huge pages under the array), and `union_of` (counting, sizing and its
//! regioned setting) for reference. A server's cold build adds reading the keys from
//! the store, vouching for each hour and rendering the body.
//!
//! ```text
//! taskset -c 1 cargo run --release --example union_bits_floor
//! KEYS=58700000 taskset -c 1 cargo run --release --example union_bits_floor   # 70 MB
//! ```

use bloomcast::bloom::{union_of, Key, Params};
use std::time::{Duration, Instant};

/// Keys in all, unless `KEYS` says otherwise.
const KEYS: usize = 9_600_000;
const HOURS: usize = 24;
const FPP: f64 = 0.01;
const RUNS: usize = 3;

/// Keys from a fixed generator (sha1-km32 keys are uniform), sorted per hour as stored.
fn hours(keys: usize) -> Vec<Vec<Key>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..HOURS)
        .map(|_| {
            let mut keys: Vec<Key> = (0..keys / HOURS)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    Key::from_u64(state ^ (state >> 29))
                })
                .collect();
            keys.sort_unstable();
            keys
        })
        .collect()
}

/// A zeroed array of `words`, its whole 2 MiB pages advised huge when `huge`.
fn array(words: usize, huge: bool) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(words + (2 << 20) / 8);
    #[cfg(target_os = "linux")]
    if huge {
        let start = v.as_mut_ptr() as usize;
        let aligned = (start + (2 << 20) - 1) & !((2 << 20) - 1);
        let len = (words * 8).saturating_sub(aligned - start) & !((2 << 20) - 1);
        // SAFETY: advice on whole pages inside the allocation just made; it changes no
        // contents.
        unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    }
    let _ = huge;
    v.resize(words, 0);
    v
}

/// The fastest of [`RUNS`] runs of `f`.
fn best(mut f: impl FnMut() -> u64) -> (Duration, u64) {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let out = f();
            (start.elapsed(), out)
        })
        .min_by_key(|(t, _)| *t)
        .expect("RUNS > 0")
}

fn main() {
    let keys = std::env::var("KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(KEYS);
    let hours = hours(keys);
    let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
    let Params { m, k } = Params::optimal(keys as u64, FPP).expect("valid");
    let words = m.div_ceil(64) as usize;
    println!(
        "{keys} keys in {HOURS} hours: m = {m} bits ({:.1} MB), k = {k}",
        m as f64 / 8e6
    );
    println!("| step | best of {RUNS} | keys per second |");
    println!("|---|---:|---:|");
    let row = |name: &str, (t, _): (Duration, u64)| {
        println!(
            "| {name} | {:.0} ms | {:.1}M |",
            t.as_secs_f64() * 1e3,
            keys as f64 / t.as_secs_f64() / 1e6
        );
    };
    row(
        "positions computed, none set",
        best(|| {
            let mut sum = 0u64;
            for key in sets.iter().flat_map(|s| s.iter()) {
                for pos in key.positions(m, k) {
                    sum = sum.wrapping_add(u64::from(pos));
                }
            }
            std::hint::black_box(sum)
        }),
    );
    for huge in [false, true] {
        let pages = if huge { ", huge pages" } else { "" };
        row(
            &format!("set directly{pages}"),
            best(|| {
                let mut v = array(words, huge);
                for key in sets.iter().flat_map(|s| s.iter()) {
                    for pos in key.positions(m, k) {
                        v[(pos >> 6) as usize] |= 1 << (pos & 63);
                    }
                }
                std::hint::black_box(v[0])
            }),
        );
        row(
            &format!("set directly, lines prefetched 16 keys ahead{pages}"),
            best(|| {
                let mut v = array(words, huge);
                let mut batch = [0u32; 16 * 64];
                for chunk in sets.iter().flat_map(|s| s.chunks(16)) {
                    let mut n = 0;
                    for pos in chunk.iter().flat_map(|key| key.positions(m, k)) {
                        batch[n] = pos;
                        n += 1;
                        prefetch(&v, pos);
                    }
                    for &pos in &batch[..n] {
                        v[(pos >> 6) as usize] |= 1 << (pos & 63);
                    }
                }
                std::hint::black_box(v[0])
            }),
        );
    }
    row(
        "union_of (distinct count, sizing, regioned setting)",
        best(|| union_of(&sets, FPP).expect("builds").1),
    );
}

#[cfg(target_arch = "x86_64")]
fn prefetch(v: &[u64], pos: u32) {
    let line = &v[(pos >> 6) as usize] as *const u64;
    // SAFETY: a prefetch hint on an address inside `v`; it reads and writes nothing.
    unsafe { core::arch::x86_64::_mm_prefetch(line.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0) }
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch(_: &[u64], _: u32) {}
