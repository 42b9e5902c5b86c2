//! The two-lane SHA-256 (`bloomcast_core::sha256`, two messages hashed in step with
//! SHA-NI) against `sha2` (its own SHA-NI path, chosen at run time by `cpufeatures`)
//! hashing the same two messages one after the other, in one run (issue 32: keep the
//! winner, delete the loser).
//!
//! ```text
//! cargo bench --bench sha256 -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Each size is a filter of that many distinct keys at p = 0.01 (`union_of`): a sealed
//! hour (3K), a large hour (300K) and the 8.45M-key union of `benches/gzip.rs`.
//! - `two/*`: the two hashes a JSON body needs, of the filter's bytes (its `digest`
//!   field) and of the body (its ETag and `Repr-Digest`).
//! - `json/*`: the whole job, the JSON body and both hashes: `json_with_sha256` against
//!   `json_of` (whose `digest` is `sha2`'s) then `sha2` of the body, and against
//!   `json_fused_sha2`, `sha2` alone hashing each piece of hex as it is written.
//!
//! Times are CPU time of the benchmarking thread (`common/cpu_time.rs`).

use bloomcast::bloom::{union_of, Filter, Key};
use bloomcast::sha256::{update_both, Sha256};
use bloomcast::store::distinct;
use bloomcast::wire::{Document, Meta};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sha2::Digest;
use std::time::Duration;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A filter of `n` distinct uniform keys at p = 0.01.
fn filter_of(n: usize) -> Filter {
    let mut state = n as u64;
    let keys: Vec<Key> = (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            Key::from_u64(z ^ (z >> 31))
        })
        .collect();
    union_of(&[&distinct(keys)], 0.01).expect("sizable").0
}

fn two_lanes(bytes: &[u8], body: &[u8]) -> ([u8; 32], [u8; 32]) {
    let (mut a, mut b) = (Sha256::new(), Sha256::new());
    update_both(&mut a, bytes, &mut b, body);
    (a.finish(), b.finish())
}

fn sha2_twice(bytes: &[u8], body: &[u8]) -> ([u8; 32], [u8; 32]) {
    (
        sha2::Sha256::digest(bytes).into(),
        sha2::Sha256::digest(body).into(),
    )
}

fn sha256(c: &mut Criterion<CpuTime>) {
    for (label, n) in [("3K", 3_000), ("300K", 300_000), ("8.45M", 8_450_000)] {
        let filter = filter_of(n);
        let meta = Meta::hour("2008-09-03T13:00:00Z".into(), true, n as u64);
        let bytes = filter.to_bytes();
        let body = Document::json_of(meta.clone(), &filter);
        assert_eq!(two_lanes(&bytes, &body), sha2_twice(&bytes, &body));
        let (json, sha) = Document::json_with_sha256(meta.clone(), &filter);
        assert!(json == body && sha == <[u8; 32]>::from(sha2::Sha256::digest(&body)));
        assert!(json_fused_sha2(meta.clone(), &filter) == (json, sha));
        println!("{label}: bytes {} B, body {} B", bytes.len(), body.len());

        let mut group = c.benchmark_group(format!("sha256/two/{label}"));
        group.throughput(Throughput::Bytes((bytes.len() + body.len()) as u64));
        group.bench_function("two_lane", |b| {
            b.iter(|| two_lanes(black_box(&bytes), black_box(&body)))
        });
        group.bench_function("sha2", |b| {
            b.iter(|| sha2_twice(black_box(&bytes), black_box(&body)))
        });
        group.finish();

        let mut group = c.benchmark_group(format!("sha256/json/{label}"));
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function("json_with_sha256", |b| {
            b.iter(|| Document::json_with_sha256(black_box(meta.clone()), &filter))
        });
        group.bench_function("json_of_then_sha2", |b| {
            b.iter(|| {
                let json = Document::json_of(black_box(meta.clone()), &filter);
                let sha: [u8; 32] = sha2::Sha256::digest(&json).into();
                (json, sha)
            })
        });
        group.bench_function("json_fused_sha2", |b| {
            b.iter(|| json_fused_sha2(black_box(meta.clone()), &filter))
        });
        group.finish();
    }
}

/// The JSON body and its SHA-256 by `sha2` alone, in one pass: the hex written 2 KiB
/// at a time and hashed while in L1 (its `digest` field is `sha2`'s, from
/// `json_parts`).
fn json_fused_sha2(meta: Meta, filter: &Filter) -> (Vec<u8>, [u8; 32]) {
    const PIECE: usize = 1024;
    let (before, bytes, after) = Document::json_parts(meta, filter);
    let mut out = Vec::with_capacity(before.len() + 2 * bytes.len() + after.len());
    let mut hasher = sha2::Sha256::new();
    out.extend_from_slice(&before);
    hasher.update(&before);
    for piece in bytes.chunks(PIECE) {
        let at = out.len();
        bloomcast::bloom::hex_into(piece, &mut out);
        hasher.update(&out[at..]);
    }
    out.extend_from_slice(&after);
    hasher.update(&after);
    (out, hasher.finalize().into())
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
