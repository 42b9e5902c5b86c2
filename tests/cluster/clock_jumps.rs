//! A node whose wall clock jumps ahead, beside a node on the right time, both on one
//! PostgreSQL schema with a retention of 24 hours: neither prunes, no receipt names a
//! future hour, and once the clock is back both serve every acknowledged ID in the hour
//! its receipt named. The same for a node restarted far past the cluster's clock record,
//! and for a node started a year ahead as `bloomcast serve` runs it: on PostgreSQL's
//! clock, so it moves and prunes nothing, and says so.

use crate::common::needs::Need;
use crate::common::nodes::{
    drop_schema, node, node_on_real_time, node_settings, unique_schema, Node,
};
use crate::common::{fetch, path_of, post_ids};
use bloomcast::clock::ManualClock;
use bloomcast::config::Settings;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use std::collections::HashMap;

/// Two nodes, one whose clock the test steps, with 200 IDs sealed in 13:00 and the
/// clocks at 14:10; what every receipt named is kept to be checked at the end.
struct Pair {
    url: String,
    schema: String,
    h: Hour,
    jumpy_clock: ManualClock,
    steady_clock: ManualClock,
    jumpy: Node,
    steady: Node,
    /// What both nodes were started with (to start one again).
    settings: Settings,
    http: reqwest::Client,
    acked: HashMap<String, Vec<String>>,
    _dir: tempfile::TempDir,
}

impl Pair {
    async fn start() -> Pair {
        let url = Need::Postgres.found();
        let schema = unique_schema();
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let jumpy_clock = ManualClock::at(h, Duration::minutes(10));
        let steady_clock = ManualClock::at(h, Duration::minutes(10));
        let mut settings = node_settings(&url, &schema, dir.path().to_owned());
        settings.retention_hours = 24;
        let jumpy = node(settings.clone(), &jumpy_clock).await;
        let steady = node(settings.clone(), &steady_clock).await;
        let mut pair = Pair {
            url,
            schema,
            h,
            jumpy_clock,
            steady_clock,
            jumpy,
            steady,
            settings,
            http: reqwest::Client::new(),
            acked: HashMap::new(),
            _dir: dir,
        };
        let sealed: Vec<String> = (0..200).map(|i| format!("sealed-{i}")).collect();
        pair.post(false, sealed).await;
        pair.pass(Duration::hours(1));
        pair.steady.service.tick().await.unwrap();
        pair
    }

    /// Lets `by` pass on both nodes' clocks.
    fn pass(&self, by: Duration) {
        for clock in [&self.jumpy_clock, &self.steady_clock] {
            clock.advance(by);
        }
    }

    async fn tick_both(&self) {
        self.jumpy.service.tick().await.unwrap();
        self.steady.service.tick().await.unwrap();
    }

    /// Posts `ids` to one node and keeps what its receipt named; returns that hour.
    async fn post(&mut self, to_jumpy: bool, ids: Vec<String>) -> String {
        let base = if to_jumpy {
            &self.jumpy.base
        } else {
            &self.steady.base
        };
        let hour = post_ids(&self.http, base, &ids).await.unwrap();
        self.acked.entry(hour.clone()).or_default().extend(ids);
        hour
    }

    async fn health(&self, of_jumpy: bool) -> serde_json::Value {
        let base = if of_jumpy {
            &self.jumpy.base
        } else {
            &self.steady.base
        };
        let reply = self.http.get(format!("{base}/healthz")).send().await;
        reply.unwrap().json().await.unwrap()
    }

    /// Every acknowledged ID is in the complete filter of its hour, on both nodes.
    async fn assert_nothing_lost(self) {
        for base in [&self.jumpy.base, &self.steady.base] {
            for (hour, ids) in &self.acked {
                let (meta, filter) = fetch(&self.http, base, &path_of(hour)).await;
                assert!(meta.complete, "{base} {hour}");
                let lost = ids.iter().filter(|id| !filter.contains(id)).count();
                assert_eq!(lost, 0, "{base}: {lost} of {} lost in {hour}", ids.len());
            }
        }
        drop_schema(&self.url, &self.schema).await;
    }
}

