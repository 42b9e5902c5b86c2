//! Open-hour deltas (issue 15): bytes per poll with and without RFC 9842 `dcz` deltas,
//! for an hour filling at a steady rate, polled every P seconds, and the CPU of a delta
//! next to a full response (the server makes deltas at zstd level 3).
//!
//! ```text
//! cargo run --release --example delta_bytes [-- [--cpu] 30000 300000]
//! ```
//!
//! The real server runs in this process on a socket, with a clock moved by hand: every
//! P seconds of the hour, N·P/3600 new IDs are ingested, then one poller using the SDK
//! (which asks for deltas) and one plain poller (`GET .bin` with gzip, no dictionary)
//! fetch the open hour. Body bytes are counted as they crossed the wire. Settings are
//! the defaults (`open_max_age` 30 s, `delta_ids` 5000), with `capacity` either the
//! default 3000 (the hour's filter grows, each growth a full body) or N (the hour sized
//! from the start, e.g. from the same hour a day earlier).

use bloomcast::bloom::Filter;
use bloomcast::client::Client;
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::hour_of;
use bloomcast::render::{render, Effort, Repr};
use bloomcast::startup::Application;
use bloomcast::wire::Meta;
use chrono::Duration;
use std::sync::Arc;
use std::time::Instant;

const TOKEN: &str = "delta-bytes-token";

struct Run {
    polls: u64,
    full: u64,
    delta: u64,
    deltas: u64,
}

async fn run(n: u64, every: i64, capacity: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 3_600_000,
        capacity,
        ..Settings::default()
    };
    let hour = hour_of(2026, 11, 23, 10).unwrap();
    let clock = ManualClock::at(hour, Duration::zero());
    let app = Application::build_with_clock(settings, Arc::new(clock.clone()))
        .await
        .unwrap();
    app.service().wait_loaded().await;
    let base = format!("http://{}", app.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let publisher = Client::builder(&base).token(TOKEN).build().unwrap();
    let poller = Client::new(&base).unwrap();
    let plain = reqwest::Client::new();
    let url = format!("{base}{}.bin", hour.path());
    let (mut sent, mut polls, mut full) = (0u64, 0u64, 0u64);
    let mut t = every;
    while t < 3600 {
        clock.advance(Duration::seconds(every));
        let due = n * t as u64 / 3600;
        let batch: Vec<String> = (sent..due).map(|i| format!("id-{i}")).collect();
        if !batch.is_empty() {
            publisher.ingest(&batch).await.unwrap();
        }
        sent = due;
        poller.hour(hour).await.unwrap();
        let body = plain
            .get(&url)
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        full += body.len() as u64;
        polls += 1;
        t += every;
    }
    let _ = stop.send(());
    let stats = poller.stats();
    Run {
        polls,
        full,
        delta: stats.body_bytes,
        deltas: stats.deltas,
    }
}

/// CPU of one response's body at the end of an hour of `n` IDs: the gzip render of a
/// version (done once per version, then copied to every poller) and the zstd delta
/// against the version 30 s older (done once per dictionary and version).
fn cpu(n: u64) {
    let version = |count: u64| {
        let mut f = Filter::with_capacity(n, 0.01).unwrap();
        for i in 0..count {
            f.insert(&format!("id-{i}"));
        }
        let meta = Meta::hour("2026-11-23T10:00:00Z".into(), false, count);
        (f, meta)
    };
    let older = n - n * 30 / 3600;
    let (f0, m0) = version(older);
    let (f1, m1) = version(n);
    let r0 = render(&m0, &f0, Repr::Bin, Effort::Fast);
    let reps = 5;
    let start = Instant::now();
    let mut r1 = None;
    for _ in 0..reps {
        r1 = Some(render(&m1, &f1, Repr::Bin, Effort::Fast));
    }
    let gzip_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(reps);
    let r1 = r1.unwrap();
    for level in [3, 9, 19] {
        let start = Instant::now();
        let mut body = Vec::new();
        for _ in 0..reps {
            body = bloomcast::dcz::encode(&r0.identity, &r0.sha256, &r1.identity, level).unwrap();
        }
        let dcz_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(reps);
        let start = Instant::now();
        for _ in 0..reps {
            bloomcast::dcz::decode(&r0.identity, &body).unwrap();
        }
        let decode_ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(reps);
        println!(
            "| {n} | {} | {} | {:.2} | {level} | {} | {:.2} | {:.2} |",
            r1.identity.len(),
            r1.gzip.len(),
            gzip_ms,
            body.len(),
            dcz_ms,
            decode_ms
        );
    }
}

#[tokio::main]
async fn main() {
    // `--cpu`: only the CPU table.
    let cpu_only = std::env::args().any(|a| a == "--cpu");
    let sizes: Vec<u64> = match std::env::args()
        .skip(1)
        .filter(|a| a != "--cpu")
        .collect::<Vec<_>>()
    {
        a if a.is_empty() => vec![30_000, 300_000],
        a => a
            .iter()
            .map(|s| s.parse().expect("N is a number"))
            .collect(),
    };
    println!("| IDs in the hour | poll every | capacity | polls | full gzip bytes | with deltas | ratio | polls answered dcz |");
    println!("|---|---|---|---|---|---|---|---|");
    for &n in sizes.iter().filter(|_| !cpu_only) {
        for every in [60, 10] {
            for capacity in [3000, n] {
                let r = run(n, every, capacity).await;
                println!(
                    "| {n} | {every} s | {capacity} | {} | {} | {} | {:.3} | {} |",
                    r.polls,
                    r.full,
                    r.delta,
                    r.delta as f64 / r.full as f64,
                    r.deltas
                );
            }
        }
    }
    println!();
    println!("| IDs | .bin bytes | gzip bytes | gzip render ms | zstd level | dcz bytes (30 s of IDs) | delta ms | decode ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        cpu(n);
    }
}
