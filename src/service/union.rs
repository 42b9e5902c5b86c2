//! Unions of hours (a day, or a since-range): built from the hours' keys at a size fit for
//! their distinct count (`bloom::union_of`), never OR-ed from hourly filters of different
//! sizes.

use super::{lock, Result, Service, ServiceError};
use crate::bloom::{union_of, Key};
use crate::hour::Hour;
use crate::render::{render, Effort, Rendered, Repr};
use crate::wire::Meta;
use std::sync::Arc;

impl Service {
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
        // One key set per hour: sealed hours' come sorted and distinct, and the union is
        // built from the sets as they are (no concatenated copy, no sort).
        let mut hours: Vec<Vec<Key>> = Vec::new();
        let mut stamp = None;
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
                }
            } else {
                if !sealed.iter().any(|(s, _)| *s == h) {
                    match self.seal_or_backoff(h).await {
                        Ok(_) => {}
                        Err(ServiceError::Store(e)) if e.is_transient() => fin = false,
                        Err(e) => return Err(e),
                    }
                }
                hours.push(self.closed_keys(h).await?);
            }
            h = h.next();
        }
        let complete = complete && fin;
        let p = self.tuning.target_fpp;
        let meta_of = move |count| Meta::range(from.rfc3339(), to.rfc3339(), complete, count);
        let effort = if complete { Effort::Best } else { Effort::Fast };
        let rendered = tokio::task::spawn_blocking(move || {
            let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
            union_of(&sets, p).map(|(filter, count)| render(&meta_of(count), &filter, repr, effort))
        })
        .await??;
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert(key, rendered.clone());
        } else if let Some(stamp) = stamp {
            lock(&self.open_unions).insert(key, stamp, rendered.clone());
        }
        Ok((rendered, complete))
    }
}
