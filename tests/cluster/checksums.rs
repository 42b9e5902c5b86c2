//! The PostgreSQL store verifies what it reads back exactly as the embedded one does,
//! accepts rows written before checksums existed, and refuses a schema that is not
//! bloomcast's.

use super::{drop_schema, unique_schema};
use crate::common::needs::Need;
use bloomcast::bloom::{Filter, Key};
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{full_message, PgStore, SealedHour, Sealing, Store, StoreError};

fn h() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

fn keys(ids: &[&str]) -> Vec<Key> {
    ids.iter().map(|id| Key::of(id)).collect()
}

/// The link a node would make from the test's URL (no CA file).
fn link(url: &str) -> bloomcast::store::PgLink {
    bloomcast::store::PgLink::new(url, std::path::Path::new("")).unwrap()
}

async fn sql(url: &str, statements: &str) {
    let client = crate::common::nodes::connect(url).await;
    client.batch_execute(statements).await.unwrap();
}

fn assert_corrupt<T: std::fmt::Debug>(result: bloomcast::store::Result<T>, naming: &str) {
    match result {
        Err(StoreError::Corrupt(m)) => assert!(m.contains(naming), "{m:?} lacks {naming:?}"),
        other => panic!("expected Corrupt naming {naming:?}, got {other:?}"),
    }
}

async fn sealed_hour(store: &PgStore, hour: Hour, ids: &[&str]) -> SealedHour {
    let ks = bloomcast::store::distinct(keys(ids));
    let filter = Filter::sized_within(&ks, 0.01).unwrap();
    let sealed = SealedHour::new(hour, ks.len() as u64, &filter);
    store.close_through(hour).await.unwrap();
    assert_eq!(store.seal(&sealed, &ks).await.unwrap(), Sealing::Stored);
    sealed
}

pub async fn flipped_bits_in_postgres_rows_are_corrupt_never_data() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let store = PgStore::connect(link(&url), &schema, h()).await.unwrap();
    sealed_hour(&store, h(), &["a", "b"]).await;
    let open = h().next();
    assert_eq!(store.append(open, &keys(&["c", "d"])).await.unwrap(), open);
    // An append to the closed hour goes to the next, checksummed for that hour.
    assert_eq!(store.append(h(), &keys(&["late"])).await.unwrap(), open);
    assert_eq!(store.keys(open).await.unwrap().len(), 3);

    let s = format!("\"{schema}\"");
    sql(
        &url,
        &format!(
            "UPDATE {s}.hours SET filter = set_byte(filter, 0, get_byte(filter, 0) # 16);
             UPDATE {s}.batches SET keys = set_byte(keys, 3, get_byte(keys, 3) # 1)
                 WHERE seq = (SELECT min(seq) FROM {s}.batches);"
        ),
    )
    .await;
    assert_corrupt(
        store.sealed(h()).await,
        "sealed filter of hour 2008-09-03T13:00:00Z",
    );
    assert_eq!(
        store.keys(h()).await.unwrap().len(),
        2,
        "the sealed keys are intact"
    );
    assert_corrupt(
        store.keys_after(open, 0).await,
        "of hour 2008-09-03T14:00:00Z",
    );
    assert_corrupt(store.keys(open).await, "checksum mismatch");
    sql(
        &url,
        &format!("UPDATE {s}.hours SET keys = set_byte(keys, 9, get_byte(keys, 9) # 4)"),
    )
    .await;
    assert_corrupt(
        store.keys(h()).await,
        "sealed keys of hour 2008-09-03T13:00:00Z",
    );
    drop_schema(&url, &schema).await;
}

