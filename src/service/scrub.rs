//! The scrub: damage in the store found before a reader finds it.
//!
//! A pass visits every closed hour still served, oldest first, one at a time, spaced so
//! that the pass takes `scrub_pass_seconds` (a day by default), and reads each back the
//! way serving it would, with every check serving makes: the sealed row against its
//! checksum and its chain link (and the link against the one before it), the hour's keys
//! against its sealed filter, its stored exact body against its universe (whose rows are
//! checked against the tally its seal recorded) and against the record of what was first
//! served. A closed hour with no row at all is found too. Damage found is recorded as a
//! reader's would be (`/healthz` lists the hour, `bloomcast_corrupt_found_total`) and
//! counted by the scrub; nothing is repaired, rewritten or signed by it.
//!
//! Its cost is one hour's reads and checks at a time (no lock held across it, no build
//! slot taken): `docs/RELIABILITY.md` gives the CPU it takes per GB of sealed data.
//!
//! State: [`Scrub`] holds only counters (atomics) and the time of the last pass (a std
//! mutex held to read or write it, a leaf).

use super::parts::Health;
use super::{lock, Result, Service, ServiceError, Work};
use crate::chain;
use crate::hour::Hour;
use crate::store::{FormName, StoreError};
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Wait before looking again when there is no closed hour to scrub.
const IDLE: Duration = Duration::from_secs(60);

/// What the scrub has done since start.
#[derive(Default)]
pub(super) struct Scrub {
    passes: AtomicU64,
    hours: AtomicU64,
    bytes: AtomicU64,
    damage: AtomicU64,
    last_pass: Mutex<Option<DateTime<Utc>>>,
}

/// What `/healthz` and `/metrics` say of the scrub.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScrubReport {
    /// Seconds one pass over the served hours takes (0: the scrub is off).
    pub pass_seconds: u64,
    /// When the last full pass ended (`None` before the first).
    #[serde(with = "chrono::serde::ts_seconds_option")]
    pub last_pass: Option<DateTime<Utc>>,
    pub passes: u64,
    /// Hours verified, and the bytes read back to verify them.
    pub hours: u64,
    pub bytes: u64,
    /// Hours found damaged by the scrub.
    pub damage_found: u64,
}

impl Service {
    /// Runs scrub passes, each spread over `scrub_pass`, until `shutdown` resolves; does
    /// nothing when the scrub is off.
    pub async fn run_scrub(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let pass = self.tuning.scrub_pass;
        if pass.is_zero() {
            return;
        }
        tokio::pin!(shutdown);
        self.wait_loaded().await;
        loop {
            let hours = self.scrub_range();
            let gap = pass / u32::try_from(hours.len().max(1)).unwrap_or(u32::MAX);
            if hours.is_empty() {
                tokio::select! {
                    () = tokio::time::sleep(gap.min(IDLE)) => continue,
                    () = &mut shutdown => return,
                }
            }
            for hour in hours {
                tokio::select! {
                    () = tokio::time::sleep(gap) => {}
                    () = &mut shutdown => return,
                }
                // Past retention by now (the pass is long): nothing to verify.
                if hour < self.earliest(self.current_hour()) {
                    continue;
                }
                self.scrub_hour(hour).await;
            }
            self.end_pass();
        }
    }

    /// The closed hours still served, oldest first.
    fn scrub_range(&self) -> Vec<Hour> {
        let now = self.current_hour();
        let mut hours = Vec::new();
        let mut hour = self.earliest(now);
        while hour < now {
            hours.push(hour);
            hour = hour.next();
        }
        hours
    }

    fn end_pass(&self) {
        self.scrub.passes.fetch_add(1, Ordering::Relaxed);
        *lock(&self.scrub.last_pass) = Some(Utc::now());
    }

