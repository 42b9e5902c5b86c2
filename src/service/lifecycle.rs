//! An hour's life after it closes: sealing (once, whichever node gets there first, and
//! retried with backoff when the store cannot take it), pruning past retention, loading
//! the open hour at start, and the housekeeping loop that runs them at each boundary.

use super::open_hours::Held;
use super::parts::{Hours, Stats};
use super::{Result, Service, ServiceError};
use crate::bloom::{Filter, Key, SHA1_KM32};
use crate::chain;
use crate::hour::Hour;
use crate::store::{ChainLink, HourShape, Linking, SealedHour, Sealing, StoreError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Service {
    /// Seals `hour` and makes sure it has its chain link. A link that cannot be made
    /// for good (corrupt rows) leaves the hour sealed and served unsigned, never
    /// unserved; a transient failure fails the seal, to be tried again.
    async fn seal_linked(&self, hour: Hour) -> Result<SealedHour> {
        let sealed = self.seal_one(hour).await?;
        let linked = self.link(&sealed).await;
        // Followers learn of the seal (and of the next hour, open now) once it is linked.
        self.changes.bump();
        match linked {
            // Signed now, while this node holds the key registered for the hour; a
            // failure leaves it to be signed when first served.
            Ok(link) => {
                if let Err(e) = self.signature(&link).await {
                    tracing::warn!(%hour, error = %e, "cannot sign a sealed hour yet; it is signed when first served");
                }
            }
            Err(ServiceError::Store(e)) if e.is_transient() => return Err(e.into()),
            Err(e) => {
                tracing::error!(%hour, error = %e, "cannot link a sealed hour into the chain; it is served unsigned")
            }
        }
        Ok(sealed)
    }

    /// The chain link of a sealed hour: the stored one, or else made from the sealed
    /// bytes and the previous hour's link (the genesis value when that hour is before
    /// genesis or has none) and stored; the first link stored for an hour stays.
    async fn link(&self, sealed: &SealedHour) -> Result<ChainLink> {
        let hour = sealed.hour;
        let newest = match self.store.last_link(hour.next()).await {
            Err(e @ StoreError::Corrupt(_)) => {
                self.note_corrupt(hour, &e);
                None
            }
            other => other?,
        };
        let prev = match newest {
            Some(link) if link.hour == hour => return Ok(link),
            Some(link) if link.hour == hour.prev() => link.header,
            _ => {
                if hour > self.genesis {
                    tracing::warn!(%hour, "the hour before has no chain link; this hour's link starts from the genesis value");
                }
                chain::GENESIS
            }
        };
        let ours = ChainLink::new(hour, &sealed.filter, prev);
        match self.store.put_link(&ours).await? {
            Linking::Stored => return Ok(ours),
            Linking::AlreadyLinked => {}
        }
        // Another node linked it first: what is stored is what everyone serves.
        match self.store.last_link(hour.next()).await? {
            Some(link) if link.hour == hour => Ok(link),
            _ => Err(ServiceError::Store(StoreError::bug(format!(
                "the chain link of {hour} is not there after writing it"
            )))),
        }
    }

    /// Seals `hour` (see [`Hours::seal`]), without its chain link.
    async fn seal_one(&self, hour: Hour) -> Result<SealedHour> {
        match self.store.sealed(hour).await {
            Ok(Some(sealed)) => {
                let held = self.open.forget_through(hour);
                self.check_held(hour, held, &sealed).await;
                return Ok(sealed);
            }
            Ok(None) => {}
            // Sealed, but the row fails verification: what it holds is rebuilt from the
            // hour's verified keys (the same bytes), never trusted, and only as far as
            // the hour's chain link vouches for it: no new link is made for it.
            Err(e @ StoreError::Corrupt(_)) => {
                tracing::error!(%hour, error = %e, "a sealed hour failed verification; rebuilding it from its keys");
                self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
                self.open.forget_through(hour);
                let (keys, filter) = self.build(hour, self.closed_keys(hour).await?).await?;
                let rebuilt = SealedHour {
                    hour,
                    count: keys.len() as u64,
                    m: filter.m(),
                    k: filter.k(),
                    filter: filter.to_bytes(),
                };
                let link = self.store.last_link(hour.next()).await?;
                if link
                    .is_some_and(|l| l.hour == hour && l.digest == chain::digest(&rebuilt.filter))
                {
                    return Ok(rebuilt);
                }
                return Err(self.corrupt(hour, e));
            }
            Err(e) => return Err(e.into()),
        }
        let closed = self.store.close_through(hour).await;
        self.note_write(closed)?;
        self.closed_through
            .fetch_max(hour.index(), Ordering::AcqRel);
        let keys = self.closed_keys(hour).await?;
        let (keys, filter) = self.build(hour, keys).await?;
        let sealed = SealedHour {
            hour,
            count: keys.len() as u64,
            m: filter.m(),
            k: filter.k(),
            filter: filter.to_bytes(),
        };
        let written = self.store.seal(&sealed, &keys).await;
        let sealing = self.note_write(written)?;
        let held = self.open.forget_through(hour);
        let sealed = match sealing {
            Sealing::Stored => {
                tracing::info!(%hour, count = sealed.count, m = sealed.m, k = sealed.k, "sealed hour");
                // The filter was just built from these very keys: they are vouched for.
                self.record_sealed_keys(hour, keys).await;
                sealed
            }
            // Another node sealed first: what is stored is what everyone serves.
            Sealing::AlreadySealed => {
                tracing::info!(%hour, "hour sealed elsewhere first; serving the stored seal");
                self.store.sealed(hour).await?.unwrap_or(sealed)
            }
        };
        self.check_held(hour, held, &sealed).await;
        Ok(sealed)
    }

    /// Checks the keys this node held of `hour` (each acknowledged by the store, to this
    /// node's publishers or to another node's) against its seal. A key the seal lacks was
    /// acknowledged and then lost by the store: PostgreSQL failed over to a standby that
    /// had not received it (an asynchronous standby, docs/CLUSTER.md). Nothing can put it
    /// back in a sealed hour; it is reported (the log, `bloomcast_store_lost_ids_total`).
    async fn check_held(&self, hour: Hour, held: Option<Held>, sealed: &SealedHour) {
        let Some(held) = held else {
            return;
        };
        // A seal that does not decode is reported where it is read and served.
        let Ok(filter) =
            Filter::decode_bytes(sealed.m.into(), sealed.k.into(), SHA1_KM32, &sealed.filter)
        else {
            return;
        };
        let missing = tokio::task::spawn_blocking(move || held.missing_from(&filter)).await;
        let missing = missing.unwrap_or(0);
        if missing > 0 {
            self.health.lost_ids.fetch_add(missing, Ordering::Relaxed);
            tracing::error!(
                %hour,
                missing,
                "IDs the store acknowledged for this hour are not in its seal: the store lost \
                 them (PostgreSQL failed over to a standby that had not received them?)"
            );
        }
    }

    /// The distinct keys of a closed hour, verified; an hour whose keys fail
    /// verification is recorded as corrupt.
    pub(super) async fn closed_keys(&self, hour: Hour) -> Result<Vec<Key>> {
        match self.store.keys(hour).await {
            Err(e @ StoreError::Corrupt(_)) => Err(self.corrupt(hour, e)),
            other => Ok(other?),
        }
    }

    /// The final filter of `hour`'s key set (what sealing stores), built off the runtime
    /// by the hour's rule ([`Service::sizing_of`]) at the `target_fpp` in effect for the
    /// hour: the cluster's, read now, for a store that records one (so every node seals
    /// an hour alike, whenever it started), else this node's.
    pub(super) async fn build(&self, hour: Hour, keys: Vec<Key>) -> Result<(Vec<Key>, Filter)> {
        let ours = HourShape {
            capacity: self.tuning.capacity,
            target_fpp: self.tuning.target_fpp,
        };
        let shape = self.store.hour_shape(&ours, hour).await?;
        let p = shape.map_or(ours.target_fpp, |s| s.target_fpp);
        let sizing = self.sizing_of(hour);
        let (keys, filter) = tokio::task::spawn_blocking(move || {
            let filter = Filter::sized_by(&keys, p, sizing);
            (keys, filter)
        })
        .await?;
        Ok((keys, filter?))
    }

    /// Seals `hour` unless an attempt failed recently: then it fails at once, and the
    /// housekeeping loop tries again when the backoff runs out. A failing store costs
    /// one attempt per backoff, not one per request.
    ///
    /// # Errors
    /// As [`Hours::seal`], or the store is unavailable while the backoff runs.
    pub(super) async fn seal_or_backoff(&self, hour: Hour) -> Result<SealedHour> {
        if let Some(left) = self.sealer.backoff_left(hour) {
            return Err(ServiceError::Store(StoreError::Unavailable {
                what: format!(
                    "sealing {hour} failed; retrying in the background in {} s",
                    left.as_secs() + 1
                ),
                source: None,
            }));
        }
        match self.hours().seal(hour).await {
            Ok(sealed) => {
                self.sealer.sealed(hour);
                Ok(sealed)
            }
            Err(e) => {
                let delay = self.sealer.failed(hour);
                tracing::warn!(%hour, error = %e, retry_in = ?delay, "sealing failed");
                Err(e)
            }
        }
    }

    /// Housekeeping, run at every hour boundary (and at start): learn the store's marks,
    /// seal every closed hour not yet sealed, read the chain's head (for `/metrics`: other
    /// nodes may have sealed), prune hours past retention, and refresh the open hour (so
    /// its count in `/metrics` follows other nodes' writes too).
    ///
    /// # Errors
    /// Store failures; the next tick tries again. An hour that cannot be sealed does not
    /// hold up the hours after it.
    pub async fn tick(&self) -> Result<()> {
        self.read_marks().await?;
        let now = self.current_hour();
        let earliest = self.earliest(now);
        let mut hour = match self.store.last_sealed().await? {
            Some(last) => last.next().max(earliest),
            None => earliest,
        };
        let mut failed = None;
        let first = hour;
        while hour < now {
            if let Err(e) = self.seal_or_backoff(hour).await {
                failed.get_or_insert(e);
            }
            hour = hour.next();
        }
        self.build_exact_after_seal(first, now).await;
        // A new hour is open, and other nodes may have sealed the last one: followers
        // learn of both.
        self.changes.bump();
        match self.store.last_link(now).await {
            Ok(Some(link)) => {
                self.sealer.keep_head(link.hour, link.header);
                self.sign_checkpoint(link.hour, &link.header).await;
            }
            Ok(None) => {}
            // The head stays as last read (a link that fails verification is never
            // taken for it).
            Err(e) => tracing::warn!(error = %e, "cannot read the chain's head"),
        }
        let horizon = self.prune_horizon(now);
        if horizon > self.genesis {
            let pruned = self.store.prune_before(horizon).await;
            let pruned = self.note_write(pruned)?;
            if pruned > 0 {
                tracing::info!(pruned, before = %horizon, "pruned hours past retention");
            }
            self.cache.forget_before(horizon.index());
            self.sealer.forget_retries_before(horizon);
        }
        if let Some(e) = failed {
            return Err(e);
        }
        self.refresh(now).await
    }

    /// Brings the service up to date after a start: seals what closed while it was down
    /// and loads the open hour, then lets waiting requests in. Runs in the background so
    /// the port opens at once; `/healthz` says `loading` meanwhile.
    pub async fn load(&self) {
        let started = Instant::now();
        if let Err(e) = self.tick().await {
            tracing::warn!(error = %e, "startup housekeeping failed; it will be retried");
        }
        let now = self.current_hour();
        match self.refresh(now).await {
            Ok(()) => tracing::info!(
                hour = %now,
                ids = self.ingest().current_count(),
                took = ?started.elapsed(),
                "open hour loaded"
            ),
            Err(ServiceError::Store(e @ StoreError::Corrupt(_))) => self.note_corrupt(now, &e),
            // Recorded where it was found.
            Err(ServiceError::Corrupt { .. }) => {}
            // Served lazily then, as each read refreshes the open hour.
            Err(e) => tracing::warn!(error = %e, "cannot load the open hour yet"),
        }
        self.set_loaded();
        // Hours sealed before signatures were stored, while this node holds their key.
        if let Err(e) = self.sign_unsigned().await {
            tracing::warn!(error = %e, "cannot sign the hours sealed before signatures were stored; each is signed when first served");
        }
    }

    /// Runs [`Service::tick`] at every hour boundary (and sooner while a seal waits for
    /// its retry) until `shutdown` resolves.
    pub async fn run_housekeeping(
        self: Arc<Self>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        loop {
            let wait = self.next_housekeeping();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut shutdown => return,
            }
            if let Err(e) = self.tick().await {
                tracing::warn!(error = %e, "housekeeping failed; retrying soon");
            }
            self.warn_if_clock_behind();
        }
    }

    /// Until the next boundary (just after it), the next seal retry, or a minute.
    fn next_housekeeping(&self) -> Duration {
        let until_boundary = (self.current_hour().end() - self.now())
            .to_std()
            .unwrap_or_default()
            + Duration::from_millis(50);
        let retry = self.sealer.next_retry().unwrap_or(Duration::MAX);
        until_boundary
            .min(retry.saturating_add(Duration::from_millis(10)))
            .min(Duration::from_secs(60))
    }
}

