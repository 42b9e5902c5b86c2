//! Rot in the store, through the whole service: a sealed filter that fails its checksum
//! is rebuilt from the hour's verified keys and served complete; keys that fail theirs
//! make the hour answer 500 `corrupt` (never a 200 missing IDs), counted in `/metrics`
//! and listed by `/healthz`.

use crate::helpers::{start_hour, TestApp};
use axum::http::StatusCode;
use bloomcast::bloom::{Filter, Key};
use bloomcast::store::{SealedHour, SqliteStore, Store, StoreError};
use rusqlite::{params, Connection};
use std::path::Path;

/// Flips one bit of byte `at` of a stored blob (the row's checksum left as it was), as
/// rot would, through a separate SQLite connection.
fn flip_bit(app: &TestApp, table: &str, column: &str, key: &str, row: i64, at: usize) {
    let conn = Connection::open(app.settings.data_dir.join("bloomcast.sqlite3")).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let mut blob: Vec<u8> = conn
        .query_row(
            &format!("SELECT {column} FROM {table} WHERE {key} = ?1"),
            [row],
            |r| r.get(0),
        )
        .unwrap();
    blob[at] ^= 0x10;
    conn.execute(
        &format!("UPDATE {table} SET {column} = ?2 WHERE {key} = ?1"),
        params![row, blob],
    )
    .unwrap();
}

/// The first key batch of an hour.
fn first_batch(app: &TestApp, hour: i64) -> i64 {
    let conn = Connection::open(app.settings.data_dir.join("bloomcast.sqlite3")).unwrap();
    conn.query_row(
        "SELECT min(seq) FROM batches WHERE hour = ?1",
        [hour],
        |r| r.get(0),
    )
    .unwrap()
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

async fn ingest_all(app: &TestApp, ids: &[String]) {
    for chunk in ids.chunks(100) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        app.ingest(&refs).await;
    }
}

async fn metric(app: &TestApp, name: &str) -> u64 {
    let reply = app.get("/metrics").await;
    let text = String::from_utf8(reply.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
        .parse()
        .unwrap()
}

async fn assert_listed_corrupt(app: &TestApp, hour: &str) {
    let health = app.get("/healthz").await;
    let json = health.json();
    assert_eq!(json["status"], "degraded", "{json}");
    let listed = json["corrupt_hours"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(listed.iter().any(|h| h == hour), "{json}");
    assert!(metric(app, "bloomcast_corrupt_found_total").await >= 1);
}

#[tokio::test]
async fn a_sealed_filter_with_a_flipped_bit_is_rebuilt_from_its_keys_and_served_complete() {
    let app = TestApp::spawn().await;
    let all = ids("sealed", 500);
    ingest_all(&app, &all).await;
    app.next_hour().await;
    let before = app.get("/2008/09/03/13").await;
    assert_eq!(before.status, StatusCode::OK);
    flip_bit(&app, "hours", "filter", "hour", start_hour().index(), 5);
    let app = app.restart().await;

    let after = app.get("/2008/09/03/13").await;
    assert_eq!(after.status, StatusCode::OK);
    let (meta, filter) = bloomcast::wire::Document::parse(&after.body).unwrap();
    assert!(meta.complete);
    assert_eq!(meta.count, 500);
    let missing = all.iter().filter(|id| !filter.contains(id)).count();
    assert_eq!(missing, 0, "every acknowledged ID is in the rebuilt filter");
    assert_eq!(
        after.body, before.body,
        "the rebuilt filter has the sealed bytes"
    );
    assert_eq!(metric(&app, "bloomcast_corrupt_found_total").await, 1);
}

#[tokio::test]
async fn a_flipped_bit_in_a_closed_unsealed_hours_keys_answers_corrupt_never_fewer_ids() {
    let app = TestApp::spawn().await;
    ingest_all(&app, &ids("closed", 300)).await;
    flip_bit(
        &app,
        "batches",
        "keys",
        "seq",
        first_batch(&app, start_hour().index()),
        9,
    );
    app.clock.advance(chrono::Duration::hours(1));
    // Sealing reads the keys back, finds the rot and leaves the hour unsealed.
    assert!(app.service.tick().await.is_err());

    for attempt in 0..2 {
        let reply = app.get("/2008/09/03/13").await;
        reply.assert_error(500, "corrupt");
        let day = app.get("/2008/09/03").await;
        assert_ne!(
            day.status,
            StatusCode::OK,
            "attempt {attempt}: the day includes the hour"
        );
    }
    assert_listed_corrupt(&app, "2008-09-03T13:00:00Z").await;
    // Still so after a restart: nothing sealed the hour from the damaged keys.
    let app = app.restart().await;
    app.get("/2008/09/03/13").await.assert_error(500, "corrupt");
}

#[tokio::test]
async fn a_flipped_bit_in_the_open_hours_keys_answers_corrupt_after_a_restart() {
    let app = TestApp::spawn().await;
    ingest_all(&app, &ids("open", 300)).await;
    flip_bit(
        &app,
        "batches",
        "keys",
        "seq",
        first_batch(&app, start_hour().index()),
        17,
    );
    let app = app.restart().await;
    app.service.wait_loaded().await;

    let reply = app.get("/2008/09/03/13").await;
    reply.assert_error(500, "corrupt");
    assert_listed_corrupt(&app, "2008-09-03T13:00:00Z").await;
}

/// XORs 64 bytes of the store's file (or its write-ahead log, if the key is still
/// there) from where `key` is stored: what a rotten disk sector does to the key area.
fn rot_64_bytes_at(dir: &Path, key: Key) {
    let needle = key.to_bytes();
    for name in ["bloomcast.sqlite3", "bloomcast.sqlite3-wal"] {
        let path = dir.join(name);
        let Ok(mut bytes) = std::fs::read(&path) else {
            continue;
        };
        if let Some(at) = bytes.windows(8).position(|w| w == needle) {
            let end = (at + 64).min(bytes.len());
            for b in &mut bytes[at..end] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, bytes).unwrap();
            return;
        }
    }
    panic!("key {key:?} is not in the file");
}

/// Every read either returns exactly what was written or fails; a failure is
/// corruption found (`Corrupt`), never a shorter answer. Returns whether it failed.
fn exact_or_corrupt<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: bloomcast::store::Result<T>,
    want: &T,
) -> bool {
    match got {
        Ok(got) => {
            assert_eq!(&got, want, "{what}: data returned must be intact");
            false
        }
        Err(StoreError::Corrupt(_)) => true,
        Err(e) => panic!("{what}: rot must read as corruption, got {e:?}"),
    }
}

