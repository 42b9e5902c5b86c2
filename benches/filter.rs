//! Per-ID cost of the filter core against its floor, one SHA-1 digest, and against
//! `fastbloom` (a fast non-cryptographic Bloom filter), at the seed's hourly size
//! (n = 3000) and at n = 1M, p = 0.01.
//!
//! ```text
//! cargo bench --bench filter
//! ```
//!
//! Each iteration handles one ID like `user:123456` (9 to 12 bytes), cycling through a
//! pool of distinct IDs so the filter's memory is touched as in real use. `contains`
//! looks up inserted IDs, the worst case: all k bits are probed.

use bloomcast::bloom::Filter;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use sha1::{Digest, Sha1};
use std::time::Duration;

const P: f64 = 0.01;

/// `n` (up to ~1.4M) distinct IDs of 9 to 12 bytes: `user:1000`, `user:1007`, ...
fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("user:{}", 1000 + i * 7)).collect()
}

/// Runs `op` on one ID per iteration, cycling through `ids`.
fn per_id<'a>(ids: &'a [String], mut op: impl FnMut(&str) + 'a) -> impl FnMut() + 'a {
    let mut i = 0;
    move || {
        op(&ids[i]);
        i += 1;
        if i == ids.len() {
            i = 0;
        }
    }
}

fn bench_size(c: &mut Criterion, n: usize) {
    let ids = ids(n);
    let label = if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else {
        n.to_string()
    };
    let mut group = c.benchmark_group(format!("n={label}"));

    group.bench_function("sha1_digest", |b| {
        b.iter(per_id(&ids, |id| {
            black_box(Sha1::digest(black_box(id).as_bytes()));
        }))
    });

    let mut bloomcast = Filter::with_capacity(n as u64, P).expect("valid sizing");
    group.bench_function("bloomcast_insert", |b| {
        b.iter(per_id(&ids, |id| {
            black_box(bloomcast.insert(black_box(id)));
        }))
    });
    for id in &ids {
        bloomcast.insert(id);
    }
    group.bench_function("bloomcast_contains", |b| {
        b.iter(per_id(&ids, |id| {
            assert!(bloomcast.contains(black_box(id)));
        }))
    });

    let mut fast = fastbloom::BloomFilter::with_false_pos(P).expected_items(n);
    group.bench_function("fastbloom_insert", |b| {
        b.iter(per_id(&ids, |id| {
            black_box(fast.insert(black_box(id)));
        }))
    });
    for id in &ids {
        fast.insert(id);
    }
    group.bench_function("fastbloom_contains", |b| {
        b.iter(per_id(&ids, |id| {
            assert!(fast.contains(black_box(id)));
        }))
    });

    group.finish();
}

fn filter(c: &mut Criterion) {
    bench_size(c, 3_000);
    bench_size(c, 1_000_000);
}

criterion_group! {
    name = benches;
    // Short runs: the machine is small and shared; these figures are stable to a few %.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = filter
}
criterion_main!(benches);
