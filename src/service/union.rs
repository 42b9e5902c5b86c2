//! Unions of hours (a day, or a since-range): built from the hours' keys at a size fit for
//! their distinct count (`bloom::union_of`), never OR-ed from hourly filters of different
//! sizes.

use super::incremental::room;
use super::open_unions::{OpenStamp, UnionKey};
use super::{lock, Result, Service, ServiceError};
use crate::bloom::{union_of, union_with_room, Filter, Key};
use crate::hour::Hour;
use crate::render::{render, Effort, Rendered, Repr};
use crate::wire::Meta;
use std::sync::Arc;

impl Service {
    /// The verified keys of the past hour `h`, sealing it first unless `sealed` (from
    /// [`Service::sealed_counts`]) lists it; `false` with them when the store cannot
    /// seal it now (they are read from its batches then, and the result is not final).
    pub(super) async fn past_hour_keys(
        &self,
        h: Hour,
        sealed: &[(Hour, u64)],
    ) -> Result<(Vec<Key>, bool)> {
        let mut is_sealed = true;
        if !sealed.iter().any(|(s, _)| *s == h) {
            match self.seal_or_backoff(h).await {
                Ok(_) => {}
                Err(ServiceError::Store(e)) if e.is_transient() => is_sealed = false,
                Err(e) => return Err(e),
            }
        }
        Ok((self.closed_keys(h).await?, is_sealed))
    }

