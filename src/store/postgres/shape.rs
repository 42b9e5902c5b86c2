//! The cluster's hour-shaping settings in PostgreSQL (migration 7): one row, written by
//! the first node that starts (insert if absent, so racing nodes agree on the first
//! writer's), changed only by `bloomcast cluster-settings set`.

use super::{pg_error, PgStore};
use crate::store::{HourShape, Result, StoreError};

/// Migration 7: the one row of hour-shaping settings.
pub(super) const MIGRATION: &str = r#"
-- The settings that shape an hour's bytes (crate::store::HourShape), one row for the
-- cluster: every node builds hours with these, whatever its own configuration says.
CREATE TABLE {s}.hour_shape (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    capacity   bigint NOT NULL CHECK (capacity > 0),
    target_fpp double precision NOT NULL CHECK (target_fpp > 0 AND target_fpp < 1),
    changed_at timestamptz NOT NULL DEFAULT now()
);
"#;

impl PgStore {
    /// The cluster's hour shape, recorded as `local` first if none is recorded yet.
    ///
    /// # Errors
    /// Store failures; a stored capacity that is not a count.
    pub async fn recorded_hour_shape(&self, local: &HourShape) -> Result<HourShape> {
        let client = self.client().await?;
        let capacity = i64::try_from(local.capacity)
            .map_err(|e| StoreError::failed("capacity does not fit PostgreSQL's bigint", e))?;
        client
            .execute(
                &self.sql(
                    "INSERT INTO {s}.hour_shape (capacity, target_fpp) VALUES ($1, $2)
                     ON CONFLICT (one) DO NOTHING",
                ),
                &[&capacity, &local.target_fpp],
            )
            .await
            .map_err(pg_error)?;
        let row = client
            .query_one(
                &self.sql("SELECT capacity, target_fpp FROM {s}.hour_shape"),
                &[],
            )
            .await
            .map_err(pg_error)?;
        let capacity: i64 = row.get(0);
        Ok(HourShape {
            capacity: u64::try_from(capacity)
                .map_err(|e| StoreError::Corrupt(format!("hour_shape.capacity: {e}")))?,
            target_fpp: row.get(1),
        })
    }

    /// Records `shape` as the cluster's; nodes build hours with it from their next start.
    ///
    /// # Errors
    /// Store failures; values outside the table's checks.
    pub async fn set_hour_shape(&self, shape: &HourShape) -> Result<()> {
        let client = self.client().await?;
        let capacity = i64::try_from(shape.capacity)
            .map_err(|e| StoreError::failed("capacity does not fit PostgreSQL's bigint", e))?;
        client
            .execute(
                &self.sql(
                    "INSERT INTO {s}.hour_shape (capacity, target_fpp) VALUES ($1, $2)
                     ON CONFLICT (one) DO UPDATE
                     SET capacity = $1, target_fpp = $2, changed_at = now()",
                ),
                &[&capacity, &shape.target_fpp],
            )
            .await
            .map_err(pg_error)?;
        Ok(())
    }
}
