//! What a SQLite error means to a caller: retryable (`Unavailable`), corrupt data, or a
//! failure, decided by the error's result code, never by message text.

use crate::store::StoreError;

/// Classifies a SQLite error by its result code, keeping it as the cause: what a full
/// disk, an I/O error, a read-only file or a lock answers is retryable; corruption is not.
pub(super) fn sql_error(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode as C;
    let code = match &e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(
            C::DiskFull
            | C::SystemIoFailure
            | C::ReadOnly
            | C::DatabaseBusy
            | C::DatabaseLocked
            | C::CannotOpen
            | C::OutOfMemory
            | C::PermissionDenied
            | C::FileLockingProtocolFailed,
        ) => StoreError::unavailable("the SQLite database cannot be written or read", e),
        Some(C::DatabaseCorrupt | C::NotADatabase) => StoreError::Corrupt(format!("SQLite: {e}")),
        // A value of the wrong type or range in bloomcast's own tables: rot in a record.
        _ if matches!(
            e,
            rusqlite::Error::InvalidColumnType(..)
                | rusqlite::Error::IntegralValueOutOfRange(..)
                | rusqlite::Error::FromSqlConversionFailure(..)
        ) =>
        {
            StoreError::Corrupt(format!("SQLite: a stored value is malformed: {e}"))
        }
        _ => StoreError::failed("SQLite", e),
    }
}