    /// One filter over `from..=to`, rebuilt from the hours' keys at a size fit for
    /// their union's count, so its false-positive estimate stays within the target.
    pub(super) async fn union_view(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), repr);
        let now = self.current_hour();
        // The open hour's version this request arrived after (0 when the range is closed).
        let mut wanted = (now.index(), 0);
        if to == now {
            self.refresh(now).await?;
            wanted.1 = self.ledger().hours.get(&now).map_or(0, |o| o.version);
        }
        // A cached union serves if it shows at least that version (versions only grow).
        let cached = || -> Option<Arc<Rendered>> {
            if complete {
                return self.cache.get(&key);
            }
            lock(&self.open_unions).get(&key, wanted)
        };
        if let Some(r) = cached() {
            return Ok((r, complete));
        }
        // Readers of one range share its next build instead of each starting their own;
        // builds of different ranges run on a bounded pool, and past it a request is
        // refused at once (503 busy) rather than queued into a 408.
        let range = lock(&self.union_ranges).entry(key).or_default().clone();
        let _same_range = range.lock().await;
        if let Some(r) = cached() {
            return Ok((r, complete));
        }
        let _slot = self.union_pool.try_acquire().map_err(|_| {
            ServiceError::Busy(
                "every union build slot is taken; retry shortly (setting union_builds)".into(),
            )
        })?;
        let built = self.build_union(from, to, repr, complete).await;
        // The last one out forgets the range's lock, and any left by cancelled requests.
        lock(&self.union_ranges).retain(|_, l| {
            let holders = Arc::strong_count(l) - 1 - usize::from(Arc::ptr_eq(l, &range));
            holders > 0
        });
        built
    }

    async fn build_union(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), repr);
        let now = self.current_hour();
        // Another representation of a union just built: render the same filter again.
        let current = (to == now).then(|| {
            (
                now.index(),
                self.ledger().hours.get(&now).map_or(0, |o| o.version),
            )
        });
        if let Some(built) = self.built_union(from, to, current, complete) {
            return self.serve_built(key, built, repr).await;
        }
        // A union of this range built at an earlier version: add what the hour gained.
        if to == now {
            if let Some(built) = self.advance_union(from, now).await? {
                self.remember_union(built.clone());
                return self.serve_built(key, built, repr).await;
            }
        }
        // One key set per hour: sealed hours' come sorted and distinct, and the union is
        // built from the sets as they are (no concatenated copy, no sort).
        let mut hours: Vec<Vec<Key>> = Vec::new();
        let mut stamp = None;
        let mut growth = None;
        // Final only if every past hour in it is: one the store cannot seal yet is read
        // from its keys, and the union is then not cached as complete.
        let mut fin = true;
        let sealed = self.sealed_counts(from, to.min(now.prev())).await?;
        let mut h = from;
        while h <= to {
            if h == now {
                // Refreshed above; what this node acknowledged since is already in the ledger.
                let ledger = self.ledger();
                if let Some(open) = ledger.hours.get(&h) {
                    hours.push(open.keys().collect());
                    // Taken with the keys, so the stamp never claims newer content.
                    stamp = Some((h.index(), open.version));
                    growth = Some((open.id, open.count()));
                }
            } else {
                let (keys, sealed) = self.past_hour_keys(h, &sealed).await?;
                fin &= sealed;
                hours.push(keys);
            }
            h = h.next();
        }
        let complete = complete && fin;
        // A union ending in the open hour is built with room to take the hour's next
        // keys (see `incremental`), unless a closed hour in it may still change.
        let growth = growth.filter(|_| fin);
        let p = self.tuning.target_fpp;
        let meta_of = move |count| Meta::range(from.rfc3339(), to.rfc3339(), complete, count);
        let effort = if complete { Effort::Best } else { Effort::Fast };
        let (rendered, filter, count) = tokio::task::spawn_blocking(move || {
            let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
            let built = match growth {
                Some(_) => union_with_room(&sets, p, room),
                None => union_of(&sets, p),
            };
            built.map(|(filter, count)| {
                let rendered = render(&meta_of(count), &filter, repr, effort);
                (rendered, Arc::new(filter), count)
            })
        })
        .await??;
        self.remember_union(BuiltUnion {
            range: (from.index(), to.index()),
            stamp,
            complete,
            filter,
            count,
            growth: growth.map(|(hour_id, position)| Growth {
                hour_id,
                position,
                capacity: room(count),
            }),
        });
        Ok(self.keep_union(key, complete, stamp, rendered))
    }

    /// Renders a built union filter and caches the rendering.
    async fn serve_built(
        &self,
        key: UnionKey,
        built: BuiltUnion,
        repr: Repr,
    ) -> Result<(Arc<Rendered>, bool)> {
        let (from, to) = (
            Hour::from_index(built.range.0),
            Hour::from_index(built.range.1),
        );
        let complete = built.complete;
        let meta = Meta::range(from.rfc3339(), to.rfc3339(), complete, built.count);
        let effort = if complete { Effort::Best } else { Effort::Fast };
        let filter = built.filter.clone();
        let rendered =
            tokio::task::spawn_blocking(move || render(&meta, &filter, repr, effort)).await?;
        Ok(self.keep_union(key, complete, built.stamp, rendered))
    }

    /// Takes out the kept union of `from..=now` that can be carried forward, if any.
    pub(super) fn take_growable(&self, from: Hour, now: Hour) -> Option<BuiltUnion> {
        let mut kept = lock(&self.built_unions);
        let at = kept.iter().position(|b| {
            b.range == (from.index(), now.index())
                && b.growth.is_some()
                && b.stamp.is_some_and(|s| s.0 == now.index())
        })?;
        kept.remove(at)
    }

    /// Caches a rendering: immutable ones in the render cache, open ones with their stamp.
    fn keep_union(
        &self,
        key: UnionKey,
        complete: bool,
        stamp: Option<OpenStamp>,
        rendered: Rendered,
    ) -> (Arc<Rendered>, bool) {
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert(key, rendered.clone());
        } else if let Some(stamp) = stamp {
            lock(&self.open_unions).insert(key, stamp, rendered.clone());
        }
        (rendered, complete)
    }

    /// A union filter built for `from..=to` showing exactly `current` (the open hour and
    /// its version; `None` for a range of closed hours), if one is kept.
    fn built_union(
        &self,
        from: Hour,
        to: Hour,
        current: Option<OpenStamp>,
        complete: bool,
    ) -> Option<BuiltUnion> {
        lock(&self.built_unions)
            .iter()
            .find(|b| {
                b.range == (from.index(), to.index())
                    && b.stamp == current
                    && b.complete == complete
            })
            .cloned()
    }

    /// Keeps the newest few built filters (within a quarter of the cache budget each), so
    /// each representation of a union is a rendering of one build.
    fn remember_union(&self, built: BuiltUnion) {
        if built.filter.m() as usize / 8 > self.tuning.cache_bytes / 4 {
            return;
        }
        let mut kept = lock(&self.built_unions);
        kept.retain(|b| b.range != built.range);
        if kept.len() >= BUILT_UNIONS {
            kept.pop_front();
        }
        kept.push_back(built);
    }
}

/// Built union filters kept for their other representations.
const BUILT_UNIONS: usize = 4;

/// One built union filter and what it shows.
#[derive(Clone)]
pub(super) struct BuiltUnion {
    pub range: (i64, i64),
    /// The open hour and version it includes; `None` for a range of closed hours.
    pub stamp: Option<OpenStamp>,
    pub complete: bool,
    pub filter: Arc<Filter>,
    pub count: u64,
    /// How to carry it forward as the open hour takes keys; `None` when it cannot be.
    pub growth: Option<Growth>,
}

/// Where a union ending in the open hour stands in that hour, and how far it may grow.
#[derive(Clone, Copy)]
pub(super) struct Growth {
    /// The open hour it read (`OpenHour::id`).
    pub hour_id: u64,
    /// How many of that hour's distinct keys it holds.
    pub position: u64,
    /// The count it was sized for; past it, it is rebuilt.
    pub capacity: u64,
}