/// The clock stepped 722 hours ahead for three seconds, then back.
pub async fn a_node_whose_clock_jumps_a_month_ahead_prunes_nothing_in_postgres() {
    let mut pair = Pair::start().await;
    pair.jumpy_clock.step(Duration::hours(722));
    pair.pass(Duration::seconds(3));
    let during: Vec<String> = (0..200).map(|i| format!("during-{i}")).collect();
    let hour = pair.post(true, during).await;
    assert_eq!(hour, "2008-09-03T14:00:00Z", "not a month ahead");
    pair.tick_both().await;
    assert!(pair.jumpy.service.health().clock_jump().ahead_seconds >= 722 * 3600 - 60);

    pair.jumpy_clock.step(Duration::hours(-722));
    pair.tick_both().await;
    assert_eq!(pair.jumpy.service.current_hour(), pair.h.next());
    assert_eq!(pair.steady.service.current_hour(), pair.h.next());
    pair.pass(Duration::hours(1));
    pair.tick_both().await;
    pair.assert_nothing_lost().await;
}

/// The clock 25 hours ahead for an hour of monotonic time, housekeeping every ten
/// minutes on both nodes, then back.
pub async fn a_node_whose_clock_is_25_hours_ahead_for_an_hour_prunes_nothing_in_postgres() {
    let mut pair = Pair::start().await;
    pair.jumpy_clock.step(Duration::hours(25));
    for round in 0..6 {
        pair.pass(Duration::minutes(10));
        pair.tick_both().await;
        let ids: Vec<String> = (0..50).map(|i| format!("held-{round}-{i}")).collect();
        let hour = pair.post(true, ids).await;
        assert!(hour.starts_with("2008-09-03T1"), "{hour}: not a day ahead");
    }
    assert!(pair.jumpy.service.health().clock_jump().ahead_seconds >= 25 * 3600 - 60);
    assert_eq!(pair.jumpy.service.current_hour(), pair.h.next().next());

    pair.jumpy_clock.step(Duration::hours(-25));
    pair.pass(Duration::hours(1));
    pair.tick_both().await;
    pair.assert_nothing_lost().await;
}

/// The start rule through the cluster's record in PostgreSQL: the jumpy node restarted
/// with its clock a year ahead of what the last heartbeat recorded is held (receipts in
/// the real hour, nothing pruned, `/healthz` degraded with the figure), and restarted on
/// the right clock it follows it at once.
pub async fn a_node_restarted_with_its_clock_a_year_past_the_clusters_record_is_held_and_prunes_nothing_in_postgres(
) {
    let mut pair = Pair::start().await;
    // The cluster's record at 14:10 (past the heartbeat's once a second).
    crate::common::wait::pass(std::time::Duration::from_millis(1100)).await;
    assert_eq!(pair.health(false).await["status"], "ok");

    pair.jumpy_clock.step(Duration::days(365));
    pair.jumpy = node(pair.settings.clone(), &pair.jumpy_clock).await;
    pair.jumpy.service.wait_loaded().await;
    let ids: Vec<String> = (0..200).map(|i| format!("held-{i}")).collect();
    let hour = pair.post(true, ids).await;
    pair.tick_both().await;

    assert_eq!(hour, "2008-09-03T14:00:00Z", "not a year ahead");
    let health = pair.health(true).await;
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(health["clock_ahead_seconds"].as_i64().unwrap() >= 365 * 86_400 - 60);
    assert!(health["reason"].as_str().unwrap().contains("confirm-clock"));
    assert_eq!(pair.jumpy.service.health().clock_jump().jumps, 1);
    assert_eq!(pair.steady.service.current_hour(), pair.h.next());

    pair.jumpy_clock.step(Duration::days(-365));
    pair.jumpy = node(pair.settings.clone(), &pair.jumpy_clock).await;
    pair.jumpy.service.wait_loaded().await;
    let health = pair.health(true).await;
    assert_eq!(health["status"], "ok", "{health}");
    pair.pass(Duration::hours(1));
    pair.tick_both().await;
    pair.assert_nothing_lost().await;
}

/// The hours a node on the right clock may call current now (either side of a boundary
/// crossed meanwhile).
fn real_hours() -> Vec<String> {
    [-5, 0, 5]
        .iter()
        .map(|s| Hour::containing(chrono::Utc::now() + Duration::seconds(*s)).rfc3339())
        .collect()
}