pub async fn rows_written_before_migration_2_are_read_unverified_and_new_ones_verified() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let s = format!("\"{schema}\"");
    drop(PgStore::connect(link(&url), &schema, h()).await.unwrap());
    // Back to the schema as migration 1 left it (with the chain of migration 4, which
    // does not touch these tables), with rows written then.
    sql(
        &url,
        &format!(
            "ALTER TABLE {s}.batches DROP COLUMN checksum;
             ALTER TABLE {s}.hours DROP COLUMN checksum, DROP COLUMN keys_checksum;
             DROP TABLE {s}.batch_counts;
             DELETE FROM {s}.meta WHERE name = 'pruned_before';
             DELETE FROM {s}.schema_migrations WHERE version IN (2, 5);
             INSERT INTO {s}.batches (hour, keys) VALUES ({}, '\\x0102030405060708');",
            h().index()
        ),
    )
    .await;
    let store = PgStore::connect(link(&url), &schema, h()).await.unwrap();
    assert_eq!(
        store.keys(h()).await.unwrap().len(),
        1,
        "an old row is accepted"
    );
    store.append(h(), &keys(&["new"])).await.unwrap();
    assert_eq!(store.keys(h()).await.unwrap().len(), 2);
    sql(
        &url,
        &format!(
            "UPDATE {s}.batches SET keys = set_byte(keys, 0, get_byte(keys, 0) # 1)
             WHERE checksum IS NOT NULL"
        ),
    )
    .await;
    assert_corrupt(store.keys(h()).await, "checksum mismatch");
    drop_schema(&url, &schema).await;
}

pub async fn a_schema_that_is_not_bloomcasts_is_refused_untouched() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let s = format!("\"{schema}\"");
    sql(
        &url,
        &format!("CREATE SCHEMA {s}; CREATE TABLE {s}.orders (id int PRIMARY KEY);"),
    )
    .await;
    let e = match PgStore::connect(link(&url), &schema, h()).await {
        Ok(_) => panic!("a foreign schema must be refused"),
        Err(e) => full_message(&e),
    };
    assert!(
        e.contains(&format!("schema {s} is not bloomcast's"))
            && e.contains("orders")
            && e.contains("no schema_migrations table")
            && e.contains("refusing to add tables"),
        "{e}"
    );
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "no table was added");
    drop_schema(&url, &schema).await;
}

/// The first seal and the first link of an hour stay, and each write says whether it
/// is the stored one, also when several race (each answer comes from its own insert).
pub async fn postgres_seal_and_put_link_say_whether_theirs_is_the_stored_row() {
    use bloomcast::chain::GENESIS;
    use bloomcast::store::{ChainLink, Linking};
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let store = PgStore::connect(link(&url), &schema, h()).await.unwrap();
    let first = sealed_hour(&store, h(), &["a", "b"]).await; // asserts Stored
    let ks = bloomcast::store::distinct(keys(&["other"]));
    let again = SealedHour::new(h(), 1, &Filter::sized_within(&ks, 0.01).unwrap());
    assert_eq!(
        store.seal(&again, &ks).await.unwrap(),
        Sealing::AlreadySealed
    );
    assert_eq!(store.sealed(h()).await.unwrap(), Some(first.clone()));
    assert_eq!(
        store.keys(h()).await.unwrap().len(),
        2,
        "the first seal's keys"
    );

    let link = ChainLink::new(h(), &first.filter, GENESIS);
    assert_eq!(store.put_link(&link).await.unwrap(), Linking::Stored);
    let other = ChainLink::new(h(), b"other", GENESIS);
    assert_eq!(
        store.put_link(&other).await.unwrap(),
        Linking::AlreadyLinked
    );
    assert_eq!(store.last_link(h().next()).await.unwrap(), Some(link));

    // Racing writers of the next hour: exactly one hears it is the stored one.
    let store = std::sync::Arc::new(store);
    crate::common::races::exactly_one_seal_and_link_is_stored(store.clone(), h().next(), 6).await;
    // And the signing key registry and the signatures, as in SQLite.
    crate::common::races::one_key_registration_wins_and_only_a_registered_key_signs(store, h(), 6)
        .await;
    drop_schema(&url, &schema).await;
}

