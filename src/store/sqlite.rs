//! The embedded store: one SQLite file (WAL, `synchronous=FULL`), no setup.
//!
//! All writes go through one writer thread that drains every request waiting for it
//! into a single transaction: concurrent ingests share one commit and one fsync
//! (group commit). Reads use their own connections and never wait for the writer.

use super::{
    blob_to_keys, distinct, keys_to_blob, KeysPage, Marks, Result, SealedHour, Store, StoreError,
};
use crate::bloom::Key;
use crate::hour::Hour;
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::oneshot;
use writer::{writer_loop, Command};

mod writer;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Appended keys of hours not yet sealed: one row per ingest request, 8 bytes a key.
CREATE TABLE IF NOT EXISTS batches (
    seq  INTEGER PRIMARY KEY,
    hour INTEGER NOT NULL,
    keys BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_by_hour ON batches (hour, seq);
-- Sealed hours: the final filter and the sorted distinct keys it was built from.
CREATE TABLE IF NOT EXISTS hours (
    hour   INTEGER PRIMARY KEY,
    count  INTEGER NOT NULL,
    m      INTEGER NOT NULL,
    k      INTEGER NOT NULL,
    hash   TEXT NOT NULL,
    filter BLOB NOT NULL,
    keys   BLOB NOT NULL
);
";

/// SQLite-backed [`Store`].
pub struct SqliteStore {
    /// Bounded: a full queue answers [`StoreError::Busy`] instead of holding the request.
    writer: mpsc::SyncSender<Command>,
    readers: Arc<Mutex<Vec<Connection>>>,
    path: PathBuf,
    genesis: Hour,
}

/// Write commands that may wait for the writer thread by default; beyond that, writes
/// are refused as busy rather than queued without bound (each may hold a 16 MiB batch).
pub const DEFAULT_WRITE_QUEUE: usize = 256;

/// Classifies a SQLite error by its result code, keeping it as the cause: what a full
/// disk, an I/O error, a read-only file or a lock answers is retryable; corruption is not.
pub(super) fn sql_error(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode as C;
    let code = match &e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(
            C::DiskFull
            | C::SystemIoFailure
            | C::ReadOnly
            | C::DatabaseBusy
            | C::DatabaseLocked
            | C::CannotOpen
            | C::OutOfMemory
            | C::PermissionDenied
            | C::FileLockingProtocolFailed,
        ) => StoreError::unavailable("the SQLite database cannot be written or read", e),
        Some(C::DatabaseCorrupt | C::NotADatabase) => StoreError::Corrupt(format!("SQLite: {e}")),
        _ => StoreError::failed("SQLite", e),
    }
}

