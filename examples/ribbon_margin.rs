//! The ribbon's size margin against issue 16's bounds (1.15 x the floor at p = 0.01,
//! 1.12 x at 0.001): for n = 3,000, 30,000 and 300,000 and a sweep of row overheads
//! (`m = ceil(n * (1 + slack)) + 16`), how often the first seed succeeds over random
//! key sets, and the body's ratio to the floor at r = 7 and r = 10.
//!
//! ```text
//! cargo run --release --example ribbon_margin [-- TRIALS_AT_3000]
//! ```
//!
//! Trials shrink with n (the same total keys per n); key sets are pseudo-random 64-bit
//! keys (sha1-km32 keys are uniform), from a fixed generator so runs repeat.

use bloomcast::bloom::{Key, Ribbon};

fn main() {
    let trials_3k: u64 = std::env::args()
        .nth(1)
        .map_or(400, |s| s.parse().expect("a number of trials"));
    println!(
        "| n | slack | m/n | seed-0 success | trials | ratio r=7 (p=0.01) | ratio r=10 (p=0.001) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for n in [3_000u64, 30_000, 300_000] {
        let trials = (trials_3k * 3_000 / n).max(40);
        for slack in [
            0.035, 0.04, 0.045, 0.05, 0.055, 0.06, 0.065, 0.07, 0.075, 0.08, 0.085, 0.09,
        ] {
            let m = (n as f64 * (1.0 + slack)).ceil() as u32 + 16;
            let mut ok = 0;
            for _ in 0..trials {
                let keys: Vec<Key> = (0..n)
                    .map(|_| {
                        state = mix64(state.wrapping_add(1));
                        Key::from_u64(state)
                    })
                    .collect();
                ok += u64::from(Ribbon::try_build(&keys, 7, m, 0).unwrap().is_some());
            }
            let ratio = |r: u32, p: f64| {
                let bytes = 24 + (u64::from(m) * u64::from(r)).div_ceil(8);
                bytes as f64 / (n as f64 * (1.0 / p).log2() / 8.0)
            };
            println!(
                "| {n} | {slack} | {:.4} | {:.3} | {trials} | {:.4} | {:.4} |",
                f64::from(m) / n as f64,
                ok as f64 / trials as f64,
                ratio(7, 0.01),
                ratio(10, 0.001),
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
