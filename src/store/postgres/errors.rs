//! What a PostgreSQL or pool error means to a caller: retryable (`Unavailable`) or not,
//! decided by SQLSTATE class or by the connection's state, never by message text.

use crate::store::StoreError;
use deadpool_postgres::PoolError;

/// Classifies a PostgreSQL error by its SQLSTATE class or, without one, by whether the
/// connection failed, keeping it as the cause: connection trouble, shutdown, a full disk
/// or exhausted resources are retryable; SQL errors are not.
pub(super) fn pg_error(e: tokio_postgres::Error) -> StoreError {
    let retryable = match e.code() {
        // 08: connection exception; 57: operator intervention (shutdown, cancel);
        // 53: insufficient resources (disk full, out of memory, too many connections);
        // 58: system error (I/O); 40001/40P01: serialization failure, deadlock.
        Some(code) => {
            matches!(&code.code()[..2], "08" | "57" | "53" | "58")
                || matches!(code.code(), "40001" | "40P01")
        }
        None => e.is_closed() || io_caused(&e),
    };
    let what = match e.as_db_error() {
        // The Display of a server error is only "db error"; the detail is in the DbError.
        Some(db) => format!("PostgreSQL {}: {}", db.code().code(), db.message()),
        None => "PostgreSQL".to_owned(),
    };
    if retryable {
        StoreError::unavailable(what, e)
    } else {
        StoreError::failed(what, e)
    }
}

/// Whether an I/O error (refused, reset, timed out) is among the causes.
fn io_caused(e: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

pub(super) fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => pg_error(e),
        other => StoreError::unavailable("no PostgreSQL connection available", other),
    }
}

/// A failed first connection, with the driver's error (not the pool's wrapper) as cause.
pub(super) fn connect_error(e: PoolError) -> StoreError {
    let what = "cannot connect to the database";
    match e {
        PoolError::Backend(e) => StoreError::unavailable(what, e),
        other => StoreError::unavailable(what, other),
    }
}
