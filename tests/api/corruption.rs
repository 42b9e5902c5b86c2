//! Rot in the store, through the whole service: a sealed filter that fails its checksum
//! is rebuilt from the hour's verified keys and served complete; keys that fail theirs
//! make the hour answer 500 `corrupt` (never a 200 missing IDs), counted in `/metrics`
//! and listed by `/healthz`.

use crate::helpers::{start_hour, TestApp};
use axum::http::StatusCode;
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

/// The store's file in a data directory.
pub fn db_file(dir: &Path) -> PathBuf {
    dir.join("bloomcast.sqlite3")
}

/// Flips one bit of byte `at` of a stored blob (the row's checksum left as it was), as
/// rot would, through a separate SQLite connection.
pub fn flip_bit(db: &Path, table: &str, column: &str, key: &str, row: i64, at: usize) {
    let conn = Connection::open(db).unwrap();
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
    let changed = conn
        .execute(
            &format!("UPDATE {table} SET {column} = ?2 WHERE {key} = ?1"),
            params![row, blob],
        )
        .unwrap();
    assert_eq!(changed, 1, "{table} row {row}");
}

/// Flips a bit of byte `at` in the first key batch of `hour`.
pub fn rot_first_batch(db: &Path, hour: i64, at: usize) -> i64 {
    let seq = Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT min(seq) FROM batches WHERE hour = ?1",
            [hour],
            |r| r.get(0),
        )
        .unwrap();
    flip_bit(db, "batches", "keys", "seq", seq, at);
    seq
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
    let db = db_file(&app.settings.data_dir);
    flip_bit(&db, "hours", "filter", "hour", start_hour().index(), 5);
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
    rot_first_batch(&db_file(&app.settings.data_dir), start_hour().index(), 9);
    app.clock.advance(chrono::Duration::hours(1));
    // Sealing reads the keys back, finds the rot and leaves the hour unsealed.
    assert!(app.service.tick().await.is_err());

    for attempt in 0..2 {
        let reply = app.get("/2008/09/03/13").await;
        reply.assert_error(500, "corrupt");
        assert_eq!(reply.status, 500, "attempt {attempt}");
        app.get("/2008/09/03").await.assert_error(500, "corrupt");
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
    rot_first_batch(&db_file(&app.settings.data_dir), start_hour().index(), 17);
    let app = app.restart().await;
    app.service.wait_loaded().await;

    let reply = app.get("/2008/09/03/13").await;
    reply.assert_error(500, "corrupt");
    assert_listed_corrupt(&app, "2008-09-03T13:00:00Z").await;
}

/// Runs SQL on the store's file from outside the store, as damage would.
fn tamper(dir: &Path, sql: &str) {
    let conn = Connection::open(db_file(dir)).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

/// Every representation and union of hour 13 answers 500 `corrupt`, never a filter.
async fn assert_hour_13_corrupt_everywhere(app: &TestApp) {
    for path in [
        "/2008/09/03/13",
        "/2008/09/03/13.bin",
        "/2008/09/03/13.hex",
        "/2008/09/03",
        "/since/2008/09/03/13",
    ] {
        app.get(path).await.assert_error(500, "corrupt");
    }
    assert_listed_corrupt(app, "2008-09-03T13:00:00Z").await;
}

#[tokio::test]
async fn a_sealed_hours_row_deleted_or_moved_answers_corrupt_never_an_empty_filter() {
    let h = start_hour().index();
    for damage in [
        format!("DELETE FROM hours WHERE hour = {h}"),
        format!("UPDATE hours SET hour = hour + 1 WHERE hour = {h}"),
        format!("UPDATE hours SET hour = hour + 2 WHERE hour = {h}"),
        // One flipped bit of the row id (the hour is the table's rowid).
        format!("UPDATE hours SET hour = (hour | 4096) - (hour & 4096) WHERE hour = {h}"),
    ] {
        let app = TestApp::spawn().await;
        ingest_all(&app, &ids("sealed", 300)).await;
        app.next_hour().await;
        let sealed = app.get("/2008/09/03/13").await;
        assert_eq!(sealed.status, StatusCode::OK, "{damage}");
        tamper(&app.settings.data_dir, &damage);
        let app = app.restart().await;

        assert_hour_13_corrupt_everywhere(&app).await;
        // Housekeeping finds it too, and seals nothing empty in its place.
        let _ = app.service.tick().await;
        app.get("/2008/09/03/13").await.assert_error(500, "corrupt");
        let restored: i64 = Connection::open(db_file(&app.settings.data_dir))
            .unwrap()
            .query_row("SELECT count(*) FROM hours WHERE hour = ?1", [h], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(restored, 0, "{damage}: the hour was sealed again");
    }
}

#[tokio::test]
async fn a_key_batch_deleted_from_the_open_hour_answers_corrupt_after_a_restart() {
    let app = TestApp::spawn().await;
    ingest_all(&app, &ids("open", 300)).await;
    tamper(
        &app.settings.data_dir,
        "DELETE FROM batches WHERE seq = (SELECT min(seq) FROM batches)",
    );
    let app = app.restart().await;
    app.get("/2008/09/03/13").await.assert_error(500, "corrupt");
    assert_listed_corrupt(&app, "2008-09-03T13:00:00Z").await;
}

#[tokio::test]
async fn a_key_batch_moved_out_of_a_closed_hour_is_found_before_it_is_sealed() {
    for by in [1, -1] {
        let app = TestApp::spawn().await;
        ingest_all(&app, &ids("moved", 300)).await;
        tamper(
            &app.settings.data_dir,
            &format!("UPDATE batches SET hour = hour + ({by}) WHERE seq = (SELECT max(seq) FROM batches)"),
        );
        app.clock.advance(chrono::Duration::hours(1));
        assert!(app.service.tick().await.is_err(), "moved by {by}");
        let reply = app.get("/2008/09/03/13").await;
        reply.assert_error(500, "corrupt");
        assert_listed_corrupt(&app, "2008-09-03T13:00:00Z").await;
    }
}
