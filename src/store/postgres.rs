//! The cluster store: PostgreSQL, shared by any number of stateless nodes.
//!
//! Tables live in the configured schema and are created by versioned migrations run
//! under an advisory lock at start. Filters are stored as `bytea` in wire order, so
//! `get_bit(filter, j)` reads filter bit j, and the `hour_bits` view exposes them as
//! `bit varying` for `bit_or` unions in SQL.
//!
//! Here: connecting, migrating and fixing genesis, and the [`Store`] methods, each
//! handed to the module that owns its rows: `batches` (open hours and the boundary
//! that closes them), `sealed` (sealed hours and pruning), `chain` (the hour chain).

use super::{
    full_message, ChainLink, FormName, FormRecord, HourRecord, HourShape, HourSignature, KeyPieces,
    Linking, Marks, ReplicaReads, Result, SealedHour, Sealing, Store, StoreError, Subscription,
    UniverseAdded, UniverseInfo,
};
use crate::bloom::Key;
use crate::chain::{Hash, ListedKey, PublicKey, Succession};
use crate::clock::ClockRecord;
use crate::hour::Hour;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use errors::{connect_error, pg_error, pool_error};
use migrate::migrate;
use statements::Statements;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

mod batches;
mod chain;
mod clock;
mod errors;
mod integrity;
mod link;
mod listen;
mod migrate;
mod sealed;
mod shape;
mod signing;
mod sqlfns;
mod statements;
mod subscriptions;
mod tls;
mod universe;

pub use link::{LinkError, PgLink};
pub use tls::{SslMode, TlsSetupError};

/// How long one store call may wait for PostgreSQL unless told otherwise
/// ([`PgStore::with_call_timeout`]).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Calls that move a whole hour's keys or filter (sealing, reading a sealed hour,
/// loading the open hour) may take this many times the call timeout.
const BULK_FACTOR: u32 = 10;

/// PostgreSQL-backed [`Store`].
pub struct PgStore {
    pool: Pool,
    /// Read replicas (`database_read_url`), for what never changes once written: a
    /// sealed hour's row and keys, a chain link, an hour's signatures, a form's record.
    /// `None`: every read goes to the primary.
    replicas: Option<Pool>,
    /// Counts of [`Store::replica_reads`]: served, behind, failed.
    replica_reads: [AtomicU64; 3],
    /// The quoted schema name, ready to prefix table names.
    schema: String,
    genesis: Hour,
    /// See [`Store::probes_from`].
    probes_from: Hour,
    /// How long one call may wait for PostgreSQL, a connection from the pool included:
    /// a link that stops answering without closing (no FIN, no RST) would otherwise hold
    /// a request, and the connection, for as long as the kernel keeps the socket.
    timeout: Duration,
    /// How to open the connection that listens for other nodes' writes, and the
    /// channel they notify (`listen.rs`).
    listen: (
        tokio_postgres::Config,
        tokio_postgres_rustls::MakeRustlsConnect,
    ),
    channel: String,
}

