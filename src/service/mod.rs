//! The service: what bloomcast does, independent of HTTP. Ingest keys into the open
//! hour, publish any hour (or union of hours) as a rendered filter, seal hours as they
//! close and prune past retention.
//!
//! Invariants it keeps:
//! - every acknowledged key is in the store before `ingest` returns, and the store puts
//!   it in an hour that is still open, so it is in that hour's sealed filter;
//! - no filter is ever served for an hour before genesis or in the future;
//! - every served filter's false-positive estimate is at most the target.

mod cache;
mod ledger;
mod lifecycle;
mod stats;
mod union;
mod views;

use crate::bloom::{FilterError, Key};
use crate::clock::Clock;
use crate::hour::{Day, Hour};
use crate::render::{Rendered, Repr};
use crate::store::{Store, StoreError};
use cache::RenderCache;
use chrono::{DateTime, Utc};
use ledger::{Ledger, OpenHour};
pub use stats::{CacheStats, HourStats};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Gone(String),
    #[error("{0}")]
    BadRange(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("stored filter is corrupt: {0}")]
    Corrupt(#[from] FilterError),
}

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The service's tunables, from [`crate::config::Settings`].
#[derive(Debug, Clone)]
pub struct Tuning {
    pub capacity: u64,
    pub target_fpp: f64,
    pub retention_hours: u64,
    pub cache_bytes: usize,
    /// How stale the view of the open hour may be (other nodes' appends).
    pub refresh: Duration,
}

/// What an ingest acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub hour: Hour,
    pub accepted: usize,
}

/// What a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Hour(Hour),
    Day(Day),
    /// From this hour through the current one.
    Since(Hour),
}

/// A served filter and what the HTTP layer needs to describe it.
#[derive(Debug, Clone)]
pub struct View {
    pub rendered: Arc<Rendered>,
    /// `None` when complete (immutable); else when the content may next change for good
    /// (the end of the open hour).
    pub open_until: Option<DateTime<Utc>>,
    /// Path of the previous hour or day, if the service has it.
    pub prev: Option<String>,
    /// Path of the next hour or day, if it exists yet.
    pub next: Option<String>,
}

/// One line of the index.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HourSummary {
    pub hour: String,
    pub url: String,
    pub count: u64,
    pub complete: bool,
}

pub struct Service {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    tuning: Tuning,
    genesis: Hour,
    ledger: Mutex<Ledger>,
    cache: RenderCache,
    /// Serialises sealing so an hour is built once per node.
    seal_lock: tokio::sync::Mutex<()>,
    refresh_lock: tokio::sync::Mutex<()>,
    /// One open-hour render per representation at a time.
    render_locks: [tokio::sync::Mutex<()>; 3],
    /// One union build at a time.
    union_lock: tokio::sync::Mutex<()>,
    /// Unions that end in the open hour (`since`, today), each with the open hour's
    /// version it was built from: pollers asking for the same range between two ingests
    /// share one build instead of each re-reading every hour's keys.
    open_unions: Mutex<HashMap<UnionKey, (OpenStamp, Arc<Rendered>)>>,
}

type UnionKey = (i64, i64, Repr);
/// The open hour and its content version.
type OpenStamp = (i64, u64);
/// Open unions kept at most (each a few KB to a few MB); the map is cleared when full.
const OPEN_UNIONS: usize = 64;

impl Service {
    /// # Errors
    /// The store cannot tell its genesis.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        tuning: Tuning,
    ) -> Result<Service> {
        let genesis = store.genesis().await?;
        Ok(Service {
            cache: RenderCache::new(tuning.cache_bytes),
            store,
            clock,
            tuning,
            genesis,
            ledger: Mutex::new(Ledger::default()),
            seal_lock: tokio::sync::Mutex::new(()),
            refresh_lock: tokio::sync::Mutex::new(()),
            render_locks: Default::default(),
            union_lock: tokio::sync::Mutex::new(()),
            open_unions: Mutex::new(HashMap::new()),
        })
    }

    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    pub fn genesis(&self) -> Hour {
        self.genesis
    }

    pub fn current_hour(&self) -> Hour {
        self.clock.current_hour()
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The oldest hour still served: genesis or the retention horizon, whichever is later.
    pub fn earliest(&self, now: Hour) -> Hour {
        let horizon = Hour::from_index(now.index() - self.tuning.retention_hours as i64 + 1);
        horizon.max(self.genesis)
    }

    /// Records keys in the current hour. Returns once they are durable.
    ///
    /// # Errors
    /// [`ServiceError::Store`] if the store could not make them durable; nothing was
    /// acknowledged then, and the caller may retry.
    pub async fn ingest(&self, keys: &[Key]) -> Result<Receipt> {
        let hour = self.store.append(self.clock.current_hour(), keys).await?;
        let mut ledger = self.ledger.lock().expect("ledger lock");
        if ledger.sealed_through.is_none_or(|s| hour > s) {
            self.open_entry(&mut ledger, hour).add(keys);
        }
        Ok(Receipt {
            hour,
            accepted: keys.len(),
        })
    }

    fn open_entry<'l>(&self, ledger: &'l mut Ledger, hour: Hour) -> &'l mut OpenHour {
        ledger
            .hours
            .entry(hour)
            .or_insert_with(|| OpenHour::new(self.tuning.capacity, self.tuning.target_fpp))
    }

    /// The distinct-key count of the current hour as this node sees it.
    pub fn current_count(&self) -> u64 {
        let now = self.clock.current_hour();
        let ledger = self.ledger.lock().expect("ledger lock");
        ledger.hours.get(&now).map_or(0, OpenHour::count)
    }

    /// Checks that `hour` is one the service can speak for.
    fn check(&self, hour: Hour, now: Hour) -> Result<()> {
        if hour > now {
            return Err(ServiceError::NotFound(format!(
                "{hour} is in the future; the current hour is {now}"
            )));
        }
        if hour < self.genesis {
            return Err(ServiceError::NotFound(format!(
                "{hour} is before this service's first hour {}: nothing is known about it",
                self.genesis
            )));
        }
        if hour < self.earliest(now) {
            return Err(ServiceError::Gone(format!(
                "{hour} is past the retention of {} hours",
                self.tuning.retention_hours
            )));
        }
        Ok(())
    }

    /// The most recent hours, newest first, back to `earliest` but at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn recent(&self, limit: usize) -> Result<Vec<HourSummary>> {
        let now = self.clock.current_hour();
        let earliest = self.earliest(now);
        self.refresh(now).await?;
        let mut out = vec![HourSummary {
            hour: now.rfc3339(),
            url: now.path(),
            count: self.current_count(),
            complete: false,
        }];
        let oldest = Hour::from_index((now.index() - limit as i64 + 1).max(earliest.index()));
        if oldest < now {
            let sealed = self.store.sealed_counts(oldest, now.prev()).await?;
            let mut hour = now.prev();
            while hour >= oldest {
                let count = match sealed.iter().find(|(h, _)| *h == hour) {
                    Some((_, c)) => *c,
                    None => self.seal(hour).await?.count,
                };
                out.push(HourSummary {
                    hour: hour.rfc3339(),
                    url: hour.path(),
                    count,
                    complete: true,
                });
                hour = hour.prev();
            }
        }
        Ok(out)
    }

    /// # Errors
    /// The store is not usable.
    pub async fn health(&self) -> Result<()> {
        Ok(self.store.ping().await?)
    }
}
