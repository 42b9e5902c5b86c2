//! Derived bodies' records in the embedded store (schema version 7, see
//! [`crate::store::FormRecord`]): written through the writer thread, first write wins.

use super::sql_error;
use crate::chain::Hash;
use crate::hour::Hour;
use crate::store::FormName;
use crate::store::{FormRecord, Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// Version 7: the records of derived bodies.
pub(super) const V7: &str = "
CREATE TABLE forms (
    from_hour INTEGER NOT NULL,
    to_hour   INTEGER NOT NULL,
    form      TEXT NOT NULL,
    digest    BLOB NOT NULL,
    PRIMARY KEY (from_hour, to_hour, form)
) WITHOUT ROWID;
";

/// Inserts the record unless the range and form have one; the digest stored.
pub(super) fn record(tx: &Transaction, record: &FormRecord) -> Result<Hash> {
    let (from, to, form) = (
        record.from.index(),
        record.to.index(),
        record.form.to_string(),
    );
    tx.execute(
        "INSERT INTO forms (from_hour, to_hour, form, digest) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT DO NOTHING",
        params![from, to, form, &record.digest[..]],
    )
    .map_err(sql_error)?;
    digest(tx, record.from, record.to, record.form)?
        .ok_or_else(|| StoreError::bug("a form record inserted is not there"))
}

/// The digest recorded for the `form` of `from..=to`, if any.
pub(super) fn digest(
    conn: &Connection,
    from: Hour,
    to: Hour,
    form: FormName,
) -> Result<Option<Hash>> {
    let stored: Option<Vec<u8>> = conn
        .prepare_cached(
            "SELECT digest FROM forms WHERE from_hour = ?1 AND to_hour = ?2 AND form = ?3",
        )
        .map_err(sql_error)?
        .query_row(params![from.index(), to.index(), form.to_string()], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql_error)?;
    let record = FormRecord {
        from,
        to,
        form,
        digest: [0; 32],
    };
    stored.map(|d| record.digest_of_row(&d)).transpose()
}