impl PgStore {
    /// Connects over `link` (TLS as its `sslmode` says), migrates the schema and fixes
    /// genesis at `now` on first use.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when no connection can be made (unreachable server, TLS
    /// handshake or certificate refused, authentication); a failed migration.
    pub async fn connect(link: PgLink, schema: &str, now: Hour) -> Result<PgStore> {
        let PgLink {
            mut config, tls, ..
        } = link;
        let server = errors::server_of(&config);
        config.connect_timeout(Duration::from_secs(3));
        let listen = (config.clone(), tls.clone());
        let pool = pool_of(config, tls)?;
        // The first connection says whether the link works at all; its error keeps
        // the cause (e.g. the certificate not valid for the host name).
        drop(pool.get().await.map_err(|e| connect_error(e, &server))?);
        let channel = listen::channel(&schema.replace('"', ""));
        let schema = format!("\"{}\"", schema.replace('"', ""));
        migrate(&pool, &schema).await?;
        let client = pool.get().await.map_err(pool_error)?;
        let meta = format!(
            "INSERT INTO {schema}.meta (name, value) VALUES ('genesis', $1), ('closed_through', $1 - 1)
             ON CONFLICT (name) DO NOTHING"
        );
        client.run(&meta, &[&now.index()]).await.map_err(pg_error)?;
        // Genesis is never later than an hour holding keys (schemas written before this
        // rule could acknowledge keys into an hour before it).
        let lower = format!(
            "UPDATE {schema}.meta SET value = LEAST(value,
                 (SELECT min(hour) FROM {schema}.batches), (SELECT min(hour) FROM {schema}.hours))
             WHERE name = 'genesis' AND value > LEAST(
                 (SELECT min(hour) FROM {schema}.batches), (SELECT min(hour) FROM {schema}.hours))"
        );
        client.run(&lower, &[]).await.map_err(pg_error)?;
        let row = client
            .row(
                &format!("SELECT value FROM {schema}.meta WHERE name = 'genesis'"),
                &[],
            )
            .await
            .map_err(pg_error)?;
        let genesis = Hour::from_index(row.get(0));
        // The sizing rule's first hour, fixed by the first node that knows the rule,
        // after every hour closed or sealed before it.
        let probes_from = format!(
            "INSERT INTO {schema}.meta (name, value) SELECT 'probes_from', GREATEST($1::bigint,
                 (SELECT value + 1 FROM {schema}.meta WHERE name = 'closed_through'),
                 (SELECT max(hour) + 1 FROM {schema}.hours))
             ON CONFLICT (name) DO NOTHING"
        );
        client
            .run(&probes_from, &[&genesis.index()])
            .await
            .map_err(pg_error)?;
        let row = client
            .row(
                &format!("SELECT value FROM {schema}.meta WHERE name = 'probes_from'"),
                &[],
            )
            .await
            .map_err(pg_error)?;
        let probes_from = Hour::from_index(row.get(0));
        report_durability(&client).await?;
        drop(client);
        Ok(PgStore {
            pool,
            replicas: None,
            replica_reads: Default::default(),
            schema,
            genesis,
            probes_from,
            timeout: DEFAULT_CALL_TIMEOUT,
            listen,
            channel,
        })
    }

    /// The same store, each call given up after `timeout` (bulk calls: ten times that).
    pub fn with_call_timeout(mut self, timeout: Duration) -> PgStore {
        self.timeout = timeout;
        self
    }

    /// The same store, listening for other nodes' writes over `link` rather than the
    /// primary's: a session of its own, for when `database_url` goes through a pooler in
    /// transaction mode, which cannot keep a `LISTEN` (`database_listen_url`).
    pub fn listening_over(mut self, link: PgLink) -> PgStore {
        let PgLink {
            mut config, tls, ..
        } = link;
        config.connect_timeout(Duration::from_secs(3));
        self.listen = (config, tls);
        self
    }

    /// The same store, reading what never changes once written (sealed hours, their
    /// keys, chain links, signatures, form records) from the servers `link` reaches
    /// (`database_read_url`, read replicas) when they have it, else from the primary. Nothing is connected here: a replica down at start,
    /// or later, only sends its reads to the primary.
    ///
    /// # Errors
    /// The pool cannot be built.
    pub fn reading_from(mut self, link: PgLink) -> Result<PgStore> {
        let PgLink {
            mut config, tls, ..
        } = link;
        config.connect_timeout(Duration::from_secs(3));
        self.replicas = Some(pool_of(config, tls)?);
        Ok(self)
    }

    /// Whether an error from [`PgStore::connect`] may pass with no setting changed
    /// (PostgreSQL not up yet, restarting, unreachable for now), so that a node starting
    /// is right to wait for it rather than stop.
    pub fn may_come_up(error: &StoreError) -> bool {
        errors::may_come_up(error)
    }

    /// Runs one store call within the call timeout (`bulk`: ten times it). A call that
    /// runs out is unavailable, and every idle pooled connection is dropped: one that
    /// stopped answering would otherwise be handed out again, each caller waiting out
    /// the timeout in turn, and never replaced. Connections that do answer are opened
    /// again at the next calls; those in use are dropped when their calls run out too.
    async fn timed<T>(
        &self,
        what: &'static str,
        bulk: bool,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        timed(&self.pool, self.timeout, what, bulk, call).await
    }

    /// A read of what never changes once written, from a replica when one is
    /// configured and has it (`read` answers `Some`), else from the primary (`bulk`: a
    /// whole hour's keys or filter, as [`PgStore::timed`]). A replica that fails or runs
    /// out of time is logged and the primary asked.
    async fn settled<'a, T, F, P>(
        &'a self,
        what: &'static str,
        bulk: bool,
        read: impl FnOnce(&'a Pool) -> F,
        primary: P,
    ) -> Result<Option<T>>
    where
        F: Future<Output = Result<Option<T>>>,
        P: Future<Output = Result<Option<T>>>,
    {
        if let Some(replicas) = &self.replicas {
            let [served, behind, failed] = &self.replica_reads;
            match timed(replicas, self.timeout, what, bulk, read(replicas)).await {
                Ok(Some(found)) => {
                    served.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(found));
                }
                // Not there (yet): the replica has not replayed the seal, or it was never
                // made. Only the primary can say which.
                Ok(None) => {
                    behind.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        call = what,
                        error = %full_message(&e),
                        "a read replica failed; reading from the primary"
                    );
                }
            }
        }
        self.timed(what, bulk, primary).await
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        client_of(&self.pool).await
    }

    fn sql(&self, template: &str) -> String {
        template.replace("{s}", &self.schema)
    }

    /// What the store records of `hour` besides its rows (see [`HourRecord`]), read in
    /// the caller's snapshot.
    async fn record(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        hour: Hour,
    ) -> Result<HourRecord> {
        let sql = self.sql(
            "SELECT (SELECT sum(batches)::bigint FROM {s}.batch_counts WHERE hour = $1),
                    (SELECT value FROM {s}.meta WHERE name = 'pruned_before'),
                    (SELECT value FROM {s}.meta WHERE name = 'closed_through'),
                    (SELECT value FROM {s}.meta WHERE name = 'chain_since'),
                    EXISTS (SELECT 1 FROM {s}.chain WHERE hour > $1),
                    c.digest, c.prev, c.header, c.checksum
             FROM (SELECT 1) AS one LEFT JOIN {s}.chain c ON c.hour = $1",
        );
        let row = tx.row(&sql, &[&hour.index()]).await.map_err(pg_error)?;
        let link = row
            .get::<_, Option<&[u8]>>(5)
            .map(|digest| ChainLink::verify_row(hour, digest, row.get(6), row.get(7), row.get(8)));
        let mark = |i| row.get::<_, Option<i64>>(i).map(Hour::from_index);
        Ok(HourRecord {
            link,
            batches: row.get(0),
            pruned_before: mark(1),
            closed_through: mark(2),
            chain_since: mark(3),
            later_link: row.get(4),
        })
    }
}

