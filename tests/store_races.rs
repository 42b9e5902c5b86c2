//! Races every store backend must settle alike, and the clock record each must keep
//! alike, against the embedded SQLite store. PostgreSQL runs the same checks
//! (`tests/common/races.rs`, `tests/common/clock_record.rs`) in `tests/cluster`, where its
//! server is found or the trial is reported ignored.

mod common;

use bloomcast::hour::hour_of;
use bloomcast::store::SqliteStore;
use std::sync::Arc;

#[tokio::test]
async fn of_racing_seals_and_links_of_an_hour_exactly_one_is_stored_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = Arc::new(SqliteStore::open(dir.path(), h).unwrap());
    common::races::exactly_one_seal_and_link_is_stored(store, h, 8).await;
}

#[tokio::test]
async fn of_racing_first_keys_one_is_registered_and_only_a_registered_key_signs() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = Arc::new(SqliteStore::open(dir.path(), h).unwrap());
    common::races::one_key_registration_wins_and_only_a_registered_key_signs(store, h, 6).await;
}

#[tokio::test]
async fn a_heartbeats_clock_record_reads_back_whole_and_sqlite_has_no_clock_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let store = SqliteStore::open(dir.path(), h).unwrap();
    common::clock_record::a_heartbeats_clock_record_reads_back_whole_and_the_next_replaces_it(
        &store,
    )
    .await;
    use bloomcast::store::Store;
    assert_eq!(store.time().await.unwrap(), None);
}
