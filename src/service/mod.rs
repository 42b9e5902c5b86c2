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

use crate::bloom::{Filter, FilterError, Key, SHA1_KM32};
use crate::clock::Clock;
use crate::hour::{Day, Hour};
use crate::render::{render, Effort, Rendered, Repr};
use crate::store::{distinct, SealedHour, Store, StoreError};
use crate::wire::Meta;
use cache::RenderCache;
use chrono::{DateTime, Utc};
use ledger::{Ledger, OpenHour};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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

    /// The filter for a target in a representation.
    ///
    /// # Errors
    /// `NotFound` for the future or before genesis, `Gone` past retention, `BadRange`
    /// for a union that starts in the future, and store failures.
    pub async fn view(&self, target: Target, repr: Repr) -> Result<View> {
        let now = self.clock.current_hour();
        match target {
            Target::Hour(hour) => {
                self.check(hour, now)?;
                let rendered = if hour == now {
                    self.open_view(hour, repr).await?
                } else {
                    self.sealed_view(hour, repr).await?
                };
                Ok(View {
                    rendered,
                    open_until: (hour == now).then(|| hour.end()),
                    prev: (hour.prev() >= self.earliest(now)).then(|| hour.prev().path()),
                    next: (hour < now).then(|| hour.next().path()),
                })
            }
            Target::Day(day) => {
                let (first, last) = (day.first_hour(), day.last_hour());
                if first > now {
                    return Err(ServiceError::NotFound(format!(
                        "{} is in the future",
                        day.path()
                    )));
                }
                // A day is served from its first served hour to its last one up to now.
                self.check(last.min(now), now)?;
                let from = first.max(self.earliest(now));
                let to = last.min(now);
                let complete = last < now;
                let rendered = self.union_view(from, to, repr, complete).await?;
                let prev_day = Day::from_hour_index(first.index() - 24);
                Ok(View {
                    rendered,
                    open_until: (!complete).then(|| now.end()),
                    prev: (prev_day.last_hour() >= self.earliest(now)).then(|| prev_day.path()),
                    next: complete.then(|| Day::from_hour_index(first.index() + 24).path()),
                })
            }
            Target::Since(from) => {
                if from > now {
                    return Err(ServiceError::BadRange(format!(
                        "since {from} is in the future; the current hour is {now}"
                    )));
                }
                self.check(from, now)?;
                let rendered = self.union_view(from, now, repr, false).await?;
                Ok(View {
                    rendered,
                    open_until: Some(now.end()),
                    prev: None,
                    next: None,
                })
            }
        }
    }

    async fn open_view(&self, hour: Hour, repr: Repr) -> Result<Arc<Rendered>> {
        self.refresh(hour).await?;
        let (meta, filter, version) = {
            let mut ledger = self.ledger.lock().expect("ledger lock");
            let open = self.open_entry(&mut ledger, hour);
            if let Some(r) = &open.rendered[repr.index()] {
                return Ok(r.clone());
            }
            let meta = Meta::hour(hour.rfc3339(), false, open.count());
            (meta, open.filter().clone(), open.version)
        };
        let rendered = Arc::new(render_off_thread(meta, filter, repr, Effort::Fast).await);
        let mut ledger = self.ledger.lock().expect("ledger lock");
        if let Some(open) = ledger.hours.get_mut(&hour) {
            if open.version == version {
                open.rendered[repr.index()] = Some(rendered.clone());
            }
        }
        Ok(rendered)
    }

    /// Pulls keys other nodes appended to the open hour, at most once per `refresh`.
    async fn refresh(&self, hour: Hour) -> Result<()> {
        let due = |ledger: &mut Ledger| {
            let open = self.open_entry(ledger, hour);
            let due = open
                .refreshed_at
                .is_none_or(|t| t.elapsed() >= self.tuning.refresh);
            (due, open.cursor, open.refreshed_at.is_some())
        };
        if !due(&mut self.ledger.lock().expect("ledger lock")).0 {
            return Ok(());
        }
        let _one_at_a_time = self.refresh_lock.lock().await;
        let (is_due, cursor, ever) = due(&mut self.ledger.lock().expect("ledger lock"));
        if !is_due {
            return Ok(());
        }
        match self.store.keys_after(hour, cursor).await {
            Ok(page) => {
                let mut ledger = self.ledger.lock().expect("ledger lock");
                let open = self.open_entry(&mut ledger, hour);
                open.add(&page.keys);
                open.cursor = open.cursor.max(page.cursor);
                open.refreshed_at = Some(Instant::now());
                Ok(())
            }
            // A view that was current once may be served a little stale while the store is away.
            Err(e) if ever => {
                tracing::warn!(error = %e, %hour, "refresh of the open hour failed; serving the last view");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn sealed_view(&self, hour: Hour, repr: Repr) -> Result<Arc<Rendered>> {
        let key = (hour.index(), hour.index(), repr);
        if let Some(r) = self.cache.get(&key) {
            return Ok(r);
        }
        let sealed = match self.store.sealed(hour).await? {
            Some(s) => s,
            None => self.seal(hour).await?,
        };
        let filter =
            Filter::decode_bytes(sealed.m.into(), sealed.k.into(), SHA1_KM32, &sealed.filter)?;
        let meta = Meta::hour(hour.rfc3339(), true, sealed.count);
        let rendered = Arc::new(render_off_thread(meta, filter, repr, Effort::Best).await);
        self.cache.insert(key, rendered.clone());
        Ok(rendered)
    }

    /// One filter over `from..=to`, rebuilt from the hours' keys at a size fit for
    /// their union's count, so its false-positive estimate stays within the target.
    async fn union_view(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
    ) -> Result<Arc<Rendered>> {
        let key = (from.index(), to.index(), repr);
        if complete {
            if let Some(r) = self.cache.get(&key) {
                return Ok(r);
            }
        }
        let now = self.clock.current_hour();
        if to == now {
            self.refresh(now).await?;
            let version = self
                .ledger
                .lock()
                .expect("ledger lock")
                .hours
                .get(&now)
                .map(|o| o.version);
            let unions = self.open_unions.lock().expect("unions lock");
            if let Some((stamp, r)) = unions.get(&key) {
                if Some(*stamp) == version.map(|v| (now.index(), v)) {
                    return Ok(r.clone());
                }
            }
        }
        let mut keys = Vec::new();
        let mut stamp = None;
        let mut h = from;
        while h <= to {
            if h == now {
                self.refresh(h).await?;
                let ledger = self.ledger.lock().expect("ledger lock");
                if let Some(open) = ledger.hours.get(&h) {
                    keys.extend(open.keys());
                    // Taken with the keys, so the stamp never claims newer content.
                    stamp = Some((h.index(), open.version));
                }
            } else {
                if self.store.sealed(h).await?.is_none() {
                    self.seal(h).await?;
                }
                keys.extend(self.store.keys(h).await?);
            }
            h = h.next();
        }
        let p = self.tuning.target_fpp;
        let meta_of = move |count| Meta::range(from.rfc3339(), to.rfc3339(), complete, count);
        let effort = if complete { Effort::Best } else { Effort::Fast };
        let rendered = tokio::task::spawn_blocking(move || {
            let keys = distinct(keys);
            Filter::sized_within(&keys, p)
                .map(|f| render(&meta_of(keys.len() as u64), &f, repr, effort))
        })
        .await
        .map_err(|e| StoreError::Failed(e.to_string()))??;
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert(key, rendered.clone());
        } else if let Some(stamp) = stamp {
            let mut unions = self.open_unions.lock().expect("unions lock");
            // Unions from earlier open hours can never be asked for again.
            unions.retain(|_, (s, _)| s.0 == stamp.0);
            if unions.len() >= OPEN_UNIONS {
                unions.clear();
            }
            unions.insert(key, (stamp, rendered.clone()));
        }
        Ok(rendered)
    }

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

    fn forget_open(&self, hour: Hour) {
        let mut ledger = self.ledger.lock().expect("ledger lock");
        ledger.hours.retain(|h, _| *h > hour);
        if ledger.sealed_through.is_none_or(|s| s < hour) {
            ledger.sealed_through = Some(hour);
        }
    }

    /// Housekeeping, run at every hour boundary (and at start): seal every closed hour
    /// not yet sealed, and prune hours past retention.
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

/// Renders on the blocking pool when the filter is large enough to stall the runtime.
async fn render_off_thread(meta: Meta, filter: Filter, repr: Repr, effort: Effort) -> Rendered {
    if filter.m() < 1 << 19 {
        return render(&meta, &filter, repr, effort);
    }
    tokio::task::spawn_blocking(move || render(&meta, &filter, repr, effort))
        .await
        .expect("rendering does not panic")
}
