//! Keys per second of a union built from stored keys (issue 11: at least 30M keys/s on
//! one core), next to the time to decode those keys from the store's blobs.
//!
//! ```text
//! cargo bench --bench union            # all sizes
//! cargo bench --bench union -- 9.6M    # one size
//! ```
//!
//! Each size is 24 hours of keys, as sealed hours come from the store: sorted and
//! distinct per hour, with 1/8 of each hour's keys also in the hour before (IDs that
//! change again). Keys are splitmix64 outputs, uniform over `u64` like the SHA-1
//! prefixes they stand for (hashing 58.7M IDs would take longer than the bench).
//! Throughput counts the keys read (what the store hands over), not the distinct ones.
//!
//! - `decode`: `store::blob_to_keys` over every hour's blob, the floor set by reading.
//! - `old`: what unions did before: concatenate, `store::distinct` (sort + dedup),
//!   then the sizing loop inserting key by key at every size it tries. Skipped at
//!   58.7M keys, where one run takes about 25 s (the issue measured 23.7 CPU-s).
//! - `count`: `bloom::distinct_count` alone; `union_of`: count and build, the new path.
//! - `render_open_bin`: rendering the union's raw form as each new version of an open
//!   union is rendered, next to `sha256` of its bits (throughput in bytes of filter).
//! - `render_open_json` and `render_closed_json`: the JSON form with its gzip body, as an
//!   open union's version was rendered before it was rendered per encoding, and as a
//!   complete union; `render_open_bin_identity` and `render_open_json_gzip`: an open
//!   version as it is rendered afresh, in the one encoding its poller asks for, and
//!   `render_open_json_identity` the JSON without gzip (a plain `curl`),
//!   `render_next_json_gzip` the next version (100 keys on) rendered from the one before,
//!   as the server renders each new version; `deflate_fast_json`: flate2's fastest
//!   gzip of that document alone, what its gzip body cost before `render::gz::hex`.
//!
//! The bench runs on the server's allocator (mimalloc, built as `src/main.rs` has it,
//! without transparent huge pages: `src/memory.rs`), so a filter's memory is paged as a
//! served union's is.
//!
//! Times are CPU time of the benchmarking thread (Linux `schedstat`), not wall clock:
//! the machine is shared, and a union's cost to the server is CPU. Elsewhere they
//! fall back to wall clock.

use bloomcast::bloom::{distinct_count, union_of, Filter, FilterError, Key, Params};
use bloomcast::dcz::sha256;
use bloomcast::render::{render, render_as, render_next, Before, Effort, Encodings, Repr};
use bloomcast::store::{blob_to_keys, distinct, keys_to_blob};
use bloomcast::wire::Meta;
use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput,
};
use flate2::{write::GzEncoder, Compression};
use std::io::Write;
use std::time::Duration;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/keys.rs"]
mod keys;
use keys::{hours, splitmix};

/// The server's allocator (src/main.rs), so a union's filter gets the memory a served
/// union gets: mimalloc's arena, on 4 KiB pages as the server has it (its `no_thp`
/// feature, src/memory.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const P: f64 = 0.01;

/// A gzip member of `data` at `level`, as `render` made every hex form's before.
fn deflate(data: &[u8], level: Compression) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 2), level);
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// The sizing loop as it was: a full key-by-key build at every size it tries.
fn old_sized_within(keys: &[Key], p: f64) -> Result<Filter, FilterError> {
    let n = keys.len() as u64;
    let mut params = Params::optimal(n, p)?;
    loop {
        let filter = Filter::from_keys(params, keys);
        if filter.fpp() <= p {
            return Ok(filter);
        }
        let m = u64::from(params.m);
        params = Params::for_count(n, (m + (m / 32).max(1)) as u32);
    }
}

