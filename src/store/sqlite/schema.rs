//! The embedded store's file: recognising it, creating it and migrating it.
//!
//! A bloomcast database carries [`APPLICATION_ID`] in its header (`PRAGMA
//! application_id`) and its schema version in `PRAGMA user_version`. Opening never
//! adds tables to a file that is not bloomcast's: a new empty file gets the schema; a
//! file of ours is migrated forward; a file written before bloomcast set its
//! application id (id 0 holding exactly the version 1 tables) is adopted and migrated;
//! anything else is refused, as are an existing zero-length file (a truncated store?)
//! and a data directory or file that cannot be written.

use super::sql_error;
use crate::hour::Hour;
use crate::store::{batch_checksum, filter_checksum, sealed_keys_checksum, Result};
use crate::store::{SealedHour, StoreError};
use rusqlite::{Connection, OptionalExtension, Transaction};
use std::path::Path;

/// `PRAGMA application_id` of a bloomcast database: the ASCII bytes "blom".
pub const APPLICATION_ID: i32 = 0x626C_6F6D;

/// The schema version this build writes (`PRAGMA user_version`).
/// 1: `meta`, `batches`, `hours` (stores written before versioning; user_version 0).
/// 2: a checksum on every batch and sealed hour (see [`crate::store::batch_checksum`]).
/// 3: the hour chain (`chain`, see [`crate::store::ChainLink`]).
/// 4: each hour's batch count (`batch_counts`) and the prune mark, so a deleted or moved
///    batch, or a sealed row gone from an hour the chain covers, is found (see
///    [`crate::store::HourRecord`]).
/// 5: the signing key registry and each hour's signature (`signing_keys`, `signatures`,
///    see [`crate::store::HourSignature`]).
/// 6: the publisher's universe and each hour's exact body (`universe`, `exact_hours`).
/// 7: what derived bodies were (`forms`), universe rows checksummed with their tallies
///    (`universe_hours`, `hour_universe`), a batch record for every closed hour not
///    sealed, and the chain's first hour (`chain_since`), so that a row deleted is
///    found (see [`crate::store::HourRecord`], [`crate::store::Tally`]).
/// 8: each signing key's succession signatures (`signing_keys.vouch`, `.ack`).
/// 9: the WebSub hub's subscriptions and claimed deliveries (`subscriptions`,
///    `deliveries`).
pub const SCHEMA_VERSION: i32 = 9;

/// Version 7's records of what is there now (trusted at this moment): a zero-batch
/// record for each closed hour in the served range that has neither a sealed row nor
/// one, and the chain's first hour.
const V7_RECORDS: &str = "
WITH RECURSIVE span(h) AS (
    SELECT max((SELECT value FROM meta WHERE name = 'genesis'),
               coalesce((SELECT value FROM meta WHERE name = 'pruned_before'), -9223372036854775807))
    UNION ALL
    SELECT h + 1 FROM span WHERE h < (SELECT value FROM meta WHERE name = 'closed_through'))
INSERT INTO batch_counts (hour, batches)
    SELECT h, 0 FROM span
    WHERE h <= (SELECT value FROM meta WHERE name = 'closed_through')
      AND NOT EXISTS (SELECT 1 FROM hours WHERE hour = h)
      AND NOT EXISTS (SELECT 1 FROM batch_counts WHERE hour = h);
INSERT INTO meta (name, value) SELECT 'chain_since', min(hour) FROM chain
    HAVING min(hour) IS NOT NULL;
";

/// Version 4: the batch record, counted from the batches there (trusted at that moment),
/// and the prune mark, set to the oldest sealed hour (older chain links are of hours
/// pruned before the mark existed).
const V4: &str = "
CREATE TABLE batch_counts (hour INTEGER PRIMARY KEY, batches INTEGER NOT NULL);
INSERT INTO batch_counts (hour, batches) SELECT hour, count(*) FROM batches GROUP BY hour;
INSERT INTO meta (name, value) SELECT 'pruned_before', min(hour) FROM hours WHERE hour IS NOT NULL
    HAVING min(hour) IS NOT NULL;
";

/// The version 1 tables, as every store written before versioning has them.
const V1: &str = "
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Appended keys of hours not yet sealed: one row per ingest request, 8 bytes a key.
CREATE TABLE batches (
    seq  INTEGER PRIMARY KEY,
    hour INTEGER NOT NULL,
    keys BLOB NOT NULL
);
CREATE INDEX batches_by_hour ON batches (hour, seq);
-- Sealed hours: the final filter and the sorted distinct keys it was built from.
CREATE TABLE hours (
    hour   INTEGER PRIMARY KEY,
    count  INTEGER NOT NULL,
    m      INTEGER NOT NULL,
    k      INTEGER NOT NULL,
    hash   TEXT NOT NULL,
    filter BLOB NOT NULL,
    keys   BLOB NOT NULL
);
";