impl Hours<'_> {
    /// Closes and seals `hour`: its final filter, sized for its actual count so the
    /// advertised false-positive probability is within the target. Once per node.
    ///
    /// # Errors
    /// Store failures; the hour stays unsealed and the next attempt starts over.
    pub async fn seal(&self, hour: Hour) -> Result<SealedHour> {
        let _one_at_a_time = self.sealer.turn().await;
        // The hour chain: an hour's link needs the one before it, so any unlinked hour
        // between the newest link and this one is sealed (and linked) first, in order.
        // Hours before the served range that never got a link stay without one: the
        // chain restarts from the genesis value after them.
        let earliest = self.earliest(self.current_hour());
        let newest = match self.store.last_link(hour).await {
            Ok(newest) => newest.map_or(self.genesis, |link| link.hour.next()),
            // A link that fails verification is not followed (nor served): this hour
            // is linked on its own.
            Err(e @ StoreError::Corrupt(_)) => {
                self.note_corrupt(hour, &e);
                hour
            }
            Err(e) => return Err(e.into()),
        };
        let mut before = newest.max(earliest);
        while before < hour {
            match self.seal_linked(before).await {
                Ok(_) => {}
                Err(ServiceError::Store(e)) if e.is_transient() => return Err(e.into()),
                // Never sealable (its keys fail verification): the chain goes on
                // without it rather than stopping every later hour.
                Err(e) => tracing::error!(hour = %before, error = %e,
                    "an hour cannot be sealed; the chain restarts after it"),
            }
            before = before.next();
        }
        self.seal_linked(hour).await
    }
}

impl Stats<'_> {
    /// Seals that failed since start (each is retried after its backoff).
    pub fn seal_failures(&self) -> u64 {
        self.sealer.failures()
    }
}
