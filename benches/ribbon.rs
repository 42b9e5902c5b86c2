//! Construction and query speed of the compact (ribbon) filter per key, at n = 3k, 30k
//! and 300k, r = 7 (p = 0.01) and r = 10 (p = 0.001). Keys are pre-hashed sha1-km32
//! keys, as the server holds them. The issue's floor is 5M keys/s per core to build,
//! i.e. at most 200 ns per key.
//!
//! ```text
//! cargo bench --bench ribbon
//! ```

use bloomcast::bloom::{Key, Ribbon};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn keys(prefix: &str, n: usize) -> Vec<Key> {
    (0..n).map(|i| Key::of(&format!("{prefix}:{i}"))).collect()
}

fn bench(c: &mut Criterion) {
    for n in [3_000usize, 30_000, 300_000] {
        let set = keys("user", n);
        let absent = keys("absent", 4096);
        for r in [7u32, 10] {
            let mut group = c.benchmark_group(format!("ribbon n={n} r={r}"));
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function("build", |b| {
                b.iter(|| black_box(Ribbon::build(black_box(&set), r).unwrap()))
            });
            let f = Ribbon::build(&set, r).unwrap();
            group.throughput(Throughput::Elements(absent.len() as u64));
            group.bench_function("contains_absent", |b| {
                b.iter(|| absent.iter().filter(|k| f.contains(**k)).count())
            });
            group.finish();
            let floor = n as f64 * f64::from(r).min((1.0 / f.fpp()).log2()) / 8.0;
            println!(
                "ribbon n={n} r={r}: {} bytes, {:.3} B/key, {:.3}x of n*r/8, m/n = {:.4}, seed {}",
                f.byte_len(),
                f.byte_len() as f64 / n as f64,
                f.byte_len() as f64 / floor,
                f64::from(f.m()) / n as f64,
                f.seed()
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(20);
    targets = bench
}
criterion_main!(benches);
