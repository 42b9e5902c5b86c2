//! The service's one error type: every way a call into the service fails, in the
//! service's own terms (the HTTP layer says which status each is), and its `Result`.

use crate::bloom::FilterError;
use crate::hour::Hour;
use crate::store::StoreError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Gone(String),
    #[error("{0}")]
    BadRange(String),
    /// The batch would take the hour past `max_hour_ids` distinct IDs; nothing was recorded.
    #[error("the hour {hour} is full: it holds {count} distinct IDs and the limit is {max}")]
    HourFull { hour: Hour, count: u64, max: u64 },
    /// The batch would take the universe past `max_universe_ids` distinct IDs; nothing
    /// was recorded.
    #[error("the universe is full: it holds {count} distinct IDs and the limit is {max}")]
    UniverseFull { count: u64, max: u64 },
    /// A union whose build alone would need more memory than the builds' part of the
    /// budget: it never fits; the message names the longest range that does.
    #[error("{0}")]
    RangeTooLarge(String),
    /// A bounded pool is full; retry shortly.
    #[error("{0}")]
    Busy(String),
    /// The resource exists, but not in the representation asked for (a compact
    /// filter of the open hour).
    #[error("{0}")]
    NotAcceptable(String),
    /// An operator confirmed the clock, and no jump is held (the message says what the
    /// clock does instead).
    #[error("{0}")]
    NothingToConfirm(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored data of `hour` failed verification (recorded for `/healthz`): nothing
    /// it does not vouch for is served. `keys_only`: only the hour's stored keys did,
    /// so its own sealed filter is still served, but nothing built from its keys.
    #[error("hour {hour}: {source}")]
    Corrupt {
        hour: Hour,
        keys_only: bool,
        #[source]
        source: StoreError,
    },
    /// A filter could not be built or read back (a stored filter that fails to decode).
    #[error("filter error: {0}")]
    Filter(#[from] FilterError),
    /// A background task the request waited on failed (a panic while building).
    #[error("background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;
