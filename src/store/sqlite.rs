//! The embedded store: one SQLite file (WAL, `synchronous=FULL`), no setup.
//!
//! All writes go through one writer thread that drains every request waiting for it
//! into a single transaction: concurrent ingests share one commit and one fsync
//! (group commit). Reads use their own connections and never wait for the writer.
//!
//! Here: opening the file, the writer queue and the reader pool, and the [`Store`]
//! methods, each sent to the writer thread (`writer`) or run as a read (`reads`). The
//! file's schema and its versions are in `schema`, the hour chain's rows in `chain`.

use super::{
    batch_checksum, filter_checksum, keys_to_blob, receiver_gone, sealed_keys_checksum, ChainLink,
    FormName, FormRecord, HourSignature, KeyPieces, Linking, Marks, Result, SealedHour, Sealing,
    Store, StoreError, Subscription, UniverseAdded, UniverseInfo,
};
use crate::bloom::Key;
use crate::chain::{Hash, ListedKey, PublicKey, Succession};
use crate::clock::ClockRecord;
use crate::hour::Hour;
use async_trait::async_trait;
use errors::sql_error;
use rusqlite::Connection;
use schema::{check_files, meta, prepare};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::oneshot;
use writer::{writer_loop, Command};

mod chain;
mod errors;
mod forms;
mod reads;
mod schema;
mod signing;
mod subscriptions;
mod universe;
mod writer;

/// SQLite-backed [`Store`].
pub struct SqliteStore {
    /// Bounded: a full queue answers [`StoreError::Busy`] instead of holding the request.
    writer: mpsc::SyncSender<Command>,
    readers: Arc<Mutex<Vec<Connection>>>,
    path: PathBuf,
    genesis: Hour,
    probes_from: Hour,
}

/// Write commands that may wait for the writer thread by default; beyond that, writes
/// are refused as busy rather than queued without bound (each may hold a 16 MiB batch).
pub const DEFAULT_WRITE_QUEUE: usize = 256;

/// A connection that waits for locks and commits durably, before the journal mode is set.
fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(sql_error)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql_error)?;
    // A page cache of 512 KiB (SQLite's default is 2 MiB a connection): writes append to
    // the right edge of two B-trees and reads of key blobs pass through once, so a larger
    // cache holds pages nothing reads again, memory the open hour's keys could use.
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA cache_size = -512;")
        .map_err(sql_error)?;
    Ok(conn)
}

/// Write-ahead logging: readers never wait for the writer. Set once the file is known
/// to be bloomcast's, since it changes the file's header.
fn use_wal(conn: &Connection) -> Result<()> {
    conn.execute_batch("PRAGMA journal_mode = WAL;")
        .map_err(sql_error)
}

fn open_connection(path: &Path) -> Result<Connection> {
    let conn = connect(path)?;
    use_wal(&conn)?;
    Ok(conn)
}

/// The database file in a data directory.
pub const FILE_NAME: &str = "bloomcast.sqlite3";

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
    /// The directory or database cannot be created, read or written (a read-only
    /// directory or file is named as such); the file is empty, not a SQLite database,
    /// not bloomcast's, or written by a newer version: it is refused, never changed.
    pub fn open_with(dir: &Path, now: Hour, write_queue: usize) -> Result<SqliteStore> {
        let path = dir.join(FILE_NAME);
        check_files(dir, &path)?;
        let mut conn = connect(&path)?;
        // Recognised (and created or migrated) before anything else touches the file.
        prepare(&mut conn, &path)?;
        use_wal(&conn)?;
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
        let genesis = Hour::from_index(
            meta(&conn, "genesis")?.ok_or_else(|| StoreError::Corrupt("no genesis row".into()))?,
        );
        // The sizing rule's first hour: fixed on the first start that knows the rule,
        // after every hour closed or sealed before it.
        conn.execute(
            "INSERT OR IGNORE INTO meta (name, value) SELECT 'probes_from', max(?1,
                 coalesce((SELECT value + 1 FROM meta WHERE name = 'closed_through'), ?1),
                 coalesce((SELECT max(hour) + 1 FROM hours), ?1))",
            [genesis.index()],
        )
        .map_err(sql_error)?;
        let probes_from = Hour::from_index(
            meta(&conn, "probes_from")?
                .ok_or_else(|| StoreError::Corrupt("no probes_from row".into()))?,
        );
        let closed_through = meta(&conn, "closed_through")?.map(Hour::from_index);

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
            probes_from,
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
            let pooled = crate::sync::lock(&readers).pop();
            let conn = match pooled {
                Some(c) => c,
                None => open_connection(&path)?,
            };
            let out = f(&conn);
            crate::sync::lock(&readers).push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::failed("a SQLite read task failed", e))?
    }
}

