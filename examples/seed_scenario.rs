//! The 2008 case that started it all, replayed over HTTP: 45,754 followed users, 6,721
//! of whom update during one day, and one aggregator that wants to know whose feeds to
//! fetch.
//!
//! ```text
//! cargo run --release --example seed_scenario [-- --users 45754 --updated 6721 --feed-bytes 10240]
//! ```
//!
//! A real bloomcast server runs in this process on a loopback port over a real embedded
//! store in a temporary directory; only its clock is ours, so the day passes in a
//! second instead of 24 hours. The publisher and the pollers use the SDK over HTTP, and
//! every request and byte they spend is counted by the SDK as it crosses the wire.
//!
//! Four pollers are compared:
//! - polling every feed every hour with conditional GETs (what FriendFeed did, more
//!   gently: it made 2.9 million requests that day);
//! - an hourly bloomcast poller: right after each hour closes, fetch that hour's
//!   filter, then fetch only the feeds it flags;
//! - the same with the SDK's `changed_since` since the hour that just closed, weighing a
//!   wasted fetch at the 304's cost (`ClientBuilder::fetch_cost`) and declaring the
//!   users it follows registered (`ClientBuilder::registered`: they are the universe):
//!   it reads the closed hour in the cheapest form (here the exact one; without a
//!   universe, a ribbon at the precision that pays) and the new open hour, and asks the
//!   index, all counted;
//! - a daily bloomcast poller: once, after the day, fetch the day's union;
//! - two more hourly pollers, each reading every closed hour in one form: the ribbon at
//!   the service's target fpp (`.ribbon`), and the exact form (`.exact`) over the
//!   universe the publisher registered (`POST /universe`, all 45,754 users, before the
//!   day starts): no wasted fetch at all.

use bloomcast::bloom::Ribbon;
use bloomcast::client::{cheapest_form, Client, PublishOptions};
use bloomcast::clock::{Clock, ManualClock};
use bloomcast::config::Settings;
use bloomcast::exact::Exact;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::startup::Application;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

const TOKEN: &str = "seed-scenario-token";

/// The day's shape; the default is the 2008 day (`tests/scenario.rs` checks that
/// docs/SCENARIO.md shows what it prints).
pub struct Args {
    pub users: usize,
    pub updated: usize,
    pub feed_bytes: u64,
    pub not_modified_bytes: u64,
}

impl Default for Args {
    fn default() -> Args {
        Args {
            users: 45_754,
            updated: 6_721,
            feed_bytes: 10_240,
            not_modified_bytes: 300,
        }
    }
}

fn args() -> Args {
    let mut a = Args::default();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = || pair.get(1).and_then(|v| v.parse().ok()).expect("a number");
        match pair[0].as_str() {
            "--users" => a.users = value() as usize,
            "--updated" => a.updated = value() as usize,
            "--feed-bytes" => a.feed_bytes = value(),
            "--not-modified-bytes" => a.not_modified_bytes = value(),
            other => panic!("unknown option {other}"),
        }
    }
    assert!(a.updated <= a.users, "--updated must not exceed --users");
    a
}

/// splitmix64: a fixed, dependency-free sequence, so every run replays the same day.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A poller's day: requests and bytes, and its feed fetches split by outcome.
#[derive(Default)]
struct Tally {
    filter_requests: u64,
    filter_bytes: u64,
    useful: u64,
    wasted: u64,
    predicted_wasted: f64,
    /// Closed hours read as ribbons, and in exact form.
    ribbons: u64,
    exacts: u64,
    /// Bytes of the requests besides the closed hours' filters (index, open hour).
    overhead_bytes: u64,
}

#[tokio::main]
async fn main() {
    print!("{}", run(&args()).await);
}