/// Version 2: checksums. The default only lets SQLite add the columns to existing
/// rows; the migration computes every existing row's checksum in the same transaction
/// (their content is trusted at that moment) and every write supplies its own.
const V2: &str = "
ALTER TABLE batches ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hours ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hours ADD COLUMN keys_checksum INTEGER NOT NULL DEFAULT 0;
";

/// The tables (and their columns) of a version 1 store.
const V1_TABLES: &[(&str, &[&str])] = &[
    ("batches", &["seq", "hour", "keys"]),
    (
        "hours",
        &["hour", "count", "m", "k", "hash", "filter", "keys"],
    ),
    ("meta", &["name", "value"]),
];

/// Checks that `dir` and the database file at `path` can be used, before SQLite
/// touches anything: the directory is created if missing and must be writable; an
/// existing file must be writable, non-empty and start with the SQLite header.
///
/// # Errors
/// [`StoreError::Failed`] naming the path and what is wrong with it.
pub(super) fn check_files(dir: &Path, path: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        StoreError::failed(
            format!("cannot create the data directory {}", dir.display()),
            e,
        )
    })?;
    let probe = dir.join(".bloomcast-write-probe");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| StoreError::failed(not_writable("the data directory", dir, &e), e))?;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(StoreError::failed(
                format!("cannot read {}", path.display()),
                e,
            ))
        }
    };
    if meta.len() == 0 {
        return Err(StoreError::bug(format!(
            "{} exists but is empty (0 bytes): it may be a truncated store; \
             remove it to start afresh with an empty store",
            path.display()
        )));
    }
    let mut header = [0u8; 16];
    let read = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut header));
    match read {
        Ok(_) if &header == b"SQLite format 3\0" => Ok(()),
        Ok(_) => Err(StoreError::bug(format!(
            "{} is not a SQLite database (it lacks the SQLite header), so not a bloomcast \
             store; refusing to use it",
            path.display()
        ))),
        Err(e) => Err(StoreError::failed(
            not_writable("the database file", path, &e),
            e,
        )),
    }
}

/// Says why a path cannot be written, in words an operator acts on.
fn not_writable(what: &str, path: &Path, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem => "is on a read-only file system",
        std::io::ErrorKind::PermissionDenied => "is not writable (permission denied)",
        _ => "cannot be written",
    };
    format!(
        "{what} {} {why}; bloomcast must be able to write there to keep its database",
        path.display()
    )
}

/// Brings the database at `path` (already open as `conn`) to [`SCHEMA_VERSION`] in
/// one transaction, or refuses it without changing anything.
///
/// # Errors
/// [`StoreError::Failed`] naming the file when it is not bloomcast's or was written by
/// a newer version; SQLite errors.
pub(super) fn prepare(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_error)?;
    let pragma = |name: &str| -> Result<i32> {
        tx.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .map_err(sql_error)
    };
    let (app_id, version) = (pragma("application_id")?, pragma("user_version")?);
    let tables = tables(&tx)?;
    let from = match app_id {
        APPLICATION_ID if version > SCHEMA_VERSION => {
            return Err(StoreError::bug(format!(
                "{} was written by a newer bloomcast (schema version {version}; this build \
                 knows up to {SCHEMA_VERSION}); refusing to open it",
                path.display()
            )))
        }
        APPLICATION_ID => version,
        // Nothing set and nothing in it: new. (SQLite reports an empty file the same way.)
        0 if version == 0 && tables.is_empty() => 0,
        0 if version == 0 && is_v1(&tx, &tables)? => 1,
        _ => {
            let found = if tables.is_empty() {
                "no tables".to_owned()
            } else {
                format!("tables {}", tables.join(", "))
            };
            return Err(StoreError::bug(format!(
                "{} is not a bloomcast database (application_id {app_id:#010x}, {found}); \
                 refusing to add tables to it",
                path.display()
            )));
        }
    };
    if from < 1 {
        tx.execute_batch(V1).map_err(sql_error)?;
    }
    if from < 2 {
        tx.execute_batch(V2).map_err(sql_error)?;
        backfill_checksums(&tx)?;
    }
    if from < 3 {
        tx.execute_batch(super::chain::V3).map_err(sql_error)?;
    }
    if from < 4 {
        tx.execute_batch(V4).map_err(sql_error)?;
    }
    if from < 5 {
        tx.execute_batch(super::signing::V5).map_err(sql_error)?;
    }
    if from < 6 {
        tx.execute_batch(super::universe::V6).map_err(sql_error)?;
    }
    if from < 7 {
        tx.execute_batch(super::universe::V7).map_err(sql_error)?;
        tx.execute_batch(super::forms::V7).map_err(sql_error)?;
        super::universe::backfill_v7(&tx)?;
        tx.execute_batch(V7_RECORDS).map_err(sql_error)?;
    }
    if from < 8 {
        tx.execute_batch(super::signing::V8).map_err(sql_error)?;
    }
    if from < 9 {
        tx.execute_batch(super::subscriptions::V9)
            .map_err(sql_error)?;
    }
    if from < SCHEMA_VERSION || app_id == 0 {
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(sql_error)?;
        tracing::info!(file = %path.display(), from, to = SCHEMA_VERSION, "database schema ready");
    }
    tx.commit().map_err(sql_error)
}