/// Runs one store call on `pool` within `timeout` (`bulk`: ten times it). A call that
/// runs out is unavailable, and every idle connection of the pool is dropped: one that
/// stopped answering would otherwise be handed out again, each caller waiting out the
/// timeout in turn, and never replaced. Connections that do answer are opened again at
/// the next calls; those in use are dropped when their calls run out too.
async fn timed<T>(
    pool: &Pool,
    timeout: Duration,
    what: &'static str,
    bulk: bool,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    let limit = if bulk { timeout * BULK_FACTOR } else { timeout };
    // Bound before matching, so the call (and the connection it holds) is dropped, and
    // its connection back in the pool, before the pool is cleared.
    let outcome = tokio::time::timeout(limit, call).await;
    match outcome {
        Ok(Err(e)) if errors::on_a_standby(&e) => {
            let dropped = pool.retain(|_, _| false).removed.len();
            tracing::warn!(
                call = what,
                dropped_idle_connections = dropped,
                "PostgreSQL is a standby now (failed over?); its connections are replaced"
            );
            Err(e)
        }
        Ok(result) => result,
        Err(elapsed) => {
            let dropped = pool.retain(|_, _| false).removed.len();
            tracing::warn!(
                call = what,
                limit = ?limit,
                dropped_idle_connections = dropped,
                "PostgreSQL did not answer in time; its idle connections are replaced"
            );
            Err(StoreError::unavailable(
                format!(
                    "PostgreSQL did not answer {what} within {} ms",
                    limit.as_millis()
                ),
                elapsed,
            ))
        }
    }
}

