//! Issue 52's table of quiet hours, measured against a real server from outside: each
//! sealed hour's size, `k`, advertised `fpp`, and the rate 50,000 IDs never published
//! measure through a sha1-km32 client written here from docs/PROTOCOL.md sections 1
//! and 2 (not the crate's `Key` or `Filter`).
//!
//! ```text
//! cargo run --release --example quiet_hours -- seed <data-dir>
//! BLOOMCAST_DATA_DIR=<data-dir> BLOOMCAST_LISTEN=127.0.0.1:8099 bloomcast serve &
//! cargo run --release --example quiet_hours -- probe http://127.0.0.1:8099
//! ```
//!
//! `seed` writes ten past hours, from 11 to 2 hours ago, of 1, 2, 3, 5, 10, 20, 50, 100,
//! 300 and 3,000 IDs into a new embedded store through the library's store API, as an
//! ingest would (`quiet-N:0` .. `quiet-N:N-1`); the server seals them at start by the
//! rule it has. `probe` reads the index, fetches every complete hour with IDs as JSON,
//! checks it holds its own IDs, and prints the table (docs/BENCHMARKS.md, "Quiet
//! hours"). The same seed served by an earlier version gives the table before.

use bloomcast::bloom::Key;
use bloomcast::clock::{Clock, SystemClock};
use bloomcast::hour::Hour;
use bloomcast::store::{SqliteStore, Store};
use sha1::{Digest, Sha1};
use std::path::PathBuf;

const COUNTS: [u64; 10] = [1, 2, 3, 5, 10, 20, 50, 100, 300, 3000];
const ABSENT: usize = 50_000;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: quiet_hours seed <data-dir> | quiet_hours probe <base-url>";
    match (argv.first().map(String::as_str), argv.get(1)) {
        (Some("seed"), Some(dir)) => seed(&PathBuf::from(dir)).await,
        (Some("probe"), Some(base)) => probe(base.trim_end_matches('/')).await,
        _ => panic!("{usage}"),
    }
}

async fn seed(dir: &std::path::Path) {
    let now = SystemClock.current_hour().index();
    let first = Hour::from_index(now - 11);
    let store = SqliteStore::open(dir, first).expect("the store opens");
    for (i, n) in COUNTS.into_iter().enumerate() {
        let hour = Hour::from_index(first.index() + i as i64);
        let keys: Vec<Key> = ids(n).iter().map(|id| Key::of(id)).collect();
        store.append(hour, &keys).await.expect("appended");
        println!("{} {n}", hour.path());
    }
}

fn ids(n: u64) -> Vec<String> {
    (0..n).map(|i| format!("quiet-{n}:{i}")).collect()
}

/// The hash halves of an ID: SHA-1 of its UTF-8 bytes, bytes 0..4 and 4..8 big-endian.
fn halves(id: &str) -> (u64, u64) {
    let d = Sha1::digest(id.as_bytes());
    let word = |at: usize| u64::from(u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]));
    (word(0), word(4))
}

/// Whether the filter of `m` bits and `k` probes whose body is `body` may hold the ID of
/// `halves`: positions `(h1 + i h2) mod m`, bit `j` in byte `j / 8` under `1 << (j % 8)`.
fn may_contain(body: &[u8], m: u64, k: u64, (h1, h2): (u64, u64)) -> bool {
    (0..k).all(|i| {
        let j = (h1 + i * h2) % m;
        body[(j / 8) as usize] & (1 << (j % 8)) != 0
    })
}

async fn probe(base: &str) {
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            let reply = http.get(&url).send().await.expect("the server answers");
            assert!(reply.status().is_success(), "{url}: {}", reply.status());
            reply.json::<serde_json::Value>().await.expect("JSON")
        }
    };
    let index = get(format!("{base}/")).await;
    let absent: Vec<(u64, u64)> = (0..ABSENT)
        .map(|i| halves(&format!("never-published:{i}")))
        .collect();
    println!("| IDs in hour | m | k | advertised `fpp` | measured |");
    println!("|---:|---:|---:|---:|---:|");
    let mut hours: Vec<&serde_json::Value> = index["hours"]
        .as_array()
        .expect("the index lists hours")
        .iter()
        .filter(|h| h["complete"] == true && h["count"].as_u64().is_some_and(|c| c > 0))
        .collect();
    hours.sort_by_key(|h| h["count"].as_u64());
    for hour in hours {
        let doc = get(format!("{base}{}.json", hour["url"].as_str().unwrap())).await;
        let (m, k) = (doc["m"].as_u64().unwrap(), doc["k"].as_u64().unwrap());
        let count = doc["count"].as_u64().unwrap();
        let body = hex::decode(doc["filter"].as_str().unwrap()).expect("hex");
        for id in ids(count) {
            assert!(
                may_contain(&body, m, k, halves(&id)),
                "a false negative: {id}"
            );
        }
        let hits = absent
            .iter()
            .filter(|&&h| may_contain(&body, m, k, h))
            .count();
        let measured = hits as f64 / ABSENT as f64;
        let fpp = doc["fpp"].as_f64().unwrap();
        let fpp = if fpp >= 1e-4 {
            format!("{fpp:.4}")
        } else {
            format!("{fpp:.1e}")
        };
        println!("| {count} | {m} | {k} | {fpp} | {measured:.4} |");
    }
}
