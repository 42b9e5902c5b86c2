//! "In which hours of the retention window may these IDs have changed?", answered from
//! the server's own filters for publishers (`GET /history`, authenticated).
//!
//! Complete hours never change, so their filters are kept decoded, by hour, in the one
//! cache ([`super::kept`]): a request over 720 hours then hashes each ID once and probes
//! k bits in each filter, with no store read and no decoding. Decoded filters are
//! enough for the 10 ms target (see docs/BENCHMARKS.md); a bit-sliced layout would only
//! pay off for many IDs per request. Hours not kept (the open one, one not yet sealed,
//! or past the budget) come through [`Hours::view`], exactly as clients get them, one
//! at a time: a request holds one such filter at once, however long its window.

use super::kept::{Slot, Value};
use super::parts::Hours;
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
    /// The filter of `hour` as clients get it, decoded: a complete hour's is kept in the
    /// one cache, any other decoded for the call.
    ///
    /// # Errors
    /// Store failures while fetching an hour not kept in memory.
    pub(super) async fn hour_filter(&self, hour: Hour) -> Result<Arc<Filter>> {
        if let Some(Value::Decoded(filter)) = self.kept.get(&Slot::Decoded(hour)) {
            return Ok(filter);
        }
        self.decoded(hour).await
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

    /// An hour's raw rendering as [`Hours::view`] gives it, for an hour already
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

impl Hours<'_> {
    /// The hours from `since` (clamped to the oldest served hour; the whole retention
    /// window when `None`) through the current one in which each ID may have changed.
    ///
    /// No false negatives: every hour of the window is tested, complete or not.
    ///
    /// # Errors
    /// Store failures while fetching an hour not kept in memory; `InFuture` for a
    /// `since` in the future.
    pub async fn history(&self, ids: &[String], since: Option<Hour>) -> Result<History> {
        let now = self.current_hour();
        let from = since.map_or(self.earliest(now), |h| h.max(self.earliest(now)));
        if from > now {
            return Err(super::ServiceError::InFuture {
                asked: super::Target::Hour(from),
                now,
            });
        }
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        let mut hours: Vec<Vec<Hour>> = vec![Vec::new(); ids.len()];
        let mut hour = from;
        while hour <= now {
            // One hour's filter at a time, however long the window.
            let filter = self.hour_filter(hour).await?;
            for (key, hours) in keys.iter().zip(&mut hours) {
                if filter.contains_key(*key) {
                    hours.push(hour);
                }
            }
            hour = hour.next();
        }
        let ids = ids.iter().cloned().zip(hours).collect();
        Ok(History { from, to: now, ids })
    }
}
