//! The cluster store: PostgreSQL, shared by any number of stateless nodes.
//!
//! Tables live in the configured schema and are created by versioned migrations run
//! under an advisory lock at start. Filters are stored as `bytea` in wire order, so
//! `get_bit(filter, j)` reads filter bit j, and the `hour_bits` view exposes them as
//! `bit varying` for `bit_or` unions in SQL.
//!
//! The hour boundary: every append reads the `closed_through` row `FOR SHARE` and
//! writes to the first hour after it, in one statement; closing an hour updates that
//! row, which waits for every append holding it and makes every later append see the
//! new value. So an append racing the close of H lands in H or H+1, never nowhere, and
//! once the close commits, H's keys are final.

use super::{
    batch_checksum, check_count, distinct, filter_checksum, keys_to_blob, sealed_keys_checksum,
    verify_batch, verify_sealed_keys, ChainLink, HourRecord, KeysPage, Linking, Marks, Result,
    SealedHour, SealedRow, Sealing, Store, StoreError,
};
use crate::bloom::{Key, SHA1_KM32};
use crate::hour::Hour;
use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use errors::{connect_error, pg_error, pool_error};
use migrate::migrate;
use std::time::Duration;

mod chain;
mod errors;
mod link;
mod migrate;
mod sqlfns;
mod tls;

pub use link::{LinkError, PgLink};
pub use tls::{SslMode, TlsSetupError};

