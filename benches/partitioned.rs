//! Per-ID cost of the partitioned filter against the standard one (insert and
//! contains), and the cost of the estimates (one cardinality, and the overlap of two
//! filters), at the seed's hourly size (n = 3000) and at n = 1M, p = 0.01.
//!
//! ```text
//! cargo bench --bench partitioned
//! ```
//!
//! IDs and their cycling are as in `benches/filter.rs`; `contains` looks up inserted
//! IDs, the worst case (all k bits probed).

use bloomcast::bloom::{Filter, Params, PartitionedFilter};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::Duration;

const P: f64 = 0.01;

fn make_ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{prefix}:{}", 1000 + i * 7))
        .collect()
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
    let ids = make_ids("user", n);
    let others = make_ids("other", n);
    let params = Params::optimal(n as u64, P).expect("valid sizing");
    let label = if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else {
        n.to_string()
    };
    let mut group = c.benchmark_group(format!("n={label}"));

    let mut standard = Filter::new(params);
    group.bench_function("standard_insert", |b| {
        b.iter(per_id(&ids, |id| {
            black_box(standard.insert(black_box(id)));
        }))
    });
    let mut parted = PartitionedFilter::new(params).expect("m >= k");
    group.bench_function("partitioned_insert", |b| {
        b.iter(per_id(&ids, |id| {
            black_box(parted.insert(black_box(id)));
        }))
    });
    for id in &ids {
        standard.insert(id);
        parted.insert(id);
    }
    group.bench_function("standard_contains", |b| {
        b.iter(per_id(&ids, |id| assert!(standard.contains(black_box(id)))))
    });
    group.bench_function("partitioned_contains", |b| {
        b.iter(per_id(&ids, |id| assert!(parted.contains(black_box(id)))))
    });

    group.bench_function("standard_estimate", |b| {
        b.iter(|| black_box(black_box(&standard).estimated_count()))
    });
    group.bench_function("partitioned_estimate", |b| {
        b.iter(|| black_box(black_box(&parted).estimated_count()))
    });

    // Half of the other filter's IDs are shared: the overlap reads both bodies once.
    let half: Vec<&String> = ids[..n / 2].iter().chain(&others[n / 2..]).collect();
    let mut standard_b = Filter::new(params);
    let mut parted_b = PartitionedFilter::new(params).expect("m >= k");
    for id in half {
        standard_b.insert(id);
        parted_b.insert(id);
    }
    group.bench_function("standard_overlap", |b| {
        b.iter(|| black_box(standard.overlap(black_box(&standard_b)).unwrap()))
    });
    group.bench_function("partitioned_overlap", |b| {
        b.iter(|| black_box(parted.overlap(black_box(&parted_b)).unwrap()))
    });

    group.finish();
}

fn partitioned(c: &mut Criterion) {
    bench_size(c, 3_000);
    bench_size(c, 1_000_000);
}

criterion_group! {
    name = benches;
    // Short runs: the machine is small and shared; these figures are stable to a few %.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = partitioned
}
criterion_main!(benches);
