//! The hand-written gzip coder (`render::gz`) against the deflate crates, on the bodies
//! the server compresses, in one run (issue 32: keep the winner, delete the loser).
//!
//! ```text
//! cargo bench --bench gzip -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Inputs, as the server makes them (keys are splitmix64 outputs, uniform like the SHA-1
//! prefixes they stand for):
//! - `hour_json`, `hour_bin`: a sealed hour of 3,000 IDs at p = 0.01 (`sized_within`),
//!   its JSON document and raw bits, each gzipped once at sealing (`Effort::Best`).
//! - `union_json`, `union_hex`, `union_bin`: a complete union of 24 hours, 8.45M
//!   distinct keys (`union_of`), gzipped once (`Effort::Best`).
//! - `union_next`: each new version of a union ending in the open hour (built with the
//!   room the server gives it), 100 keys on from the version before, in the gzip body
//!   alone: `ours` codes again only the chunks that changed (`gz::hex_of` given the
//!   version before's `HexCoding`) from `Document::json_parts`; a crate compresses the
//!   whole `Document::json_of`. `ours_fresh` codes every chunk, as the first version.
//!
//! Coders: `ours` (`render::gzip`, what `render` calls); `zlib_rs_huff` zlib-rs (the
//! `zlib-rs` backend of flate2) with zlib's `Z_HUFFMAN_ONLY` strategy; `zlib_rs_0`/`_1`
//! its levels 0 (stored blocks) and 1; `flate2_1` flate2 level 1 on the backend the
//! server links (miniz_oxide); `libdeflate_0`/`_1` libdeflate at its two fastest levels
//! (0 is stored blocks). The zlib-rs and libdeflate states are kept from one body to the
//! next. Every output is inflated back to its input by flate2 before timing, and the
//! sizes are printed first. Times are CPU time of the benchmarking
//! thread (`common/cpu_time.rs`), on the server's allocator.

use bloomcast::bloom::{union_of, union_with_room, Filter, Key};
use bloomcast::render::codec;
use bloomcast::render::{Effort, Repr};
use bloomcast::store::distinct;
use bloomcast::wire::{Document, Meta};
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use flate2::read::GzDecoder;
use flate2::{write::GzEncoder, Compression};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::time::Duration;

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::CpuTime;
#[path = "common/keys.rs"]
mod synthetic;
use synthetic::{hours, splitmix};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const P: f64 = 0.01;

/// A gzip coder of whole bodies.
type Coder = Box<dyn Fn(&[u8]) -> Vec<u8>>;

/// zlib-rs at `level` with `strategy`, its state kept from one body to the next (as a
/// server would keep one per thread), so a small body is not charged its allocation.
fn zlib_rs(level: i32, strategy: zlib_rs::Strategy) -> Coder {
    let config = zlib_rs::DeflateConfig {
        level,
        strategy,
        window_bits: 16 + 15, // a gzip member
        ..zlib_rs::DeflateConfig::default()
    };
    let state = RefCell::new(zlib_rs::Deflate::new_with_config(config));
    Box::new(move |data| {
        let mut state = state.borrow_mut();
        state.reset();
        let mut out = vec![0u8; zlib_rs::compress_bound(data.len()) + 32];
        let status = state.compress(data, &mut out, zlib_rs::DeflateFlush::Finish);
        assert_eq!(status, Ok(zlib_rs::Status::StreamEnd));
        out.truncate(state.total_out() as usize);
        out
    })
}

/// libdeflate at `level`, its compressor kept from one body to the next.
fn libdeflate(level: i32) -> Coder {
    let level = libdeflater::CompressionLvl::new(level).expect("a libdeflate level");
    let compressor = RefCell::new(libdeflater::Compressor::new(level));
    Box::new(move |data| {
        let mut compressor = compressor.borrow_mut();
        let mut out = vec![0u8; compressor.gzip_compress_bound(data.len())];
        let len = compressor.gzip_compress(data, &mut out).expect("room");
        out.truncate(len);
        out
    })
}

/// flate2's fastest level on the backend the server links, a new encoder a body (as
/// `render::gzip` makes one for what it leaves to deflate).
fn flate2_fast(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 2), Compression::fast());
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// The deflate crates, by name; `stored` whether the coder writes stored blocks only.
fn crates() -> Vec<(&'static str, bool, Coder)> {
    vec![
        (
            "zlib_rs_huff",
            false,
            zlib_rs(6, zlib_rs::Strategy::HuffmanOnly),
        ),
        ("zlib_rs_0", true, zlib_rs(0, zlib_rs::Strategy::Default)),
        ("zlib_rs_1", false, zlib_rs(1, zlib_rs::Strategy::Default)),
        ("flate2_1", false, Box::new(flate2_fast)),
        ("libdeflate_0", true, libdeflate(0)),
        ("libdeflate_1", false, libdeflate(1)),
    ]
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("a valid gzip member");
    out
}

