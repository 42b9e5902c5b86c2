//! Wire size: gzip bytes per ID of each representation of a closed hour, next to the
//! information-theoretic floor of an approximate-membership structure, log2(1/p)/8
//! bytes per ID.
//!
//! ```text
//! cargo run --release --example wire_size [-- 3000 30000 300000]
//! ```
//!
//! Each filter is built and rendered by the library exactly as the server seals and
//! serves a closed hour: [`Filter::sized_within`] at the configured `target_fpp` (from
//! `config/` and `BLOOMCAST_*`, as `bloomcast serve` reads it), then
//! [`bloomcast::render::render`] with the best gzip effort, so the bytes counted are the
//! bytes a client receives (headers aside).

use bloomcast::bloom::{Filter, Key};
use bloomcast::config::Settings;
use bloomcast::render::{render, Effort, Repr};
use bloomcast::wire::Meta;

fn main() {
    let base = std::env::current_dir().expect("a working directory");
    let settings = Settings::load(&base).expect("the configuration loads");
    let p = settings.target_fpp;
    let sizes: Vec<u64> = match std::env::args().skip(1).collect::<Vec<_>>() {
        a if a.is_empty() => vec![3_000, 30_000, 300_000],
        a => a
            .iter()
            .map(|s| s.parse().expect("n must be a number"))
            .collect(),
    };
    let floor = (1.0 / p).log2() / 8.0;
    println!("target_fpp={p} floor_bytes_per_id={floor:.4}");
    println!(
        "| n | m | k | fpp | repr | identity bytes | gzip bytes | gzip B/ID | floor B/ID | ratio |"
    );
    println!("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|");
    for n in sizes {
        let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("user:{i}"))).collect();
        let filter = Filter::sized_within(&keys, p).expect("a filter of this size exists");
        let meta = Meta::hour("2026-11-22T05:00:00Z".into(), true, n);
        for repr in Repr::ALL {
            let r = render(&meta, &filter, repr, Effort::Best);
            let per_id = r.gzip.len() as f64 / n as f64;
            println!(
                "| {n} | {} | {} | {:.5} | {} | {} | {} | {per_id:.4} | {floor:.4} | {:.3} |",
                filter.m(),
                filter.k(),
                filter.fpp(),
                repr.suffix(),
                r.identity.len(),
                r.gzip.len(),
                per_id / floor,
            );
        }
    }
}