#[async_trait]
impl Store for SqliteStore {
    /// What SQLite's allocations hold now, over every connection of the process (there
    /// is one store in it): page caches, prepared statements, blobs being read.
    fn memory_bytes(&self) -> u64 {
        // SAFETY: `sqlite3_memory_used` takes no arguments and reads a counter SQLite
        // keeps under its own mutex.
        let used = unsafe { rusqlite::ffi::sqlite3_memory_used() };
        u64::try_from(used).unwrap_or(0)
    }

    async fn genesis(&self) -> Result<Hour> {
        Ok(self.genesis)
    }

    async fn probes_from(&self) -> Result<Hour> {
        Ok(self.probes_from)
    }

    async fn marks(&self) -> Result<Marks> {
        let genesis = self.genesis;
        self.read(move |conn| reads::marks(conn, genesis)).await
    }

    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour> {
        self.append_at(hour, keys).await.map(|(hour, _)| hour)
    }

    /// The batch's `seq` is its cursor: batches are inserted one at a time by the one
    /// writer thread, so the hour's batch before it is at `seq - 1` whenever that is
    /// the hour's newest (`seq` is the table's rowid, one more than the largest).
    async fn append_at(&self, hour: Hour, keys: &[Key]) -> Result<(Hour, Option<i64>)> {
        let blob = keys_to_blob(keys);
        // Computed here, off the writer thread; it recomputes it only for a closed hour.
        let checksum = batch_checksum(hour, &blob);
        let (hour, seq) = self
            .command(|reply| Command::Append {
                hour,
                blob,
                checksum,
                reply,
            })
            .await?;
        Ok((hour, Some(seq)))
    }

    async fn close_through(&self, hour: Hour) -> Result<()> {
        self.command(|reply| Command::Close { hour, reply }).await
    }

    async fn send_keys_after(&self, hour: Hour, cursor: i64, pieces: KeyPieces) -> Result<i64> {
        self.read(move |conn| {
            reads::send_keys_after(conn, hour, cursor, |piece| {
                pieces.blocking_send(piece).map_err(|_| receiver_gone())
            })
        })
        .await
    }

    async fn keys(&self, hour: Hour) -> Result<Vec<Key>> {
        self.read(move |conn| reads::keys(conn, hour)).await
    }

    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing> {
        let sealed = sealed.clone();
        let keys = keys_to_blob(keys);
        let checksums = (
            filter_checksum(&sealed),
            sealed_keys_checksum(sealed.hour, &keys),
        );
        self.command(|reply| Command::Seal {
            sealed,
            keys,
            checksums,
            reply,
        })
        .await
    }

    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>> {
        self.read(move |conn| reads::sealed(conn, hour)).await
    }

