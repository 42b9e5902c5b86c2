//! An hour's life after it closes: sealing (once, whichever node gets there first),
//! pruning past retention, and the housekeeping loop that runs both at each boundary.

use super::{Result, Service};
use crate::bloom::Filter;
use crate::hour::Hour;
use crate::store::{SealedHour, StoreError};
use std::sync::Arc;
use std::time::Duration;

impl Service {
    /// Closes and seals `hour`: its final filter, sized for its actual count so the
    /// advertised false-positive probability is within the target. Once per node.
    ///
    /// # Errors
    /// Store failures; the hour stays unsealed and the next attempt starts over.
    pub async fn seal(&self, hour: Hour) -> Result<SealedHour> {
        let _one_at_a_time = self.seal_lock.lock().await;
        if let Some(sealed) = self.store.sealed(hour).await? {
            self.forget_open(hour);
            return Ok(sealed);
        }
        self.store.close_through(hour).await?;
        let keys = self.store.keys(hour).await?;
        let p = self.tuning.target_fpp;
        let (keys, filter) = tokio::task::spawn_blocking(move || {
            let filter = Filter::sized_within(&keys, p);
            (keys, filter)
        })
        .await
        .map_err(|e| StoreError::Failed(e.to_string()))?;
        let filter = filter?;
        let sealed = SealedHour {
            hour,
            count: keys.len() as u64,
            m: filter.m(),
            k: filter.k(),
            filter: filter.to_bytes(),
        };
        self.store.seal(&sealed, &keys).await?;
        self.forget_open(hour);
        tracing::info!(%hour, count = sealed.count, m = sealed.m, k = sealed.k, "sealed hour");
        // Another node may have sealed first; what is stored is what everyone serves.
        Ok(self.store.sealed(hour).await?.unwrap_or(sealed))
    }

    pub(super) fn forget_open(&self, hour: Hour) {
        let mut ledger = self.ledger.lock().expect("ledger lock");
        ledger.hours.retain(|h, _| *h > hour);
        if ledger.sealed_through.is_none_or(|s| s < hour) {
            ledger.sealed_through = Some(hour);
        }
    }

    /// Housekeeping, run at every hour boundary (and at start): seal every closed hour
    /// not yet sealed, prune hours past retention, and refresh the open hour.
    ///
    /// # Errors
    /// Store failures; the next tick tries again.
    pub async fn tick(&self) -> Result<()> {
        let now = self.clock.current_hour();
        let earliest = self.earliest(now);
        let mut hour = match self.store.last_sealed().await? {
            Some(last) => last.next().max(earliest),
            None => earliest,
        };
        while hour < now {
            self.seal(hour).await?;
            hour = hour.next();
        }
        if earliest > self.genesis {
            let pruned = self.store.prune_before(earliest).await?;
            if pruned > 0 {
                tracing::info!(pruned, before = %earliest, "pruned hours past retention");
            }
            self.cache.forget_before(earliest.index());
        }
        // Load the open hour from the store, so its count (the metrics gauge, the index)
        // is right from the first scrape after a restart, not only after the first read.
        self.refresh(now).await
    }

    /// Runs [`Service::tick`] at every hour boundary until `shutdown` resolves.
    pub async fn run_housekeeping(
        self: Arc<Self>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            if let Err(e) = self.tick().await {
                tracing::warn!(error = %e, "housekeeping failed; retrying soon");
            }
            let until_boundary = (self.current_hour().end() - self.now())
                .to_std()
                .unwrap_or_default()
                + Duration::from_millis(50);
            let wait = until_boundary.min(Duration::from_secs(60));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut shutdown => return,
            }
        }
    }
}
