//! The hour chain's rows in PostgreSQL (migration 4): written once per hour, first
//! write wins, never pruned.

use super::statements::Statements;
use super::{client_of, pg_error, PgStore};
use crate::hour::Hour;
use crate::store::{ChainLink, Linking, Result};
use deadpool_postgres::Pool;

/// Migration 4: the chain table.
pub(super) const MIGRATION: &str = r#"
-- The hour chain (see crate::chain): one row per sealed hour, kept when the hour is
-- pruned. checksum: see crate::store::ChainLink::checksum.
CREATE TABLE {s}.chain (
    hour     bigint PRIMARY KEY,
    digest   bytea NOT NULL,
    prev     bytea NOT NULL,
    header   bytea NOT NULL,
    checksum bigint NOT NULL
);
"#;

impl PgStore {
    /// Inserts a link unless the hour has one; the row count says which. The chain's
    /// first hour (`chain_since`) is set with the first link, in the same statement.
    pub(super) async fn put_link_row(&self, link: &ChainLink) -> Result<Linking> {
        let client = self.client().await?;
        let row = client
            .row(
                &self.sql(
                    "WITH l AS (
                         INSERT INTO {s}.chain (hour, digest, prev, header, checksum)
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hour) DO NOTHING
                         RETURNING hour),
                     m AS (
                         INSERT INTO {s}.meta (name, value) VALUES ('chain_since', $1)
                         ON CONFLICT (name) DO NOTHING)
                     SELECT count(*) FROM l",
                ),
                &[
                    &link.hour.index(),
                    &&link.digest[..],
                    &&link.prev[..],
                    &&link.header[..],
                    &link.checksum(),
                ],
            )
            .await
            .map_err(pg_error)?;
        Ok(Linking::of_rows_inserted(row.get::<_, i64>(0) as u64))
    }

    pub(super) async fn link_rows(
        &self,
        pool: &Pool,
        from: Hour,
        before: Hour,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<ChainLink>> {
        let client = client_of(pool).await?;
        let order = if newest_first { "DESC" } else { "ASC" };
        let sql = self.sql(&format!(
            "SELECT hour, digest, prev, header, checksum FROM {{s}}.chain
             WHERE hour >= $1 AND hour < $2 ORDER BY hour {order} LIMIT $3"
        ));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .rows(&sql, &[&from.index(), &before.index(), &limit])
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|r| {
                ChainLink::verify_row(
                    Hour::from_index(r.get(0)),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                )
            })
            .collect()
    }
}
