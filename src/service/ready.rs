//! The read path's fast lane: an hour whose rendering is ready, found without a lock,
//! an await or a write to anything shared but reference counts.
//!
//! Closed hours come from the thread's renderings served lately (`recent`), else the
//! one cache (a lookup that takes its lock). The open hour comes
//! from the [`Board`]: its latest renderings, published with the ledger generation they
//! show. Every change to the open hours bumps the generation (under the ledger lock,
//! before the ingest is acknowledged), so a rendering is served here only while nothing
//! has changed since it was taken: a reader never gets an open hour older than an
//! acknowledgement it arrived after. Anything else (no rendering yet, a change since,
//! a refresh due, an hour out of range) is `None`, and the caller takes the full path.

use super::{Service, Target, View};
use crate::hour::Hour;
use crate::render::{Rendered, Repr};
use arc_swap::ArcSwapOption;
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The open hour's published renderings.
pub(super) struct Board {
    /// Bumped by every change to the open hours (under the ledger lock).
    generation: AtomicU64,
    /// When the open hour must next be refreshed from the store, in milliseconds since
    /// `born` (other nodes' keys arrive only through a refresh).
    refresh_due: AtomicU64,
    born: Instant,
    latest: ArcSwapOption<Published>,
}

/// Renderings of one open hour at one generation, by representation.
struct Published {
    hour: Hour,
    generation: u64,
    rendered: [Option<Arc<Rendered>>; 3],
}

impl Board {
    pub fn new() -> Board {
        Board {
            generation: AtomicU64::new(0),
            refresh_due: AtomicU64::new(0),
            born: Instant::now(),
            latest: ArcSwapOption::empty(),
        }
    }

    /// Records a change to the open hours: every rendering published before is stale.
    /// Called under the ledger lock, with the change.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The generation now: taken under the ledger lock with the content it describes.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Records a refresh of the open hour at `at`: the next is due `every` later.
    pub fn refreshed(&self, at: Instant, every: std::time::Duration) {
        let due = at.saturating_duration_since(self.born) + every;
        self.refresh_due
            .store(due.as_millis() as u64, Ordering::Release);
    }

    /// Publishes a rendering of `hour` showing `generation` (unless a newer one is out).
    pub fn publish(&self, hour: Hour, generation: u64, rendered: &Arc<Rendered>) {
        let slot = rendered.repr.index();
        self.latest.rcu(|latest| {
            let mut next = Published {
                hour,
                generation,
                rendered: [None, None, None],
            };
            if let Some(p) = latest {
                let same = p.hour == hour && p.generation == generation;
                if same {
                    next.rendered = p.rendered.clone();
                } else if p.hour > hour || (p.hour == hour && p.generation > generation) {
                    return Some(p.clone());
                }
            }
            next.rendered[slot] = Some(rendered.clone());
            Some(Arc::new(next))
        });
    }

    /// Calls `f` with the published rendering of `hour` in `repr`, if nothing changed
    /// since it was taken and no refresh is due.
    fn with<R>(&self, hour: Hour, repr: Repr, f: impl FnOnce(&Arc<Rendered>) -> R) -> Option<R> {
        let latest = self.latest.load();
        let p = latest.as_ref()?;
        if p.hour != hour || p.generation != self.generation.load(Ordering::Acquire) {
            return None;
        }
        let due = self.refresh_due.load(Ordering::Acquire);
        if self.born.elapsed().as_millis() as u64 >= due {
            return None;
        }
        p.rendered[repr.index()].as_ref().map(f)
    }
}

/// An hour whose rendering is ready, borrowed for the length of one response.
pub struct ReadyHour<'a> {
    pub hour: Hour,
    pub rendered: &'a Arc<Rendered>,
    /// As [`View::open_until`].
    pub open_until: Option<DateTime<Utc>>,
    /// Whether the previous hour is served.
    pub prev: bool,
    /// Whether the next hour exists yet.
    pub next: bool,
}

impl ReadyHour<'_> {
    /// The same as a [`View`], as [`Service::view`] gives it.
    pub fn view(&self) -> View {
        View {
            rendered: self.rendered.clone(),
            open_until: self.open_until,
            prev: self.prev.then(|| Target::Hour(self.hour.prev())),
            next: self.next.then(|| Target::Hour(self.hour.next())),
            open_hour: self.open_until.map(|_| self.hour),
            // Only settled renderings of closed hours are cached, and so ready.
            signature_pending: false,
        }
    }
}

impl Service {
    /// Calls `f` with an hour's filter if its rendering is ready now: a closed hour in
    /// the render cache, or the open hour rendered since its last change. `None` means
    /// "take the full path" ([`Service::view`]), which answers everything this does,
    /// and errors.
    pub fn with_ready_hour<R>(
        &self,
        hour: Hour,
        repr: Repr,
        f: impl FnOnce(&ReadyHour<'_>) -> R,
    ) -> Option<R> {
        if !self.is_loaded() {
            return None;
        }
        let now = self.current_hour();
        if hour > now || self.check(hour, now).is_err() {
            return None;
        }
        let (prev, next) = (hour.prev() >= self.earliest(now), hour < now);
        // `f` is called once, from whichever place finds the rendering.
        let mut f = Some(f);
        let mut ready = |rendered: &Arc<Rendered>, open_until| {
            let f = f.take().expect("called once");
            f(&ReadyHour {
                hour,
                rendered,
                open_until,
                prev,
                next,
            })
        };
        if hour == now {
            return self
                .open
                .board()
                .with(hour, repr, |r| {
                    // A version signed too long ago is signed again on the full path.
                    self.signature_fresh(r).then(|| ready(r, Some(now.end())))
                })
                .flatten();
        }
        let key = (hour.index(), hour.index(), repr);
        if let Some(out) = super::recent::with(self.id, &key, |r| ready(r, None)) {
            return Some(out);
        }
        let rendered = self.cache.get(&key)?;
        let budget = self.split.responses_per_thread as usize / 2;
        super::recent::keep(self.id, key, &rendered, budget);
        Some(ready(&rendered, None))
    }
}