/// A pool of connections made with `config` over `tls`.
fn pool_of(
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
) -> Result<Pool> {
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(16)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .create_timeout(Some(Duration::from_secs(3)))
        .recycle_timeout(Some(Duration::from_secs(3)))
        .build()
        .map_err(|e| StoreError::failed("cannot build the PostgreSQL pool", e))
}

/// Says in the log whether the server acknowledges a commit only once a synchronous
/// standby has it (`synchronous_standby_names`, `synchronous_commit` at least `on`): only
/// then does a failover keep every ID a node acknowledged (docs/CLUSTER.md, High
/// availability).
async fn report_durability(client: &deadpool_postgres::Object) -> Result<()> {
    let row = client
        .row(
            "SELECT current_setting('synchronous_standby_names'),
                    current_setting('synchronous_commit')",
            &[],
        )
        .await
        .map_err(pg_error)?;
    let (standbys, commit): (String, String) = (row.get(0), row.get(1));
    let waits = !standbys.trim().is_empty()
        && ["on", "remote_apply", "remote_write"].contains(&commit.as_str());
    let says = if waits {
        "PostgreSQL acknowledges each ingest once a synchronous standby has it"
    } else {
        "PostgreSQL acknowledges each ingest without a synchronous standby: a failover to an \
         asynchronous standby can lose what was acknowledged just before it"
    };
    tracing::info!(
        synchronous_standby_names = %standbys,
        synchronous_commit = %commit,
        "{says}"
    );
    Ok(())
}

async fn client_of(pool: &Pool) -> Result<deadpool_postgres::Object> {
    pool.get().await.map_err(pool_error)
}

/// A read-only transaction with one snapshot for all its statements, so rows and the
/// records they are checked against are read as of one moment.
async fn snapshot(
    client: &mut deadpool_postgres::Object,
) -> Result<deadpool_postgres::Transaction<'_>> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(pg_error)
}

#[async_trait]
impl Store for PgStore {
    fn changes(&self) -> Option<tokio::sync::mpsc::Receiver<()>> {
        let (config, tls) = self.listen.clone();
        Some(listen::spawn(config, tls, self.channel.clone()))
    }

    fn replica_reads(&self) -> Option<ReplicaReads> {
        self.replicas.as_ref()?;
        let [served, behind, failed] = self
            .replica_reads
            .each_ref()
            .map(|c| c.load(Ordering::Relaxed));
        Some(ReplicaReads {
            served,
            behind,
            failed,
        })
    }

    async fn genesis(&self) -> Result<Hour> {
        Ok(self.genesis)
    }

    async fn probes_from(&self) -> Result<Hour> {
        Ok(self.probes_from)
    }

    async fn marks(&self) -> Result<Marks> {
        self.timed("marks", false, batches::marks(self)).await
    }

    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour> {
        self.timed("append", false, batches::append(self, hour, keys))
            .await
    }