/// Replays the day and returns the report the example prints.
pub async fn run(a: &Args) -> String {
    let day = hour_of(2008, 9, 3, 0).expect("a valid hour");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clock = ManualClock::at(day, chrono::Duration::minutes(1));
    let settings = Settings {
        listen: "127.0.0.1:0".parse().expect("an address"),
        data_dir: dir.path().to_owned(),
        ingest_tokens: vec![TOKEN.into()],
        refresh_ms: 0,
        ..Settings::default()
    };
    let app = Application::build_with_clock(settings.clone(), Arc::new(clock.clone()))
        .await
        .expect("the server starts");
    let base = format!("http://{}", app.local_addr());
    tokio::spawn(app.run_until(std::future::pending()));

    // Who updates, and in which hour.
    let users: Vec<String> = (0..a.users).map(|i| format!("flickr-user:{i}")).collect();
    let mut rng = Rng(20_080_903);
    let mut order: Vec<usize> = (0..a.users).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut by_hour: Vec<Vec<String>> = vec![Vec::new(); 24];
    for &u in &order[..a.updated] {
        by_hour[(rng.next() % 24) as usize].push(users[u].clone());
    }

    let publisher = Client::builder(&base)
        .token(TOKEN)
        .build()
        .expect("a client");
    // The publisher registers its universe before the day starts.
    let http = reqwest::Client::new();
    let registered = http
        .post(format!("{base}/universe"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "ids": users }))
        .send()
        .await
        .expect("the universe is posted");
    assert_eq!(registered.status(), 200, "the universe is accepted");
    let mut ribbon = Tally::default();
    let mut exact = Tally::default();
    let hourly_client = Client::new(&base).expect("a client");
    // It follows the users the publisher registered, and says so: exact bodies may be
    // read alone (without the declaration each would refine an approximate form).
    // A day of 2008 replayed: far behind this machine's clock, so each answer is stale,
    // and taken as it is on purpose.
    let cheapest_client = Client::builder(&base)
        .fetch_cost(a.not_modified_bytes)
        .registered(true)
        .accept_stale(true)
        .build()
        .expect("a client");
    let mut hourly = Tally::default();
    let mut cheapest = Tally::default();
    let probe = Client::new(&base).expect("a client");
    for (h, updates) in by_hour.iter().enumerate() {
        let hour = Hour::from_index(day.index() + h as i64);
        // Time passes (the service follows a clock that moves with its monotonic time;
        // a wall clock stepped alone would be a jump it waits to confirm).
        clock.advance(hour.start() + chrono::Duration::minutes(30) - clock.now());
        publisher
            .publish(updates, &PublishOptions::default())
            .await
            .expect("the updates are acknowledged");
        // One minute past the hour: the poller fetches the hour that just closed.
        clock.advance(hour.end() + chrono::Duration::minutes(1) - clock.now());
        let fetched = hourly_client.hour(hour).await.expect("the closed hour");
        assert!(fetched.meta.complete, "{hour} should be closed");
        let truth: HashSet<&str> = updates.iter().map(String::as_str).collect();
        for id in fetched
            .filter
            .maybe_present(users.iter().map(String::as_str))
        {
            if truth.contains(id) {
                hourly.useful += 1;
            } else {
                hourly.wasted += 1;
            }
        }
        assert!(
            updates.iter().all(|id| fetched.filter.contains(id)),
            "false negative"
        );
        hourly.predicted_wasted += (a.users - updates.len()) as f64 * fetched.filter.fpp();

        // The same hour as a ribbon at the target, and in exact form.
        let body = get(&http, &format!("{base}{}.ribbon", hour.path())).await;
        let filter = Ribbon::from_bytes(&body).expect("a ribbon");
        ribbon.tally(&users, &truth, body.len(), |id| filter.contains_id(id));
        ribbon.predicted_wasted += (a.users - updates.len()) as f64 * filter.fpp();
        let body = get(&http, &format!("{base}{}.exact", hour.path())).await;
        let answers = Exact::from_bytes(&body).expect("an exact body");
        exact.tally(&users, &truth, body.len(), |id| answers.changed_id(id));
        assert!(
            updates.iter().all(|id| answers.changed_id(id)),
            "false negative"
        );

        // What changed_since spends besides the closed hour: the index and the open hour,
        // measured by a second client making the same two requests.
        probe.index().await.expect("the index");
        probe.hour(hour.next()).await.expect("the open hour");
        let (before, exacts_before) = (
            cheapest_client.stats().ribbons,
            cheapest_client.stats().exacts,
        );
        let changes = cheapest_client
            .changed_since(&users, hour)
            .await
            .expect("changed since the closed hour");
        let flagged: HashSet<&str> = changes
            .iter()
            .flat_map(|c| c.ids.iter().map(String::as_str))
            .collect();
        assert!(
            truth.iter().all(|id| flagged.contains(id)),
            "false negative"
        );
        cheapest.useful += truth.len() as u64;
        cheapest.wasted += (flagged.len() - truth.len()) as u64;
        cheapest.ribbons += cheapest_client.stats().ribbons - before;
        let read_exact = cheapest_client.stats().exacts - exacts_before;
        cheapest.exacts += read_exact;
        // An hour read exact wastes nothing; otherwise the form chosen predicts.
        if read_exact == 0 {
            let n = updates.len() as u64;
            let choice =
                cheapest_form(n, settings.target_fpp, a.users as u64, a.not_modified_bytes);
            cheapest.predicted_wasted += (a.users - updates.len()) as f64 * choice.fpp;
        }
    }
    let stats = hourly_client.stats();
    hourly.filter_requests = stats.requests;
    hourly.filter_bytes = stats.body_bytes;
    let stats = cheapest_client.stats();
    cheapest.filter_requests = stats.requests;
    cheapest.filter_bytes = stats.body_bytes;
    cheapest.overhead_bytes = probe.stats().body_bytes;

    // The daily poller, after the day: one union.
    let daily_client = Client::new(&base).expect("a client");
    let union = daily_client.day(day.day()).await.expect("the day's union");
    let truth: HashSet<&str> = by_hour.iter().flatten().map(String::as_str).collect();
    let mut daily = Tally::default();
    for id in union.filter.maybe_present(users.iter().map(String::as_str)) {
        if truth.contains(id) {
            daily.useful += 1;
        } else {
            daily.wasted += 1;
        }
    }
    daily.predicted_wasted = (a.users - truth.len()) as f64 * union.filter.fpp();
    let stats = daily_client.stats();
    (daily.filter_requests, daily.filter_bytes) = (stats.requests, stats.body_bytes);

    report(
        a,
        [&hourly, &cheapest, &daily, &ribbon, &exact],
        union.meta.count,
    )
}

