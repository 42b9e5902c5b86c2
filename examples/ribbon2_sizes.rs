//! Size of the compact form v2 (`.ribbon2`) against the floor of `log2(1/fpp)` bits per
//! key, and against v1 (`.ribbon`), over n and fpp; the build time of each.
//!
//! `cargo run --release --example ribbon2_sizes [n ...]`
use bloomcast::bloom::{bits_for_fpp, Grade, Key, Ribbon, Ribbon2};
use std::time::Instant;

fn main() {
    let ns: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("n"))
        .collect();
    let ns = if ns.is_empty() {
        vec![3_000, 30_000, 300_000, 3_000_000]
    } else {
        ns
    };
    let ps = [
        0.05,
        0.01,
        0.001,
        (-16f64).exp2(),
        (-20f64).exp2(),
        0.0437,
        0.0031,
        2.2e-5,
    ];
    println!(
        "{:>9} {:>10} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "n", "fpp", "v2/floor", "v1/floor", "header", "v2 build", "shards"
    );
    for &n in &ns {
        let keys: Vec<Key> = (0..n)
            .map(|i| Key::of(&format!("flickr:{n}:{i}")))
            .collect();
        for &p in &ps {
            let floor = n as f64 * (1.0 / p).log2() / 8.0;
            let grade = Grade::for_fpp(p).expect("grade");
            let t = Instant::now();
            let v2 = Ribbon2::build(&keys, grade).expect("v2");
            let built = t.elapsed();
            let v1 = Ribbon::build(&keys, bits_for_fpp(p).expect("r")).expect("v1");
            println!(
                "{n:>9} {p:>10.3e} {:>8.4} {:>8.4} {:>8} {:>8.1?} {:>9?}",
                v2.byte_len() as f64 / floor,
                v1.byte_len() as f64 / floor,
                v2.header_len(),
                built,
                v2.shard_counts()
            );
        }
    }
}
