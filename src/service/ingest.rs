//! Ingest: keys recorded in the current hour, acknowledged once the store holds them.

use super::parts::Ingest;
use super::Result;
use crate::bloom::Key;
use crate::hour::Hour;
use tokio::time::Instant;

/// What an ingest acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub hour: Hour,
    pub accepted: usize,
}

impl Ingest<'_> {
    /// Records keys in the current hour. Returns once they are durable.
    ///
    /// # Errors
    /// [`ServiceError::HourFull`] past `max_hour_ids`; [`ServiceError::Store`] if the
    /// store could not make them durable. Nothing was acknowledged then, and the caller
    /// may retry.
    ///
    /// [`ServiceError::HourFull`]: super::ServiceError::HourFull
    /// [`ServiceError::Store`]: super::ServiceError::Store
    pub async fn add(&self, keys: &[Key]) -> Result<Receipt> {
        self.wait_loaded().await;
        let now = self.current_hour();
        let max = self.tuning.max_hour_ids;
        let reservation = self.open.reserve(now, keys, max, self.closed_through())?;
        let began = Instant::now();
        let appended = self.store.append_at(now, keys).await;
        let (hour, cursor) = match self.note_write_begun(Some(began), appended) {
            Ok(appended) => appended,
            Err(e) => {
                self.open.release(reservation);
                return Err(e);
            }
        };
        self.raise_high_water(hour);
        let closed = self.closed_through();
        self.open
            .acknowledge(reservation, hour, keys, cursor, closed);
        self.changes.bump();
        Ok(Receipt {
            hour,
            accepted: keys.len(),
        })
    }

    /// The distinct-key count of the current hour as this node sees it.
    pub fn current_count(&self) -> u64 {
        let now = self.current_hour();
        self.open.count(now)
    }
}
