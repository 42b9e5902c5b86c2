//! Reads shared by the embedded store's trait methods, each on a connection (or a read
//! transaction) the caller holds, so rows and the records they are checked against come
//! from one snapshot.

use super::sql_error;
use crate::hour::Hour;
use crate::store::{verify_batch, ChainLink, HourRecord, KeysPage, Result};
use rusqlite::{params, Connection};

/// Key batches of `hour` after `cursor`, verified, and how many were read.
pub(super) fn batches_after(
    conn: &Connection,
    hour: Hour,
    cursor: i64,
) -> Result<(KeysPage, usize)> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, keys, checksum FROM batches
             WHERE hour = ?1 AND seq > ?2 ORDER BY seq",
        )
        .map_err(sql_error)?;
    let mut rows = stmt
        .query(params![hour.index(), cursor])
        .map_err(sql_error)?;
    let mut page = KeysPage {
        keys: Vec::new(),
        cursor,
    };
    let mut read = 0;
    while let Some(row) = rows.next().map_err(sql_error)? {
        page.cursor = row.get(0).map_err(sql_error)?;
        let blob: Vec<u8> = row.get(1).map_err(sql_error)?;
        let checksum: i64 = row.get(2).map_err(sql_error)?;
        verify_batch(hour, page.cursor, &blob, Some(checksum), &mut page.keys)?;
        read += 1;
    }
    Ok((page, read))
}

/// What the store records of `hour` besides its rows (see [`HourRecord`]).
pub(super) fn record(conn: &Connection, hour: Hour) -> Result<HourRecord> {
    let (batches, pruned, link) = conn
        .query_row(
            "SELECT (SELECT batches FROM batch_counts WHERE hour = ?1),
                    (SELECT value FROM meta WHERE name = 'pruned_before'),
                    c.digest, c.prev, c.header, c.checksum
             FROM (SELECT 1) LEFT JOIN chain c ON c.hour = ?1",
            [hour.index()],
            |r| {
                let link = match r.get::<_, Option<Vec<u8>>>(2)? {
                    Some(digest) => Some((
                        digest,
                        r.get::<_, Vec<u8>>(3)?,
                        r.get::<_, Vec<u8>>(4)?,
                        r.get::<_, i64>(5)?,
                    )),
                    None => None,
                };
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    link,
                ))
            },
        )
        .map_err(sql_error)?;
    Ok(HourRecord {
        link: link.map(|(digest, prev, header, checksum)| {
            ChainLink::verify_row(hour, &digest, &prev, &header, checksum)
        }),
        pruned_before: pruned.map(Hour::from_index),
        batches,
    })
}