/// PostgreSQL-backed [`Store`].
pub struct PgStore {
    pool: Pool,
    /// The quoted schema name, ready to prefix table names.
    schema: String,
    genesis: Hour,
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
        config.connect_timeout(Duration::from_secs(3));
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(5)))
            .create_timeout(Some(Duration::from_secs(3)))
            .recycle_timeout(Some(Duration::from_secs(3)))
            .build()
            .map_err(|e| StoreError::failed("cannot build the PostgreSQL pool", e))?;
        // The first connection says whether the link works at all; its error keeps
        // the cause (e.g. the certificate not valid for the host name).
        drop(pool.get().await.map_err(connect_error)?);
        let schema = format!("\"{}\"", schema.replace('"', ""));
        migrate(&pool, &schema).await?;
        let client = pool.get().await.map_err(pool_error)?;
        let meta = format!(
            "INSERT INTO {schema}.meta (name, value) VALUES ('genesis', $1), ('closed_through', $1 - 1)
             ON CONFLICT (name) DO NOTHING"
        );
        client
            .execute(&meta, &[&now.index()])
            .await
            .map_err(pg_error)?;
        // Genesis is never later than an hour holding keys (schemas written before this
        // rule could acknowledge keys into an hour before it).
        let lower = format!(
            "UPDATE {schema}.meta SET value = LEAST(value,
                 (SELECT min(hour) FROM {schema}.batches), (SELECT min(hour) FROM {schema}.hours))
             WHERE name = 'genesis' AND value > LEAST(
                 (SELECT min(hour) FROM {schema}.batches), (SELECT min(hour) FROM {schema}.hours))"
        );
        client.execute(&lower, &[]).await.map_err(pg_error)?;
        let row = client
            .query_one(
                &format!("SELECT value FROM {schema}.meta WHERE name = 'genesis'"),
                &[],
            )
            .await
            .map_err(pg_error)?;
        let genesis = Hour::from_index(row.get(0));
        drop(client);
        Ok(PgStore {
            pool,
            schema,
            genesis,
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(pool_error)
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
                    c.digest, c.prev, c.header, c.checksum
             FROM (SELECT 1) AS one LEFT JOIN {s}.chain c ON c.hour = $1",
        );
        let stmt = tx.prepare_cached(&sql).await.map_err(pg_error)?;
        let row = tx
            .query_one(&stmt, &[&hour.index()])
            .await
            .map_err(pg_error)?;
        let link = row
            .get::<_, Option<&[u8]>>(2)
            .map(|digest| ChainLink::verify_row(hour, digest, row.get(3), row.get(4), row.get(5)));
        Ok(HourRecord {
            link,
            batches: row.get(0),
            pruned_before: row.get::<_, Option<i64>>(1).map(Hour::from_index),
        })
    }
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
    async fn genesis(&self) -> Result<Hour> {
        Ok(self.genesis)
    }

    async fn marks(&self) -> Result<Marks> {
        let client = self.client().await?;
        let sql = self.sql(
            "SELECT (SELECT value FROM {s}.meta WHERE name = 'closed_through'),
                    (SELECT max(hour) FROM {s}.batches)",
        );
        let stmt = client.prepare_cached(&sql).await.map_err(pg_error)?;
        let row = client.query_one(&stmt, &[]).await.map_err(pg_error)?;
        let closed_through = row.get::<_, Option<i64>>(0).map(Hour::from_index);
        let newest = row.get::<_, Option<i64>>(1).map(Hour::from_index);
        let high_water = [Some(self.genesis), closed_through.map(Hour::next), newest]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(self.genesis);
        Ok(Marks {
            closed_through: closed_through.filter(|c| *c >= self.genesis),
            high_water,
        })
    }

    /// One statement, one round trip when `hour` is open: lock the boundary row shared
    /// and insert only if it is still after it. The checksum covers the hour, so when the
    /// hour was closed meanwhile the batch is checksummed again for the first open hour
    /// and the insert retried, guarded the same way.
    async fn append(&self, hour: Hour, keys: &[Key]) -> Result<Hour> {
        let client = self.client().await?;
        // The batch and its record in one statement (one transaction).
        let insert = self.sql(
            "WITH b AS (
                 INSERT INTO {s}.batches (hour, keys, checksum)
                 SELECT $1::bigint, $2, $3 FROM {s}.meta m
                 WHERE m.name = 'closed_through' AND m.value < $1::bigint FOR SHARE OF m
                 RETURNING hour),
             c AS (
                 INSERT INTO {s}.batch_counts (hour, slot, batches)
                 SELECT hour, floor(random() * 16)::smallint, 1 FROM b
                 ON CONFLICT (hour, slot)
                 DO UPDATE SET batches = {s}.batch_counts.batches + 1)
             SELECT hour FROM b",
        );
        let insert = client.prepare_cached(&insert).await.map_err(pg_error)?;
        let closed = self.sql("SELECT value FROM {s}.meta WHERE name = 'closed_through'");
        let blob = keys_to_blob(keys);
        let mut target = hour;
        // Each retry means another node closed an hour meanwhile: a handful at most.
        for _ in 0..16 {
            let checksum = batch_checksum(target, &blob);
            let row = client
                .query_opt(&insert, &[&target.index(), &blob, &checksum])
                .await
                .map_err(pg_error)?;
            if let Some(row) = row {
                return Ok(Hour::from_index(row.get(0)));
            }
            let row = client.query_one(&closed, &[]).await.map_err(pg_error)?;
            target = target.max(Hour::from_index(row.get::<_, i64>(0) + 1));
        }
        Err(StoreError::Unavailable {
            what: format!("hours kept closing while a batch was appended (last tried {target})"),
            source: None,
        })
    }

    async fn close_through(&self, hour: Hour) -> Result<()> {
        let client = self.client().await?;
        let sql = self
            .sql("UPDATE {s}.meta SET value = GREATEST(value, $1) WHERE name = 'closed_through'");
        client
            .execute(&sql, &[&hour.index()])
            .await
            .map_err(pg_error)?;
        Ok(())
    }

    /// The cursor is the oldest transaction still running when the page was read:
    /// every row of an older transaction was visible then, so the next page starts at
    /// it and can miss nothing that commits late.
    ///
    /// From the start of the hour (`cursor` 0), the batches read are checked against the
    /// hour's record in the same snapshot.
    async fn keys_after(&self, hour: Hour, cursor: i64) -> Result<KeysPage> {
        let mut client = self.client().await?;
        let tx = snapshot(&mut client).await?;
        let client = &tx;
        let sql = self.sql(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, b.seq, b.keys,
                    b.checksum
             FROM (SELECT 1) AS one
             LEFT JOIN {s}.batches b ON b.hour = $1 AND b.xid >= $2::text::xid8",
        );
        let stmt = client.prepare_cached(&sql).await.map_err(pg_error)?;
        let rows = client
            .query(&stmt, &[&hour.index(), &cursor.to_string()])
            .await
            .map_err(pg_error)?;
        let mut page = KeysPage {
            keys: Vec::new(),
            cursor,
        };
        let mut read = 0;
        for row in rows {
            page.cursor = row.get(0);
            if let Some(seq) = row.get::<_, Option<i64>>(1) {
                verify_batch(hour, seq, row.get(2), row.get(3), &mut page.keys)?;
                read += 1;
            }
        }
        if cursor == 0 {
            self.record(&tx, hour).await?.check_batches(hour, read)?;
        }
        Ok(page)
    }

    async fn keys(&self, hour: Hour) -> Result<Vec<Key>> {
        let mut client = self.client().await?;
        let tx = snapshot(&mut client).await?;
        let client = &tx;
        // One statement, one snapshot: either the sealed keys or the batches, never a
        // moment between a seal's insert and its delete.
        let sql = self.sql(
            "SELECT true, count, keys, keys_checksum FROM {s}.hours WHERE hour = $1
             UNION ALL
             SELECT false, seq, keys, checksum FROM {s}.batches WHERE hour = $1",
        );
        let rows = client
            .query(&sql, &[&hour.index()])
            .await
            .map_err(pg_error)?;
        if let Some(sealed) = rows.iter().find(|r| r.get::<_, bool>(0)) {
            return verify_sealed_keys(hour, sealed.get(1), sealed.get(2), sealed.get(3));
        }
        let mut keys = Vec::new();
        for row in &rows {
            verify_batch(hour, row.get(1), row.get(2), row.get(3), &mut keys)?;
        }
        self.record(&tx, hour)
            .await?
            .check_batches(hour, rows.len())?;
        Ok(distinct(keys))
    }

    /// The first seal wins (primary key, `ON CONFLICT DO NOTHING`); every node builds
    /// the same bytes from the same closed key set anyway. The insert's row count says
    /// whether this seal is the stored one: a concurrent seal of the hour that commits
    /// first makes it wait and then insert nothing.
    async fn seal(&self, sealed: &SealedHour, keys: &[Key]) -> Result<Sealing> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let insert = self.sql(
            "INSERT INTO {s}.hours
                 (hour, starts_at, count, m, k, hash, filter, keys, checksum, keys_checksum)
             VALUES ($1::bigint, to_timestamp($1::bigint * 3600), $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (hour) DO NOTHING",
        );
        let blob = keys_to_blob(keys);
        let inserted = tx
            .execute(
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
        for table in ["batches", "batch_counts"] {
            tx.execute(
                &self.sql(&format!("DELETE FROM {{s}}.{table} WHERE hour = $1")),
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
    async fn sealed(&self, hour: Hour) -> Result<Option<SealedHour>> {
        let mut client = self.client().await?;
        let tx = snapshot(&mut client).await?;
        let client = &tx;
        let sql = self.sql(
            "SELECT count, m, k, filter, octet_length(keys)::bigint, checksum
             FROM {s}.hours WHERE hour = $1",
        );
        let stmt = client.prepare_cached(&sql).await.map_err(pg_error)?;
        let row = client
            .query_opt(&stmt, &[&hour.index()])
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
        self.record(&tx, hour).await?.check_sealed(hour, sealed)
    }

    async fn last_sealed(&self) -> Result<Option<Hour>> {
        let client = self.client().await?;
        let row = client
            .query_one(&self.sql("SELECT max(hour) FROM {s}.hours"), &[])
            .await
            .map_err(pg_error)?;
        Ok(row.get::<_, Option<i64>>(0).map(Hour::from_index))
    }

    async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let client = self.client().await?;
        let sql = self.sql(
            "SELECT hour, count, octet_length(keys)::bigint FROM {s}.hours
                  WHERE hour BETWEEN $1 AND $2 ORDER BY hour",
        );
        let rows = client
            .query(&sql, &[&from.index(), &to.index()])
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

    async fn put_link(&self, link: &ChainLink) -> Result<Linking> {
        self.put_link_row(link).await
    }

    async fn links(&self, from: Hour, limit: usize) -> Result<Vec<ChainLink>> {
        self.link_rows(from, Hour::from_index(i64::MAX), false, limit)
            .await
    }

    async fn last_link(&self, before: Hour) -> Result<Option<ChainLink>> {
        let links = self.link_rows(Hour::from_index(i64::MIN), before, true, 1);
        Ok(links.await?.pop())
    }

    async fn prune_before(&self, hour: Hour) -> Result<u64> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let gone = tx
            .execute(
                &self.sql("DELETE FROM {s}.hours WHERE hour < $1"),
                &[&hour.index()],
            )
            .await
            .map_err(pg_error)?;
        for sql in [
            "DELETE FROM {s}.batches WHERE hour < $1",
            "DELETE FROM {s}.batch_counts WHERE hour < $1",
            "INSERT INTO {s}.meta (name, value) VALUES ('pruned_before', $1)
             ON CONFLICT (name) DO UPDATE SET value = GREATEST({s}.meta.value, excluded.value)",
        ] {
            tx.execute(&self.sql(sql), &[&hour.index()])
                .await
                .map_err(pg_error)?;
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(gone)
    }

    async fn ping(&self) -> Result<()> {
        let client = self.client().await?;
        client.simple_query("SELECT 1").await.map_err(pg_error)?;
        Ok(())
    }
}
