//! The open hours in PostgreSQL: appending batches of keys, the boundary that closes
//! hours to appends, and reading an hour's keys back (paged while it is open, whole
//! once closed) checked against the hour's record.
//!
//! The hour boundary: every append reads the `closed_through` row `FOR SHARE` and
//! writes to the first hour after it, in one statement; closing an hour updates that
//! row, which waits for every append holding it and makes every later append see the
//! new value. So an append racing the close of H lands in H or H+1, never nowhere, and
//! once the close commits, H's keys are final.

use super::errors::pg_error;
use super::statements::Statements;
use super::{client_of, snapshot, PgStore};
use crate::bloom::Key;
use crate::hour::Hour;
use crate::store::{
    batch_checksum, distinct, keys_to_blob, receiver_gone, verify_batch, verify_sealed_keys,
    KeyPieces, Marks, Result, StoreError, PIECE_KEYS,
};
use deadpool_postgres::Pool;
use futures_util::TryStreamExt;

pub(super) async fn marks(store: &PgStore) -> Result<Marks> {
    let client = store.client().await?;
    let sql = store.sql(
        "SELECT (SELECT value FROM {s}.meta WHERE name = 'closed_through'),
                (SELECT max(hour) FROM {s}.batches)",
    );
    let row = client.row(&sql, &[]).await.map_err(pg_error)?;
    let closed_through = row.get::<_, Option<i64>>(0).map(Hour::from_index);
    let newest = row.get::<_, Option<i64>>(1).map(Hour::from_index);
    let high_water = [Some(store.genesis), closed_through.map(Hour::next), newest]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(store.genesis);
    Ok(Marks {
        closed_through: closed_through.filter(|c| *c >= store.genesis),
        high_water,
    })
}

/// Migration 13: an append as one function, so its statements are planned once per
/// server session (PL/pgSQL keeps their plans) rather than at every call: the store
/// sends every statement unnamed (`statements.rs`), which would otherwise parse and plan
/// this one for each batch. Locks the boundary row shared and inserts only if `hour` is
/// still after it; the batch, its record and the notice to other nodes (`listen.rs`,
/// sent on commit) in one transaction. NULL when `hour` is closed.
pub(super) const MIGRATION: &str = r#"
CREATE FUNCTION {s}.append_batch(p_hour bigint, p_keys bytea, p_checksum bigint, p_channel text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    appended bigint;
BEGIN
    WITH b AS (
        INSERT INTO {s}.batches (hour, keys, checksum)
        SELECT p_hour, p_keys, p_checksum FROM {s}.meta m
        WHERE m.name = 'closed_through' AND m.value < p_hour FOR SHARE OF m
        RETURNING hour),
    c AS (
        INSERT INTO {s}.batch_counts (hour, slot, batches)
        SELECT hour, floor(random() * 16)::smallint, 1 FROM b
        ON CONFLICT (hour, slot) DO UPDATE SET batches = {s}.batch_counts.batches + 1)
    SELECT b.hour INTO appended FROM b;
    IF appended IS NOT NULL THEN
        PERFORM pg_notify(p_channel, appended::text);
    END IF;
    RETURN appended;
END
$$;
"#;

/// One statement, one round trip when `hour` is open (migration 13's function). The
/// checksum covers the hour, so when the hour was closed meanwhile the batch is
/// checksummed again for the first open hour and the insert retried, guarded the same
/// way.
pub(super) async fn append(store: &PgStore, hour: Hour, keys: &[Key]) -> Result<Hour> {
    let client = store.client().await?;
    let insert = store.sql("SELECT {s}.append_batch($1, $2, $3, $4)");
    let closed = store.sql("SELECT value FROM {s}.meta WHERE name = 'closed_through'");
    let blob = keys_to_blob(keys);
    let mut target = hour;
    // Each retry means another node closed an hour meanwhile: a handful at most.
    for _ in 0..16 {
        let checksum = batch_checksum(target, &blob);
        let row = client
            .row(
                &insert,
                &[&target.index(), &blob, &checksum, &store.channel],
            )
            .await
            .map_err(pg_error)?;
        if let Some(appended) = row.get::<_, Option<i64>>(0) {
            return Ok(Hour::from_index(appended));
        }
        let row = client.row(&closed, &[]).await.map_err(pg_error)?;
        target = target.max(Hour::from_index(row.get::<_, i64>(0) + 1));
    }
    Err(StoreError::Unavailable {
        what: format!("hours kept closing while a batch was appended (last tried {target})"),
        source: None,
    })
}

/// Moves the boundary and gives every hour it closes that has no batch record a
/// zero-batch one, in one transaction holding the boundary row: every closed hour then
/// has a record or, once sealed, a sealed row (see [`crate::store::HourRecord`]).
pub(super) async fn close_through(store: &PgStore, hour: Hour) -> Result<()> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(pg_error)?;
    let old: i64 = tx
        .row(
            &store.sql("SELECT value FROM {s}.meta WHERE name = 'closed_through' FOR UPDATE"),
            &[],
        )
        .await
        .map_err(pg_error)?
        .get(0);
    if hour.index() <= old {
        return Ok(());
    }
    tx.run(
        &store.sql(
            "INSERT INTO {s}.batch_counts (hour, slot, batches)
             SELECT h, 0, 0 FROM generate_series($1::bigint, $2::bigint) AS h
             ON CONFLICT (hour, slot) DO NOTHING",
        ),
        &[&(old + 1), &hour.index()],
    )
    .await
    .map_err(pg_error)?;
    tx.run(
        &store.sql("UPDATE {s}.meta SET value = $1 WHERE name = 'closed_through'"),
        &[&hour.index()],
    )
    .await
    .map_err(pg_error)?;
    tx.commit().await.map_err(pg_error)
}

