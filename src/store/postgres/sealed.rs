//! Sealed hours in PostgreSQL: sealing an hour (first seal wins, its batches deleted in
//! the same transaction), reading a seal back verified against the hour's record, the
//! sealed hours' counts, and pruning old hours.

use super::errors::pg_error;
use super::statements::Statements;
use super::{client_of, snapshot, PgStore};
use crate::bloom::{Key, SHA1_KM32};
use crate::hour::Hour;
use crate::store::{
    check_count, filter_checksum, keys_to_blob, sealed_keys_checksum, Result, SealedHour,
    SealedRow, Sealing,
};
use deadpool_postgres::Pool;

/// The first seal wins (primary key, `ON CONFLICT DO NOTHING`); every node builds
/// the same bytes from the same closed key set anyway. The insert's row count says
/// whether this seal is the stored one: a concurrent seal of the hour that commits
/// first makes it wait and then insert nothing.
pub(super) async fn seal(store: &PgStore, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(pg_error)?;
    let insert = store.sql(
        "INSERT INTO {s}.hours
             (hour, starts_at, count, m, k, hash, filter, keys, checksum, keys_checksum)
         VALUES ($1::bigint, to_timestamp($1::bigint * 3600), $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (hour) DO NOTHING",
    );
    let blob = keys_to_blob(keys);
    let inserted = tx
        .run(
            &insert,
            &[
                &sealed.hour.index(),
                &(sealed.count as i64),
                &(sealed.m as i32),
                &(sealed.k as i32),
                &SHA1_KM32,
                &sealed.filter,
                &blob,
                &filter_checksum(sealed),
                &sealed_keys_checksum(sealed.hour, &blob),
            ],
        )
        .await
        .map_err(pg_error)?;
    if inserted == 1 {
        super::universe::merge_sealed(store, &tx, sealed.hour, keys).await?;
    }
    for table in ["batches", "batch_counts"] {
        tx.run(
            &store.sql(&format!("DELETE FROM {{s}}.{table} WHERE hour = $1")),
            &[&sealed.hour.index()],
        )
        .await
        .map_err(pg_error)?;
    }
    tx.commit().await.map_err(pg_error)?;
    Ok(Sealing::of_rows_inserted(inserted as u64))
}

/// The sealed row, verified and cross-checked against the hour's record in the same
/// snapshot.
pub(super) async fn sealed(store: &PgStore, pool: &Pool, hour: Hour) -> Result<Option<SealedHour>> {
    let mut client = client_of(pool).await?;
    let tx = snapshot(&mut client).await?;
    let client = &tx;
    let sql = store.sql(
        "SELECT count, m, k, filter, octet_length(keys)::bigint, checksum
         FROM {s}.hours WHERE hour = $1",
    );
    let row = client
        .row_opt(&sql, &[&hour.index()])
        .await
        .map_err(pg_error)?;
    let sealed = row
        .map(|r| {
            SealedRow {
                hour,
                count: r.get(0),
                m: r.get::<_, i32>(1).into(),
                k: r.get::<_, i32>(2).into(),
                filter: r.get(3),
                key_bytes: r.get(4),
                checksum: r.get(5),
            }
            .verify()
        })
        .transpose()?;
    store.record(&tx, hour).await?.check_sealed(hour, sealed)
}

pub(super) async fn last_sealed(store: &PgStore) -> Result<Option<Hour>> {
    let client = store.client().await?;
    let row = client
        .row(&store.sql("SELECT max(hour) FROM {s}.hours"), &[])
        .await
        .map_err(pg_error)?;
    Ok(row.get::<_, Option<i64>>(0).map(Hour::from_index))
}

pub(super) async fn sealed_counts(
    store: &PgStore,
    from: Hour,
    to: Hour,
) -> Result<Vec<(Hour, u64)>> {
    let client = store.client().await?;
    let sql = store.sql(
        "SELECT hour, count, octet_length(keys)::bigint FROM {s}.hours
              WHERE hour BETWEEN $1 AND $2 ORDER BY hour",
    );
    let rows = client
        .rows(&sql, &[&from.index(), &to.index()])
        .await
        .map_err(pg_error)?;
    rows.iter()
        .map(|r| {
            let hour = Hour::from_index(r.get(0));
            let row = format!("the sealed count of hour {hour}");
            Ok((hour, check_count(&row, r.get(1), r.get(2))?))
        })
        .collect()
}

pub(super) async fn prune_before(store: &PgStore, hour: Hour) -> Result<u64> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(pg_error)?;
    let gone = tx
        .run(
            &store.sql("DELETE FROM {s}.hours WHERE hour < $1"),
            &[&hour.index()],
        )
        .await
        .map_err(pg_error)?;
    for sql in [
        "DELETE FROM {s}.batches WHERE hour < $1",
        "DELETE FROM {s}.batch_counts WHERE hour < $1",
        "DELETE FROM {s}.exact_hours WHERE hour < $1",
        "DELETE FROM {s}.hour_universe WHERE hour < $1",
        "DELETE FROM {s}.forms WHERE from_hour < $1",
        "INSERT INTO {s}.meta (name, value) VALUES ('pruned_before', $1)
         ON CONFLICT (name) DO UPDATE SET value = GREATEST({s}.meta.value, excluded.value)",
    ] {
        tx.run(&store.sql(sql), &[&hour.index()])
            .await
            .map_err(pg_error)?;
    }
    tx.commit().await.map_err(pg_error)?;
    Ok(gone)
}
