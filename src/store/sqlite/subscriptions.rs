//! The WebSub hub's rows (schema version 9): `subscriptions`, one per callback and
//! topic, and `deliveries`, the sealed hours whose delivery was claimed.

use super::errors::sql_error;
use crate::hour::Hour;
use crate::store::{Result, Subscription};
use rusqlite::{params, Connection, Transaction};

/// Version 9: the hub's subscriptions and claimed deliveries.
pub(super) const V9: &str = "
CREATE TABLE subscriptions (
    callback TEXT NOT NULL,
    topic TEXT NOT NULL,
    secret TEXT,
    expires INTEGER NOT NULL,
    PRIMARY KEY (callback, topic)
);
CREATE TABLE deliveries (hour INTEGER PRIMARY KEY);
";

pub(super) fn put(tx: &Transaction, s: &Subscription) -> Result<bool> {
    tx.execute(
        "INSERT INTO subscriptions (callback, topic, secret, expires) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (callback, topic) DO UPDATE SET secret = excluded.secret, expires = excluded.expires",
        params![s.callback, s.topic, s.secret, s.expires],
    )
    .map_err(sql_error)?;
    Ok(true)
}

pub(super) fn remove(tx: &Transaction, callback: &str, topic: &str) -> Result<bool> {
    let n = tx
        .execute(
            "DELETE FROM subscriptions WHERE callback = ?1 AND topic = ?2",
            params![callback, topic],
        )
        .map_err(sql_error)?;
    Ok(n > 0)
}

pub(super) fn claim(tx: &Transaction, hour: Hour) -> Result<bool> {
    let n = tx
        .execute(
            "INSERT INTO deliveries (hour) VALUES (?1) ON CONFLICT (hour) DO NOTHING",
            [hour.index()],
        )
        .map_err(sql_error)?;
    Ok(n > 0)
}

pub(super) fn all(conn: &Connection) -> Result<Vec<Subscription>> {
    let mut stmt = conn
        .prepare(
            "SELECT callback, topic, secret, expires FROM subscriptions ORDER BY callback, topic",
        )
        .map_err(sql_error)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Subscription {
                callback: r.get(0)?,
                topic: r.get(1)?,
                secret: r.get(2)?,
                expires: r.get(3)?,
            })
        })
        .map_err(sql_error)?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)
}

/// A change to the hub's rows (one writer command).
#[derive(Debug)]
pub(in crate::store) enum HubChange {
    Put(Subscription),
    Remove { callback: String, topic: String },
    Claim(Hour),
}

pub(super) fn apply(tx: &Transaction, change: &HubChange) -> Result<bool> {
    match change {
        HubChange::Put(s) => put(tx, s),
        HubChange::Remove { callback, topic } => remove(tx, callback, topic),
        HubChange::Claim(hour) => claim(tx, *hour),
    }
}
