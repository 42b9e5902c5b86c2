//! The embedded store's file: a new one is marked as bloomcast's, and a store written
//! before versioning is adopted with checksums computed for its rows. (Refusals and rot
//! are tested end to end in `tests/store_refusals.rs` and `tests/api/store_integrity.rs`.)

use super::schema::SCHEMA_VERSION;
use super::*;
use crate::hour::hour_of;
use crate::store::distinct;
use rusqlite::params;

fn h() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

fn keys(ids: &[&str]) -> Vec<Key> {
    ids.iter().map(|id| Key::of(id)).collect()
}

/// Waits until a dropped store's writer thread, which outlives it until it sees its
/// channel close, has closed the file: the last connection to close checkpoints the
/// write-ahead log into it and deletes it.
async fn closed(dir: &Path) {
    let wal = dir.join(format!("{FILE_NAME}-wal"));
    for _ in 0..3_000 {
        if !wal.exists() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the store in {} never closed its file", dir.display());
}

#[tokio::test]
async fn a_new_database_carries_bloomcasts_application_id_and_version() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteStore::open(dir.path(), h()).unwrap());
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    let pragma = |name: &str| -> i32 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(pragma("application_id"), 0x626C_6F6D);
    assert_eq!(pragma("user_version"), SCHEMA_VERSION);
}

/// A store as every version before checksums wrote it.
fn write_v1_store(dir: &Path) -> Vec<Key> {
    let conn = Connection::open(dir.join(FILE_NAME)).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE batches (seq INTEGER PRIMARY KEY, hour INTEGER NOT NULL, keys BLOB NOT NULL);
         CREATE INDEX batches_by_hour ON batches (hour, seq);
         CREATE TABLE hours (hour INTEGER PRIMARY KEY, count INTEGER NOT NULL,
             m INTEGER NOT NULL, k INTEGER NOT NULL, hash TEXT NOT NULL,
             filter BLOB NOT NULL, keys BLOB NOT NULL);",
    )
    .unwrap();
    let sealed = distinct(keys(&["old-1", "old-2"]));
    conn.execute(
        "INSERT INTO meta VALUES ('genesis', ?1), ('closed_through', ?1)",
        [h().index()],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO hours VALUES (?1, 2, 16, 3, 'sha1-km32', X'a55a', ?2)",
        params![h().index(), keys_to_blob(&sealed)],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO batches (hour, keys) VALUES (?1, ?2)",
        params![h().next().index(), keys_to_blob(&keys(&["open-1"]))],
    )
    .unwrap();
    sealed
}

#[tokio::test]
async fn a_store_written_before_versioning_is_adopted_with_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let sealed = write_v1_store(dir.path());
    let store = SqliteStore::open(dir.path(), h().next()).unwrap();
    assert_eq!(store.genesis().await.unwrap(), h());
    assert_eq!(store.keys(h()).await.unwrap(), sealed);
    assert_eq!(
        store.sealed(h()).await.unwrap().unwrap().filter,
        [0xa5, 0x5a]
    );
    assert_eq!(
        store.keys_after(h().next(), 0).await.unwrap().keys,
        keys(&["open-1"])
    );
    // Every old row read back above verified: its checksum was computed (a column
    // left at its default would have failed).
    drop(store);
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

/// A store as version 6 wrote it: made by this version, then its version 7 records
/// taken away.
async fn write_v6_store(dir: &Path) -> Vec<Key> {
    let store = SqliteStore::open(dir, h()).unwrap();
    let universe = distinct(keys(&["u-1", "u-2", "u-3"]));
    store.add_to_universe(&universe, h(), 100).await.unwrap();
    let sealed = distinct(keys(&["u-1", "new-1"]));
    let filter = crate::bloom::Filter::sized_within(&sealed, 0.01).unwrap();
    store.close_through(h()).await.unwrap();
    let row = SealedHour::new(h(), 2, &filter);
    assert_eq!(store.seal(&row, &sealed).await.unwrap(), Sealing::Stored);
    // Two more hours closed, empty and not sealed.
    store.close_through(h().next().next()).await.unwrap();
    drop(store);
    closed(dir).await;
    let conn = Connection::open(dir.join(FILE_NAME)).unwrap();
    conn.execute_batch(
        "DROP TABLE universe_hours; DROP TABLE hour_universe; DROP TABLE forms;
         ALTER TABLE universe DROP COLUMN checksum;
         ALTER TABLE signing_keys DROP COLUMN vouch;
         ALTER TABLE signing_keys DROP COLUMN ack;
         DELETE FROM batch_counts WHERE batches = 0;
         DELETE FROM meta WHERE name = 'chain_since';
         DROP TABLE subscriptions; DROP TABLE deliveries;
         PRAGMA user_version = 6;",
    )
    .unwrap();
    universe
}

#[tokio::test]
async fn a_version_6_store_gets_the_records_that_find_deleted_rows() {
    let dir = tempfile::tempdir().unwrap();
    write_v6_store(dir.path()).await;
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    // Every universe row verifies, and adds up to the tally recorded for the seal.
    let through = store.universe_keys(h()).await.unwrap();
    assert_eq!(through, distinct(keys(&["u-1", "u-2", "u-3", "new-1"])));
    // The closed empty hours have their records: readable as empty, not damage.
    assert!(store.keys(h().next()).await.unwrap().is_empty());
    drop(store);
    closed(dir.path()).await;
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // From now on a deleted record is damage.
    conn.execute(
        "DELETE FROM batch_counts WHERE hour = ?1",
        [h().next().index()],
    )
    .unwrap();
    conn.execute(
        "DELETE FROM universe WHERE key = (SELECT min(key) FROM universe)",
        [],
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    assert!(matches!(
        store.keys(h().next()).await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        store.universe_keys(h()).await,
        Err(StoreError::Corrupt(_))
    ));
}
