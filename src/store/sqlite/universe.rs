//! The universe and exact bodies in the embedded store: the universe's keys in a
//! table of their own (8-byte integers, the primary key, with the hour each joined),
//! its size and first hour in `meta`, each hour's exact body with a checksum. Writes run on the writer thread
//! inside its group transaction; a refused batch is rolled back to a savepoint, alone.

use super::schema::meta;
use super::sql_error;
use crate::bloom::Key;
use crate::hour::Hour;
use crate::store::{blob_to_keys, exact_checksum, Result, StoreError, UniverseAdded, UniverseInfo};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// Version 6: the universe and exact bodies.
pub(super) const V6: &str = "
CREATE TABLE universe (key INTEGER PRIMARY KEY, added INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE exact_hours (
    hour     INTEGER PRIMARY KEY,
    body     BLOB NOT NULL,
    checksum INTEGER NOT NULL
);
";

pub(super) fn info(conn: &Connection) -> Result<Option<UniverseInfo>> {
    let Some(since) = meta(conn, "universe_since")? else {
        return Ok(None);
    };
    Ok(Some(UniverseInfo {
        count: meta(conn, "universe_count")?.unwrap_or(0) as u64,
        since: Hour::from_index(since),
    }))
}

/// Inserts keys as joining in `hour`, returning how many were new (a key keeps the
/// hour it first joined).
fn insert(tx: &Transaction, keys: impl IntoIterator<Item = Key>, hour: Hour) -> Result<u64> {
    let mut stmt = tx
        .prepare_cached("INSERT OR IGNORE INTO universe (key, added) VALUES (?1, ?2)")
        .map_err(sql_error)?;
    let mut added = 0;
    for key in keys {
        added += stmt
            .execute([key.to_u64() as i64, hour.index()])
            .map_err(sql_error)? as u64;
    }
    Ok(added)
}

fn set_meta(tx: &Transaction, name: &str, value: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO meta (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        params![name, value],
    )
    .map_err(sql_error)?;
    Ok(())
}

/// Every key blob the store holds (sealed hours' and open batches'), into the universe.
fn backfill(tx: &Transaction, hour: Hour) -> Result<u64> {
    let mut added = 0;
    for table in ["hours", "batches"] {
        let mut stmt = tx
            .prepare(&format!("SELECT keys FROM {table}"))
            .map_err(sql_error)?;
        let mut rows = stmt.query([]).map_err(sql_error)?;
        let mut keys = Vec::new();
        while let Some(row) = rows.next().map_err(sql_error)? {
            let blob: Vec<u8> = row.get(0).map_err(sql_error)?;
            keys.clear();
            // A blob that is not whole keys is left out here; its hour's own reads
            // report it as corrupt.
            if blob_to_keys(&blob, &mut keys).is_ok() {
                added += insert(tx, keys.drain(..), hour)?;
            }
        }
    }
    Ok(added)
}

/// `Store::add_to_universe` inside the writer's transaction.
pub(super) fn add(tx: &Transaction, keys: &[Key], open: Hour, max: u64) -> Result<UniverseAdded> {
    tx.execute_batch("SAVEPOINT universe_add")
        .map_err(sql_error)?;
    let outcome = (|| {
        let before = match info(tx)? {
            Some(info) => info.count,
            None => {
                set_meta(tx, "universe_since", open.index())?;
                0
            }
        };
        let mut count = before;
        if before == 0 {
            count += backfill(tx, open)?;
        }
        count += insert(tx, keys.iter().copied(), open)?;
        if count > max {
            return Ok(UniverseAdded::Full { count: before });
        }
        set_meta(tx, "universe_count", count as i64)?;
        Ok(UniverseAdded::Added { count })
    })();
    let undo = !matches!(outcome, Ok(UniverseAdded::Added { .. }));
    if undo {
        tx.execute_batch("ROLLBACK TO universe_add")
            .map_err(sql_error)?;
    }
    tx.execute_batch("RELEASE universe_add")
        .map_err(sql_error)?;
    outcome
}

/// A sealed hour's keys into the universe, when there is one (in the seal's transaction).
pub(super) fn merge_sealed(tx: &Transaction, hour: Hour, blob: &[u8]) -> Result<()> {
    let Some(info) = info(tx)? else {
        return Ok(());
    };
    let mut keys = Vec::with_capacity(blob.len() / 8);
    blob_to_keys(blob, &mut keys)?;
    let added = insert(tx, keys, hour)?;
    set_meta(tx, "universe_count", (info.count + added) as i64)
}

/// The keys that joined in `through` or before.
pub(super) fn keys(conn: &Connection, through: Hour) -> Result<Vec<Key>> {
    let count = meta(conn, "universe_count")?.unwrap_or(0);
    let mut out = Vec::with_capacity(count.max(0) as usize);
    let mut stmt = conn
        .prepare("SELECT key FROM universe WHERE added <= ?1")
        .map_err(sql_error)?;
    let mut rows = stmt.query([through.index()]).map_err(sql_error)?;
    while let Some(row) = rows.next().map_err(sql_error)? {
        let key: i64 = row.get(0).map_err(sql_error)?;
        out.push(Key::from_u64(key as u64));
    }
    // Stored as signed integers: put them in unsigned order.
    out.sort_unstable();
    Ok(out)
}

/// Stores the body unless the hour has one that verifies (a rotten one is replaced);
/// the stored body.
pub(super) fn put_exact(tx: &Transaction, hour: Hour, body: &[u8]) -> Result<Vec<u8>> {
    match exact(tx, hour) {
        Ok(Some(stored)) => return Ok(stored),
        Ok(None) | Err(StoreError::Corrupt(_)) => {}
        Err(e) => return Err(e),
    }
    tx.execute(
        "INSERT OR REPLACE INTO exact_hours (hour, body, checksum) VALUES (?1, ?2, ?3)",
        params![hour.index(), body, exact_checksum(hour, body)],
    )
    .map_err(sql_error)?;
    Ok(body.to_vec())
}

pub(super) fn exact(conn: &Connection, hour: Hour) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>, i64)> = conn
        .query_row(
            "SELECT body, checksum FROM exact_hours WHERE hour = ?1",
            [hour.index()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql_error)?;
    match row {
        None => Ok(None),
        Some((body, checksum)) if checksum == exact_checksum(hour, &body) => Ok(Some(body)),
        Some(_) => Err(StoreError::Corrupt(format!(
            "the exact body of {hour} fails its checksum"
        ))),
    }
}

/// `(hour, length of the stored body)` of the hours in `from..=to` with an exact body:
/// `length()` of a blob reads its size from the record, not its bytes.
pub(super) fn exact_sizes(conn: &Connection, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT hour, length(body) FROM exact_hours WHERE hour BETWEEN ?1 AND ?2 ORDER BY hour",
        )
        .map_err(sql_error)?;
    let rows = stmt
        .query_map([from.index(), to.index()], |r| {
            Ok((Hour::from_index(r.get(0)?), r.get::<_, i64>(1)? as u64))
        })
        .map_err(sql_error)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql_error)
}