/// The cursor is the oldest transaction still running when the page was read:
/// every row of an older transaction was visible then, so the next page starts at
/// it and can miss nothing that commits late. A cursor past the server's transaction
/// counter means the counter went back: another server took over (a standby promoted,
/// which never saw the last transactions the old primary began), and its new rows may
/// carry ids below the cursor. The page then starts from the beginning of the hour.
///
/// From the start of the hour (`cursor` 0), the batches read are checked against the
/// hour's record in the same snapshot.
pub(super) async fn send_keys_after(
    store: &PgStore,
    hour: Hour,
    cursor: i64,
    pieces: KeyPieces,
) -> Result<i64> {
    let mut client = store.client().await?;
    let tx = snapshot(&mut client).await?;
    let client = &tx;
    let sql = store.sql(
        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, b.seq, b.keys,
                b.checksum
         FROM (SELECT 1) AS one
         LEFT JOIN {s}.batches b ON b.hour = $1 AND b.xid >= CASE
             WHEN $2::text::xid8 <= pg_snapshot_xmax(pg_current_snapshot()) THEN $2::text::xid8
             ELSE '0'::xid8 END",
    );
    let after = cursor.to_string();
    // Rows as they arrive, not all of them at once: a piece of keys is held at a time.
    let rows = client
        .row_stream(&sql, &[&hour.index(), &after])
        .await
        .map_err(pg_error)?;
    futures_util::pin_mut!(rows);
    let (mut next, mut read) = (cursor, 0);
    let mut piece = Vec::new();
    while let Some(row) = rows.try_next().await.map_err(pg_error)? {
        next = row.get(0);
        if let Some(seq) = row.get::<_, Option<i64>>(1) {
            verify_batch(hour, seq, row.get(2), row.get(3), &mut piece)?;
            read += 1;
        }
        if piece.len() >= PIECE_KEYS {
            let full = std::mem::take(&mut piece);
            pieces.send(full).await.map_err(|_| receiver_gone())?;
        }
    }
    if cursor == 0 {
        store.record(&tx, hour).await?.check_batches(hour, read)?;
    }
    if !piece.is_empty() {
        pieces.send(piece).await.map_err(|_| receiver_gone())?;
    }
    Ok(next)
}

/// A sealed hour's keys, verified; `None` if `pool`'s server holds no seal of it.
pub(super) async fn sealed_keys(
    store: &PgStore,
    pool: &Pool,
    hour: Hour,
) -> Result<Option<Vec<Key>>> {
    let client = client_of(pool).await?;
    let sql = store.sql("SELECT count, keys, keys_checksum FROM {s}.hours WHERE hour = $1");
    let row = client
        .row_opt(&sql, &[&hour.index()])
        .await
        .map_err(pg_error)?;
    row.map(|r| verify_sealed_keys(hour, r.get(0), r.get(1), r.get(2)))
        .transpose()
}

pub(super) async fn keys(store: &PgStore, hour: Hour) -> Result<Vec<Key>> {
    let mut client = store.client().await?;
    let tx = snapshot(&mut client).await?;
    let client = &tx;
    // One statement, one snapshot: either the sealed keys or the batches, never a
    // moment between a seal's insert and its delete.
    let sql = store.sql(
        "SELECT true, count, keys, keys_checksum FROM {s}.hours WHERE hour = $1
         UNION ALL
         SELECT false, seq, keys, checksum FROM {s}.batches WHERE hour = $1",
    );
    let rows = client
        .rows(&sql, &[&hour.index()])
        .await
        .map_err(pg_error)?;
    if let Some(sealed) = rows.iter().find(|r| r.get::<_, bool>(0)) {
        return verify_sealed_keys(hour, sealed.get(1), sealed.get(2), sealed.get(3));
    }
    let mut keys = Vec::new();
    for row in &rows {
        verify_batch(hour, row.get(1), row.get(2), row.get(3), &mut keys)?;
    }
    store
        .record(&tx, hour)
        .await?
        .check_batches(hour, rows.len())?;
    Ok(distinct(keys))
}