    /// Verifies one hour, counting what it read and any damage found (recorded where it
    /// is found, as for a reader). A store that cannot answer now is tried next pass.
    async fn scrub_hour(&self, hour: Hour) {
        match self.verify_hour(hour).await {
            Ok(bytes) => {
                self.scrub.hours.fetch_add(1, Ordering::Relaxed);
                self.scrub.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Err(
                e @ (ServiceError::Corrupt { .. } | ServiceError::Store(StoreError::Corrupt(_))),
            ) => {
                if let ServiceError::Store(e) = &e {
                    self.note_corrupt(hour, e);
                }
                self.scrub.hours.fetch_add(1, Ordering::Relaxed);
                self.scrub.damage.fetch_add(1, Ordering::Relaxed);
                tracing::error!(%hour, error = %e, "the scrub found damage");
            }
            Err(e) => {
                tracing::warn!(%hour, error = %e, "the scrub could not verify an hour; it is tried again next pass")
            }
        }
    }

    /// Reads `hour` back with every check serving makes; the bytes read.
    ///
    /// # Errors
    /// Corruption (already recorded); store failures.
    async fn verify_hour(&self, hour: Hour) -> Result<u64> {
        let sealed = match self.store.sealed(hour).await {
            Ok(sealed) => sealed,
            Err(e @ StoreError::Corrupt(_)) => return Err(self.corrupt(hour, e)),
            Err(e) => return Err(e.into()),
        };
        let Some(sealed) = sealed else {
            // Closed, not sealed yet (or its row is gone): its batches and their record.
            let keys = self.closed_keys(hour).await?;
            return Ok(8 * keys.len() as u64);
        };
        self.verify_link(hour).await?;
        // Its working memory comes from the builds' part of the budget, as a build's
        // does: the keys, the filter rebuilt from them, and a universe's keys (all of
        // the part at most: a scrub takes one hour at a time).
        let universe = self
            .ingest()
            .universe()
            .await
            .ok()
            .flatten()
            .map_or(0, |u| u.count);
        let bytes = 8 * (sealed.count + universe) + 3 * sealed.filter.len() as u64;
        let _memory = self
            .unions
            .reserve_memory(bytes)
            .map_err(|refused| refused.error(Work::Scrub { hour }))?;
        let keys = self.vouched_keys(hour).await?;
        let mut bytes = sealed.filter.len() as u64 + 8 * keys.len() as u64;
        if let Some(body) = self.store.exact(hour).await.map_err(|e| match e {
            e @ StoreError::Corrupt(_) => self.corrupt(hour, e),
            e => e.into(),
        })? {
            let universe = match self.store.universe_keys(hour).await {
                Err(e @ StoreError::Corrupt(_)) => return Err(self.corrupt(hour, e)),
                other => other?,
            };
            bytes += body.len() as u64 + 8 * universe.len() as u64;
            let digest = chain::digest(&body);
            let checked = tokio::task::spawn_blocking(move || {
                super::exact::check_exact(&body, &universe, &keys)
            })
            .await?;
            self.noting_corrupt(hour, checked)?;
            self.vouch_form(hour, hour, FormName::Exact, &digest)
                .await?;
        }
        Ok(bytes)
    }

    /// Checks that `hour`'s chain link follows the link before it (or the genesis value
    /// after a gap), as a verifying client would.
    async fn verify_link(&self, hour: Hour) -> Result<()> {
        let corrupt = |e| self.corrupt(hour, e);
        let links = self.store.links(hour, 1).await.map_err(|e| match e {
            e @ StoreError::Corrupt(_) => corrupt(e),
            e => e.into(),
        })?;
        let Some(link) = links.into_iter().next().filter(|l| l.hour == hour) else {
            // Unlinked: a sealed hour before the chain began, or one whose seal is not
            // linked yet (the store's records say when a missing link is damage).
            return Ok(());
        };
        let before = self.store.last_link(hour).await.map_err(|e| match e {
            e @ StoreError::Corrupt(_) => corrupt(e),
            e => e.into(),
        })?;
        let prev = match before {
            Some(b) if b.hour == hour.prev() => b.header,
            _ => chain::GENESIS,
        };
        if link.prev != prev {
            return Err(corrupt(StoreError::Corrupt(format!(
                "the chain link of hour {hour} does not follow the link before it (prev {}, \
                 expected {})",
                chain::hex(&link.prev),
                chain::hex(&prev)
            ))));
        }
        Ok(())
    }
}

impl Health<'_> {
    /// What the scrub has done.
    pub fn scrub_report(&self) -> ScrubReport {
        ScrubReport {
            pass_seconds: self.tuning.scrub_pass.as_secs(),
            last_pass: *lock(&self.scrub.last_pass),
            passes: self.scrub.passes.load(Ordering::Relaxed),
            hours: self.scrub.hours.load(Ordering::Relaxed),
            bytes: self.scrub.bytes.load(Ordering::Relaxed),
            damage_found: self.scrub.damage.load(Ordering::Relaxed),
        }
    }

    /// One whole pass at once, with no spacing: for tests and the cost benchmark.
    pub async fn scrub_now(&self) -> ScrubReport {
        for hour in self.scrub_range() {
            self.scrub_hour(hour).await;
        }
        self.end_pass();
        self.health().scrub_report()
    }
}