    async fn close_through(&self, hour: Hour) -> Result<()> {
        self.timed("close_through", false, batches::close_through(self, hour))
            .await
    }

    async fn send_keys_after(&self, hour: Hour, cursor: i64, pieces: KeyPieces) -> Result<i64> {
        let read = batches::send_keys_after(self, hour, cursor, pieces);
        self.timed("send_keys_after", true, read).await
    }

    async fn keys(&self, hour: Hour) -> Result<Vec<Key>> {
        let replica = |pool| batches::sealed_keys(self, pool, hour);
        let primary = async { batches::keys(self, hour).await.map(Some) };
        let keys = self.settled("keys", true, replica, primary).await?;
        Ok(keys.unwrap_or_default())
    }

    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing> {
        self.timed("seal", true, sealed::seal(self, sealed, keys))
            .await
    }

    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>> {
        let replica = |pool| sealed::sealed(self, pool, hour);
        let primary = sealed::sealed(self, &self.pool, hour);
        self.settled("sealed", true, replica, primary).await
    }

    async fn last_sealed(&self) -> Result<Option<Hour>> {
        self.timed("last_sealed", false, sealed::last_sealed(self))
            .await
    }

    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let counts = sealed::sealed_counts(self, from, to);
        self.timed("sealed_counts", false, counts).await
    }

    async fn put_link(&self, link: &ChainLink) -> Result<Linking> {
        self.timed("put_link", false, self.put_link_row(link)).await
    }

    async fn links(&self, from: Hour, limit: usize) -> Result<Vec<ChainLink>> {
        let rows = self.link_rows(&self.pool, from, Hour::from_index(i64::MAX), false, limit);
        self.timed("links", false, rows).await
    }

    /// From a replica when it holds the link of the hour just before `before` (a link
    /// never changes once written); any other answer may be behind, so the primary's.
    async fn last_link(&self, before: Hour) -> Result<Option<ChainLink>> {
        let newest = |pool| async move {
            let links = self.link_rows(pool, Hour::from_index(i64::MIN), before, true, 1);
            Ok(links.await?.pop())
        };
        let replica = |pool| async move {
            Ok(newest(pool)
                .await?
                .filter(|l: &ChainLink| l.hour.next() == before))
        };
        Ok(self
            .settled("last_link", false, replica, newest(&self.pool))
            .await?)
    }

    async fn signing_keys(&self) -> Result<Vec<ListedKey>> {
        self.timed("signing_keys", false, self.key_rows()).await
    }

    async fn register_key(
        &self,
        key: &PublicKey,
        first: Hour,
        current: Option<&PublicKey>,
        succession: &Succession,
    ) -> Result<bool> {
        let registered = self.register_key_row(key, first, current, succession);
        self.timed("register_key", false, registered).await
    }

    async fn put_key_ack(&self, key: &PublicKey, ack: &[u8; 64]) -> Result<bool> {
        self.timed("put_key_ack", false, self.put_ack_row(key, ack))
            .await
    }

    async fn put_signature(&self, signature: &HourSignature, key: &PublicKey) -> Result<bool> {
        let put = self.put_signature_row(signature, key);
        self.timed("put_signature", false, put).await
    }

    async fn signatures(&self, from: Hour, to: Hour) -> Result<Vec<HourSignature>> {
        // One hour's signatures from a replica that has some (each is written once);
        // a range, or none there, from the primary.
        let replica = |pool| async move {
            let rows = match from == to {
                true => self.signature_rows(pool, from, to).await?,
                false => Vec::new(),
            };
            Ok((!rows.is_empty()).then_some(rows))
        };
        let primary = async { self.signature_rows(&self.pool, from, to).await.map(Some) };
        Ok(self
            .settled("signatures", false, replica, primary)
            .await?
            .unwrap_or_default())
    }

    async fn prune_before(&self, hour: Hour) -> Result<u64> {
        self.timed("prune_before", true, sealed::prune_before(self, hour))
            .await
    }

    async fn ping(&self) -> Result<()> {
        let ping = async {
            let client = self.client().await?;
            client.simple_query("SELECT 1").await.map_err(pg_error)?;
            Ok(())
        };
        self.timed("ping", false, ping).await
    }

    async fn universe(&self) -> Result<Option<UniverseInfo>> {
        self.timed("universe", false, self.universe_info()).await
    }

    async fn add_to_universe(&self, keys: &[Key], open: Hour, max: u64) -> Result<UniverseAdded> {
        let add = self.add_universe_rows(keys, open, max);
        self.timed("add_to_universe", true, add).await
    }

    async fn universe_keys(&self, through: Hour) -> Result<Vec<Key>> {
        let rows = self.universe_key_rows(through);
        self.timed("universe_keys", true, rows).await
    }

    async fn put_exact(&self, hour: Hour, body: &[u8]) -> Result<Vec<u8>> {
        self.timed("put_exact", false, self.put_exact_row(hour, body))
            .await
    }

    async fn exact(&self, hour: Hour) -> Result<Option<Vec<u8>>> {
        self.timed("exact", false, self.exact_row(hour)).await
    }

    async fn subscriptions(&self) -> Result<Vec<Subscription>> {
        self.timed("subscriptions", false, self.subscription_rows())
            .await
    }

    async fn put_subscription(&self, subscription: &Subscription) -> Result<()> {
        self.timed(
            "put_subscription",
            false,
            self.put_subscription_row(subscription),
        )
        .await
    }

    async fn remove_subscription(&self, callback: &str, topic: &str) -> Result<bool> {
        self.timed(
            "remove_subscription",
            false,
            self.remove_subscription_row(callback, topic),
        )
        .await
    }

    async fn claim_delivery(&self, hour: Hour) -> Result<bool> {
        self.timed("claim_delivery", false, self.claim_delivery_row(hour))
            .await
    }

    async fn record_form(&self, record: &FormRecord) -> Result<Hash> {
        // Recorded once, first write wins: a replica holding the record has its digest.
        let replica = |pool| async move { self.form_digest(&client_of(pool).await?, record).await };
        let primary = async { self.record_form_row(record).await.map(Some) };
        let digest = self.settled("record_form", false, replica, primary).await?;
        digest.ok_or_else(|| StoreError::bug("record_form answered nothing"))
    }

    async fn form_digest(&self, from: Hour, to: Hour, form: FormName) -> Result<Option<Hash>> {
        let record = FormRecord {
            from,
            to,
            form,
            digest: [0; 32],
        };
        // A record never changes once written: a replica holding it has it.
        let replica =
            |pool| async move { self.form_digest(&client_of(pool).await?, &record).await };
        let primary = async { self.form_digest(&self.client().await?, &record).await };
        self.settled("form_digest", false, replica, primary).await
    }

    async fn hour_shape(&self, local: &HourShape, hour: Hour) -> Result<Option<HourShape>> {
        let shape = self.recorded_hour_shape(local, hour);
        Ok(Some(self.timed("hour_shape", false, shape).await?))
    }

    async fn exact_sizes(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let rows = self.exact_size_rows(from, to);
        self.timed("exact_sizes", false, rows).await
    }

    /// PostgreSQL's `now()`: the cluster's time.
    async fn time(&self) -> Result<Option<DateTime<Utc>>> {
        Ok(Some(self.timed("time", false, self.now_row()).await?))
    }

    async fn clock_record(&self) -> Result<Option<ClockRecord>> {
        self.timed("clock_record", false, self.clock_rows()).await
    }

    /// A write (the clock record's rows), where [`Store::ping`] only reads: it proves
    /// PostgreSQL takes writes.
    async fn heartbeat(&self, record: &ClockRecord) -> Result<()> {
        self.timed("heartbeat", false, self.put_clock_rows(record))
            .await
    }
}
