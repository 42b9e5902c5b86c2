//! "In which hours of the retention window may these IDs have changed?", answered from
//! the server's own filters for publishers (`GET /history`, authenticated).
//!
//! Complete hours never change, so their filters are kept decoded, by hour, in the one
//! cache ([`super::kept`]): a request over 720 hours then hashes each ID once and probes
//! k bits in each filter, with no store read and no decoding. Decoded filters are
//! enough for the 10 ms target (see docs/BENCHMARKS.md); a bit-sliced layout would only
//! pay off for many IDs per request. Hours not kept (the open one, one not yet sealed,
//! or past the budget) come through [`Service::view`], exactly as clients get them, one
//! at a time: a request holds one such filter at once, however long its window.

use super::kept::{Slot, Value};
use super::{Result, Service};
use crate::bloom::{Filter, FilterError, Key};
use crate::hour::Hour;
use crate::render::{RawFields, Repr};
use std::sync::Arc;

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
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        let mut hours: Vec<Vec<Hour>> = vec![Vec::new(); ids.len()];
        self.for_each_hour_filter(from, now, |hour, filter| {
            for (key, hours) in keys.iter().zip(&mut hours) {
                if filter.contains_key(*key) {
                    hours.push(hour);
                }
            }
        })
        .await?;
        let ids = ids.iter().cloned().zip(hours).collect();
        Ok(History { from, to: now, ids })
    }
}

impl Service {
    /// Calls `f` with the filter of each hour of `from..=to` as clients get it,
    /// decoded, oldest first: complete hours' are kept in the one cache, the others
    /// decoded for the call and dropped before the next hour's.
    ///
    /// # Errors
    /// Store failures while fetching an hour not kept in memory.
    pub(super) async fn for_each_hour_filter(
        &self,
        from: Hour,
        to: Hour,
        mut f: impl FnMut(Hour, &Filter) + Send,
    ) -> Result<()> {
        let mut hour = from;
        while hour <= to {
            let filter = match self.kept.get(&Slot::Decoded(hour)) {
                Some(Value::Decoded(filter)) => filter,
                _ => self.decoded(hour).await?,
            };
            f(hour, &filter);
            hour = hour.next();
        }
        Ok(())
    }

    /// The filter of `hour` as clients get it, decoded from its raw form; kept when it
    /// is complete.
    async fn decoded(&self, hour: Hour) -> Result<Arc<Filter>> {
        // The raw form: its body is the filter's bytes, with no hex or JSON to encode
        // for this and parse back.
        let rendered = &self.hour_bin(hour).await?;
        let RawFields::Bloom { params, .. } = &rendered.fields else {
            let why = format!("the raw rendering of {hour} carries no filter parameters");
            return Err(FilterError::BadDocument(why).into());
        };
        let (m, k, hash) = (params.m.into(), params.k.into(), params.hash.name());
        let filter = Arc::new(Filter::decode_bytes(m, k, hash, &rendered.identity)?);
        if rendered.complete {
            self.kept
                .insert(Slot::Decoded(hour), Value::Decoded(filter.clone()));
        }
        Ok(filter)
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
