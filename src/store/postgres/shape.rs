//! The cluster's hour-shaping settings in PostgreSQL (migration 7): rows that each apply
//! from their hour on. The first node to start records its own values for every hour
//! (insert if absent, so racing nodes agree on the first writer's);
//! `bloomcast cluster-settings set` adds a row from a later hour. Nodes read the row in
//! effect for an hour when they seal it, so every node seals an hour alike, whenever it
//! started.

use super::statements::Statements;
use super::{pg_error, PgStore};
use crate::hour::Hour;
use crate::store::{HourShape, Result, StoreError};

/// Migration 7: the hour-shaping settings and the hours they apply from.
pub(super) const MIGRATION: &str = r#"
-- The settings that shape an hour's bytes (crate::store::HourShape): each row applies
-- to the hours from from_hour until the next row's (the first node's row from the
-- smallest bigint, so for every hour).
CREATE TABLE {s}.hour_shapes (
    from_hour   bigint PRIMARY KEY,
    capacity    bigint NOT NULL CHECK (capacity > 0),
    target_fpp  double precision NOT NULL CHECK (target_fpp > 0 AND target_fpp < 1),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
"#;

impl PgStore {
    /// The cluster's hour shape in effect for `hour`, `local` recorded for every hour
    /// first if none is recorded yet.
    ///
    /// # Errors
    /// Store failures; a stored capacity that is not a count.
    pub async fn recorded_hour_shape(&self, local: &HourShape, hour: Hour) -> Result<HourShape> {
        let client = self.client().await?;
        let sql = self.sql(
            "SELECT capacity, target_fpp FROM {s}.hour_shapes WHERE from_hour <= $1
             ORDER BY from_hour DESC LIMIT 1",
        );
        let mut row = client
            .row_opt(&sql, &[&hour.index()])
            .await
            .map_err(pg_error)?;
        if row.is_none() {
            client
                .run(
                    &self.sql(
                        "INSERT INTO {s}.hour_shapes (from_hour, capacity, target_fpp)
                         VALUES ($1, $2, $3) ON CONFLICT (from_hour) DO NOTHING",
                    ),
                    &[&i64::MIN, &bigint(local.capacity)?, &local.target_fpp],
                )
                .await
                .map_err(pg_error)?;
            row = client
                .row_opt(&sql, &[&hour.index()])
                .await
                .map_err(pg_error)?;
        }
        let row = row.ok_or_else(|| StoreError::bug("hour_shapes has no row for every hour"))?;
        let capacity: i64 = row.get(0);
        Ok(HourShape {
            capacity: u64::try_from(capacity)
                .map_err(|e| StoreError::Corrupt(format!("hour_shapes.capacity: {e}")))?,
            target_fpp: row.get(1),
        })
    }

    /// The changes recorded for hours after `hour` (by `bloomcast cluster-settings set`),
    /// not yet in effect: each with the first hour it applies to, in order.
    ///
    /// # Errors
    /// Store failures; a stored capacity that is not a count.
    pub async fn pending_hour_shapes(&self, hour: Hour) -> Result<Vec<(Hour, HourShape)>> {
        let client = self.client().await?;
        let rows = client
            .rows(
                &self.sql(
                    "SELECT from_hour, capacity, target_fpp FROM {s}.hour_shapes
                     WHERE from_hour > $1 ORDER BY from_hour",
                ),
                &[&hour.index()],
            )
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|row| {
                let capacity: i64 = row.get(1);
                let shape = HourShape {
                    capacity: u64::try_from(capacity)
                        .map_err(|e| StoreError::Corrupt(format!("hour_shapes.capacity: {e}")))?,
                    target_fpp: row.get(2),
                };
                Ok((Hour::from_index(row.get(0)), shape))
            })
            .collect()
    }

    /// Records `shape` as the cluster's from hour `from` on (replacing any change
    /// recorded for a later hour, which no hour has used yet if `from` is in the future).
    ///
    /// # Errors
    /// Store failures; values outside the table's checks.
    pub async fn set_hour_shape(&self, shape: &HourShape, from: Hour) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.run(
            &self.sql("DELETE FROM {s}.hour_shapes WHERE from_hour > $1"),
            &[&from.index()],
        )
        .await
        .map_err(pg_error)?;
        tx.run(
            &self.sql(
                "INSERT INTO {s}.hour_shapes (from_hour, capacity, target_fpp) VALUES ($1, $2, $3)
                 ON CONFLICT (from_hour) DO UPDATE
                 SET capacity = $2, target_fpp = $3, recorded_at = now()",
            ),
            &[&from.index(), &bigint(shape.capacity)?, &shape.target_fpp],
        )
        .await
        .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(())
    }
}

fn bigint(capacity: u64) -> Result<i64> {
    i64::try_from(capacity)
        .map_err(|e| StoreError::failed("capacity does not fit PostgreSQL's bigint", e))
}
