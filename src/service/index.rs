//! The index: the most recent hours, newest first, with their counts and whether each
//! is complete; and the sealed hours' counts it (and the unions) read from the store.

use super::{Result, Service};
use crate::hour::Hour;
use crate::store::StoreError;

/// One line of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourSummary {
    pub hour: Hour,
    pub count: u64,
    pub complete: bool,
}

impl Service {
    /// The most recent hours, newest first, back to `earliest` but at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn recent(&self, limit: usize) -> Result<Vec<HourSummary>> {
        let now = self.current_hour();
        let earliest = self.earliest(now);
        self.refresh(now).await?;
        let mut out = vec![HourSummary {
            hour: now,
            count: self.current_count(),
            complete: false,
        }];
        let oldest = Hour::from_index((now.index() - limit as i64 + 1).max(earliest.index()));
        if oldest < now {
            let sealed = self.sealed_counts(oldest, now.prev()).await?;
            let mut hour = now.prev();
            while hour >= oldest {
                let (count, complete) = match sealed.iter().find(|(h, _)| *h == hour) {
                    Some((_, c)) => (*c, true),
                    None => self.closed_count(hour).await?,
                };
                out.push(HourSummary {
                    hour,
                    count,
                    complete,
                });
                hour = hour.prev();
            }
        }
        Ok(out)
    }

    /// `(hour, count)` of the sealed hours in `from..=to`; when a row fails verification,
    /// none (each hour is then read on its own, and a corrupt one rebuilt from its keys).
    pub(super) async fn sealed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        match self.store.sealed_counts(from, to).await {
            Err(StoreError::Corrupt(why)) => {
                tracing::error!(%from, %to, %why, "a sealed hour's count failed verification");
                Ok(Vec::new())
            }
            other => Ok(other?),
        }
    }
}