/// A closed hour's body, fetched without the SDK.
async fn get(http: &reqwest::Client, url: &str) -> Vec<u8> {
    let reply = http.get(url).send().await.expect("a response");
    assert_eq!(reply.status(), 200, "{url}");
    reply.bytes().await.expect("a body").to_vec()
}

impl Tally {
    /// One closed hour read in one form of `bytes`: each ID it flags is a fetch.
    fn tally(
        &mut self,
        users: &[String],
        truth: &HashSet<&str>,
        bytes: usize,
        flags: impl Fn(&str) -> bool,
    ) {
        self.filter_requests += 1;
        self.filter_bytes += bytes as u64;
        for id in users.iter().filter(|id| flags(id)) {
            if truth.contains(id.as_str()) {
                self.useful += 1;
            } else {
                self.wasted += 1;
            }
        }
    }
}

fn report(a: &Args, tallies: [&Tally; 5], distinct: u64) -> String {
    let [hourly, cheapest, daily, ribbon, exact] = tallies;
    let mut out = String::new();
    let polls = a.users as u64 * 24;
    let poll_bytes =
        a.updated as u64 * a.feed_bytes + (polls - a.updated as u64) * a.not_modified_bytes;
    let cost = |t: &Tally| {
        let requests = t.filter_requests + t.useful + t.wasted;
        let bytes = t.filter_bytes + t.useful * a.feed_bytes + t.wasted * a.not_modified_bytes;
        (requests, bytes)
    };
    let (hr, hb) = cost(hourly);
    let (dr, db) = cost(daily);
    let (cr, cb) = cost(cheapest);
    let (rr, rb) = cost(ribbon);
    let (xr, xb) = cost(exact);
    let mb = |b: u64| b as f64 / 1e6;
    let _ = writeln!(
        out,
        "The 2008 scenario: {} followed users, {} updated ({} distinct) over 24 hours",
        a.users, a.updated, distinct
    );
    let _ = writeln!(
        out,
        "assumed: a changed feed is {} bytes; an unchanged conditional GET (304) costs {} bytes",
        a.feed_bytes, a.not_modified_bytes
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,"| poller | requests/day | MB/day | filter requests | filter bytes | useful fetches | wasted fetches (measured) | wasted (predicted) |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| poll every feed hourly | {polls} | {:.1} | - | - | {} | 0 | - |",
        mb(poll_bytes),
        a.updated
    );
    for (name, t, r, b) in [
        ("bloomcast, hourly", hourly, hr, hb),
        ("bloomcast, hourly, cheapest form", cheapest, cr, cb),
        ("bloomcast, daily union", daily, dr, db),
        ("bloomcast, hourly, ribbon at the target", ribbon, rr, rb),
        (
            "bloomcast, hourly, exact (following registered IDs)",
            exact,
            xr,
            xb,
        ),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {r} | {:.1} | {} | {} | {} | {} | {:.0} |",
            mb(b),
            t.filter_requests,
            t.filter_bytes,
            t.useful,
            t.wasted,
            t.predicted_wasted
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "hourly bloomcast: {:.0}x fewer requests and {:.1}x fewer bytes than polling every feed; no update missed",
        polls as f64 / hr as f64,
        poll_bytes as f64 / hb as f64
    );
    let _ = writeln!(
        out,
        "cheapest form: of 24 closed hours, {} read exact and {} as ribbons, {} bytes; its filter \
         requests and bytes include changed_since's index request and the new open hour at \
         each call, {} bytes in all",
        cheapest.exacts,
        cheapest.ribbons,
        cheapest
            .filter_bytes
            .saturating_sub(cheapest.overhead_bytes),
        cheapest.overhead_bytes
    );
    let _ = writeln!(
        out,
        "exact form: 24 closed hours in {} bytes ({:.2} bytes per updated ID), {} wasted fetches; \
         the same hours as Bloom filters at 1%: {} bytes, {} wasted; as ribbons at 2^-7: {} bytes, {} wasted",
        exact.filter_bytes,
        exact.filter_bytes as f64 / exact.useful.max(1) as f64,
        exact.wasted,
        hourly.filter_bytes,
        hourly.wasted,
        ribbon.filter_bytes,
        ribbon.wasted
    );
    out
}
