//! "In which hours of the retention window may these IDs have changed?", answered from
//! the server's own filters for publishers (`GET /history`, authenticated).
//!
//! Complete hours never change, so their filters are kept here decoded, by hour, within
//! a byte budget: a request over 720 hours then hashes each ID once and probes k bits in
//! each filter, with no store read and no decoding. A plain map of decoded filters is
//! enough for the 10 ms target (see docs/BENCHMARKS.md); a bit-sliced layout would only
//! pay off for many IDs per request. Hours not kept (the open one, one not yet sealed,
//! or past the budget) come through [`Service::view`], exactly as clients get them.

use super::{Result, Service};
use crate::bloom::{Filter, FilterError, Key};
use crate::hour::Hour;
use crate::render::{RawFields, Repr};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The decoded filters of complete hours, oldest evicted first beyond the budget.
#[derive(Debug)]
pub(crate) struct HistoryFilters {
    inner: Mutex<Kept>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Kept {
    by_hour: BTreeMap<Hour, Arc<Filter>>,
    bytes: usize,
}

impl HistoryFilters {
    /// Keeps at most `budget` bytes of filter bodies.
    pub(crate) fn new(budget: usize) -> HistoryFilters {
        HistoryFilters {
            inner: Mutex::new(Kept::default()),
            budget,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        crate::sync::lock(&self.inner)
    }

    /// Forgets hours before `from`, which are past retention.
    fn forget_before(&self, from: Hour) {
        let mut kept = self.lock();
        while let Some(entry) = kept.by_hour.first_entry() {
            if *entry.key() >= from {
                break;
            }
            let gone = entry.remove();
            kept.bytes -= body_bytes(&gone);
        }
    }

    /// The kept filters of `from..=to`; the hours missing are the caller's to fetch.
    fn window(&self, from: Hour, to: Hour) -> BTreeMap<Hour, Arc<Filter>> {
        self.lock()
            .by_hour
            .range(from..=to)
            .map(|(h, f)| (*h, f.clone()))
            .collect()
    }

    fn keep(&self, hour: Hour, filter: Arc<Filter>) {
        let size = body_bytes(&filter);
        let mut kept = self.lock();
        if kept.by_hour.contains_key(&hour) {
            return;
        }
        // Newer hours are asked about longest: make room by dropping the oldest.
        while kept.bytes + size > self.budget {
            match kept.by_hour.first_entry() {
                Some(entry) if *entry.key() < hour => {
                    let gone = entry.remove();
                    kept.bytes -= body_bytes(&gone);
                }
                _ => return,
            }
        }
        kept.bytes += size;
        kept.by_hour.insert(hour, filter);
    }

    /// Bytes and hours kept.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.bytes, kept.by_hour.len())
    }
}

fn body_bytes(filter: &Filter) -> usize {
    filter.m().div_ceil(8) as usize
}

/// The hours of a window in which each of some IDs may have changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// The oldest hour looked at (genesis or the retention horizon).
    pub from: Hour,
    /// The current hour, looked at as it stands.
    pub to: Hour,
    /// Per ID, in the order asked, the hours (oldest first) whose filter holds it.
    pub ids: Vec<(String, Vec<Hour>)>,
}

impl Service {
    /// The hours from `since` (clamped to the oldest served hour; the whole retention
    /// window when `None`) through the current one in which each ID may have changed.
    ///
    /// No false negatives: every hour of the window is tested, complete or not.
    ///
    /// # Errors
    /// Store failures while fetching an hour not kept in memory; `NotFound` for a
    /// `since` in the future.
    pub async fn history(&self, ids: &[String], since: Option<Hour>) -> Result<History> {
        let now = self.current_hour();
        let from = since.map_or(self.earliest(now), |h| h.max(self.earliest(now)));
        if from > now {
            return Err(super::ServiceError::NotFound(format!(
                "{from} is in the future; the current hour is {now}"
            )));
        }
        self.history.forget_before(from);
        let filters = self.hour_filters(from, now).await?;
        let ids = ids
            .iter()
            .map(|id| {
                let key = Key::of(id);
                let hours = filters
                    .iter()
                    .filter(|(_, f)| f.contains_key(key))
                    .map(|(h, _)| *h)
                    .collect();
                (id.clone(), hours)
            })
            .collect();
        Ok(History { from, to: now, ids })
    }
}

impl Service {
    /// The filters of the hours `from..=to` as clients get them, decoded; complete
    /// hours' are kept within the budget.
    ///
    /// # Errors
    /// Store failures while fetching an hour not kept in memory.
    pub(super) async fn hour_filters(
        &self,
        from: Hour,
        to: Hour,
    ) -> Result<BTreeMap<Hour, Arc<Filter>>> {
        let mut filters = self.history.window(from, to);
        let mut hour = from;
        while hour <= to {
            if let Entry::Vacant(slot) = filters.entry(hour) {
                // The raw form: its body is the filter's bytes, with no hex or JSON to
                // encode for this and parse back.
                let rendered = &self.hour_bin(hour).await?;
                let RawFields::Bloom { params, .. } = &rendered.fields else {
                    let why = format!("the raw rendering of {hour} carries no filter parameters");
                    return Err(FilterError::BadDocument(why).into());
                };
                let (m, k, hash) = (params.m.into(), params.k.into(), params.hash.name());
                let filter = Arc::new(Filter::decode_bytes(m, k, hash, &rendered.identity)?);
                if rendered.complete {
                    self.history.keep(hour, filter.clone());
                }
                slot.insert(filter);
            }
            hour = hour.next();
        }
        Ok(filters)
    }

    /// An hour's raw rendering as [`Service::view`] gives it, for an hour already
    /// checked to be served (no union is ever built here).
    async fn hour_bin(&self, hour: Hour) -> Result<Arc<crate::render::Rendered>> {
        let open = if hour == self.current_hour() {
            self.open_view(hour, Repr::Bin).await?
        } else {
            None
        };
        Ok(match open {
            Some(rendered) => rendered,
            // A past hour, or the open hour sealed while this request waited.
            None => self.closed_view(hour, Repr::Bin).await?.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(i: i64) -> Hour {
        Hour::from_index(400_000 + i)
    }

    fn filter() -> Arc<Filter> {
        // 100 IDs at 1 %: 959 bits, 120 bytes.
        Arc::new(Filter::with_capacity(100, 0.01).unwrap())
    }

    #[test]
    fn the_oldest_hours_go_first_beyond_the_budget() {
        let kept = HistoryFilters::new(250);
        for i in 0..3 {
            kept.keep(hour(i), filter());
        }
        assert_eq!(kept.usage(), (240, 2));
        let window = kept.window(hour(0), hour(2));
        assert_eq!(
            window.keys().copied().collect::<Vec<_>>(),
            [hour(1), hour(2)]
        );
    }

    #[test]
    fn hours_past_the_window_are_forgotten_and_older_ones_never_evict_newer() {
        let kept = HistoryFilters::new(250);
        kept.keep(hour(5), filter());
        kept.keep(hour(6), filter());
        kept.keep(hour(1), filter());
        assert_eq!(kept.usage(), (240, 2));
        assert_eq!(kept.window(hour(6), hour(9)).len(), 1);
        assert_eq!(kept.usage(), (240, 2), "reading a window forgets nothing");
        kept.forget_before(hour(6));
        assert!(kept.window(hour(6), hour(9)).contains_key(&hour(6)));
        assert_eq!(kept.usage(), (120, 1));
    }
}