#[tokio::test]
async fn sixty_four_rotten_bytes_in_the_key_area_are_never_served_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let (sealed_hour, open_hour) = (start_hour(), start_hour().next());
    let batches: Vec<Vec<Key>> = (0..60)
        .map(|b| (0..1000).map(|i| Key::of(&format!("{b}-{i}"))).collect())
        .collect();
    let sealed_keys = bloomcast::store::distinct(batches[..30].concat());
    let open_keys: Vec<Key> = batches[30..].concat();
    let filter = Filter::sized_within(&sealed_keys, 0.01).unwrap();
    let sealed = SealedHour {
        hour: sealed_hour,
        count: sealed_keys.len() as u64,
        m: filter.m(),
        k: filter.k(),
        filter: filter.to_bytes(),
    };
    {
        let store = SqliteStore::open(dir.path(), sealed_hour).unwrap();
        for batch in &batches[30..] {
            store.append(open_hour, batch).await.unwrap();
        }
        store.seal(&sealed, &sealed_keys).await.unwrap();
    }
    // Let the writer thread close its connection (the last close checkpoints the log).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    rot_64_bytes_at(dir.path(), batches[45][500]);
    rot_64_bytes_at(dir.path(), sealed_keys[12_345]);

    let store = match SqliteStore::open(dir.path(), open_hour) {
        Ok(store) => store,
        Err(e) => panic!("rot in key blobs must not stop the store from opening: {e}"),
    };
    let open_page = store.keys_after(open_hour, 0).await.map(|p| p.keys);
    let found = [
        exact_or_corrupt("open hour's batches", open_page, &open_keys),
        exact_or_corrupt(
            "open hour's keys",
            store.keys(open_hour).await,
            &bloomcast::store::distinct(open_keys.clone()),
        ),
        exact_or_corrupt(
            "sealed hour's keys",
            store.keys(sealed_hour).await,
            &sealed_keys,
        ),
    ];
    assert_eq!(found, [true; 3], "each rotten area is found");
    // The sealed filter was not touched: it still verifies and is served.
    assert_eq!(store.sealed(sealed_hour).await.unwrap(), Some(sealed));
}
