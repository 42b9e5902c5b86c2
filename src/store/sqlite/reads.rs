//! The embedded store's reads, each on a connection the caller holds (the store runs
//! them on a pooled reader, off the async runtime). A read that checks rows against the
//! hour's record reads both in one transaction, so they come from one snapshot.

use super::sql_error;
use crate::bloom::Key;
use crate::clock::ClockRecord;
use crate::hour::Hour;
use crate::store::{
    check_count, distinct, read_sealed_keys, verify_batch, ChainLink, HourRecord, Marks, Result,
    SealedHour, SealedRow, PIECE_KEYS,
};
use rusqlite::{params, Connection, OptionalExtension};

pub(super) fn marks(conn: &Connection, genesis: Hour) -> Result<Marks> {
    let (closed, newest): (Option<i64>, Option<i64>) = conn
        .query_row(
            "SELECT (SELECT value FROM meta WHERE name = 'closed_through'),
                    (SELECT max(hour) FROM batches)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql_error)?;
    let closed_through = closed.map(Hour::from_index);
    let high_water = [
        Some(genesis),
        closed_through.map(Hour::next),
        newest.map(Hour::from_index),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(genesis);
    Ok(Marks {
        closed_through,
        high_water,
    })
}

/// The clock record the latest heartbeat wrote, its rows read in one statement (one
/// snapshot).
pub(super) fn clock_record(conn: &Connection) -> Result<Option<ClockRecord>> {
    let [a, b, c, d] = ClockRecord::ROWS;
    let rows: [Option<i64>; 4] = conn
        .query_row(
            "SELECT (SELECT value FROM meta WHERE name = ?1), (SELECT value FROM meta WHERE name = ?2),
                    (SELECT value FROM meta WHERE name = ?3), (SELECT value FROM meta WHERE name = ?4)",
            [a, b, c, d],
            |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
        )
        .map_err(sql_error)?;
    Ok(ClockRecord::from_rows(rows))
}

/// From the start of the hour (`cursor` 0), the batches read are checked against the
/// hour's record, in the same snapshot. Keys go to `emit` in pieces of about
/// [`PIECE_KEYS`]; returns the cursor they cover.
pub(super) fn send_keys_after(
    conn: &Connection,
    hour: Hour,
    cursor: i64,
    emit: impl FnMut(Vec<Key>) -> Result<()>,
) -> Result<i64> {
    let tx = conn.unchecked_transaction().map_err(sql_error)?;
    let (after, batches) = batches_after(&tx, hour, cursor, emit)?;
    if cursor == 0 {
        record(&tx, hour)?.check_batches(hour, batches)?;
    }
    Ok(after)
}

/// The sealed keys, or else the batches, checked against the hour's record in the
/// same snapshot.
pub(super) fn keys(conn: &Connection, hour: Hour) -> Result<Vec<Key>> {
    let tx = conn.unchecked_transaction().map_err(sql_error)?;
    let sealed = tx
        .prepare_cached("SELECT count, length(keys), keys_checksum FROM hours WHERE hour = ?1")
        .map_err(sql_error)?
        .query_row([hour.index()], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .optional()
        .map_err(sql_error)?;
    if let Some((count, len, checksum)) = sealed {
        // Read in pieces straight from the pages SQLite holds, not assembled into one
        // buffer first: a union reads megabytes of keys an hour.
        let blob = tx
            .blob_open(rusqlite::MAIN_DB, c"hours", c"keys", hour.index(), true)
            .map_err(sql_error)?;
        let len = usize::try_from(len).unwrap_or(0);
        return read_sealed_keys(hour, count, len, Some(checksum), |at, piece| {
            blob.read_at_exact(piece, at).map_err(sql_error)
        });
    }
    let mut keys = Vec::new();
    let (_, batches) = batches_after(&tx, hour, 0, |piece| {
        keys.extend(piece);
        Ok(())
    })?;
    record(&tx, hour)?.check_batches(hour, batches)?;
    Ok(distinct(keys))
}

/// The sealed row, verified and cross-checked against the hour's record in the same
/// snapshot.
pub(super) fn sealed(conn: &Connection, hour: Hour) -> Result<Option<SealedHour>> {
    let tx = conn.unchecked_transaction().map_err(sql_error)?;
    let row = tx
        .query_row(
            "SELECT count, m, k, filter, length(keys), checksum FROM hours WHERE hour = ?1",
            [hour.index()],
            |r| {
                Ok(SealedRow {
                    hour,
                    count: r.get(0)?,
                    m: r.get(1)?,
                    k: r.get(2)?,
                    filter: r.get(3)?,
                    key_bytes: r.get(4)?,
                    checksum: Some(r.get(5)?),
                })
            },
        )
        .optional()
        .map_err(sql_error)?;
    let sealed = row.map(SealedRow::verify).transpose()?;
    record(&tx, hour)?.check_sealed(hour, sealed)
}

pub(super) fn last_sealed(conn: &Connection) -> Result<Option<Hour>> {
    conn.query_row("SELECT max(hour) FROM hours", [], |r| {
        r.get::<_, Option<i64>>(0)
    })
    .map(|h| h.map(Hour::from_index))
    .map_err(sql_error)
}

pub(super) fn sealed_counts(conn: &Connection, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT hour, count, length(keys) FROM hours
             WHERE hour BETWEEN ?1 AND ?2 ORDER BY hour",
        )
        .map_err(sql_error)?;
    let rows = stmt
        .query_map([from.index(), to.index()], |r| {
            Ok((Hour::from_index(r.get(0)?), r.get(1)?, r.get(2)?))
        })
        .map_err(sql_error)?;
    let mut counts = Vec::new();
    for row in rows {
        let (hour, count, key_bytes) = row.map_err(sql_error)?;
        let row = format!("the sealed count of hour {hour}");
        counts.push((hour, check_count(&row, count, key_bytes)?));
    }
    Ok(counts)
}

/// The batches of `hour` after `cursor`, verified, their keys handed to `emit` in
/// pieces of about [`PIECE_KEYS`]: the cursor they end at, and how many batches.
fn batches_after(
    conn: &Connection,
    hour: Hour,
    cursor: i64,
    mut emit: impl FnMut(Vec<Key>) -> Result<()>,
) -> Result<(i64, usize)> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, keys, checksum FROM batches
             WHERE hour = ?1 AND seq > ?2 ORDER BY seq",
        )
        .map_err(sql_error)?;
    let mut rows = stmt
        .query(params![hour.index(), cursor])
        .map_err(sql_error)?;
    let (mut cursor, mut read) = (cursor, 0);
    let mut piece = Vec::new();
    while let Some(row) = rows.next().map_err(sql_error)? {
        cursor = row.get(0).map_err(sql_error)?;
        let blob: &[u8] = row
            .get_ref(1)
            .map_err(sql_error)?
            .as_blob()
            .map_err(|e| sql_error(e.into()))?;
        let checksum: i64 = row.get(2).map_err(sql_error)?;
        verify_batch(hour, cursor, blob, Some(checksum), &mut piece)?;
        read += 1;
        if piece.len() >= PIECE_KEYS {
            emit(std::mem::take(&mut piece))?;
        }
    }
    if !piece.is_empty() {
        emit(piece)?;
    }
    Ok((cursor, read))
}