async fn json(http: &reqwest::Client, url: String) -> serde_json::Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Issue 51, item 1: one node started a year ahead moved every node's current hour a year
/// ahead and pruned the cluster's hours from PostgreSQL, so another node's 5,000
/// acknowledged IDs answered 410. Both nodes as `bloomcast serve` runs them (the system
/// clock, the wrong one shifted by `clock_offset_seconds`): the cluster runs on
/// PostgreSQL's clock, so the wrong node opens and prunes nothing, and says so.
pub async fn a_node_started_with_its_clock_a_year_ahead_neither_moves_nor_prunes_the_clusters_hours_and_says_so(
) {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let settings = node_settings(&url, &schema, dir.path().to_owned());
    let right = node_on_real_time(settings.clone()).await;
    let http = reqwest::Client::new();
    let mut acked: HashMap<String, Vec<String>> = HashMap::new();
    for batch in 0..10 {
        let ids: Vec<String> = (0..500).map(|i| format!("right-{batch}-{i}")).collect();
        let hour = post_ids(&http, &right.base, &ids).await.unwrap();
        acked.entry(hour).or_default().extend(ids);
    }

    let year = 365 * 86_400;
    let wrong = node_on_real_time(Settings {
        clock_offset_seconds: year,
        ..settings.clone()
    })
    .await;
    wrong.service.wait_loaded().await;
    wrong.service.tick().await.unwrap();
    let ids: Vec<String> = (0..100).map(|i| format!("wrong-{i}")).collect();
    let hour = post_ids(&http, &wrong.base, &ids).await.unwrap();
    acked.entry(hour.clone()).or_default().extend(ids);

    assert!(real_hours().contains(&hour), "{hour}: not a year ahead");
    let said = json(&http, format!("{}/healthz", wrong.base)).await;
    assert_eq!(said["status"], "degraded", "{said}");
    assert!(real_hours().contains(&said["current_hour"].as_str().unwrap().to_owned()));
    assert_eq!(
        said["clock_ahead_seconds"], 0,
        "PostgreSQL's clock did not jump"
    );
    let offset = said["node_clock_offset_seconds"].as_i64().unwrap();
    assert!((offset - year).abs() < 60, "{said}");
    assert!(
        said["reason"].as_str().unwrap().contains("PostgreSQL"),
        "{said}"
    );
    let gauge: i64 =
        crate::common::metric(&http, &wrong.base, "bloomcast_node_clock_offset_seconds")
            .await
            .parse()
            .unwrap();
    assert!((gauge - year).abs() < 60, "{gauge}");
    let fine = json(&http, format!("{}/healthz", right.base)).await;
    assert_eq!(fine["status"], "ok", "{fine}");
    assert!(fine["node_clock_offset_seconds"].as_i64().unwrap().abs() < 5);

    // Nothing pruned in PostgreSQL: a node started now reads every ID from it.
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let pruned = client
        .query_opt(
            &format!("SELECT value FROM \"{schema}\".meta WHERE name = 'pruned_before'"),
            &[],
        )
        .await
        .unwrap();
    assert!(pruned.is_none(), "nothing was ever pruned");
    let fresh = node_on_real_time(settings).await;
    let total: usize = acked.values().map(Vec::len).sum();
    assert_eq!(total, 5_100);
    for base in [&right.base, &wrong.base, &fresh.base] {
        for (hour, ids) in &acked {
            let (_, filter) = fetch(&http, base, &path_of(hour)).await;
            let lost = ids.iter().filter(|id| !filter.contains(id)).count();
            assert_eq!(lost, 0, "{base}: {lost} of {} lost in {hour}", ids.len());
        }
    }
    drop((right, wrong, fresh));
    drop_schema(&url, &schema).await;
}

/// The clock record in PostgreSQL's `meta` rows, as in SQLite's; and PostgreSQL's clock,
/// the cluster's time, is its `now()`.
pub async fn the_clock_record_reads_back_whole_from_postgres_and_its_clock_is_now() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let link = bloomcast::store::PgLink::new(&url, std::path::Path::new("")).unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = bloomcast::store::PgStore::connect(link, &schema, h)
        .await
        .unwrap();
    crate::common::clock_record::a_heartbeats_clock_record_reads_back_whole_and_the_next_replaces_it(
        &store,
    )
    .await;
    use bloomcast::store::Store;
    let now = store.time().await.unwrap().expect("PostgreSQL has a clock");
    assert!((now - chrono::Utc::now()).num_seconds().abs() < 5, "{now}");
    drop(store);
    drop_schema(&url, &schema).await;
}
