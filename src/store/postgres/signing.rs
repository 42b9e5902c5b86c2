//! The signing key registry and the hours' signatures in PostgreSQL (migration 6):
//! first write wins, never pruned. Nodes register keys one at a time (an advisory lock).

use super::statements::Statements;
use super::{client_of, pg_error, PgStore};
use crate::chain::{ListedKey, PublicKey, Succession};
use crate::hour::Hour;
use crate::store::{key_from_row, HourSignature, Result};
use deadpool_postgres::Pool;

/// Migration 11: each key's succession signatures (see [`crate::chain::Succession`]).
pub(super) const MIGRATION_11: &str = r#"
ALTER TABLE {s}.signing_keys ADD COLUMN vouch bytea, ADD COLUMN ack bytea;
"#;

/// Migration 6: the key registry and the signatures.
pub(super) const MIGRATION: &str = r#"
-- Every key the service has signed with and the hours it covers (see
-- crate::chain::KeyList); last_hour NULL for the current key.
CREATE TABLE {s}.signing_keys (
    public_key bytea PRIMARY KEY,
    first_hour bigint NOT NULL UNIQUE,
    last_hour  bigint
);
-- Each sealed hour's signature, made once by the key registered for the hour; hours
-- sealed before this migration are signed when next served.
CREATE TABLE {s}.signatures (
    hour      bigint PRIMARY KEY,
    key_id    bytea NOT NULL,
    signature bytea NOT NULL
);
"#;

impl PgStore {
    pub(super) async fn key_rows(&self) -> Result<Vec<ListedKey>> {
        let client = self.client().await?;
        let rows = client
            .rows(
                &self.sql(
                    "SELECT public_key, first_hour, last_hour, vouch, ack FROM {s}.signing_keys
                     ORDER BY first_hour",
                ),
                &[],
            )
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|r| key_from_row(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect()
    }

    pub(super) async fn register_key_row(
        &self,
        key: &PublicKey,
        first: Hour,
        current: Option<&PublicKey>,
        succession: &Succession,
    ) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.run(
            "SELECT pg_advisory_xact_lock(hashtext('bloomcast-keys:' || $1))",
            &[&self.schema],
        )
        .await
        .map_err(pg_error)?;
        let open: Option<Vec<u8>> = tx
            .row_opt(
                &self.sql("SELECT public_key FROM {s}.signing_keys WHERE last_hour IS NULL"),
                &[],
            )
            .await
            .map_err(pg_error)?
            .map(|r| r.get(0));
        if open != current.map(|k| k.as_bytes().to_vec()) {
            return Ok(false);
        }
        tx.run(
            &self.sql("UPDATE {s}.signing_keys SET last_hour = $1 WHERE last_hour IS NULL"),
            &[&first.prev().index()],
        )
        .await
        .map_err(pg_error)?;
        let inserted = tx
            .run(
                &self.sql(
                    "INSERT INTO {s}.signing_keys (public_key, first_hour, vouch, ack)
                     VALUES ($1, $2, $3, $4)",
                ),
                &[
                    &&key.as_bytes()[..],
                    &first.index(),
                    &succession.vouch.as_ref().map(|s| &s[..]),
                    &succession.ack.as_ref().map(|s| &s[..]),
                ],
            )
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(inserted == 1)
    }

    /// Stores `key`'s acknowledgement of its predecessor unless it has one.
    pub(super) async fn put_ack_row(&self, key: &PublicKey, ack: &[u8; 64]) -> Result<bool> {
        let client = self.client().await?;
        let updated = client
            .run(
                &self.sql(
                    "UPDATE {s}.signing_keys SET ack = $2 WHERE public_key = $1 AND ack IS NULL",
                ),
                &[&&key.as_bytes()[..], &&ack[..]],
            )
            .await
            .map_err(pg_error)?;
        Ok(updated == 1)
    }

    /// Inserts unless the hour has a signature or `key` is not registered for it, under
    /// the registry's lock shared (a registration waits, and is seen whole).
    pub(super) async fn put_signature_row(
        &self,
        s: &HourSignature,
        key: &PublicKey,
    ) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.run(
            "SELECT pg_advisory_xact_lock_shared(hashtext('bloomcast-keys:' || $1))",
            &[&self.schema],
        )
        .await
        .map_err(pg_error)?;
        let inserted = tx
            .run(
                &self.sql(
                    "INSERT INTO {s}.signatures (hour, key_id, signature)
                     SELECT $1, $2, $3 WHERE EXISTS (
                         SELECT 1 FROM {s}.signing_keys WHERE public_key = $4
                             AND first_hour <= $1 AND (last_hour IS NULL OR last_hour >= $1))
                     ON CONFLICT (hour) DO NOTHING",
                ),
                &[
                    &s.hour.index(),
                    &&s.key_id.0[..],
                    &&s.signature[..],
                    &&key.as_bytes()[..],
                ],
            )
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(inserted == 1)
    }

    pub(super) async fn signature_rows(
        &self,
        pool: &Pool,
        from: Hour,
        to: Hour,
    ) -> Result<Vec<HourSignature>> {
        let client = client_of(pool).await?;
        let rows = client
            .rows(
                &self.sql(
                    "SELECT hour, key_id, signature FROM {s}.signatures
                     WHERE hour >= $1 AND hour <= $2 ORDER BY hour",
                ),
                &[&from.index(), &to.index()],
            )
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|r| HourSignature::from_row(Hour::from_index(r.get(0)), r.get(1), r.get(2)))
            .collect()
    }
}
