//! Open-hour deltas from the client side (issue 15): the SDK polls the open hour with
//! `dcz` deltas, and `bloomcast watch` (its `Watcher`) reports every ingested ID exactly
//! once, across an hour boundary. A real server on a socket, with a clock moved by hand.

mod common;

use bloomcast::cli::{Event, Watcher};
use bloomcast::client::Client;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;
use std::collections::HashMap;

const TOKEN: &str = "watch-test-token";

fn start_hour() -> Hour {
    hour_of(2008, 9, 3, 5).unwrap()
}

async fn serve() -> common::inproc::InProcess {
    // Every version with a new ID is kept as a dictionary.
    common::inproc::serve("127.0.0.1:0".parse().unwrap(), TOKEN, start_hour(), |s| {
        s.delta_ids = 1;
    })
    .await
}

fn ids(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}:{i}")).collect()
}

#[tokio::test]
async fn the_sdk_polls_the_open_hour_with_deltas_that_decode_to_the_full_filter() {
    let server = serve().await;
    let publisher = Client::builder(&server.base).token(TOKEN).build().unwrap();
    publisher.ingest(&ids("a", 0..2000)).await.unwrap();
    let poller = Client::new(&server.base).unwrap();
    let first = poller.hour(start_hour()).await.unwrap();
    let full_bytes = poller.stats().body_bytes;
    publisher.ingest(&ids("a", 2000..2050)).await.unwrap();
    let second = poller.hour(start_hour()).await.unwrap();
    let stats = poller.stats();
    assert_eq!(stats.deltas, 1, "the second poll came as a delta");
    let delta_bytes = stats.body_bytes - full_bytes;
    assert!(
        delta_bytes * 4 < full_bytes,
        "a delta of 50 new IDs ({delta_bytes} bytes) against a full body ({full_bytes})"
    );
    let fresh = Client::new(&server.base).unwrap();
    let whole = fresh.hour(start_hour()).await.unwrap();
    assert_eq!(second.filter, whole.filter);
    assert_eq!(second.meta, whole.meta);
    assert_ne!(first.filter, second.filter);
    assert!(ids("a", 0..2050)
        .iter()
        .all(|id| second.filter.contains(id)));
}

#[tokio::test]
async fn watch_reports_every_ingested_id_exactly_once_across_an_hour_boundary() {
    let server = serve().await;
    let publisher = Client::builder(&server.base).token(TOKEN).build().unwrap();
    let ingested: Vec<String> = [ids("a", 0..40), ids("b", 0..30)].concat();
    let mut watched = ingested.clone();
    watched.extend(ids("quiet", 0..300));
    let mut watcher = Watcher::start(Client::new(&server.base).unwrap(), watched)
        .await
        .unwrap();
    assert_eq!(watcher.hour(), start_hour());

    let mut events = Vec::new();
    events.extend(watcher.poll().await.unwrap());
    publisher.ingest(&ids("a", 0..15)).await.unwrap();
    events.extend(watcher.poll().await.unwrap());
    events.extend(watcher.poll().await.unwrap());
    publisher.ingest(&ids("a", 15..30)).await.unwrap();
    events.extend(watcher.poll().await.unwrap());
    // The last IDs of the hour arrive after the last poll in it.
    publisher.ingest(&ids("a", 30..40)).await.unwrap();
    server.clock.advance(Duration::hours(1));
    publisher.ingest(&ids("b", 0..10)).await.unwrap();
    events.extend(watcher.poll().await.unwrap());
    assert_eq!(
        watcher.hour(),
        start_hour().next(),
        "rolled into the next hour"
    );
    events.extend(watcher.poll().await.unwrap());
    publisher.ingest(&ids("b", 10..30)).await.unwrap();
    events.extend(watcher.poll().await.unwrap());

    let mut reported: HashMap<(Hour, String), usize> = HashMap::new();
    for e in &events {
        if let Event::Changed { hour, id, .. } = e {
            *reported.entry((*hour, id.clone())).or_default() += 1;
        }
    }
    assert!(
        reported.values().all(|&n| n == 1),
        "once each: {reported:?}"
    );
    for id in &ingested {
        let hour = if id.starts_with("a:") {
            start_hour()
        } else {
            start_hour().next()
        };
        assert_eq!(
            reported.get(&(hour, id.clone())),
            Some(&1),
            "{id} in {hour}"
        );
    }
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Event::Version { delta: true, .. }))
        .count();
    assert!(
        deltas >= 2,
        "polls after an ingest came as deltas: {events:?}"
    );
    let json = events[0].to_json();
    assert_eq!(json["event"], "version");
    assert!(json["hour"].is_string() && json["version"].is_string() && json["bytes"].is_u64());
}

#[tokio::test]
async fn a_watch_reaching_a_damaged_hour_names_it_and_stays_on_it() {
    let (server, ids) = common::damaged::serve(TOKEN, start_hour()).await;
    let client = Client::new(&server.base).unwrap();
    let mut watcher = Watcher::start_at(client, ids.concat(), start_hour());
    let events = watcher.poll().await.unwrap();
    assert!(events.len() > ids[0].len(), "the sealed hour is read");
    let damaged = start_hour().next();
    assert_eq!(watcher.hour(), damaged);

    for _ in 0..2 {
        let err = watcher.poll().await.unwrap_err();
        assert!(
            matches!(&err, bloomcast::client::ClientError::Corrupt { hours } if hours == &[damaged]),
            "{err:?}"
        );
        assert!(err.is_transient(), "the watch polls it again");
        assert_eq!(watcher.hour(), damaged, "never moves past it");
    }
    // A watch started now begins at the current hour: the index no longer fails.
    let client = Client::new(&server.base).unwrap();
    let watcher = Watcher::start(client, ids.concat()).await.unwrap();
    assert_eq!(watcher.hour(), damaged.next());
}
