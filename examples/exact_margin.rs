//! The slack of an exact body's systems (crates/bloomcast-core/src/exact/build.rs
//! `rows_for`): for systems of n equations with 128-wide bands, how often one seed
//! succeeds at `m = n * (1 + rate) + rows`, with one answer bit (the retrieval level)
//! and with 8 fingerprint bits (a filter part).
//!
//! ```text
//! cargo run --release --example exact_margin [-- TRIALS_AT_1000]
//! ```

use bloomcast::exact::system::{salt, value_mask, Band, Row};

fn main() {
    let trials_1k: u64 = std::env::args()
        .nth(1)
        .map_or(2000, |s| s.parse().expect("a number of trials"));
    println!("| n | rate | rows | m/n | success, 1 bit | success, 8 bits | trials |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut state = 1u64;
    for n in [200u64, 1_000, 10_000, 100_000, 1_000_000] {
        let trials = (trials_1k * 1_000 / n).clamp(20, 4000);
        for (rate, rows) in [
            (0.0, 8.0),
            (0.01, 16.0),
            (0.02, 16.0),
            (0.03, 16.0),
            (0.04, 16.0),
            (0.05, 16.0),
        ] {
            let m = (n as f64 * (1.0 + rate) + rows).ceil() as u32;
            let mut ok = [0u64; 2];
            for t in 0..trials {
                let keys: Vec<u64> = (0..n)
                    .map(|_| {
                        state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
                        state
                    })
                    .collect();
                for (i, bits) in [1u32, 8].into_iter().enumerate() {
                    let mut band = Band::<u32>::new(m);
                    let salted = salt(3, t as u32);
                    let good = keys.iter().all(|&key| {
                        let row = Row::of(key, salted, m);
                        band.add(&row, (row.fingerprint & value_mask(bits)) as u32)
                    });
                    ok[i] += u64::from(good);
                }
            }
            println!(
                "| {n} | {rate} | {rows} | {:.4} | {:.3} | {:.3} | {trials} |",
                f64::from(m) / n as f64,
                ok[0] as f64 / trials as f64,
                ok[1] as f64 / trials as f64
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
