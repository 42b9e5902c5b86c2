//! The newest union filters built, so each representation of a union renders one build,
//! and one ending in the open hour is carried forward (`incremental`) rather than
//! rebuilt. At most [`BUILT_UNIONS`] of them, each within a quarter of `cache_bytes`.
//!
//! Lock order: its one std mutex is a leaf, held only inside a method here.

use super::open::OpenStamp;
use crate::bloom::Filter;
use crate::hour::Hour;
use crate::service::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Built union filters kept for their other representations.
const BUILT_UNIONS: usize = 4;

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

/// The kept filters, newest last.
pub(super) struct BuiltUnions {
    kept: Mutex<VecDeque<BuiltUnion>>,
    /// Bytes of the largest filter kept (a quarter of `cache_bytes`).
    max_bytes: usize,
}

impl BuiltUnions {
    pub fn new(max_bytes: usize) -> BuiltUnions {
        BuiltUnions {
            kept: Mutex::new(VecDeque::new()),
            max_bytes,
        }
    }

    /// The filter built for `from..=to` showing exactly `current` (the open hour and
    /// its version; `None` for a range of closed hours), if one is kept.
    pub fn find(
        &self,
        from: Hour,
        to: Hour,
        current: Option<OpenStamp>,
        complete: bool,
    ) -> Option<BuiltUnion> {
        lock(&self.kept)
            .iter()
            .find(|b| {
                b.range == (from.index(), to.index())
                    && b.stamp == current
                    && b.complete == complete
            })
            .cloned()
    }

    /// Takes out the kept union of `from..=now` that can be carried forward, if any.
    pub fn take_growable(&self, from: Hour, now: Hour) -> Option<BuiltUnion> {
        let mut kept = lock(&self.kept);
        let at = kept.iter().position(|b| {
            b.range == (from.index(), now.index())
                && b.growth.is_some()
                && b.stamp.is_some_and(|s| s.0 == now.index())
        })?;
        kept.remove(at)
    }

    /// Keeps `built` in place of any of its range, the oldest going past the count.
    pub fn remember(&self, built: BuiltUnion) {
        if built.filter.m() as usize / 8 > self.max_bytes {
            return;
        }
        let mut kept = lock(&self.kept);
        kept.retain(|b| b.range != built.range);
        if kept.len() >= BUILT_UNIONS {
            kept.pop_front();
        }
        kept.push_back(built);
    }
}
