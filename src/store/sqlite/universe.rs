//! The universe and exact bodies in the embedded store: the universe's keys in a
//! table of their own (8-byte integers, the primary key, with the hour each joined and
//! a checksum over both), its size and first hour in `meta`, the tally of the keys that
//! joined in each hour (`universe_hours`) and the universe's tally at each seal
//! (`hour_universe`, see [`crate::store::Tally`]), each hour's exact body with a
//! checksum. Writes run on the writer thread inside its group transaction; a refused
//! batch is rolled back to a savepoint, alone.

use super::schema::meta;
use super::sql_error;
use crate::bloom::Key;
use crate::hour::Hour;
use crate::store::{
    blob_to_keys, check_universe, exact_checksum, missing_since, universe_checksum,
    verify_universe_row, Result, StoreError, Tally, UniverseAdded, UniverseInfo,
};
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

/// Version 7: universe rows checksummed, the tallies of each hour's joins and of the
/// universe at each seal (filled by [`backfill_v7`]).
pub(super) const V7: &str = "
ALTER TABLE universe ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0;
CREATE TABLE universe_hours (added INTEGER PRIMARY KEY, count INTEGER NOT NULL, sum INTEGER NOT NULL);
CREATE TABLE hour_universe (hour INTEGER PRIMARY KEY, count INTEGER NOT NULL, sum INTEGER NOT NULL);
";

/// The universe's first hour and size; a universe whose `universe_since` is missing
/// while it has rows (or exact bodies) is damage, never "no universe".
pub(super) fn info(conn: &Connection) -> Result<Option<UniverseInfo>> {
    let Some(since) = meta(conn, "universe_since")? else {
        let traces: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM universe) OR EXISTS (SELECT 1 FROM exact_hours)
                     OR EXISTS (SELECT 1 FROM hour_universe)",
                [],
                |r| r.get(0),
            )
            .map_err(sql_error)?;
        return if traces {
            Err(missing_since())
        } else {
            Ok(None)
        };
    };
    let count = meta(conn, "universe_count")?.ok_or_else(|| {
        StoreError::Corrupt("the universe's size (universe_count) is missing".into())
    })?;
    Ok(Some(UniverseInfo {
        count: count.max(0) as u64,
        since: Hour::from_index(since),
    }))
}

/// Inserts keys as joining in `hour`, each with its checksum, and adds the new ones to
/// the hour's tally; returns how many were new (a key keeps the hour it first joined).
fn insert(tx: &Transaction, keys: impl IntoIterator<Item = Key>, hour: Hour) -> Result<u64> {
    let mut stmt = tx
        .prepare_cached("INSERT OR IGNORE INTO universe (key, added, checksum) VALUES (?1, ?2, ?3)")
        .map_err(sql_error)?;
    let mut new = Tally::default();
    for key in keys {
        let inserted = stmt
            .execute(params![
                key.to_u64() as i64,
                hour.index(),
                universe_checksum(hour, key)
            ])
            .map_err(sql_error)?;
        if inserted == 1 {
            new.add(key);
        }
    }
    if new.count > 0 {
        add_to_tally(tx, hour, new)?;
    }
    Ok(new.count)
}

