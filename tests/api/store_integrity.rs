//! Rot behind the embedded store's back, at the store's own API: a bit flipped in a row
//! with another SQLite connection (its checksum left alone), or 64 bytes of the file's
//! key area XORed on disk. Every read returns exactly what was written or fails as
//! corruption naming the hour and row; nothing damaged is ever returned as data.

use crate::corruption::{db_file, flip_bit, rot_first_batch};
use crate::helpers::start_hour;
use bloomcast::bloom::{Filter, Key};
use bloomcast::hour::Hour;
use bloomcast::store::{distinct, Result, SealedHour, Sealing, SqliteStore, Store, StoreError};
use rusqlite::Connection;
use std::path::Path;

fn h() -> Hour {
    start_hour()
}

fn keys(ids: &[&str]) -> Vec<Key> {
    ids.iter().map(|id| Key::of(id)).collect()
}

/// Runs SQL on the store's file from outside the store.
fn tamper(dir: &Path, sql: &str) {
    let conn = Connection::open(db_file(dir)).unwrap();
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

/// A store with hour `h()` sealed with the keys of "a" and "b".
async fn sealed_store(dir: &Path) -> SqliteStore {
    let store = SqliteStore::open(dir, h()).unwrap();
    let ks = distinct(keys(&["a", "b"]));
    let filter = Filter::sized_within(&ks, 0.01).unwrap();
    let sealed = SealedHour::new(h(), 2, &filter);
    assert_eq!(store.seal(&sealed, &ks).await.unwrap(), Sealing::Stored);
    store
}

#[tokio::test]
async fn a_flipped_bit_in_a_key_batch_is_corrupt_not_fewer_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    store.append(h(), &keys(&["a", "b"])).await.unwrap();
    store.append(h(), &keys(&["c"])).await.unwrap();
    let seq = rot_first_batch(&db_file(dir.path()), h().index(), 4);
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
    // Gone from its own hour, which its record says holds one batch.
    assert_corrupt(
        store.keys(h()).await,
        &["2008-09-03T13:00:00Z", "record counts 1"],
    );
    assert_corrupt(store.keys_after(h(), 0).await, &["record counts 1"]);
}

#[tokio::test]
async fn a_deleted_key_batch_is_corrupt_not_fewer_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path(), h()).unwrap();
    store.append(h(), &keys(&["a", "b"])).await.unwrap();
    store.append(h(), &keys(&["c"])).await.unwrap();
    assert_eq!(store.keys(h()).await.unwrap().len(), 3);
    tamper(
        dir.path(),
        "DELETE FROM batches WHERE seq = (SELECT max(seq) FROM batches)",
    );
    assert_corrupt(
        store.keys(h()).await,
        &["1 key batches are stored but its record counts 2"],
    );
    // Its record deleted too: batches with no record are as wrong.
    tamper(dir.path(), "DELETE FROM batch_counts");
    assert_corrupt(store.keys(h()).await, &["record counts 0"]);
}

/// A store with hour `h()` sealed and linked into the chain.
async fn linked_store(dir: &Path) -> SqliteStore {
    let store = sealed_store(dir).await;
    let sealed = store.sealed(h()).await.unwrap().unwrap();
    let link = bloomcast::store::ChainLink::new(h(), &sealed.filter, bloomcast::chain::GENESIS);
    assert_eq!(
        store.put_link(&link).await.unwrap(),
        bloomcast::store::Linking::Stored
    );
    store
}

#[tokio::test]
async fn a_sealed_row_gone_from_an_hour_in_the_chain_is_corrupt_never_unsealed() {
    for damage in [
        "DELETE FROM hours",
        "UPDATE hours SET hour = hour + 1",
        "UPDATE hours SET hour = hour + 2",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = linked_store(dir.path()).await;
        tamper(dir.path(), damage);
        assert_corrupt(
            store.sealed(h()).await,
            &["is in the hour chain", "missing"],
        );
        assert_corrupt(store.keys(h()).await, &["is in the hour chain"]);
    }
}

#[tokio::test]
async fn a_sealed_filter_the_chain_does_not_cover_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = linked_store(dir.path()).await;
    // Another filter with a valid row checksum: only the chain can tell.
    let mut forged = store.sealed(h()).await.unwrap().unwrap();
    forged.filter[0] ^= 1;
    let checksum = bloomcast::store::filter_checksum(&forged);
    let conn = Connection::open(crate::corruption::db_file(dir.path())).unwrap();
    conn.execute(
        "UPDATE hours SET filter = ?1, checksum = ?2",
        rusqlite::params![forged.filter, checksum],
    )
    .unwrap();
    assert_corrupt(
        store.sealed(h()).await,
        &["not the one its chain link covers"],
    );
}

#[tokio::test]
async fn pruned_hours_keep_their_links_and_read_as_gone_not_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = linked_store(dir.path()).await;
    assert_eq!(store.prune_before(h().next()).await.unwrap(), 1);
    assert_eq!(store.sealed(h()).await.unwrap(), None);
    assert!(store.keys(h()).await.unwrap().is_empty());
    assert_eq!(store.links(h(), 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_flipped_bit_in_a_sealed_filter_fails_while_its_keys_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    flip_bit(
        &db_file(dir.path()),
        "hours",
        "filter",
        "hour",
        h().index(),
        1,
    );
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
    flip_bit(
        &db_file(dir.path()),
        "hours",
        "keys",
        "hour",
        h().index(),
        9,
    );
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
async fn a_sealed_count_that_disagrees_with_its_keys_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    assert_eq!(store.sealed_counts(h(), h()).await.unwrap(), vec![(h(), 2)]);
    tamper(dir.path(), "UPDATE hours SET count = 3");
    assert_corrupt(
        store.sealed_counts(h(), h()).await,
        &[
            "sealed count of hour 2008-09-03T13:00:00Z",
            "count 3 but 16 bytes",
        ],
    );
    assert_corrupt(store.sealed(h()).await, &["checksum mismatch"]);
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = sealed_store(dir.path()).await;
    tamper(dir.path(), "UPDATE hours SET m = 'rot'");
    assert_corrupt(store.sealed(h()).await, &["malformed"]);
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
fn exact_or_corrupt<T: PartialEq + std::fmt::Debug>(what: &str, got: Result<T>, want: &T) -> bool {
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
    let sealed_keys = distinct(batches[..30].concat());
    let open_keys: Vec<Key> = batches[30..].concat();
    let filter = Filter::sized_within(&sealed_keys, 0.01).unwrap();
    let sealed = SealedHour::new(sealed_hour, sealed_keys.len() as u64, &filter);
    {
        let store = SqliteStore::open(dir.path(), sealed_hour).unwrap();
        for batch in &batches[30..] {
            store.append(open_hour, batch).await.unwrap();
        }
        assert_eq!(
            store.seal(&sealed, &sealed_keys).await.unwrap(),
            Sealing::Stored
        );
    }
    // Once the writer thread closes its connection (the last close checkpoints the log).
    crate::wait::sqlite_store_closed(dir.path()).await;
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
            &distinct(open_keys.clone()),
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
