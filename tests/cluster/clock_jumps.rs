//! A node whose wall clock jumps ahead, beside a node on the right time, both on one
//! PostgreSQL schema with a retention of 24 hours: neither prunes, no receipt names a
//! future hour, and once the clock is back both serve every acknowledged ID in the hour
//! its receipt named.

use crate::common::needs::Need;
use crate::common::nodes::{drop_schema, node, node_settings, unique_schema, Node};
use crate::common::{fetch, path_of, post_ids};
use bloomcast::clock::ManualClock;
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
        let steady = node(settings, &steady_clock).await;
        let mut pair = Pair {
            url,
            schema,
            h,
            jumpy_clock,
            steady_clock,
            jumpy,
            steady,
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
    assert!(pair.jumpy.service.clock_jump().ahead_seconds >= 722 * 3600 - 60);

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
    assert!(pair.jumpy.service.clock_jump().ahead_seconds >= 25 * 3600 - 60);
    assert_eq!(pair.jumpy.service.current_hour(), pair.h.next().next());

    pair.jumpy_clock.step(Duration::hours(-25));
    pair.pass(Duration::hours(1));
    pair.tick_both().await;
    pair.assert_nothing_lost().await;
}