/// Adds `new` to the tally of keys that joined in `hour` (wrapping, in Rust: SQLite's
/// integers would overflow into reals).
fn add_to_tally(tx: &Transaction, hour: Hour, new: Tally) -> Result<()> {
    let was = tx
        .query_row(
            "SELECT count, sum FROM universe_hours WHERE added = ?1",
            [hour.index()],
            |r| Ok(Tally::from_row(r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql_error)?
        .unwrap_or_default();
    let now = was.plus(new);
    tx.execute(
        "INSERT OR REPLACE INTO universe_hours (added, count, sum) VALUES (?1, ?2, ?3)",
        params![hour.index(), now.count as i64, now.stored_sum()],
    )
    .map_err(sql_error)?;
    Ok(())
}

/// The tally of the keys that joined in `through` or before, from the hours' tallies.
fn tally_through(conn: &Connection, through: Hour) -> Result<Tally> {
    let mut stmt = conn
        .prepare_cached("SELECT count, sum FROM universe_hours WHERE added <= ?1")
        .map_err(sql_error)?;
    let mut rows = stmt.query([through.index()]).map_err(sql_error)?;
    let mut tally = Tally::default();
    while let Some(r) = rows.next().map_err(sql_error)? {
        tally = tally.plus(Tally::from_row(
            r.get(0).map_err(sql_error)?,
            r.get(1).map_err(sql_error)?,
        ));
    }
    Ok(tally)
}

/// Records the universe's tally as it stands for the sealed `hour` (in the seal's
/// transaction); the first record of an hour stays.
fn record_at_seal(tx: &Transaction, hour: Hour) -> Result<()> {
    let tally = tally_through(tx, hour)?;
    tx.execute(
        "INSERT OR IGNORE INTO hour_universe (hour, count, sum) VALUES (?1, ?2, ?3)",
        params![hour.index(), tally.count as i64, tally.stored_sum()],
    )
    .map_err(sql_error)?;
    Ok(())
}

/// Migration to version 7 (the universe's rows trusted at that moment): each row's
/// checksum, each hour's tally, and the universe's tally at every sealed hour from its
/// first hour on.
pub(super) fn backfill_v7(tx: &Transaction) -> Result<()> {
    let mut rows = Vec::new();
    {
        let mut stmt = tx
            .prepare("SELECT key, added FROM universe")
            .map_err(sql_error)?;
        let mut read = stmt.query([]).map_err(sql_error)?;
        while let Some(r) = read.next().map_err(sql_error)? {
            let key = Key::from_u64(r.get::<_, i64>(0).map_err(sql_error)? as u64);
            rows.push((key, Hour::from_index(r.get(1).map_err(sql_error)?)));
        }
    }
    let mut tallies = std::collections::BTreeMap::<Hour, Tally>::new();
    {
        let mut update = tx
            .prepare("UPDATE universe SET checksum = ?2 WHERE key = ?1")
            .map_err(sql_error)?;
        for (key, added) in &rows {
            update
                .execute(params![
                    key.to_u64() as i64,
                    universe_checksum(*added, *key)
                ])
                .map_err(sql_error)?;
            tallies.entry(*added).or_default().add(*key);
        }
    }
    for (hour, tally) in tallies {
        add_to_tally(tx, hour, tally)?;
    }
    if let Some(since) = meta(tx, "universe_since")? {
        let sealed: Vec<i64> = tx
            .prepare("SELECT hour FROM hours WHERE hour >= ?1")
            .map_err(sql_error)?
            .query_map([since], |r| r.get(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)?;
        for hour in sealed {
            record_at_seal(tx, Hour::from_index(hour))?;
        }
    }
    Ok(())
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
                // The first hour sealed from now on: not one closed meanwhile, whose seal
                // recorded no universe.
                let closed = meta(tx, "closed_through")?.map_or(open, |c| Hour::from_index(c + 1));
                set_meta(tx, "universe_since", open.max(closed).index())?;
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

/// A sealed hour's keys into the universe, when there is one, and the universe's tally
/// recorded with the hour (in the seal's transaction).
pub(super) fn merge_sealed(tx: &Transaction, hour: Hour, blob: &[u8]) -> Result<()> {
    // A damaged universe record fails its exact bodies (as corrupt), never a seal.
    let info = match info(tx) {
        Ok(Some(info)) => info,
        Ok(None) | Err(StoreError::Corrupt(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut keys = Vec::with_capacity(blob.len() / 8);
    blob_to_keys(blob, &mut keys)?;
    let added = insert(tx, keys, hour)?;
    set_meta(tx, "universe_count", (info.count + added) as i64)?;
    if hour >= info.since {
        record_at_seal(tx, hour)?;
    }
    Ok(())
}

/// The keys that joined in `through` or before, sorted, each row verified and the
/// whole checked against the tally recorded when `through` was sealed, in one snapshot.
pub(super) fn keys(conn: &Connection, through: Hour) -> Result<Vec<Key>> {
    let tx = conn.unchecked_transaction().map_err(sql_error)?;
    let count = meta(&tx, "universe_count")?.unwrap_or(0);
    let mut out = Vec::with_capacity(count.max(0) as usize);
    let mut tally = Tally::default();
    {
        let mut stmt = tx
            .prepare("SELECT key, added, checksum FROM universe WHERE added <= ?1")
            .map_err(sql_error)?;
        let mut rows = stmt.query([through.index()]).map_err(sql_error)?;
        while let Some(row) = rows.next().map_err(sql_error)? {
            let key = Key::from_u64(row.get::<_, i64>(0).map_err(sql_error)? as u64);
            let added = Hour::from_index(row.get(1).map_err(sql_error)?);
            verify_universe_row(added, key, Some(row.get(2).map_err(sql_error)?))?;
            tally.add(key);
            out.push(key);
        }
    }
    let recorded = tx
        .query_row(
            "SELECT count, sum FROM hour_universe WHERE hour = ?1",
            [through.index()],
            |r| Ok(Tally::from_row(r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql_error)?;
    check_universe(through, tally, recorded)?;
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
