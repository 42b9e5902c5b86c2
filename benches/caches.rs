//! The render cache (`service::RenderCache`: closed hours' and past days' renderings
//! within a byte budget; a view of the one cache, a `quick_cache` of one shard behind
//! an enum of every kind it keeps) against `quick_cache` and `moka` doing the same job
//! directly: `Arc<Rendered>` by `(first hour, last hour, repr)`, weighed by
//! `Rendered::size`, within one byte budget.
//!
//! ```text
//! cargo bench --bench caches -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! - `hit/1`: one thread looks up resident renderings (2048 keys, cycled): the read
//!   path's case, a poll finding a ready rendering. `ours_with` and `ours_get` are the
//!   render cache's two calls (both clone the `Arc` now, as the crates do).
//! - `hit/2_spread`, `hit/2_same`: two threads at once, over different keys, or both on
//!   one key (many pollers on the hour that just closed). Time is wall time per lookup
//!   of each thread: equal to `hit/1` is perfect scaling.
//! - `insert_evict`: one thread inserts into a full cache (256 renderings fit), each
//!   insert evicting one.
//! - `mixed/2`: two threads reading through the cache: 90 % of lookups on 64 hot keys,
//!   10 % on 4096 cold ones, a miss inserts; 256 fit. The hit ratio of each is printed
//!   once before the run.
//!
//! `quick_cache` shards its budget (4 shards per core by default; an entry heavier than
//! 97 % of a shard is refused); `quick_cache_1` is one shard, the only setting that
//! admits an entry of nearly the whole budget as ours does. `moka` runs LRU, the
//! eviction order our tests pin.

use bloomcast::bloom::Filter;
use bloomcast::render::{render, Effort, Rendered};
use bloomcast::service::{CacheKey, RenderCache};
use bloomcast::wire::{Meta, Repr};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Distinct renderings the values are drawn from (the key's index picks one).
const VALUES: usize = 256;
/// Keys resident in the hit benchmarks.
const RESIDENT: usize = 2048;
/// Renderings the budget of the insert and mixed benchmarks holds.
const FITS: usize = 256;
const HOT: u64 = 64;
const COLD: u64 = 4096;

/// One cache under test, by what the service asks of it.
trait Under: Sync {
    /// Looks `key` up and returns the size of the rendering found (0 on a miss).
    fn hit(&self, key: &CacheKey) -> usize;
    fn insert(&self, key: CacheKey, value: Arc<Rendered>);
}

/// Ours, read borrowed.
struct OursWith(RenderCache);
/// Ours, as the full path reads it: a clone of the `Arc`.
struct OursGet(RenderCache);

impl Under for OursWith {
    fn hit(&self, key: &CacheKey) -> usize {
        self.0.with(key, |r| r.size()).unwrap_or(0)
    }
    fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.0.insert(key, value);
    }
}

impl Under for OursGet {
    fn hit(&self, key: &CacheKey) -> usize {
        self.0.get(key).map_or(0, |r| r.size())
    }
    fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.0.insert(key, value);
    }
}

#[derive(Clone)]
struct Bytes;

impl quick_cache::Weighter<CacheKey, Arc<Rendered>> for Bytes {
    fn weight(&self, _: &CacheKey, value: &Arc<Rendered>) -> u64 {
        value.size() as u64
    }
}

struct Quick(quick_cache::sync::Cache<CacheKey, Arc<Rendered>, Bytes>);

impl Quick {
    fn new(budget: usize, items: usize, shards: Option<usize>) -> Quick {
        let mut options = quick_cache::OptionsBuilder::new();
        options
            .estimated_items_capacity(items)
            .weight_capacity(budget as u64);
        if let Some(shards) = shards {
            options.shards(shards);
        }
        let options = options.build().expect("valid options");
        Quick(quick_cache::sync::Cache::with_options(
            options,
            Bytes,
            Default::default(),
            Default::default(),
        ))
    }
}

impl Under for Quick {
    fn hit(&self, key: &CacheKey) -> usize {
        self.0.get(key).map_or(0, |r| r.size())
    }
    fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.0.insert(key, value);
    }
}

struct Moka(moka::sync::Cache<CacheKey, Arc<Rendered>>);

impl Moka {
    fn new(budget: usize) -> Moka {
        let cache = moka::sync::Cache::builder()
            .max_capacity(budget as u64)
            .weigher(|_: &CacheKey, v: &Arc<Rendered>| u32::try_from(v.size()).unwrap_or(u32::MAX))
            .eviction_policy(moka::policy::EvictionPolicy::lru())
            .build();
        Moka(cache)
    }
}

impl Under for Moka {
    fn hit(&self, key: &CacheKey) -> usize {
        self.0.get(key).map_or(0, |r| r.size())
    }
    fn insert(&self, key: CacheKey, value: Arc<Rendered>) {
        self.0.insert(key, value);
    }
}