    async fn last_sealed(&self) -> Result<Option<Hour>> {
        self.read(reads::last_sealed).await
    }

    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        self.read(move |conn| reads::sealed_counts(conn, from, to))
            .await
    }

    async fn put_link(&self, link: &ChainLink) -> Result<Linking> {
        let link = *link;
        self.command(|reply| Command::Link { link, reply }).await
    }

    async fn links(&self, from: Hour, limit: usize) -> Result<Vec<ChainLink>> {
        self.link_rows(from, Hour::from_index(i64::MAX), false, limit)
            .await
    }

    async fn last_link(&self, before: Hour) -> Result<Option<ChainLink>> {
        let links = self.link_rows(Hour::from_index(i64::MIN), before, true, 1);
        Ok(links.await?.pop())
    }

    async fn signing_keys(&self) -> Result<Vec<ListedKey>> {
        self.key_rows().await
    }

    async fn register_key(
        &self,
        key: &PublicKey,
        first: Hour,
        current: Option<&PublicKey>,
        succession: &Succession,
    ) -> Result<bool> {
        let (key, current, succession) = (*key, current.copied(), Box::new(*succession));
        self.command(|reply| Command::RegisterKey {
            key,
            first,
            current,
            succession,
            reply,
        })
        .await
    }

    async fn put_key_ack(&self, key: &PublicKey, ack: &[u8; 64]) -> Result<bool> {
        let (key, ack) = (*key, *ack);
        self.command(|reply| Command::PutAck { key, ack, reply })
            .await
    }

    async fn put_signature(&self, signature: &HourSignature, key: &PublicKey) -> Result<bool> {
        let (signature, key) = (*signature, *key);
        self.command(|reply| Command::Sign {
            signature,
            key,
            reply,
        })
        .await
    }

    async fn signatures(&self, from: Hour, to: Hour) -> Result<Vec<HourSignature>> {
        self.signature_rows(from, to).await
    }

    async fn prune_before(&self, before: Hour) -> Result<u64> {
        self.command(|reply| Command::Prune { before, reply }).await
    }

    /// A heartbeat written through the writer thread, as an append would be: fails when
    /// the writer is gone or the disk cannot take a commit.
    async fn ping(&self) -> Result<()> {
        self.command(|reply| Command::Heartbeat {
            record: None,
            reply,
        })
        .await
    }

    async fn universe(&self) -> Result<Option<UniverseInfo>> {
        self.read(universe::info).await
    }

    async fn add_to_universe(&self, keys: &[Key], open: Hour, max: u64) -> Result<UniverseAdded> {
        let keys = keys.to_vec();
        self.command(|reply| Command::AddToUniverse {
            keys,
            open,
            max,
            reply,
        })
        .await
    }

    async fn universe_keys(&self, through: Hour) -> Result<Vec<Key>> {
        self.read(move |conn| universe::keys(conn, through)).await
    }

    async fn put_exact(&self, hour: Hour, body: &[u8]) -> Result<Vec<u8>> {
        let body = body.to_vec();
        self.command(|reply| Command::PutExact { hour, body, reply })
            .await
    }

    async fn exact(&self, hour: Hour) -> Result<Option<Vec<u8>>> {
        self.read(move |conn| universe::exact(conn, hour)).await
    }

    async fn subscriptions(&self) -> Result<Vec<Subscription>> {
        self.read(subscriptions::all).await
    }

    async fn put_subscription(&self, subscription: &Subscription) -> Result<()> {
        let change = subscriptions::HubChange::Put(subscription.clone());
        self.command(|reply| Command::Hub { change, reply }).await?;
        Ok(())
    }

    async fn remove_subscription(&self, callback: &str, topic: &str) -> Result<bool> {
        let change = subscriptions::HubChange::Remove {
            callback: callback.to_owned(),
            topic: topic.to_owned(),
        };
        self.command(|reply| Command::Hub { change, reply }).await
    }

    async fn claim_delivery(&self, hour: Hour) -> Result<bool> {
        let change = subscriptions::HubChange::Claim(hour);
        self.command(|reply| Command::Hub { change, reply }).await
    }

    async fn record_form(&self, record: &FormRecord) -> Result<Hash> {
        let record = *record;
        self.command(|reply| Command::RecordForm { record, reply })
            .await
    }

    async fn form_digest(&self, from: Hour, to: Hour, form: FormName) -> Result<Option<Hash>> {
        self.read(move |conn| forms::digest(conn, from, to, form))
            .await
    }

    async fn exact_sizes(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        self.read(move |conn| universe::exact_sizes(conn, from, to))
            .await
    }

    async fn clock_record(&self) -> Result<Option<ClockRecord>> {
        self.read(reads::clock_record).await
    }

    /// As [`Store::ping`], with the record's rows in the heartbeat's commit.
    async fn heartbeat(&self, record: &ClockRecord) -> Result<()> {
        let record = Some(*record);
        self.command(|reply| Command::Heartbeat { record, reply })
            .await
    }
}

#[cfg(test)]
mod schema_tests;
#[cfg(test)]
mod tests;
