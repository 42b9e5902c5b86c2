//! The compact form v2 (`.ribbon2`) against its floor, against v1 (`.ribbon`) and against
//! a binary fuse filter (the `xorf` crate), in one run: body bytes over the floor of
//! `n * log2(1/fpp) / 8`, build time, query time per absent key (pre-hashed keys, as the
//! SDK holds them after hashing an ID once; one at a time, and in batches), and the false-positive rate measured over
//! 1,000,000 absent keys against the one asked for.
//!
//! ```text
//! cargo bench --bench ribbon2            # n = 3k, 30k, 300k, 3M
//! cargo bench --bench ribbon2 -- 300000  # some n only
//! ```
//!
//! The binary fuse filter has three precisions (8, 16 and 32 bits a key); each fpp is
//! compared with the smallest of them that meets it.

use bloomcast::bloom::{bits_for_fpp, Grade, Key, Ribbon, Ribbon2};
use std::hint::black_box;
use std::time::{Duration, Instant};
use xorf::{BinaryFuse16, BinaryFuse32, BinaryFuse8, Filter};

const ABSENT: usize = 1_000_000;

fn main() {
    let ns: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ns = if ns.is_empty() {
        vec![3_000, 30_000, 300_000, 3_000_000]
    } else {
        ns
    };
    let absent: Vec<Key> = (0..ABSENT)
        .map(|i| Key::of(&format!("absent:{i}")))
        .collect();
    let absent_u64: Vec<u64> = absent.iter().map(|k| k.to_u64()).collect();
    println!(
        "| n | fpp | v2 grade | v2 bytes | v2 / floor | v2 measured fpp | v2 build | v2 query | v2 batch | \
         v1 / floor | v1 build | v1 query | fuse | fuse / floor | fuse build | fuse query |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for &n in &ns {
        let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("user:{i}"))).collect();
        let keys_u64: Vec<u64> = keys.iter().map(|k| k.to_u64()).collect();
        for p in [0.05, 0.01, 0.001, (-16f64).exp2(), (-20f64).exp2()] {
            let floor = n as f64 * (1.0 / p).log2() / 8.0;
            let grade = Grade::for_fpp(p).expect("grade");
            let (v2, v2_build) = timed(n, || Ribbon2::build(&keys, grade).expect("v2"));
            assert!(keys.iter().all(|&k| v2.contains(k)), "a false negative");
            let v2_hits = absent.iter().filter(|&&k| v2.contains(k)).count();
            let v2_query = per_query(&absent, |k| v2.contains(k));
            let v2_batch = per_batch(&absent, &v2);
            let r = bits_for_fpp(p).expect("r");
            let (v1, v1_build) = timed(n, || Ribbon::build(&keys, r).expect("v1"));
            let v1_query = per_query(&absent, |k| v1.contains(k));
            let (name, fuse_bytes, fuse_build, fuse_query) = fuse(p, &keys_u64, &absent_u64);
            println!(
                "| {n} | {} | k={} split={} | {} | {:.4} | {:.3e} ({}) | {} | {} | {} | {:.4} | {} | {} | {name} | {:.4} | {} | {} |",
                fmt_p(p),
                grade.k,
                grade.split,
                v2.byte_len(),
                v2.byte_len() as f64 / floor,
                v2_hits as f64 / ABSENT as f64,
                verdict(v2_hits, p),
                ns_per(v2_build, n),
                ns_per(v2_query, 1),
                ns_per(v2_batch, 1),
                v1.byte_len() as f64 / floor,
                ns_per(v1_build, n),
                ns_per(v1_query, 1),
                fuse_bytes as f64 / floor,
                ns_per(fuse_build, n),
                ns_per(fuse_query, 1),
            );
        }
    }
}

/// Whether `hits` of [`ABSENT`] is consistent with a rate of at most `p`: the
/// one-sided binomial bound at 3.3 standard deviations (a false alarm in 2,000).
fn verdict(hits: usize, p: f64) -> &'static str {
    let expected = ABSENT as f64 * p;
    let bound = expected + 3.3 * (expected * (1.0 - p)).sqrt();
    if hits as f64 <= bound {
        "<= asked"
    } else {
        "OVER"
    }
}

fn fmt_p(p: f64) -> String {
    let bits = -p.log2();
    if (bits - bits.round()).abs() < 1e-9 && bits > 10.0 {
        format!("2^-{}", bits.round())
    } else {
        format!("{p}")
    }
}

/// The build and the median of its timings (fewer repetitions for large n).
fn timed<T>(n: usize, build: impl Fn() -> T) -> (T, Duration) {
    let runs = if n >= 1_000_000 { 1 } else { 5 };
    let mut times = Vec::new();
    let mut built = None;
    for _ in 0..runs {
        let t = Instant::now();
        built = Some(black_box(build()));
        times.push(t.elapsed());
    }
    times.sort();
    (built.expect("built"), times[times.len() / 2])
}

/// Time per query over the absent keys, the best of three passes.
fn per_query<K: Copy>(keys: &[K], contains: impl Fn(K) -> bool) -> Duration {
    best_of_three(keys.len(), || {
        keys.iter().filter(|&&k| contains(black_box(k))).count()
    })
}

/// Time per query over the absent keys with [`Ribbon2::contains_each`] (hashing a batch
/// before its lookups), the best of three passes.
fn per_batch(keys: &[Key], filter: &Ribbon2) -> Duration {
    best_of_three(keys.len(), || {
        filter.contains_each(black_box(keys)).filter(|&b| b).count()
    })
}

/// The best of three timings of `pass` (which answers `n` queries), per query.
fn best_of_three(n: usize, pass: impl Fn() -> usize) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            black_box(pass());
            t.elapsed()
        })
        .min()
        .expect("three passes")
        .div_f64(n as f64)
}

fn ns_per(d: Duration, n: usize) -> String {
    let ns = d.as_secs_f64() * 1e9 / n as f64;
    if ns >= 100.0 {
        format!("{ns:.0} ns")
    } else {
        format!("{ns:.1} ns")
    }
}

/// The smallest binary fuse filter that meets `p`: its name, bytes, build and query time.
fn fuse(p: f64, keys: &[u64], absent: &[u64]) -> (&'static str, usize, Duration, Duration) {
    fn run<F: Filter<u64>>(
        keys: &[u64],
        absent: &[u64],
        build: impl Fn(&[u64]) -> F,
        bytes: impl Fn(&F) -> usize,
    ) -> (usize, Duration, Duration) {
        let (filter, built) = timed(keys.len(), || build(keys));
        assert!(keys.iter().all(|k| filter.contains(k)));
        (
            bytes(&filter),
            built,
            per_query(absent, |k: u64| filter.contains(&k)),
        )
    }
    if p >= (-8f64).exp2() {
        let (b, t, q) = run(
            keys,
            absent,
            |k| BinaryFuse8::try_from(k).expect("fuse8"),
            |f| f.fingerprints.len() + 24,
        );
        ("BinaryFuse8", b, t, q)
    } else if p >= (-16f64).exp2() {
        let (b, t, q) = run(
            keys,
            absent,
            |k| BinaryFuse16::try_from(k).expect("fuse16"),
            |f| 2 * f.fingerprints.len() + 24,
        );
        ("BinaryFuse16", b, t, q)
    } else {
        let (b, t, q) = run(
            keys,
            absent,
            |k| BinaryFuse32::try_from(k).expect("fuse32"),
            |f| 4 * f.fingerprints.len() + 24,
        );
        ("BinaryFuse32", b, t, q)
    }
}
