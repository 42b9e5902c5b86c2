//! The newest union filter built for a range, so each representation of a union renders
//! one build, and one ending in the open hour is carried forward (`incremental`) rather
//! than rebuilt. Kept in the one cache ([`crate::service::kept`]), one per range.

use super::open::OpenStamp;
use crate::bloom::Filter;
use std::sync::Arc;

/// One built union filter and what it shows.
#[derive(Clone)]
pub(in crate::service) struct BuiltUnion {
    pub range: (i64, i64),
    /// The open hour and version it includes; `None` for a range of closed hours.
    pub stamp: Option<OpenStamp>,
    pub complete: bool,
    pub filter: Arc<Filter>,
    pub count: u64,
    /// How to carry it forward as the open hour takes keys; `None` when it cannot be.
    pub growth: Option<Growth>,
}

/// Where a union ending in the open hour stands in that hour, and how far it may grow.
#[derive(Clone, Copy)]
pub(in crate::service) struct Growth {
    /// The open hour entry it read (`OpenSnapshot::id`, unique per entry: positions in a
    /// reloaded entry are not positions in the old one).
    pub hour_id: u64,
    /// How many of that hour's distinct keys it holds.
    pub position: u64,
    /// The count it was sized for; past it, it is rebuilt.
    pub capacity: u64,
}
