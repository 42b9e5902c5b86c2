//! The cluster's clock in PostgreSQL: its `now()`, the time every node runs on in
//! cluster mode, and the clock record each heartbeat writes into `meta` (four rows,
//! `ClockRecord::ROWS`, replaced in one statement: no schema change, no migration).

use super::statements::Statements;
use super::{pg_error, PgStore};
use crate::clock::ClockRecord;
use crate::store::{Result, StoreError};
use chrono::{DateTime, TimeZone, Utc};

impl PgStore {
    /// PostgreSQL's `now()`, to the millisecond.
    pub(super) async fn now_row(&self) -> Result<DateTime<Utc>> {
        let client = self.client().await?;
        let row = client
            .row("SELECT (extract(epoch FROM now()) * 1000)::bigint", &[])
            .await
            .map_err(pg_error)?;
        let ms: i64 = row.get(0);
        Utc.timestamp_millis_opt(ms)
            .single()
            .ok_or_else(|| StoreError::bug(format!("PostgreSQL's now() is out of range: {ms} ms")))
    }

    /// The record's rows, read in one statement (one snapshot).
    pub(super) async fn clock_rows(&self) -> Result<Option<ClockRecord>> {
        let client = self.client().await?;
        let sql = self.sql("SELECT name, value FROM {s}.meta WHERE name = ANY($1)");
        let names: Vec<&str> = ClockRecord::ROWS.to_vec();
        let rows = client.rows(&sql, &[&names]).await.map_err(pg_error)?;
        let mut values = [None; 4];
        for row in rows {
            let name: &str = row.get(0);
            if let Some(i) = ClockRecord::ROWS.iter().position(|n| *n == name) {
                values[i] = Some(row.get::<_, i64>(1));
            }
        }
        Ok(ClockRecord::from_rows(values))
    }

    /// The heartbeat: the record's four rows replaced in one statement, a write that
    /// proves PostgreSQL takes writes (rows always upserted in the same order, so
    /// heartbeats of several nodes never deadlock).
    pub(super) async fn put_clock_rows(&self, record: &ClockRecord) -> Result<()> {
        let client = self.client().await?;
        let sql = self.sql(
            "INSERT INTO {s}.meta (name, value)
             SELECT * FROM unnest($1::text[], $2::bigint[])
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        );
        let names: Vec<&str> = ClockRecord::ROWS.to_vec();
        let values: Vec<i64> = record.to_rows().to_vec();
        client
            .run(&sql, &[&names, &values])
            .await
            .map_err(pg_error)?;
        Ok(())
    }
}