/// Uniform keys, a new one each call.
fn keys(seed: u64) -> impl FnMut() -> Key {
    splitmix(seed.wrapping_mul(0x2545_f491_4f6c_dd1d))
}

/// Times `ours` and every crate on `data`, a body of `repr`, after checking each output
/// inflates to `data` and printing its size.
fn bench_body(c: &mut Criterion<CpuTime>, name: &str, data: &[u8], repr: Repr, effort: Effort) {
    let ours: Coder = Box::new(move |d| codec::gzip(d, repr, effort));
    let mut coders = vec![("ours", ours)];
    coders.extend(crates().into_iter().map(|(label, _, coder)| (label, coder)));
    for (label, coder) in &coders {
        let gz = coder(data);
        assert!(gunzip(&gz) == data, "{name}/{label} inflates to its input");
        println!(
            "size {name}/{label}: {} of {} bytes, {:.2}%",
            gz.len(),
            data.len(),
            100.0 * gz.len() as f64 / data.len() as f64
        );
    }
    let mut group = c.benchmark_group(format!("gzip/{name}"));
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    for (label, coder) in &coders {
        group.bench_function(*label, |b| b.iter(|| coder(black_box(data))));
    }
    group.finish();
}

/// Each new version of an open union: the gzip body alone, 100 keys on.
fn bench_next(c: &mut Criterion<CpuTime>, sets: &[&[Key]]) {
    let (filter, count) = union_with_room(sets, P, |n| n + n / 16 + 64).expect("sizable");
    let meta = Meta::range("from".into(), "to".into(), false, count);
    let mut next = filter.clone();
    let mut more = keys(7);
    for _ in 0..100 {
        next.insert_key(more());
    }
    let next_meta = Meta::range("from".into(), "to".into(), false, count + 100);
    let json = Document::json_of(next_meta.clone(), &next);
    let before = || {
        let (head, bytes, tail) = Document::json_parts(meta.clone(), &filter);
        codec::hex_of(&head, &bytes, &tail, None, Vec::new())
            .expect("a digit code")
            .1
    };
    let ours = |before| {
        let (head, bytes, tail) = Document::json_parts(next_meta.clone(), &next);
        codec::hex_of(&head, &bytes, &tail, before, Vec::new())
            .expect("a digit code")
            .0
    };
    let gz = ours(Some(before()));
    assert!(gunzip(&gz) == json, "union_next/ours inflates to its input");
    println!(
        "size union_next/ours: {} of {} bytes, {:.2}%",
        gz.len(),
        json.len(),
        100.0 * gz.len() as f64 / json.len() as f64
    );
    let mut group = c.benchmark_group("gzip/union_next");
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.sample_size(10);
    group.bench_function("ours", |b| {
        b.iter_batched(|| Some(before()), ours, BatchSize::LargeInput)
    });
    group.bench_function("ours_fresh", |b| b.iter(|| ours(None)));
    // Stored blocks are left out: twice the size of the others.
    for (label, _, coder) in crates().into_iter().filter(|c| !c.1) {
        group.bench_function(label, |b| {
            b.iter(|| coder(&Document::json_of(black_box(next_meta.clone()), &next)))
        });
    }
    group.finish();
}

fn gzip(c: &mut Criterion<CpuTime>) {
    let mut next = keys(1);
    let hour: Vec<Key> = distinct((0..3_000).map(|_| next()).collect());
    let filter = Filter::sized_within(&hour, P).expect("sizable");
    let meta = Meta::hour("2008-09-03T13:00:00Z".into(), true, 3_000);
    println!("hour: m = {}, fill {:.3}", filter.m(), fill(&filter));
    let json = Document::json_of(meta, &filter);
    bench_body(c, "hour_json", &json, Repr::Json, Effort::Best);
    bench_body(c, "hour_bin", &filter.to_bytes(), Repr::Bin, Effort::Best);

    let hours = hours(9_600_000, keys(9_600_000));
    let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
    let (filter, count) = union_of(&sets, P).expect("sizable");
    println!(
        "union: {count} keys, m = {}, fill {:.3}",
        filter.m(),
        fill(&filter)
    );
    let meta = Meta::range("from".into(), "to".into(), true, count);
    let json = Document::json_of(meta, &filter);
    bench_body(c, "union_json", &json, Repr::Json, Effort::Best);
    drop(json);
    let hex = filter.to_hex().into_bytes();
    bench_body(c, "union_hex", &hex, Repr::Hex, Effort::Best);
    drop(hex);
    bench_body(c, "union_bin", &filter.to_bytes(), Repr::Bin, Effort::Best);
    bench_next(c, &sets);
}

/// The share of a filter's bits set.
fn fill(filter: &Filter) -> f64 {
    let ones: u64 = filter
        .to_bytes()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    ones as f64 / f64::from(filter.m())
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .with_measurement(CpuTime)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = gzip
}
criterion_main!(benches);
