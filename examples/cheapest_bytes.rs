//! The 2008 scenario with client-chosen precision: bytes per day of a poller that reads
//! each closed hour in the form [`cheapest_form`] picks, next to today's v1 `.bin` gzip
//! Bloom filters at the service's target fpp, wasted fetches included.
//!
//! ```text
//! cargo run --release --example cheapest_bytes [-- --users 45754 --updated 6721 --fetch-cost 10240]
//! cargo run --release --example cheapest_bytes -- --write-bodies DIR   # ribbons for wire.sh's query timings
//! ```
//!
//! 45,754 followed users, 6,721 of whom update at random hours of one day (the same
//! draw as `seed_scenario`). Every filter is built by the library as the server seals a
//! closed hour (`Filter::sized_within` at the target, rendered `.bin` with the best gzip;
//! `Ribbon::build` at the chosen r) and every followed ID that did not change is tested
//! against it, so "measured" wasted fetches are counted, not estimated. Headers aside.

use bloomcast::bloom::{Filter, Key, Ribbon};
use bloomcast::client::{cheapest_form, Form};
use bloomcast::render::{render, Effort, Repr};
use bloomcast::wire::Meta;
use std::collections::HashSet;
use std::time::Instant;

struct Args {
    users: usize,
    updated: usize,
    fetch_cost: u64,
    target_fpp: f64,
    write_bodies: Option<std::path::PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        users: 45_754,
        updated: 6_721,
        fetch_cost: 10_240,
        target_fpp: 0.01,
        write_bodies: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = pair.get(1).expect("a value after each option");
        let number = || value.parse::<f64>().expect("a number");
        match pair[0].as_str() {
            "--users" => a.users = number() as usize,
            "--updated" => a.updated = number() as usize,
            "--fetch-cost" => a.fetch_cost = number() as u64,
            "--target-fpp" => a.target_fpp = number(),
            "--write-bodies" => a.write_bodies = Some(value.into()),
            other => panic!("unknown option {other}"),
        }
    }
    a
}

/// splitmix64, seeded as `seed_scenario` is: the same day every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }
}

/// One way of reading the day: bytes, and the fetches it wastes.
#[derive(Default)]
struct Day {
    filter_bytes: u64,
    /// Expected flags of IDs that did not change in the hour read.
    expected_wasted: f64,
    /// Expected flags of IDs that never changed that day (a daily poller's waste).
    expected_quiet: f64,
    /// Wasted fetches per hour, summed: an hourly poller fetches each ID an hour flags
    /// that did not change in that hour.
    measured_wasted: u64,
    /// Distinct IDs flagged in some hour but never updated (a daily poller's fetches).
    flagged: HashSet<usize>,
    forms: Vec<String>,
}

impl Day {
    fn row(&self, name: &str, wasted: u64, expected: f64, cost: u64) {
        let wasted_bytes = expected * cost as f64;
        println!(
            "| {name} | {} | {expected:.1} | {wasted} | {:.0} | {:.0} |",
            self.filter_bytes,
            wasted_bytes,
            self.filter_bytes as f64 + wasted_bytes,
        );
    }
}

