//! What verifiable history costs, once per sealed hour (the server) and once per hour
//! fetched (a verifying client): the SHA-256 digest of a filter's bytes, the chain
//! header, signing and verifying a link, and `Repr-Digest` of a gzip body.
//!
//! ```text
//! cargo bench --bench chain
//! ```
//!
//! Filter sizes are those of an hour of 3000 IDs (the default capacity, 3.5 KiB) and of
//! 1M IDs (1.2 MiB) at p = 0.01.

use bloomcast::bloom::{Filter, Params};
use bloomcast::chain::{self, Signer};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn filter_bytes(n: u64) -> Vec<u8> {
    let params = Params::optimal(n, 0.01).expect("a valid size");
    let mut f = Filter::new(params);
    for i in 0..n.min(200_000) {
        f.insert(&format!("user:{i}"));
    }
    f.to_bytes()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("digest");
    for (name, n) in [("3000 IDs", 3000), ("1M IDs", 1_000_000)] {
        let bytes = filter_bytes(n);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::new("sha-256", name), &bytes, |b, bytes| {
            b.iter(|| chain::digest(black_box(bytes)))
        });
        group.bench_with_input(BenchmarkId::new("repr-digest", name), &bytes, |b, bytes| {
            b.iter(|| chain::repr_digest(black_box(bytes)))
        });
    }
    group.finish();

    let signer = Signer::from_seed(&[7; 32]);
    let key = signer.public_key();
    let header = chain::header(&chain::digest(b"bin"), &chain::GENESIS);
    let signature = signer.sign(1, &header);
    let mut group = c.benchmark_group("link");
    group.bench_function("header", |b| {
        b.iter(|| chain::header(black_box(&header), black_box(&chain::GENESIS)))
    });
    group.bench_function("sign", |b| {
        b.iter(|| signer.sign(black_box(1), black_box(&header)))
    });
    group.bench_function("verify", |b| {
        b.iter(|| key.verify("h", black_box(1), black_box(&header), black_box(&signature)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
