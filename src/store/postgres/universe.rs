//! The universe and exact bodies in PostgreSQL (migration 9): the universe's keys with
//! the hour each joined, one state row (its first hour and size, locked by every
//! change to the universe so adds, creation and seals' merges take turns), and each
//! hour's exact body with a checksum (the first stored wins).

use super::statements::Statements;
use super::{pg_error, PgStore};
use crate::bloom::Key;
use crate::hour::Hour;
use crate::store::{
    blob_to_keys, check_universe, exact_checksum, missing_since, universe_checksum,
    verify_universe_row, Result, StoreError, Tally, UniverseAdded, UniverseInfo,
};
use deadpool_postgres::Transaction;
use futures_util::TryStreamExt;

/// Migration 9.
pub(super) const MIGRATION: &str = r#"
-- The publisher's universe (docs/PROTOCOL.md section 14): keys, with the hour each
-- joined, so the universe as it stood when any hour was sealed can be read again.
CREATE TABLE {s}.universe (key bigint PRIMARY KEY, added bigint NOT NULL);
-- One row: the first hour with an exact body (NULL: no universe) and the key count.
CREATE TABLE {s}.universe_state (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    since bigint,
    count bigint NOT NULL DEFAULT 0
);
INSERT INTO {s}.universe_state (one) VALUES (true);
-- Each sealed hour's exact body, built once from the universe and the hour's keys.
CREATE TABLE {s}.exact_hours (
    hour     bigint PRIMARY KEY,
    body     bytea NOT NULL,
    checksum bigint NOT NULL
);
"#;

/// Keys per insert statement.
const CHUNK: usize = 50_000;

/// The universe's state row, locked until the transaction ends (`None, 0` when the row
/// is missing: damage, which [`PgStore::universe_info`] reports).
async fn lock_state(store: &PgStore, tx: &Transaction<'_>) -> Result<(Option<i64>, i64)> {
    let sql = store.sql("SELECT since, count FROM {s}.universe_state FOR UPDATE");
    let row = tx.row_opt(&sql, &[]).await.map_err(pg_error)?;
    Ok(row.map_or((None, 0), |row| (row.get(0), row.get(1))))
}

/// Fails as corrupt when the universe has rows or exact bodies though its state says
/// there is none.
async fn refuse_traces(store: &PgStore, tx: &Transaction<'_>) -> Result<()> {
    let sql = store.sql(
        "SELECT EXISTS (SELECT 1 FROM {s}.universe) OR EXISTS (SELECT 1 FROM {s}.exact_hours)
             OR EXISTS (SELECT 1 FROM {s}.hour_universe)",
    );
    let traces: bool = tx.row(&sql, &[]).await.map_err(pg_error)?.get(0);
    if traces {
        return Err(missing_since());
    }
    Ok(())
}

/// Inserts keys as joining in `hour`, each with its checksum, and adds the new ones to
/// the hour's tally (the caller holds the state row's lock: changes to the universe
/// take turns); how many were new.
async fn insert(store: &PgStore, tx: &Transaction<'_>, keys: &[Key], hour: Hour) -> Result<u64> {
    let sql = store.sql(
        "INSERT INTO {s}.universe (key, added, checksum)
         SELECT k, $2, c FROM unnest($1::bigint[], $3::bigint[]) AS t(k, c)
         ON CONFLICT (key) DO NOTHING RETURNING key",
    );
    let mut new = Tally::default();
    for chunk in keys.chunks(CHUNK) {
        let values: Vec<i64> = chunk.iter().map(|k| k.to_u64() as i64).collect();
        let sums: Vec<i64> = chunk.iter().map(|k| universe_checksum(hour, *k)).collect();
        for row in tx
            .rows(&sql, &[&values, &hour.index(), &sums])
            .await
            .map_err(pg_error)?
        {
            new.add(Key::from_u64(row.get::<_, i64>(0) as u64));
        }
    }
    if new.count > 0 {
        let was = tx
            .row_opt(
                &store.sql("SELECT count, sum FROM {s}.universe_hours WHERE added = $1"),
                &[&hour.index()],
            )
            .await
            .map_err(pg_error)?
            .map_or_else(Tally::default, |r| Tally::from_row(r.get(0), r.get(1)));
        let now = was.plus(new);
        tx.run(
            &store.sql(
                "INSERT INTO {s}.universe_hours (added, count, sum) VALUES ($1, $2, $3)
                 ON CONFLICT (added) DO UPDATE SET count = excluded.count, sum = excluded.sum",
            ),
            &[&hour.index(), &(now.count as i64), &now.stored_sum()],
        )
        .await
        .map_err(pg_error)?;
    }
    Ok(new.count)
}

