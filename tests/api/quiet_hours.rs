//! Issue 52, item 1: every filter served meets the target at every count from 1 up, and
//! its `fpp` is honest. Hours of 1 to 3,000 IDs are sealed, and each filter served (the
//! hours, a day of quiet hours, the open hour, a since-union) is probed with 50,000 IDs
//! never published, through a sha1-km32 client written here from docs/PROTOCOL.md
//! sections 1 and 2 (not the crate's `Key` or `Filter`).
//!
//! The measured rate must be at most the target, and at most 1.1 times the advertised
//! `fpp`, each plus a one-sided binomial allowance at z = 3.3 for 50,000 draws (one
//! chance in 2,000 that a filter exactly at its bound fails by chance):
//! `bound + 3.3 sqrt(bound (1 - bound) / 50,000)`.

use crate::helpers::*;
use chrono::Duration;
use sha1::{Digest, Sha1};

const ABSENT: usize = 50_000;
const TARGET: f64 = 0.01;

/// The hash halves of an ID: SHA-1 of its UTF-8 bytes, bytes 0..4 and 4..8 big-endian.
fn halves(id: &str) -> (u64, u64) {
    let d = Sha1::digest(id.as_bytes());
    let word = |at: usize| u64::from(u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]));
    (word(0), word(4))
}

/// A v1 JSON document as a client reads it: `m`, `k`, the body from its hex.
struct Served {
    m: u64,
    k: u64,
    body: Vec<u8>,
    fpp: f64,
    count: u64,
}

impl Served {
    fn of(doc: &serde_json::Value) -> Served {
        let hex = doc["filter"].as_str().unwrap().as_bytes();
        let nibble = |c: u8| (c as char).to_digit(16).unwrap() as u8;
        let body = hex
            .chunks(2)
            .map(|p| nibble(p[0]) << 4 | nibble(p[1]))
            .collect();
        Served {
            m: doc["m"].as_u64().unwrap(),
            k: doc["k"].as_u64().unwrap(),
            body,
            fpp: doc["fpp"].as_f64().unwrap(),
            count: doc["count"].as_u64().unwrap(),
        }
    }

    /// Positions `(h1 + i h2) mod m` in exact arithmetic; bit `j` is in byte `j / 8`
    /// under mask `1 << (j mod 8)`.
    fn may_contain(&self, (h1, h2): (u64, u64)) -> bool {
        (0..self.k).all(|i| {
            let j = (h1 + i * h2) % self.m;
            self.body[(j / 8) as usize] & (1 << (j % 8)) != 0
        })
    }
}

/// `bound` plus the one-sided allowance at z = 3.3 for `ABSENT` draws.
fn allowed(bound: f64) -> f64 {
    let bound = bound.min(1.0);
    bound + 3.3 * (bound * (1.0 - bound) / ABSENT as f64).sqrt()
}

struct Row {
    what: String,
    served: Served,
    measured: f64,
}

/// Probes the filter at `path` with the absent IDs, checks it holds every one of
/// `published` and the two bounds, and returns its row.
async fn probe(app: &TestApp, path: &str, published: &[String], absent: &[(u64, u64)]) -> Row {
    let reply = app.get(&format!("{path}.json")).await;
    assert_eq!(reply.status, 200, "{path}");
    let served = Served::of(&reply.json());
    for id in published {
        assert!(
            served.may_contain(halves(id)),
            "{path}: a false negative for {id}"
        );
    }
    let hits = absent.iter().filter(|&&h| served.may_contain(h)).count();
    let measured = hits as f64 / absent.len() as f64;
    let row = Row {
        what: path.to_owned(),
        served,
        measured,
    };
    let fpp = row.served.fpp;
    assert!(
        measured <= allowed(TARGET),
        "{path}: measured {measured} past the target"
    );
    assert!(
        measured <= allowed(1.1 * fpp),
        "{path}: measured {measured}, advertised {fpp}"
    );
    row
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

async fn publish(app: &TestApp, ids: &[String]) {
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    for batch in refs.chunks(1000) {
        app.ingest(batch).await;
    }
}

#[tokio::test]
async fn every_filter_served_from_one_id_up_meets_the_target_and_its_fpp() {
    let app = TestApp::spawn().await;
    let absent: Vec<(u64, u64)> = ids("never-published", ABSENT)
        .iter()
        .map(|id| halves(id))
        .collect();
    let counts = [1, 2, 3, 5, 10, 20, 50, 100, 300, 3000];
    let mut published = Vec::new();
    // 2008-09-03, 13:00 to 22:00: one count an hour.
    for n in counts {
        let hour = ids(&format!("quiet-{n}"), n);
        publish(&app, &hour).await;
        published.push(hour);
        app.clock.advance(Duration::hours(1));
    }
    // 2008-09-04, a day of three quiet hours (1, 2 and 3 IDs from 00:00), then
    // 2008-09-05.
    app.clock.advance(Duration::hours(1));
    let mut day = Vec::new();
    for n in 1..=3 {
        let hour = ids(&format!("quiet-day-{n}"), n);
        publish(&app, &hour).await;
        day.extend(hour);
        app.clock.advance(Duration::hours(1));
    }
    app.clock.advance(Duration::hours(21));
    let open = ids("open", 2);
    publish(&app, &open).await;
    app.service.tick().await.unwrap();

    let mut rows = Vec::new();
    for (h, hour) in (13..).zip(&published) {
        let row = probe(&app, &format!("/2008/09/03/{h}"), hour, &absent).await;
        assert_eq!(row.served.count, hour.len() as u64);
        rows.push(row);
    }
    rows.push(probe(&app, "/2008/09/04", &day, &absent).await);
    rows.push(probe(&app, "/2008/09/05/00", &open, &absent).await);
    let mut since = day.clone();
    since.extend(open.iter().cloned());
    rows.push(probe(&app, "/since/2008/09/04/00", &since, &absent).await);
    // The figures of docs/BENCHMARKS.md ("Quiet hours"), with `--nocapture`.
    for row in &rows {
        let s = &row.served;
        println!(
            "{:>22} {:>5} {:>6} {:>3} {:>10.3e} {:>9.5}",
            row.what, s.count, s.m, s.k, s.fpp, row.measured
        );
    }
}

#[tokio::test]
async fn an_open_hour_sized_for_one_id_grows_and_stays_within_its_fpp() {
    // capacity 1: the open hour starts at the rule's size for one ID and grows.
    let app = TestApp::spawn_with(|s| s.capacity = 1).await;
    let absent: Vec<(u64, u64)> = ids("never-published", ABSENT)
        .iter()
        .map(|id| halves(id))
        .collect();
    let mut published = Vec::new();
    for n in [1, 1, 3, 5, 10, 30] {
        let more = ids(&format!("open-{}", published.len()), n);
        publish(&app, &more).await;
        published.extend(more);
        let row = probe(&app, "/2008/09/03/13", &published, &absent).await;
        assert_eq!(row.served.count, published.len() as u64);
        assert!(
            row.served.m < 4096,
            "a quiet open hour stays small: {}",
            row.served.m
        );
    }
}
