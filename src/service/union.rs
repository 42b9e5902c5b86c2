//! Unions of hours (a day, or a since-range): rebuilt from the hours' keys at a size fit
//! for their distinct count, never OR-ed from hourly filters of different sizes.

use super::{Result, Service, OPEN_UNIONS};
use crate::bloom::Filter;
use crate::hour::Hour;
use crate::render::{render, Effort, Rendered, Repr};
use crate::store::{distinct, StoreError};
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
}