/// As the embedded store: a sealed row gone from an hour in the chain (deleted or
/// moved), a key batch deleted or moved, or a sealed filter the chain does not cover,
/// is corrupt; pruned hours keep their links and read as gone.
pub async fn deleted_and_moved_rows_in_postgres_are_corrupt_never_fewer_ids() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let s = format!("\"{schema}\"");
    let store = PgStore::connect(link(&url), &schema, h()).await.unwrap();
    for (i, damage) in [
        "DELETE FROM {s}.hours WHERE hour = {h}",
        "UPDATE {s}.hours SET hour = hour + 1 WHERE hour = {h}",
        "UPDATE {s}.hours SET hour = hour + 2 WHERE hour = {h}",
        "UPDATE {s}.hours SET hour = hour # 4096 WHERE hour = {h}",
    ]
    .into_iter()
    .enumerate()
    {
        // Each case on an hour of its own, far apart.
        let hour = Hour::from_index(h().index() + 10 * i as i64);
        let sealed = sealed_hour(&store, hour, &["a", "b"]).await;
        let link =
            bloomcast::store::ChainLink::new(hour, &sealed.filter, bloomcast::chain::GENESIS);
        let _ = store.put_link(&link).await.unwrap();
        assert_eq!(store.sealed(hour).await.unwrap(), Some(sealed));
        let sql_text = damage
            .replace("{s}", &s)
            .replace("{h}", &hour.index().to_string());
        sql(&url, &sql_text).await;
        assert_corrupt(store.sealed(hour).await, "is in the hour chain");
        assert_corrupt(store.keys(hour).await, "is in the hour chain");
    }

    // A sealed filter with a valid row checksum that its link does not cover.
    let hour = Hour::from_index(h().index() + 100);
    let mut forged = sealed_hour(&store, hour, &["a", "b"]).await;
    let link = bloomcast::store::ChainLink::new(hour, &forged.filter, bloomcast::chain::GENESIS);
    let _ = store.put_link(&link).await.unwrap();
    forged.filter[0] ^= 1;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .execute(
            &format!("UPDATE {s}.hours SET filter = $1, checksum = $2 WHERE hour = $3"),
            &[
                &forged.filter,
                &bloomcast::store::filter_checksum(&forged),
                &hour.index(),
            ],
        )
        .await
        .unwrap();
    assert_corrupt(
        store.sealed(hour).await,
        "not the one its chain link covers",
    );

    // Key batches: one deleted, one moved a hour back.
    for damage in [
        "DELETE FROM {s}.batches WHERE seq = (SELECT max(seq) FROM {s}.batches)",
        "UPDATE {s}.batches SET hour = hour - 1 WHERE seq = (SELECT max(seq) FROM {s}.batches)",
    ] {
        let open = Hour::from_index(h().index() + 1000);
        sql(
            &url,
            &format!("DELETE FROM {s}.batches; DELETE FROM {s}.batch_counts"),
        )
        .await;
        for ids in [&["c", "d"][..], &["e"][..]] {
            assert_eq!(store.append(open, &keys(ids)).await.unwrap(), open);
        }
        assert_eq!(store.keys(open).await.unwrap().len(), 3);
        sql(&url, &damage.replace("{s}", &s)).await;
        assert_corrupt(store.keys(open).await, "record counts 2");
        assert_corrupt(store.keys_after(open, 0).await, "record counts 2");
    }

    // Pruned hours keep their links and read as gone, not corrupt.
    store
        .prune_before(Hour::from_index(h().index() + 200))
        .await
        .unwrap();
    assert_eq!(store.sealed(h()).await.unwrap(), None);
    assert_eq!(store.links(h(), 100).await.unwrap().len(), 5);
    drop_schema(&url, &schema).await;
}

/// A node's cursor into the open hour is a transaction id of the server it read; after
/// a failover the new primary's counter may be behind it (the old primary began
/// transactions the standby never saw). A cursor past the counter reads the hour from
/// its start, so no batch written with a lower id is skipped.
pub async fn a_cursor_past_the_servers_transaction_counter_reads_the_hour_from_its_start() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let store = PgStore::connect(link(&url), &schema, h()).await.unwrap();
    store.append(h(), &keys(&["a", "b"])).await.unwrap();
    let page = store.keys_after(h(), 0).await.unwrap();
    store.append(h(), &keys(&["c"])).await.unwrap();
    let after = store.keys_after(h(), page.cursor).await.unwrap();
    // From it on: "c" at least (the cursor is the oldest transaction running then, so
    // with other transactions running it may read earlier batches again too).
    assert!(
        after.keys.contains(&keys(&["c"])[0]),
        "a cursor the server knows reads on from it"
    );
    let ahead = page.cursor + (1 << 40);
    let mut all = store.keys_after(h(), ahead).await.unwrap().keys;
    all.sort();
    let mut want = keys(&["a", "b", "c"]);
    want.sort();
    assert_eq!(all, want, "a cursor past the counter reads the whole hour");
    drop(store);
    drop_schema(&url, &schema).await;
}
