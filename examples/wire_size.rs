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

use bloomcast::bloom::{bits_for_fpp, Filter, Key, Ribbon};
use bloomcast::config::Settings;
use bloomcast::render::{render, render_compact, render_ribbon, Compact, Effort, Repr};
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
        // The compact form, served as is (near-random bytes do not gzip), at the target
        // and at 0.001, each against its own floor.
        for asked in [p, 0.001] {
            let r = bits_for_fpp(asked).expect("a supported fpp");
            let started = std::time::Instant::now();
            let ribbon = Ribbon::build(&keys, r).expect("builds");
            let build_ns = started.elapsed().as_nanos() as f64 / n as f64;
            let bytes = render_ribbon(&meta, &ribbon).identity.len();
            let per_id = bytes as f64 / n as f64;
            let floor = (1.0 / asked).log2() / 8.0;
            println!(
                "| {n} | {} | r={r} | {:.5} | ribbon (p={asked}, build {build_ns:.0} ns/ID) | {bytes} | {bytes} | {per_id:.4} | {floor:.4} | {:.3} |",
                ribbon.m(),
                ribbon.fpp(),
                per_id / floor,
            );
            // Its JSON form (the body as hex in a document), best gzip as served.
            let json = render_compact(&meta, &ribbon, Compact::RibbonJson);
            let per_id = json.gzip.len() as f64 / n as f64;
            println!(
                "| {n} | {} | r={r} | {:.5} | ribbon.json (p={asked}) | {} | {} | {per_id:.4} | {floor:.4} | {:.3} |",
                ribbon.m(),
                ribbon.fpp(),
                json.identity.len(),
                json.gzip.len(),
                per_id / floor,
            );
        }
    }
}
