//! The JSON body with its SHA-256 (`Document::json_with_sha256`: `sha2` hashing each
//! piece of hex as it is written), against `json_of` then `sha2` of the whole body.
//!
//! ```text
//! cargo bench --bench sha256 -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Issue 32 measured here, in one run, a hand-written two-lane SHA-256 (SHA-NI
//! intrinsics hashing the filter's bytes and the body in step) against `sha2`; it was
//! 10-13% faster on bodies of a few KB to 1 MB and slower than this one-pass `sha2` on
//! the 20 MB union, so it was deleted (docs/BENCHMARKS.md; the bench as it was is in
//! git). `sha2` takes its SHA-NI path at run time (`cpufeatures`).
//!
//! Each size is a filter of that many distinct keys at p = 0.01 (`union_of`): a sealed
//! hour (3K), a large hour (300K) and the 8.45M-key union of `benches/gzip.rs`. Times
//! are CPU time of the benchmarking thread (`common/cpu_time.rs`).

use bloomcast::bloom::{union_of, Filter, Key};
use bloomcast::store::distinct;
use bloomcast::wire::{Document, Meta};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sha2::Digest;
use std::time::Duration;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/keys.rs"]
mod synthetic;
use synthetic::splitmix;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A filter of `n` distinct uniform keys at p = 0.01.
fn filter_of(n: usize) -> Filter {
    let keys: Vec<Key> = std::iter::repeat_with(splitmix(n as u64)).take(n).collect();
    union_of(&[&distinct(keys)], 0.01).expect("sizable").0
}

fn json_of_then_sha2(meta: Meta, filter: &Filter) -> (Vec<u8>, [u8; 32]) {
    let json = Document::json_of(meta, filter);
    let sha = sha2::Sha256::digest(&json).into();
    (json, sha)
}

fn sha256(c: &mut Criterion<CpuTime>) {
    for (label, n) in [("3K", 3_000), ("300K", 300_000), ("8.45M", 8_450_000)] {
        let filter = filter_of(n);
        let meta = Meta::hour("2008-09-03T13:00:00Z".into(), true, n as u64);
        let made = Document::json_with_sha256(meta.clone(), &filter);
        assert!(made == json_of_then_sha2(meta.clone(), &filter));
        println!("{label}: body {} B", made.0.len());

        let mut group = c.benchmark_group(format!("sha256/json/{label}"));
        group.throughput(Throughput::Bytes(made.0.len() as u64));
        group.bench_function("json_with_sha256", |b| {
            b.iter(|| Document::json_with_sha256(black_box(meta.clone()), &filter))
        });
        group.bench_function("json_of_then_sha2", |b| {
            b.iter(|| json_of_then_sha2(black_box(meta.clone()), &filter))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .with_measurement(CpuTime)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = sha256
}
criterion_main!(benches);