/// The names of the user tables, sorted.
fn tables(tx: &Transaction) -> Result<Vec<String>> {
    let mut stmt = tx
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .map_err(sql_error)?;
    let names = stmt
        .query_map([], |r| r.get(0))
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(sql_error)?;
    Ok(names)
}

/// Whether the tables are exactly bloomcast's version 1 tables, with their columns, and
/// `meta` holds a genesis row (or, after a first start that stopped before writing it,
/// every table is empty).
fn is_v1(tx: &Transaction, tables: &[String]) -> Result<bool> {
    if tables.len() != V1_TABLES.len() {
        return Ok(false);
    }
    for ((name, columns), found) in V1_TABLES.iter().zip(tables) {
        if name != found {
            return Ok(false);
        }
        let mut stmt = tx
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{name}') ORDER BY cid"
            ))
            .map_err(sql_error)?;
        let have = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_error)?;
        if have != *columns {
            return Ok(false);
        }
    }
    tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE name = 'genesis')
             OR NOT EXISTS (SELECT 1 FROM meta UNION ALL SELECT 1 FROM batches
                            UNION ALL SELECT 1 FROM hours)",
        [],
        |r| r.get(0),
    )
    .map_err(sql_error)
}

/// Computes the checksum of every existing row (migration to version 2).
fn backfill_checksums(tx: &Transaction) -> Result<()> {
    rewrite_rows(
        tx,
        "SELECT seq, hour, keys FROM batches",
        "UPDATE batches SET checksum = ?2 WHERE seq = ?1",
        |r| {
            let hour = Hour::from_index(r.get(1)?);
            Ok([r.get(0)?, batch_checksum(hour, &r.get::<_, Vec<u8>>(2)?)])
        },
    )?;
    rewrite_rows(
        tx,
        "SELECT hour, count, m, k, filter, keys FROM hours",
        "UPDATE hours SET checksum = ?2, keys_checksum = ?3 WHERE hour = ?1",
        |r| {
            let hour = Hour::from_index(r.get(0)?);
            let sealed = SealedHour {
                hour,
                count: r.get::<_, i64>(1)? as u64,
                m: r.get(2)?,
                k: r.get(3)?,
                filter: r.get(4)?,
            };
            let keys: Vec<u8> = r.get(5)?;
            Ok([
                hour.index(),
                filter_checksum(&sealed),
                sealed_keys_checksum(hour, &keys),
            ])
        },
    )
}

/// Runs `update` once for each row `select` returns, with the parameters `compute`
/// makes of it. Rows are streamed, not collected: an open hour may hold gigabytes.
fn rewrite_rows<const N: usize>(
    tx: &Transaction,
    select: &str,
    update: &str,
    compute: impl Fn(&rusqlite::Row) -> rusqlite::Result<[i64; N]>,
) -> Result<()> {
    let mut read = tx.prepare(select).map_err(sql_error)?;
    let mut write = tx.prepare(update).map_err(sql_error)?;
    let mut rows = read.query([]).map_err(sql_error)?;
    while let Some(row) = rows.next().map_err(sql_error)? {
        let values = compute(row).map_err(sql_error)?;
        write
            .execute(rusqlite::params_from_iter(values))
            .map_err(sql_error)?;
    }
    Ok(())
}

/// Reads one meta value.
pub(super) fn meta(conn: &Connection, name: &str) -> Result<Option<i64>> {
    conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
        r.get(0)
    })
    .optional()
    .map_err(sql_error)
}