/// The tally of the keys that joined in `through` or before, from the hours' tallies.
async fn tally_through(store: &PgStore, tx: &Transaction<'_>, through: Hour) -> Result<Tally> {
    let rows = tx
        .rows(
            &store.sql("SELECT count, sum FROM {s}.universe_hours WHERE added <= $1"),
            &[&through.index()],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().fold(Tally::default(), |t, r| {
        t.plus(Tally::from_row(r.get(0), r.get(1)))
    }))
}

/// Every key the store holds (sealed hours' and open batches'), into the universe as
/// joining in `hour`, one hour at a time.
async fn backfill(store: &PgStore, tx: &Transaction<'_>, hour: Hour) -> Result<u64> {
    let hours = store
        .sql("SELECT hour FROM {s}.hours UNION SELECT DISTINCT hour FROM {s}.batches ORDER BY 1");
    let blobs = store.sql(
        "SELECT keys FROM {s}.hours WHERE hour = $1 UNION ALL
         SELECT keys FROM {s}.batches WHERE hour = $1",
    );
    let mut added = 0;
    for row in tx.rows(&hours, &[]).await.map_err(pg_error)? {
        let of: i64 = row.get(0);
        let mut keys = Vec::new();
        for blob in tx.rows(&blobs, &[&of]).await.map_err(pg_error)? {
            // A blob that is not whole keys is left out here; its hour's own reads
            // report it as corrupt.
            let _ = blob_to_keys(blob.get(0), &mut keys);
        }
        added += insert(store, tx, &keys, hour).await?;
    }
    Ok(added)
}