fn open_connection(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(sql_error)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql_error)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        .map_err(sql_error)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (or creates) the store in `dir`, fixing genesis at `now` on first open,
    /// with the default write queue.
    ///
    /// # Errors
    /// As [`SqliteStore::open_with`].
    pub fn open(dir: &Path, now: Hour) -> Result<SqliteStore> {
        SqliteStore::open_with(dir, now, DEFAULT_WRITE_QUEUE)
    }

    /// Opens (or creates) the store in `dir`, fixing genesis at `now` on first open;
    /// at most `write_queue` write requests wait for the writer thread.
    ///
    /// # Errors
    /// The directory or database cannot be created, read or written.
    pub fn open_with(dir: &Path, now: Hour, write_queue: usize) -> Result<SqliteStore> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::failed(
                format!("cannot create the data directory {}", dir.display()),
                e,
            )
        })?;
        let path = dir.join("bloomcast.sqlite3");
        let conn = open_connection(&path)?;
        conn.execute_batch(SCHEMA).map_err(sql_error)?;
        conn.execute(
            "INSERT OR IGNORE INTO meta (name, value) VALUES ('genesis', ?1)",
            [now.index()],
        )
        .map_err(sql_error)?;
        // Genesis is never later than an hour holding keys (stores written before this
        // rule could acknowledge keys into an hour before it).
        // Only when it changes: a start on a full disk must not need a write.
        conn.execute(
            "UPDATE meta SET value = (SELECT min(h) FROM (
                 SELECT min(hour) AS h FROM batches UNION ALL SELECT min(hour) FROM hours))
             WHERE name = 'genesis' AND value > (SELECT min(h) FROM (
                 SELECT min(hour) AS h FROM batches UNION ALL SELECT min(hour) FROM hours))",
            [],
        )
        .map_err(sql_error)?;
        let get = |name: &str| -> Result<Option<i64>> {
            conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql_error)
        };
        let genesis = Hour::from_index(
            get("genesis")?.ok_or_else(|| StoreError::Corrupt("no genesis row".into()))?,
        );
        let closed_through = get("closed_through")?.map(Hour::from_index);

        let (tx, rx) = mpsc::sync_channel(write_queue.max(1));
        std::thread::Builder::new()
            .name("bloomcast-sqlite-writer".into())
            .spawn(move || writer_loop(conn, rx, closed_through))
            .map_err(|e| StoreError::failed("cannot start the SQLite writer thread", e))?;
        Ok(SqliteStore {
            writer: tx,
            readers: Arc::new(Mutex::new(Vec::new())),
            path,
            genesis,
        })
    }

    async fn command<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Command,
    ) -> Result<T> {
        let (reply, answer) = oneshot::channel();
        self.writer.try_send(make(reply)).map_err(|e| match e {
            mpsc::TrySendError::Full(_) => {
                StoreError::Busy("the write queue is full; retry shortly".into())
            }
            mpsc::TrySendError::Disconnected(_) => {
                StoreError::bug("the SQLite writer thread has stopped")
            }
        })?;
        answer
            .await
            .map_err(|_| StoreError::bug("the SQLite writer thread dropped a request"))?
    }

    /// Runs a read on a pooled connection off the async runtime.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let readers = self.readers.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match pooled {
                Some(c) => c,
                None => open_connection(&path)?,
            };
            let out = f(&conn);
            readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::failed("a SQLite read task failed", e))?
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn genesis(&self) -> Result<Hour> {
        Ok(self.genesis)
    }

    async fn marks(&self) -> Result<Marks> {
        let genesis = self.genesis;
        self.read(move |conn| {
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
        })
        .await
    }

    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour> {
        let blob = keys_to_blob(keys);
        self.command(|reply| Command::Append { hour, blob, reply })
            .await
    }

    async fn close_through(&self, hour: Hour) -> Result<()> {
        self.command(|reply| Command::Close { hour, reply }).await
    }

    async fn keys_after(&self, hour: Hour, cursor: i64) -> Result<KeysPage> {
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, keys FROM batches WHERE hour = ?1 AND seq > ?2 ORDER BY seq",
                )
                .map_err(sql_error)?;
            let mut rows = stmt
                .query(params![hour.index(), cursor])
                .map_err(sql_error)?;
            let mut page = KeysPage {
                keys: Vec::new(),
                cursor,
            };
            while let Some(row) = rows.next().map_err(sql_error)? {
                page.cursor = row.get(0).map_err(sql_error)?;
                let blob: Vec<u8> = row.get(1).map_err(sql_error)?;
                blob_to_keys(&blob, &mut page.keys)?;
            }
            Ok(page)
        })
        .await
    }

    async fn keys(&self, hour: Hour) -> Result<Vec<Key>> {
        let sealed: Option<Vec<u8>> = self
            .read(move |conn| {
                conn.query_row(
                    "SELECT keys FROM hours WHERE hour = ?1",
                    [hour.index()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql_error)
            })
            .await?;
        match sealed {
            Some(blob) => {
                let mut keys = Vec::with_capacity(blob.len() / 8);
                blob_to_keys(&blob, &mut keys)?;
                Ok(keys)
            }
            None => Ok(distinct(self.keys_after(hour, 0).await?.keys)),
        }
    }

    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<()> {
        let sealed = sealed.clone();
        let keys = keys_to_blob(keys);
        self.command(|reply| Command::Seal {
            sealed,
            keys,
            reply,
        })
        .await
    }

    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>> {
        self.read(move |conn| {
            conn.query_row(
                "SELECT count, m, k, filter FROM hours WHERE hour = ?1",
                [hour.index()],
                |r| {
                    Ok(SealedHour {
                        hour,
                        count: r.get::<_, i64>(0)? as u64,
                        m: r.get(1)?,
                        k: r.get(2)?,
                        filter: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(sql_error)
        })
        .await
    }

    async fn last_sealed(&self) -> Result<Option<Hour>> {
        self.read(|conn| {
            conn.query_row("SELECT max(hour) FROM hours", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map(|h| h.map(Hour::from_index))
            .map_err(sql_error)
        })
        .await
    }

    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT hour, count FROM hours WHERE hour BETWEEN ?1 AND ?2 ORDER BY hour",
                )
                .map_err(sql_error)?;
            let rows = stmt
                .query_map([from.index(), to.index()], |r| {
                    Ok((Hour::from_index(r.get(0)?), r.get::<_, i64>(1)? as u64))
                })
                .map_err(sql_error)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_error)
        })
        .await
    }

    async fn prune_before(&self, before: Hour) -> Result<u64> {
        self.command(|reply| Command::Prune { before, reply }).await
    }

    /// A heartbeat written through the writer thread, as an append would be: fails when
    /// the writer is gone or the disk cannot take a commit.
    async fn ping(&self) -> Result<()> {
        self.command(|reply| Command::Heartbeat { reply }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hour::hour_of;

    fn keys(ids: &[&str]) -> Vec<Key> {
        ids.iter().map(|id| Key::of(id)).collect()
    }

    #[tokio::test]
    async fn appends_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        {
            let store = SqliteStore::open(dir.path(), h).unwrap();
            assert_eq!(store.append(h, &keys(&["a", "b"])).await.unwrap(), h);
            assert_eq!(store.append(h, &keys(&["b", "c"])).await.unwrap(), h);
        }
        let store = SqliteStore::open(dir.path(), h.next()).unwrap();
        assert_eq!(
            store.genesis().await.unwrap(),
            h,
            "genesis is fixed at first open"
        );
        assert_eq!(
            store.keys(h).await.unwrap(),
            distinct(keys(&["a", "b", "c"]))
        );
    }

    #[tokio::test]
    async fn appends_to_a_closed_hour_go_to_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let store = SqliteStore::open(dir.path(), h).unwrap();
        store.close_through(h).await.unwrap();
        assert_eq!(store.append(h, &keys(&["late"])).await.unwrap(), h.next());
        assert!(store.keys(h).await.unwrap().is_empty());
        drop(store);
        let store = SqliteStore::open(dir.path(), h).unwrap();
        assert_eq!(
            store.append(h, &keys(&["later"])).await.unwrap(),
            h.next(),
            "closing is durable"
        );
    }

    #[tokio::test]
    async fn sealing_keeps_the_first_seal_and_compacts_batches() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let store = SqliteStore::open(dir.path(), h).unwrap();
        store.append(h, &keys(&["a"])).await.unwrap();
        let sealed = SealedHour {
            hour: h,
            count: 1,
            m: 8,
            k: 1,
            filter: vec![1],
        };
        store.seal(&sealed, &keys(&["a"])).await.unwrap();
        let again = SealedHour {
            filter: vec![2],
            ..sealed.clone()
        };
        store.seal(&again, &keys(&["a"])).await.unwrap();
        assert_eq!(store.sealed(h).await.unwrap(), Some(sealed));
        assert_eq!(store.keys(h).await.unwrap(), keys(&["a"]));
        assert!(store.keys_after(h, 0).await.unwrap().keys.is_empty());
        assert_eq!(store.last_sealed().await.unwrap(), Some(h));
        assert_eq!(store.sealed_counts(h, h).await.unwrap(), vec![(h, 1)]);
    }

    #[tokio::test]
    async fn keys_after_pages_by_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let store = SqliteStore::open(dir.path(), h).unwrap();
        store.append(h, &keys(&["a"])).await.unwrap();
        let first = store.keys_after(h, 0).await.unwrap();
        store.append(h, &keys(&["b"])).await.unwrap();
        let second = store.keys_after(h, first.cursor).await.unwrap();
        assert_eq!(first.keys, keys(&["a"]));
        assert_eq!(second.keys, keys(&["b"]));
    }

    #[tokio::test]
    async fn pruning_removes_old_hours() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let store = SqliteStore::open(dir.path(), h).unwrap();
        for hour in [h, h.next()] {
            store
                .seal(
                    &SealedHour {
                        hour,
                        count: 0,
                        m: 8,
                        k: 1,
                        filter: vec![0],
                    },
                    &[],
                )
                .await
                .unwrap();
        }
        assert_eq!(store.prune_before(h.next()).await.unwrap(), 1);
        assert_eq!(store.sealed(h).await.unwrap(), None);
        assert!(store.sealed(h.next()).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn concurrent_appends_share_commits_and_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let h = hour_of(2008, 9, 3, 13).unwrap();
        let store = Arc::new(SqliteStore::open(dir.path(), h).unwrap());
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move { store.append(h, &[Key::of(&i.to_string())]).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(store.keys(h).await.unwrap().len(), 64);
    }
}
