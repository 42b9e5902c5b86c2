//! The signing key registry and the hours' signatures in SQLite (schema version 5):
//! written through the writer thread, first write wins, never pruned.

use super::{sql_error, SqliteStore};
use crate::chain::{ListedKey, PublicKey, Succession};
use crate::hour::Hour;
use crate::store::{key_from_row, HourSignature, Result};
use rusqlite::{params, Connection, OptionalExtension};

/// Version 5: the key registry and the signatures. Hours sealed before it have none
/// stored: each is signed once, when next served, by the key registered for it.
pub(super) const V5: &str = "
CREATE TABLE signing_keys (
    public_key BLOB PRIMARY KEY,
    first_hour INTEGER NOT NULL UNIQUE,
    last_hour  INTEGER
);
CREATE TABLE signatures (
    hour      INTEGER PRIMARY KEY,
    key_id    BLOB NOT NULL,
    signature BLOB NOT NULL
);
";

/// Version 8: each key's succession signatures (see [`crate::chain::Succession`]).
pub(super) const V8: &str = "
ALTER TABLE signing_keys ADD COLUMN vouch BLOB;
ALTER TABLE signing_keys ADD COLUMN ack BLOB;
";

/// Registers `key` from `first` on, with its `succession`, if the open key is still
/// `current` (on the writer thread, in its transaction); says whether it did.
pub(super) fn register(
    tx: &Connection,
    key: &PublicKey,
    first: Hour,
    current: Option<&PublicKey>,
    succession: &Succession,
) -> Result<bool> {
    let open: Option<Vec<u8>> = tx
        .query_row(
            "SELECT public_key FROM signing_keys WHERE last_hour IS NULL",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql_error)?;
    let current = current.map(|k| k.as_bytes().to_vec());
    if open != current {
        return Ok(false);
    }
    tx.execute(
        "UPDATE signing_keys SET last_hour = ?1 WHERE last_hour IS NULL",
        [first.prev().index()],
    )
    .map_err(sql_error)?;
    let inserted = tx
        .execute(
            "INSERT INTO signing_keys (public_key, first_hour, vouch, ack) VALUES (?1, ?2, ?3, ?4)",
            params![
                &key.as_bytes()[..],
                first.index(),
                succession.vouch.as_ref().map(|s| &s[..]),
                succession.ack.as_ref().map(|s| &s[..])
            ],
        )
        .map_err(sql_error)?;
    Ok(inserted == 1)
}

/// Stores `key`'s acknowledgement of its predecessor unless it has one; says whether it
/// did.
pub(super) fn put_ack(tx: &Connection, key: &PublicKey, ack: &[u8; 64]) -> Result<bool> {
    let updated = tx
        .execute(
            "UPDATE signing_keys SET ack = ?2 WHERE public_key = ?1 AND ack IS NULL",
            params![&key.as_bytes()[..], &ack[..]],
        )
        .map_err(sql_error)?;
    Ok(updated == 1)
}

/// Inserts an hour's signature unless it has one or `key` is not registered for the
/// hour; says whether it did.
pub(super) fn insert_signature(
    tx: &Connection,
    s: &HourSignature,
    key: &PublicKey,
) -> Result<bool> {
    let inserted = tx
        .execute(
            "INSERT INTO signatures (hour, key_id, signature)
             SELECT ?1, ?2, ?3 WHERE EXISTS (
                 SELECT 1 FROM signing_keys WHERE public_key = ?4 AND first_hour <= ?1
                     AND (last_hour IS NULL OR last_hour >= ?1))
             ON CONFLICT (hour) DO NOTHING",
            params![
                s.hour.index(),
                &s.key_id.0[..],
                &s.signature[..],
                &key.as_bytes()[..]
            ],
        )
        .map_err(sql_error)?;
    Ok(inserted == 1)
}

impl SqliteStore {
    pub(super) async fn key_rows(&self) -> Result<Vec<ListedKey>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT public_key, first_hour, last_hour, vouch, ack FROM signing_keys
                     ORDER BY first_hour",
                )
                .map_err(sql_error)?;
            let mut rows = stmt.query([]).map_err(sql_error)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(sql_error)? {
                let blob = |i| r.get::<_, Option<Vec<u8>>>(i).map_err(sql_error);
                out.push(key_from_row(
                    &r.get::<_, Vec<u8>>(0).map_err(sql_error)?,
                    r.get(1).map_err(sql_error)?,
                    r.get(2).map_err(sql_error)?,
                    blob(3)?.as_deref(),
                    blob(4)?.as_deref(),
                )?);
            }
            Ok(out)
        })
        .await
    }

    pub(super) async fn signature_rows(&self, from: Hour, to: Hour) -> Result<Vec<HourSignature>> {
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT hour, key_id, signature FROM signatures
                     WHERE hour >= ?1 AND hour <= ?2 ORDER BY hour",
                )
                .map_err(sql_error)?;
            let mut rows = stmt.query([from.index(), to.index()]).map_err(sql_error)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(sql_error)? {
                let blob = |i| r.get::<_, Vec<u8>>(i).map_err(sql_error);
                out.push(HourSignature::from_row(
                    Hour::from_index(r.get(0).map_err(sql_error)?),
                    &blob(1)?,
                    &blob(2)?,
                )?);
            }
            Ok(out)
        })
        .await
    }
}