async fn set_state(store: &PgStore, tx: &Transaction<'_>, since: Hour, count: u64) -> Result<()> {
    tx.run(
        &store.sql(
            "INSERT INTO {s}.universe_state (one, since, count) VALUES (true, $1, $2)
             ON CONFLICT (one) DO UPDATE SET since = excluded.since, count = excluded.count",
        ),
        &[&since.index(), &(count as i64)],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

impl PgStore {
    /// The universe's first hour and size; a universe whose first hour is missing while
    /// it has rows (or exact bodies) is damage, never "no universe".
    pub(super) async fn universe_info(&self) -> Result<Option<UniverseInfo>> {
        let client = self.client().await?;
        let sql = self.sql(
            "SELECT st.since, st.count,
                    EXISTS (SELECT 1 FROM {s}.universe) OR EXISTS (SELECT 1 FROM {s}.exact_hours)
                        OR EXISTS (SELECT 1 FROM {s}.hour_universe)
             FROM (SELECT 1) AS one LEFT JOIN {s}.universe_state st ON true",
        );
        let row = client.row(&sql, &[]).await.map_err(pg_error)?;
        match row.get::<_, Option<i64>>(0) {
            Some(since) => Ok(Some(UniverseInfo {
                count: row.get::<_, i64>(1).max(0) as u64,
                since: Hour::from_index(since),
            })),
            None if row.get::<_, bool>(2) => Err(missing_since()),
            None => Ok(None),
        }
    }

    pub(super) async fn add_universe_rows(
        &self,
        keys: &[Key],
        open: Hour,
        max: u64,
    ) -> Result<UniverseAdded> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let (since, before) = lock_state(self, &tx).await?;
        let before = before as u64;
        let mut count = before;
        let since = match since {
            Some(since) => Hour::from_index(since),
            None => {
                refuse_traces(self, &tx).await?;
                count += backfill(self, &tx, open).await?;
                // The first hour sealed from now on: not one closed meanwhile, whose
                // seal recorded no universe.
                let closed = tx
                    .row(
                        &self.sql("SELECT value FROM {s}.meta WHERE name = 'closed_through'"),
                        &[],
                    )
                    .await
                    .map_err(pg_error)?;
                open.max(Hour::from_index(closed.get::<_, i64>(0) + 1))
            }
        };
        count += insert(self, &tx, keys, open).await?;
        if count > max {
            // Dropping the transaction rolls it back: nothing of the batch is recorded.
            return Ok(UniverseAdded::Full { count: before });
        }
        set_state(self, &tx, since, count).await?;
        tx.commit().await.map_err(pg_error)?;
        Ok(UniverseAdded::Added { count })
    }

    /// The keys that joined by `through`, sorted. Rows are read as they arrive (a
    /// universe of 10M rows held as rows at once would take gigabytes), into one vector
    /// sized from the universe's count: 8 bytes a key, what an exact build reserves.
    ///
    /// Each row is verified and the keys checked against the tally recorded when
    /// `through` was sealed, in one snapshot.
    pub(super) async fn universe_key_rows(&self, through: Hour) -> Result<Vec<Key>> {
        let count = self.universe_info().await?.map_or(0, |u| u.count);
        let mut client = self.client().await?;
        let tx = super::snapshot(&mut client).await?;
        let sql = self.sql("SELECT key, added, checksum FROM {s}.universe WHERE added <= $1");
        let mut keys = Vec::with_capacity(count as usize);
        let mut tally = Tally::default();
        {
            let rows = tx
                .row_stream(&sql, &[&through.index()])
                .await
                .map_err(pg_error)?;
            futures_util::pin_mut!(rows);
            while let Some(row) = rows.try_next().await.map_err(pg_error)? {
                let key = Key::from_u64(row.get::<_, i64>(0) as u64);
                verify_universe_row(Hour::from_index(row.get(1)), key, row.get(2))?;
                tally.add(key);
                keys.push(key);
            }
        }
        let recorded = tx
            .row_opt(
                &self.sql("SELECT count, sum FROM {s}.hour_universe WHERE hour = $1"),
                &[&through.index()],
            )
            .await
            .map_err(pg_error)?
            .map(|r| Tally::from_row(r.get(0), r.get(1)));
        check_universe(through, tally, recorded)?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// Stores the body unless the hour has one that verifies (a rotten one is
    /// replaced); the stored body. Concurrent writers of one hour take turns on its row.
    pub(super) async fn put_exact_row(&self, hour: Hour, body: &[u8]) -> Result<Vec<u8>> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.run(
            &self.sql(
                "INSERT INTO {s}.exact_hours (hour, body, checksum) VALUES ($1, $2, $3)
                 ON CONFLICT (hour) DO NOTHING",
            ),
            &[&hour.index(), &body, &exact_checksum(hour, body)],
        )
        .await
        .map_err(pg_error)?;
        let row = tx
            .row(
                &self.sql("SELECT body, checksum FROM {s}.exact_hours WHERE hour = $1 FOR UPDATE"),
                &[&hour.index()],
            )
            .await
            .map_err(pg_error)?;
        let stored: Vec<u8> = row.get(0);
        if row.get::<_, i64>(1) == exact_checksum(hour, &stored) {
            tx.commit().await.map_err(pg_error)?;
            return Ok(stored);
        }
        tx.run(
            &self.sql("UPDATE {s}.exact_hours SET body = $2, checksum = $3 WHERE hour = $1"),
            &[&hour.index(), &body, &exact_checksum(hour, body)],
        )
        .await
        .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(body.to_vec())
    }

    pub(super) async fn exact_row(&self, hour: Hour) -> Result<Option<Vec<u8>>> {
        let client = self.client().await?;
        let sql = self.sql("SELECT body, checksum FROM {s}.exact_hours WHERE hour = $1");
        let row = client
            .row_opt(&sql, &[&hour.index()])
            .await
            .map_err(pg_error)?;
        match row {
            None => Ok(None),
            Some(row) => {
                let body: Vec<u8> = row.get(0);
                if row.get::<_, i64>(1) == exact_checksum(hour, &body) {
                    Ok(Some(body))
                } else {
                    Err(StoreError::Corrupt(format!(
                        "the exact body of {hour} fails its checksum"
                    )))
                }
            }
        }
    }

    /// `(hour, octet_length(body))` of the hours in `from..=to` with an exact body:
    /// the length of a stored `bytea` is read without detoasting its bytes.
    pub(super) async fn exact_size_rows(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let client = self.client().await?;
        let sql = self.sql(
            "SELECT hour, octet_length(body)::bigint FROM {s}.exact_hours
             WHERE hour BETWEEN $1 AND $2 ORDER BY hour",
        );
        let rows = client
            .rows(&sql, &[&from.index(), &to.index()])
            .await
            .map_err(pg_error)?;
        Ok(rows
            .iter()
            .map(|row| (Hour::from_index(row.get(0)), row.get::<_, i64>(1) as u64))
            .collect())
    }
}

/// A sealed hour's keys into the universe, when there is one, and the universe's tally
/// recorded with the hour, in the seal's transaction.
pub(super) async fn merge_sealed(
    store: &PgStore,
    tx: &Transaction<'_>,
    hour: Hour,
    keys: &[Key],
) -> Result<()> {
    let (since, count) = lock_state(store, tx).await?;
    let Some(since) = since.map(Hour::from_index) else {
        return Ok(());
    };
    let added = insert(store, tx, keys, hour).await?;
    set_state(store, tx, since, count as u64 + added).await?;
    if hour >= since {
        let tally = tally_through(store, tx, hour).await?;
        tx.run(
            &store.sql(
                "INSERT INTO {s}.hour_universe (hour, count, sum) VALUES ($1, $2, $3)
                 ON CONFLICT (hour) DO NOTHING",
            ),
            &[&hour.index(), &(tally.count as i64), &tally.stored_sum()],
        )
        .await
        .map_err(pg_error)?;
    }
    Ok(())
}