/// What the store records of `hour` besides its rows (see [`HourRecord`]).
fn record(conn: &Connection, hour: Hour) -> Result<HourRecord> {
    let (batches, marks, link) = conn
        .query_row(
            "SELECT (SELECT batches FROM batch_counts WHERE hour = ?1),
                    (SELECT value FROM meta WHERE name = 'pruned_before'),
                    (SELECT value FROM meta WHERE name = 'closed_through'),
                    (SELECT value FROM meta WHERE name = 'chain_since'),
                    EXISTS (SELECT 1 FROM chain WHERE hour > ?1),
                    c.digest, c.prev, c.header, c.checksum
             FROM (SELECT 1) LEFT JOIN chain c ON c.hour = ?1",
            [hour.index()],
            |r| {
                let link = match r.get::<_, Option<Vec<u8>>>(5)? {
                    Some(digest) => Some((
                        digest,
                        r.get::<_, Vec<u8>>(6)?,
                        r.get::<_, Vec<u8>>(7)?,
                        r.get::<_, i64>(8)?,
                    )),
                    None => None,
                };
                let mark = |i| r.get::<_, Option<i64>>(i).map(|h| h.map(Hour::from_index));
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    (mark(1)?, mark(2)?, mark(3)?, r.get::<_, bool>(4)?),
                    link,
                ))
            },
        )
        .map_err(sql_error)?;
    let (pruned_before, closed_through, chain_since, later_link) = marks;
    Ok(HourRecord {
        link: link.map(|(digest, prev, header, checksum)| {
            ChainLink::verify_row(hour, &digest, &prev, &header, checksum)
        }),
        pruned_before,
        batches,
        closed_through,
        chain_since,
        later_link,
    })
}
