//! The service's one error type: every way a call into the service fails, in the
//! service's own terms and with the data of why (which hour, how much memory); the HTTP
//! layer says which status, code and message each is. And its `Result`.

use crate::bloom::{FilterError, PartsError};
use crate::hour::Hour;
use crate::service::Target;
use crate::store::StoreError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServiceError {
    /// `asked` (or its first hour) lies after the current hour `now`.
    #[error("{asked:?} is in the future; the current hour is {now}")]
    InFuture { asked: Target, now: Hour },
    /// `hour` is before the service's first hour `genesis`: nothing is known about it.
    #[error("{hour} is before this service's first hour {genesis}")]
    BeforeGenesis { hour: Hour, genesis: Hour },
    /// `hour` is older than the retention of `retention_hours` hours.
    #[error("{hour} is past the retention of {retention_hours} hours")]
    PastRetention { hour: Hour, retention_hours: u64 },
    /// `asked` is, or includes, the open hour `open`, which has no compact form yet.
    #[error("{asked:?} includes the open hour {open}, which has no compact form")]
    OpenHasNoCompactForm { asked: Target, open: Hour },
    /// `asked` is a day or a range: the paged form is an hour's alone.
    #[error("{asked:?} is not an hour: only hours have a paged form")]
    PagesAreHourly { asked: Target },
    /// `asked` is, or ends in, the open hour `open`: an exact form covers sealed hours
    /// only (a range's covers its closed hours, the open hour fetched on its own).
    #[error("{asked:?} is or ends in the open hour {open} and has no exact form")]
    OpenHasNoExactForm { asked: Target, open: Hour },
    /// The service has no universe, so no exact hours.
    #[error("this service has no universe")]
    NoUniverse,
    /// `hour` (an hour asked for, or the first of a range) was sealed before the universe
    /// existed (exact hours start at `since`).
    #[error("{hour} was sealed before the universe existed (since {since})")]
    BeforeUniverse { hour: Hour, since: Hour },
    /// A build whose working memory alone (`needed` bytes) is more than the builds'
    /// `budget` (bytes): it never fits.
    #[error("{work:?} needs {needed} bytes, more than the build budget of {budget}")]
    TooLargeForBudget {
        work: Work,
        needed: u64,
        budget: u64,
    },
    /// Other builds hold so much of the budget that the `needed` bytes are not `left`
    /// now; retry shortly.
    #[error("{work:?} needs {needed} bytes and other builds leave {left}")]
    BudgetTaken { work: Work, needed: u64, left: u64 },
    /// This client has `waiting` builds waiting for the pool already; retry shortly.
    #[error("this client has {waiting} builds waiting already")]
    TooManyWaiting { waiting: usize },
    /// The batch would take the hour past `max_hour_ids` distinct IDs; nothing was recorded.
    #[error("the hour {hour} is full: it holds {count} distinct IDs and the limit is {max}")]
    HourFull { hour: Hour, count: u64, max: u64 },
    /// The batch would take the universe past `max_universe_ids` distinct IDs; nothing
    /// was recorded.
    #[error("the universe is full: it holds {count} distinct IDs and the limit is {max}")]
    UniverseFull { count: u64, max: u64 },
    /// An operator confirmed the clock, and no jump is held: the service follows its
    /// clock, or (`node_offset_seconds`) this node's clock is that far off the cluster's,
    /// which a node cannot confirm.
    #[error("no clock jump is held")]
    NoClockJumpHeld { node_offset_seconds: Option<i64> },
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
    /// A union's keys could not be written to, or read back from, their temporary
    /// file (a full disk).
    #[error("a union's keys could not be spilled to a temporary file: {0}")]
    Spill(#[source] std::io::Error),
    /// A background task the request waited on failed (a panic while building).
    #[error("background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<PartsError<std::io::Error>> for ServiceError {
    fn from(e: PartsError<std::io::Error>) -> Self {
        match e {
            PartsError::Filter(e) => ServiceError::Filter(e),
            PartsError::Read(e) => ServiceError::Spill(e),
        }
    }
}

/// Work that takes its memory from the builds' budget, named in the errors that refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Building the union of `from..=to`; `fits`: where the longest range ending at
    /// `to` that fits the budget starts, if any does.
    Union {
        from: Hour,
        to: Hour,
        fits: Option<Hour>,
    },
    /// Building the compact form of `from..=to` (one hour when they are equal).
    Compact { from: Hour, to: Hour },
    /// Building the exact form of `from..=to` (one hour when they are equal).
    Exact { from: Hour, to: Hour },
    /// Rendering the filter of `hour`.
    Render { hour: Hour },
    /// Scrubbing `hour`.
    Scrub { hour: Hour },
}

impl ServiceError {
    /// Whether the same call may well succeed shortly (a pool or the budget is full).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            ServiceError::BudgetTaken { .. }
                | ServiceError::TooManyWaiting { .. }
                | ServiceError::TooLargeForBudget {
                    work: Work::Render { .. } | Work::Scrub { .. },
                    ..
                }
        )
    }
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;
