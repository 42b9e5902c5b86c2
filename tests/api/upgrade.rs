//! A store written before the probe-sequence sizing rule: the hours and days it served
//! are served byte for byte as they were, with the figures they had; every hour after
//! the first start with the rule is sized by it and advertises its true rate.

use crate::helpers::*;
use bloomcast::bloom::{probes, union_by, Filter, Key, Sizing};
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{SealedHour, SqliteStore, Store};
use bloomcast::wire::{Document, Meta};
use chrono::Duration;

fn h(day: u32, hour: u32) -> Hour {
    hour_of(2008, 9, day, hour).unwrap()
}

fn keys(ids: &[&str]) -> Vec<Key> {
    let mut keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
    keys.sort_unstable();
    keys
}

/// 22:00 and 23:00 of 2 September as the previous version sealed them (one ID, two
/// IDs; the classical rule), in a store that has no record of the new rule.
async fn store_of_the_previous_version(dir: &std::path::Path) {
    let store = SqliteStore::open(dir, h(2, 22)).unwrap();
    for (hour, ids) in [
        (h(2, 22), &["quiet-a"][..]),
        (h(2, 23), &["quiet-b", "quiet-c"]),
    ] {
        store.append(hour, &keys(ids)).await.unwrap();
    }
    store.close_through(h(2, 23)).await.unwrap();
    for (hour, ids) in [
        (h(2, 22), &["quiet-a"][..]),
        (h(2, 23), &["quiet-b", "quiet-c"]),
    ] {
        let keys = keys(ids);
        let filter = Filter::sized_by(&keys, 0.01, Sizing::Classic).unwrap();
        let sealed = SealedHour::new(hour, keys.len() as u64, &filter);
        assert!(matches!(
            store.seal(&sealed, &keys).await.unwrap(),
            bloomcast::store::Sealing::Stored
        ));
    }
    drop(store);
    crate::wait::sqlite_store_closed(dir).await;
    let conn = rusqlite::Connection::open(dir.join("bloomcast.sqlite3")).unwrap();
    let gone = conn
        .execute("DELETE FROM meta WHERE name = 'probes_from'", [])
        .unwrap();
    assert_eq!(gone, 1, "the open recorded the rule's first hour");
}

async fn upgraded() -> TestApp {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    store_of_the_previous_version(dir.path()).await;
    let clock = bloomcast::clock::ManualClock::at(h(3, 1), Duration::minutes(10));
    TestApp::build(settings(dir.path().to_owned()), clock, Some(dir)).await
}

#[tokio::test]
async fn hours_sealed_before_the_rule_are_served_byte_for_byte_with_their_figures() {
    let app = upgraded().await;
    let old = keys(&["quiet-a"]);
    let filter = Filter::sized_by(&old, 0.01, Sizing::Classic).unwrap();
    let served = app.get("/2008/09/02/22.json").await;
    let before = Document::json_of(Meta::hour(h(2, 22).rfc3339(), true, 1), &filter);
    assert_eq!(
        served.body,
        before,
        "{}",
        String::from_utf8_lossy(&served.body)
    );
    // What it advertises is the fill formula, as before: below its true rate.
    let json = served.json();
    assert_eq!(json["m"].as_u64(), Some(filter.m().into()));
    assert!(
        filter.m() < 16,
        "the classical size of one ID: {}",
        filter.m()
    );
    let fill = bloomcast::bloom::fpp_at_fill(filter.ones(), filter.params());
    let said = json["fpp"].as_f64().unwrap();
    assert!((said - fill).abs() <= fill * 1e-15, "{said} vs {fill}");
    assert!(fill < probes::exact_rate(&filter));
    // A restart keeps the rule's first hour where the first start put it.
    let app = app.restart().await;
    assert_eq!(app.get("/2008/09/02/22.json").await.body, before);
}

#[tokio::test]
async fn a_day_that_ended_before_the_rule_is_rebuilt_as_it_was_served() {
    let app = upgraded().await;
    let hours = [keys(&["quiet-a"]), keys(&["quiet-b", "quiet-c"])];
    let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
    let (filter, count) = union_by(&sets, 0.01, Sizing::Classic).unwrap();
    let meta = Meta::range(h(2, 22).rfc3339(), h(2, 23).rfc3339(), true, count);
    let served = app.get("/2008/09/02.json").await;
    assert_eq!(served.body, Document::json_of(meta, &filter));
}

#[tokio::test]
async fn hours_from_the_first_start_with_the_rule_on_are_sized_by_it_and_honest() {
    let app = upgraded().await;
    // 00:00 closed while the previous version was down: never served, so the rule's.
    let (meta, empty) = app.filter("/2008/09/03/00").await;
    assert!(meta.complete && meta.count == 0);
    assert_eq!((empty.m(), empty.k()), (29, 3));
    app.ingest(&["fresh"]).await;
    app.clock.advance(Duration::hours(1));
    let served = app.get("/2008/09/03/01.json").await;
    let (_, filter) = Document::parse(&served.body).unwrap();
    assert_eq!((filter.m(), filter.k()), (29, 3));
    let fpp = served.json()["fpp"].as_f64().unwrap();
    assert!((fpp - probes::exact_rate(&filter)).abs() <= fpp * 1e-15);
    assert!(fpp <= 0.01 && fpp > bloomcast::bloom::fpp_at_fill(filter.ones(), filter.params()));
    // Today ends in the open hour: the rule's too.
    let (_, today) = app.filter("/2008/09/03").await;
    assert_eq!(today.fpp(), probes::exact_rate(&today));
}