fn main() {
    let a = args();
    let users: Vec<String> = (0..a.users).map(|i| format!("flickr-user:{i}")).collect();
    let keys: Vec<Key> = users.iter().map(|u| Key::of(u)).collect();
    let mut rng = Rng(20_080_903);
    let mut order: Vec<usize> = (0..a.users).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut by_hour: Vec<Vec<usize>> = vec![Vec::new(); 24];
    for &u in &order[..a.updated] {
        by_hour[(rng.next() % 24) as usize].push(u);
    }
    let updated: HashSet<usize> = order[..a.updated].iter().copied().collect();
    let quiet: Vec<usize> = (0..a.users).filter(|u| !updated.contains(u)).collect();
    let followed = a.users as u64;
    let (p, cost) = (a.target_fpp, a.fetch_cost);

    let (mut today, mut best) = (Day::default(), Day::default());
    for (h, members) in by_hour.iter().enumerate() {
        let hour_keys: Vec<Key> = members.iter().map(|&u| keys[u]).collect();
        let n = hour_keys.len() as u64;
        let absent = followed - n;
        let in_hour: HashSet<usize> = members.iter().copied().collect();
        let bloom = Filter::sized_within(&hour_keys, p).expect("a filter");
        let meta = Meta::hour(format!("2008-09-03T{h:02}:00:00Z"), true, n);
        let gzip = render(&meta, &bloom, Repr::Bin, Effort::Best).gzip.len() as u64;
        let read = |day: &mut Day, bytes: u64, fpp: f64, contains: &dyn Fn(Key) -> bool| {
            day.filter_bytes += bytes;
            day.expected_wasted += absent as f64 * fpp;
            day.expected_quiet += quiet.len() as f64 * fpp;
            for u in (0..keys.len()).filter(|u| !in_hour.contains(u)) {
                if contains(keys[u]) {
                    day.measured_wasted += 1;
                    if !updated.contains(&u) {
                        day.flagged.insert(u);
                    }
                }
            }
        };
        read(&mut today, gzip, bloom.fpp(), &|k| bloom.contains_key(k));
        match cheapest_form(n, p, followed, cost).form {
            Form::Bloom => {
                best.forms.push("bloom".into());
                read(&mut best, gzip, bloom.fpp(), &|k| bloom.contains_key(k));
            }
            Form::Ribbon { r } => {
                let ribbon = Ribbon::build(&hour_keys, r).expect("a ribbon");
                best.forms.push(format!("r={r}"));
                let bytes = ribbon.byte_len() as u64;
                read(&mut best, bytes, ribbon.fpp(), &|k| ribbon.contains(k));
            }
            // Only `exact_or` picks the exact form; only `cheapest_form_of` version 2;
            // only `cheapest_pages` pages.
            Form::Exact | Form::Ribbon2 { .. } | Form::Pages { .. } => {
                unreachable!("cheapest_form picks neither the exact form nor version 2")
            }
        }
    }
    let sizes: Vec<usize> = by_hour.iter().map(Vec::len).collect();
    println!(
        "users={} updated={} fetch_cost={cost} target_fpp={p}; IDs per hour {}..{}; forms chosen: {}",
        a.users,
        a.updated,
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        summary(&best.forms),
    );
    println!(
        "| poller | filter bytes/day | expected wasted fetches | measured | expected wasted bytes | total bytes/day |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    today.row(
        "hourly, today (24 x v1 .bin gzip)",
        today.measured_wasted,
        today.expected_wasted,
        cost,
    );
    best.row(
        "hourly, cheapest form",
        best.measured_wasted,
        best.expected_wasted,
        cost,
    );

    // A poller that reads once a day: today one union of the day at the target; with the
    // cheapest forms, the same 24 hours as above, each flagged ID fetched once.
    let day_keys: Vec<Key> = updated.iter().map(|&u| keys[u]).collect();
    let union = Filter::sized_within(&day_keys, p).expect("a filter");
    let meta = Meta::range("from".into(), "to".into(), true, day_keys.len() as u64);
    let mut daily = Day {
        filter_bytes: render(&meta, &union, Repr::Bin, Effort::Best).gzip.len() as u64,
        expected_wasted: quiet.len() as f64 * union.fpp(),
        ..Day::default()
    };
    daily.measured_wasted = quiet
        .iter()
        .filter(|&&u| union.contains_key(keys[u]))
        .count() as u64;
    daily.row(
        "daily, today (1 union .bin gzip)",
        daily.measured_wasted,
        daily.expected_wasted,
        cost,
    );
    best.row(
        "daily, cheapest form (24 hours)",
        best.flagged.len() as u64,
        best.expected_quiet,
        cost,
    );
    println!(
        "useful fetches: {}, the same for every poller (not counted above)",
        a.updated
    );
    if let Some(dir) = a.write_bodies {
        write_bodies(&dir);
    }
}

/// "r=22 x 3, r=23 x 21": the forms chosen, counted.
fn summary(forms: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for f in forms {
        match counts.iter_mut().find(|(g, _)| g == f) {
            Some((_, c)) => *c += 1,
            None => counts.push((f.clone(), 1)),
        }
    }
    counts.sort();
    let parts: Vec<String> = counts.iter().map(|(f, c)| format!("{f} x {c}")).collect();
    parts.join(", ")
}

/// Ribbon bodies for the other clients' query timings, and the Rust decoder's own.
fn write_bodies(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("the bodies directory");
    println!("| client | n | r | query ns/key (ID, SHA-1 included) | query ns/key (pre-hashed) |");
    println!("|---|---:|---:|---:|---:|");
    for (n, r) in [(300usize, 23u32), (3_000, 7), (30_000, 10)] {
        let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("user:{i}"))).collect();
        let ribbon = Ribbon::build(&keys, r).expect("a ribbon");
        let body = ribbon.to_bytes();
        std::fs::write(dir.join(format!("n{n}-r{r}.ribbon")), &body).expect("a body");
        let decoded = Ribbon::from_bytes(&body).expect("decodes");
        let ids: Vec<String> = (0..200_000).map(|i| format!("absent:{i}")).collect();
        let absent: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        let started = Instant::now();
        let hits = ids.iter().filter(|id| decoded.contains_id(id)).count();
        let with_hash = started.elapsed().as_nanos() as f64 / ids.len() as f64;
        let started = Instant::now();
        let again = absent.iter().filter(|k| decoded.contains(**k)).count();
        let pre_hashed = started.elapsed().as_nanos() as f64 / ids.len() as f64;
        assert_eq!(hits, again);
        println!("| Rust | {n} | {r} | {with_hash:.0} | {pre_hashed:.0} |");
    }
}

/// The SplitMix64 finaliser (bloomcast-core's `mix64`, which the ribbon and exact key
/// schemes use), here the step of this example's fixed random sequence.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
