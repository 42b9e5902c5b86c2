//! The hour chain's rows in SQLite (schema version 3): written once per hour through
//! the writer thread, first write wins, never pruned.

use super::{sql_error, SqliteStore};
use crate::hour::Hour;
use crate::store::{ChainLink, Linking, Result};
use rusqlite::{params, Connection};

/// Version 3: the chain table. Existing sealed hours get their links from the service
/// when it next seals (it links every unlinked sealed hour in order first).
pub(super) const V3: &str = "
CREATE TABLE chain (
    hour     INTEGER PRIMARY KEY,
    digest   BLOB NOT NULL,
    prev     BLOB NOT NULL,
    header   BLOB NOT NULL,
    checksum INTEGER NOT NULL
);
";

/// Inserts a link unless the hour has one (on the writer thread, in its transaction);
/// says which. Only a conflict on the hour is ignored.
pub(super) fn insert(tx: &Connection, link: &ChainLink) -> Result<Linking> {
    let inserted = tx
        .execute(
            "INSERT INTO chain (hour, digest, prev, header, checksum)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hour) DO NOTHING",
            params![
                link.hour.index(),
                &link.digest[..],
                &link.prev[..],
                &link.header[..],
                link.checksum()
            ],
        )
        .map_err(sql_error)?;
    // The chain's first hour, set once: hours sealed before it have no link by design.
    tx.execute(
        "INSERT INTO meta (name, value) VALUES ('chain_since', ?1) ON CONFLICT (name) DO NOTHING",
        [link.hour.index()],
    )
    .map_err(sql_error)?;
    Ok(Linking::of_rows_inserted(inserted as u64))
}

impl SqliteStore {
    /// Links of hours in `from..before`, oldest (or newest) first, at most `limit`.
    pub(super) async fn link_rows(
        &self,
        from: Hour,
        before: Hour,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<ChainLink>> {
        self.read(move |conn| {
            let order = if newest_first { "DESC" } else { "ASC" };
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT hour, digest, prev, header, checksum FROM chain
                     WHERE hour >= ?1 AND hour < ?2 ORDER BY hour {order} LIMIT ?3"
                ))
                .map_err(sql_error)?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut rows = stmt
                .query(params![from.index(), before.index(), limit])
                .map_err(sql_error)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(sql_error)? {
                let blob = |i| r.get::<_, Vec<u8>>(i).map_err(sql_error);
                out.push(ChainLink::verify_row(
                    Hour::from_index(r.get(0).map_err(sql_error)?),
                    &blob(1)?,
                    &blob(2)?,
                    &blob(3)?,
                    r.get(4).map_err(sql_error)?,
                )?);
            }
            Ok(out)
        })
        .await
    }
}