fn bench_size(c: &mut Criterion<CpuTime>, label: &str, total: usize, old: bool) {
    let hours = hours(total, splitmix(total as u64));
    let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
    let read: usize = sets.iter().map(|s| s.len()).sum();
    let blobs: Vec<Vec<u8>> = sets.iter().map(|s| keys_to_blob(s)).collect();
    let mut group = c.benchmark_group(format!("union/{label}"));
    group.throughput(Throughput::Elements(read as u64));
    group.sample_size(10);

    group.bench_function("decode", |b| {
        b.iter(|| {
            let mut keys = Vec::new();
            for blob in &blobs {
                let mut hour = Vec::new();
                blob_to_keys(black_box(blob), &mut hour).expect("whole keys");
                keys.push(hour);
            }
            keys
        })
    });
    if old {
        group.bench_function("old", |b| {
            b.iter(|| {
                let keys = distinct(sets.concat());
                old_sized_within(&keys, P).expect("sizable")
            })
        });
    }
    group.bench_function("count", |b| b.iter(|| distinct_count(black_box(&sets))));
    group.bench_function(BenchmarkId::new("union_of", label), |b| {
        b.iter(|| union_of(black_box(&sets), P).expect("sizable"))
    });

    // What each new version of a union ending in the open hour costs once its bits are
    // current: rendering the raw form (identity body, stored-block gzip body, a SHA-256
    // of each), next to one SHA-256 of the bits alone.
    let (filter, count) = union_of(&sets, P).expect("sizable");
    let meta = Meta::range("from".into(), "to".into(), false, count);
    let bits = filter.to_bytes();
    group.throughput(Throughput::Bytes(bits.len() as u64));
    group.bench_function("render_open_bin", |b| {
        b.iter(|| render(black_box(&meta), &filter, Repr::Bin, Effort::Fast))
    });
    group.bench_function("sha256", |b| b.iter(|| sha256(black_box(&bits))));
    // The JSON form, open (each new version) and complete (once per closed range), next
    // to what deflate alone took on the same document before the hex coder.
    group.bench_function("render_open_json", |b| {
        b.iter(|| render(black_box(&meta), &filter, Repr::Json, Effort::Fast))
    });
    // What an open version costs as it is rendered now: in the one encoding its poller
    // asks for (`render_as`), the raw form without gzip and the JSON with it.
    for (name, repr, encodings) in [
        ("render_open_bin_identity", Repr::Bin, Encodings::Identity),
        ("render_open_json_gzip", Repr::Json, Encodings::Gzip),
        ("render_open_json_identity", Repr::Json, Encodings::Identity),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| render_as(black_box(&meta), &filter, repr, Effort::Fast, encodings))
        });
    }
    // The next version, 100 keys on (the harness's trickle a version), rendered from
    // the one before as the server renders it: the chunks that changed are coded again,
    // the rest copied.
    let mut next = filter.clone();
    for i in 0..100 {
        next.insert(&format!("next-{i}"));
    }
    let next_meta = Meta::range("from".into(), "to".into(), false, count + 100);
    group.bench_function("render_next_json_gzip", |b| {
        b.iter_batched(
            || {
                render_next(
                    &meta,
                    &filter,
                    Repr::Json,
                    Effort::Fast,
                    Encodings::Gzip,
                    Before::default(),
                )
                .1
            },
            |before| {
                render_next(
                    black_box(&next_meta),
                    &next,
                    Repr::Json,
                    Effort::Fast,
                    Encodings::Gzip,
                    Before {
                        coding: before,
                        body: Vec::new(),
                    },
                )
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("render_closed_json", |b| {
        b.iter(|| render(black_box(&meta), &filter, Repr::Json, Effort::Best))
    });
    let json = render(&meta, &filter, Repr::Json, Effort::Fast).identity;
    group.bench_function("deflate_fast_json", |b| {
        b.iter(|| deflate(black_box(&json), Compression::fast()))
    });
    group.finish();

    println!(
        "union/{label}: {read} keys read, {count} distinct, m = {}, k = {}, fpp {:.5}",
        filter.m(),
        filter.k(),
        filter.fpp()
    );
}

fn union(c: &mut Criterion<CpuTime>) {
    bench_size(c, "1M", 1_000_000, true);
    bench_size(c, "9.6M", 9_600_000, true);
    bench_size(c, "58.7M", 58_700_000, false);
}

criterion_group! {
    name = benches;
    // Few, long samples: one union of 9.6M keys is a large fraction of a second, and the
    // machine is shared, so medians over 10 samples are what to read.
    config = Criterion::default()
        .with_measurement(CpuTime)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = union
}
criterion_main!(benches);
