//! The index: the most recent hours, newest first, with their counts and whether each
//! is complete, or that an hour's data failed verification; and the sealed hours'
//! counts it (and the unions) read from the store.
//!
//! One damaged hour never takes the index down: it is listed as corrupt (its filter
//! answers `500 corrupt`) and every other hour as ever. Any other failure (the store
//! away) fails the index, as it fails the hours.

use super::parts::Hours;
use super::{Result, Service, ServiceError};
use crate::hour::Hour;
use crate::store::StoreError;

/// One line of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourSummary {
    pub hour: Hour,
    pub state: HourState,
    /// The size of the hour's stored exact body, when it has one.
    pub exact_bytes: Option<u64>,
}

/// What the index can say of an hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HourState {
    /// Its distinct IDs so far, and whether that is final.
    Counted { count: u64, complete: bool },
    /// Its stored data failed verification: whether anything changed in it is unknown,
    /// so it has no count (a count would read as one).
    Corrupt,
}

impl HourState {
    /// A sealed hour's count, final.
    fn sealed(count: u64) -> HourState {
        HourState::Counted {
            count,
            complete: true,
        }
    }

    /// The state of an hour whose count `read` tried to find: corrupt when its data
    /// failed verification; any other failure is the caller's.
    fn of(read: Result<(u64, bool)>) -> Result<HourState> {
        match read {
            Ok((count, complete)) => Ok(HourState::Counted { count, complete }),
            Err(ServiceError::Store(StoreError::Corrupt(_)) | ServiceError::Corrupt { .. }) => {
                Ok(HourState::Corrupt)
            }
            Err(e) => Err(e),
        }
    }
}

impl Service {
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

    /// Sets `exact_bytes` of the sealed hours from `exact_since` that have an exact body:
    /// the size of the one this process keeps rendered, else of the one stored (after a
    /// restart, or built by another node), which is what `.exact` serves. A store that
    /// cannot say leaves them out: they are a client's estimate, never its answer.
    async fn add_exact_sizes(&self, hours: &mut [HourSummary]) -> Result<()> {
        let Some(since) = self.forms().exact_since().await? else {
            return Ok(());
        };
        let sealed = |s: &HourSummary| {
            s.hour >= since && matches!(s.state, HourState::Counted { complete: true, .. })
        };
        let mut missing = Vec::new();
        for line in hours.iter_mut().filter(|s| sealed(s)) {
            line.exact_bytes = self.exact_bytes(line.hour).map(|b| b as u64);
            if line.exact_bytes.is_none() {
                missing.push(line.hour);
            }
        }
        let (Some(&to), Some(&from)) = (missing.first(), missing.last()) else {
            return Ok(());
        };
        let stored = match self.store.exact_sizes(from, to).await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the stored exact bodies' sizes; the index lists none");
                return Ok(());
            }
        };
        for line in hours.iter_mut().filter(|s| missing.contains(&s.hour)) {
            line.exact_bytes = stored
                .iter()
                .find(|(h, _)| *h == line.hour)
                .map(|(_, bytes)| *bytes);
        }
        Ok(())
    }
}

fn summary(hour: Hour, state: HourState) -> HourSummary {
    HourSummary {
        hour,
        state,
        exact_bytes: None,
    }
}

impl Hours<'_> {
    /// The most recent hours, newest first, back to `earliest` but at most `limit`.
    ///
    /// # Errors
    /// Store failures other than an hour's data failing verification (that hour is
    /// listed as [`HourState::Corrupt`]).
    pub async fn recent(&self, limit: usize) -> Result<Vec<HourSummary>> {
        let now = self.current_hour();
        let earliest = self.earliest(now);
        let open = self
            .refresh(now)
            .await
            .map(|()| (self.ingest().current_count(), false));
        let mut out = vec![summary(now, HourState::of(open)?)];
        let oldest = Hour::from_index((now.index() - limit as i64 + 1).max(earliest.index()));
        if oldest < now {
            let sealed = self.sealed_counts(oldest, now.prev()).await?;
            let mut hour = now.prev();
            while hour >= oldest {
                let state = match sealed.iter().find(|(h, _)| *h == hour) {
                    Some((_, count)) => HourState::sealed(*count),
                    None => HourState::of(self.closed_count(hour).await)?,
                };
                out.push(summary(hour, state));
                hour = hour.prev();
            }
        }
        self.add_exact_sizes(&mut out).await?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_data_that_failed_verification_lists_an_hour_as_corrupt() {
        assert_eq!(
            HourState::of(Ok((3, true))).unwrap(),
            HourState::Counted {
                count: 3,
                complete: true
            }
        );
        let corrupt = StoreError::Corrupt("batch 7 of hour 13".into());
        assert_eq!(
            HourState::of(Err(corrupt.into())).unwrap(),
            HourState::Corrupt
        );
        let away = StoreError::unavailable("reading", std::io::Error::other("disk gone"));
        assert!(
            HourState::of(Err(away.into())).is_err(),
            "the store away fails the index"
        );
    }
}
