//! Rows damaged behind the store's back (a bit flipped with another SQLite connection,
//! the checksum left alone) are never returned as data, and the file is recognised,
//! adopted or refused as bloomcast's before anything is written to it.

use super::schema::{APPLICATION_ID, SCHEMA_VERSION};
use super::*;
use crate::hour::hour_of;

fn h() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

fn keys(ids: &[&str]) -> Vec<Key> {
    ids.iter().map(|id| Key::of(id)).collect()
}

/// Flips one bit of byte `at` of a stored blob from outside the store, leaving the
/// row's checksum as it was: what rot in the row would leave behind.
fn flip_bit(dir: &Path, table: &str, column: &str, key: &str, row: i64, at: usize) {
    let conn = Connection::open(dir.join(FILE_NAME)).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let mut blob: Vec<u8> = conn
        .query_row(
            &format!("SELECT {column} FROM {table} WHERE {key} = ?1"),
            [row],
            |r| r.get(0),
        )
        .unwrap();
    blob[at] ^= 0x08;
    let changed = conn
        .execute(
            &format!("UPDATE {table} SET {column} = ?2 WHERE {key} = ?1"),
            params![row, blob],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

/// Runs SQL on the store's file from outside the store, as rot or an operator would.
fn tamper(dir: &Path, sql: &str) {
    let conn = Connection::open(dir.join(FILE_NAME)).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

fn assert_corrupt<T: std::fmt::Debug>(result: Result<T>, naming: &[&str]) {
    match result {
        Err(StoreError::Corrupt(m)) => {
            for part in naming {
                assert!(m.contains(part), "{m:?} should name {part:?}");
            }
        }
        other => panic!("expected Corrupt naming {naming:?}, got {other:?}"),
    }
}

async fn sealed_store(dir: &Path) -> SqliteStore {
    let store = SqliteStore::open(dir, h()).unwrap();
    let ks = distinct(keys(&["a", "b"]));
    let filter = crate::bloom::Filter::sized_within(&ks, 0.01).unwrap();
    let sealed = SealedHour {
        hour: h(),
        count: 2,
        m: filter.m(),
        k: filter.k(),
        filter: filter.to_bytes(),
    };
    store.seal(&sealed, &ks).await.unwrap();
    store
}

#[tokio::test]
async fn a_flipped_bit_in_a_key_batch_is_corrupt_not_fewer_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    store.append(h(), &keys(&["a", "b"])).await.unwrap();
    store.append(h(), &keys(&["c"])).await.unwrap();
    let seq: i64 = Connection::open(dir.path().join(FILE_NAME))
        .unwrap()
        .query_row("SELECT min(seq) FROM batches", [], |r| r.get(0))
        .unwrap();
    flip_bit(dir.path(), "batches", "keys", "seq", seq, 4);
    let batch = format!("batch {seq} of hour 2008-09-03T13:00:00Z");
    assert_corrupt(
        store.keys_after(h(), 0).await,
        &[&batch, "checksum mismatch"],
    );
    assert_corrupt(store.keys(h()).await, &[&batch]);
}

#[tokio::test]
async fn a_batch_moved_to_another_hour_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    store.append(h(), &keys(&["a"])).await.unwrap();
    tamper(dir.path(), "UPDATE batches SET hour = hour + 1");
    assert_corrupt(store.keys(h().next()).await, &["2008-09-03T14:00:00Z"]);
    assert!(store.keys(h()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_flipped_bit_in_a_sealed_filter_fails_while_its_keys_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    flip_bit(dir.path(), "hours", "filter", "hour", h().index(), 1);
    assert_corrupt(
        store.sealed(h()).await,
        &["sealed filter of hour 2008-09-03T13:00:00Z", "checksum"],
    );
    assert_eq!(store.keys(h()).await.unwrap(), distinct(keys(&["a", "b"])));
}

#[tokio::test]
async fn damaged_sealed_keys_fail_while_the_filter_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    flip_bit(dir.path(), "hours", "keys", "hour", h().index(), 9);
    assert_corrupt(
        store.keys(h()).await,
        &[
            "sealed keys of hour 2008-09-03T13:00:00Z",
            "checksum mismatch",
        ],
    );
    assert!(store.sealed(h()).await.unwrap().is_some());
    // Keys cut short: the filter row's count no longer matches them.
    tamper(dir.path(), "UPDATE hours SET keys = substr(keys, 1, 8)");
    assert_corrupt(store.sealed(h()).await, &["count 2 but 8 bytes of keys"]);
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    tamper(dir.path(), "UPDATE hours SET m = 'rot'");
    assert_corrupt(store.sealed(h()).await, &["malformed"]);
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
    // Checksums were computed for the old rows: rot in them is now caught.
    flip_bit(dir.path(), "hours", "filter", "hour", h().index(), 1);
    assert_corrupt(store.sealed(h()).await, &["checksum mismatch"]);
    drop(store);
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

/// The error `open` gives for a data dir, as text with its causes.
fn open_error(dir: &Path) -> String {
    match SqliteStore::open(dir, h()) {
        Ok(_) => panic!("{} should be refused", dir.display()),
        Err(e) => crate::store::full_message(&e),
    }
}

#[test]
fn a_foreign_sqlite_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    let e = open_error(dir.path());
    assert!(
        e.contains(&format!("{} is not a bloomcast database", path.display()))
            && e.contains("application_id 0x00000000")
            && e.contains("invoices")
            && e.contains("refusing to add tables"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is unchanged"
    );
}

#[test]
fn another_applications_id_is_refused_even_without_tables() {
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    conn.execute_batch("PRAGMA application_id = 1234;").unwrap();
    drop(conn);
    let e = open_error(dir.path());
    assert!(
        e.contains("not a bloomcast database (application_id 0x000004d2"),
        "{e}"
    );
}

#[test]
fn a_database_from_a_newer_bloomcast_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 99;"
    ))
    .unwrap();
    drop(conn);
    let e = open_error(dir.path());
    assert!(e.contains("newer bloomcast (schema version 99"), "{e}");
}

#[test]
fn an_empty_file_is_refused_as_possibly_truncated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(FILE_NAME), b"").unwrap();
    let e = open_error(dir.path());
    assert!(
        e.contains("is empty (0 bytes)") && e.contains("remove it to start afresh"),
        "{e}"
    );
    assert_eq!(std::fs::read(dir.path().join(FILE_NAME)).unwrap().len(), 0);
}

#[test]
fn a_file_that_is_not_sqlite_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(FILE_NAME), b"name,total\nacme,12\n").unwrap();
    let e = open_error(dir.path());
    assert!(e.contains("is not a SQLite database"), "{e}");
}