/// Renderings of a closed hour of 3000 IDs (the seed's hourly size) as hex: ~8 KB each.
fn values() -> Vec<Arc<Rendered>> {
    (0..VALUES)
        .map(|i| {
            let mut f = Filter::with_capacity(3000, 0.01).expect("valid sizing");
            for id in 0..3000 {
                f.insert(&format!("user:{i}:{id}"));
            }
            let meta = Meta::hour(format!("h{i}"), true, 3000);
            Arc::new(render(&meta, &f, Repr::Hex, Effort::Fast))
        })
        .collect()
}

fn key(i: u64) -> CacheKey {
    (i as i64, i as i64, Repr::Hex)
}

/// Every cache under test, empty, within `budget` bytes for about `items` entries.
fn caches(budget: usize, items: usize) -> Vec<(&'static str, Box<dyn Under>)> {
    vec![
        ("ours_with", Box::new(OursWith(RenderCache::new(budget)))),
        ("ours_get", Box::new(OursGet(RenderCache::new(budget)))),
        ("quick_cache", Box::new(Quick::new(budget, items, None))),
        (
            "quick_cache_1",
            Box::new(Quick::new(budget, items, Some(1))),
        ),
        ("moka", Box::new(Moka::new(budget))),
    ]
}

/// Runs `op(thread, i)` for `i in 0..iters` on `threads` threads at once; wall time.
fn on_threads(threads: usize, iters: u64, op: &(dyn Fn(usize, u64) + Sync)) -> Duration {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in 0..iters {
                    op(t, i);
                }
            });
        }
        start.wait();
        let began = Instant::now();
        // The scope joins every thread before it returns.
        began
    })
    .elapsed()
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The key of the `i`th read-through lookup of thread `t`: mostly hot, sometimes cold.
fn skewed(t: usize, i: u64) -> u64 {
    let mut x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64 + 1) << 40;
    let r = xorshift(&mut x);
    if r % 10 == 0 {
        HOT + (r >> 8) % COLD
    } else {
        (r >> 8) % HOT
    }
}

fn read_through(cache: &dyn Under, values: &[Arc<Rendered>], t: usize, i: u64) {
    let k = skewed(t, i);
    if cache.hit(&key(k)) == 0 {
        cache.insert(key(k), values[k as usize % VALUES].clone());
    }
}

fn bench(c: &mut Criterion) {
    let values = values();
    let size = values[0].size();

    let mut group = c.benchmark_group("hit");
    for (name, cache) in caches(RESIDENT * size * 2, RESIDENT) {
        for i in 0..RESIDENT as u64 {
            cache.insert(key(i), values[i as usize % VALUES].clone());
        }
        let all = (0..RESIDENT as u64).all(|i| cache.hit(&key(i)) > 0);
        assert!(all, "{name}: every key resident");
        group.bench_function(BenchmarkId::new(name, "1"), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % RESIDENT as u64;
                black_box(cache.hit(black_box(&key(i))))
            })
        });
        let cache = &*cache;
        group.bench_function(BenchmarkId::new(name, "2_spread"), |b| {
            b.iter_custom(|iters| {
                on_threads(2, iters, &|t, i| {
                    let k = (i + t as u64 * RESIDENT as u64 / 2) % RESIDENT as u64;
                    black_box(cache.hit(&key(k)));
                })
            })
        });
        group.bench_function(BenchmarkId::new(name, "2_same"), |b| {
            b.iter_custom(|iters| {
                on_threads(2, iters, &|_, _| {
                    black_box(cache.hit(black_box(&key(7))));
                })
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("insert_evict");
    for (name, cache) in caches(FITS * size, FITS) {
        if name == "ours_get" {
            continue; // the same inserts as ours_with
        }
        for i in 0..FITS as u64 {
            cache.insert(key(i), values[i as usize % VALUES].clone());
        }
        let mut i = FITS as u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                cache.insert(key(i), values[i as usize % VALUES].clone());
            })
        });
    }
    group.finish();

    for (name, cache) in caches(FITS * size, FITS) {
        let ops = 200_000;
        let hits = (0..ops)
            .filter(|&i| {
                let k = skewed(0, i);
                let hit = cache.hit(&key(k)) > 0;
                if !hit {
                    cache.insert(key(k), values[k as usize % VALUES].clone());
                }
                hit
            })
            .count();
        eprintln!("mixed: {name} hit ratio {:.3}", hits as f64 / ops as f64);
    }
    let mut group = c.benchmark_group("mixed");
    for (name, cache) in caches(FITS * size, FITS) {
        if name == "ours_get" {
            continue;
        }
        let cache = &*cache;
        let values = &values;
        group.bench_function(BenchmarkId::new(name, "2"), |b| {
            let mut round = 0;
            b.iter_custom(|iters| {
                round += iters;
                let base = round;
                on_threads(2, iters, &|t, i| read_through(cache, values, t, base + i))
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
