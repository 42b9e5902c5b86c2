//! Publishing: any hour, day or since-range as a rendered filter, from the render cache,
//! the open hour's in-memory keys, or the store's sealed filter.

use super::ledger::Ledger;
use super::{Result, Service, ServiceError, Target, View};
use crate::bloom::{Filter, SHA1_KM32};
use crate::hour::{Day, Hour};
use crate::render::{render, Effort, Rendered, Repr};
use crate::wire::Meta;
use std::sync::Arc;
use std::time::Instant;

impl Service {
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

    /// The open hour, rendered at least as new as when the request arrived. One render
    /// per representation runs at a time: readers arriving while ingest keeps changing
    /// the hour share the next render instead of each starting their own.
    async fn open_view(&self, hour: Hour, repr: Repr) -> Result<Arc<Rendered>> {
        self.refresh(hour).await?;
        let slot = repr.index();
        let wanted = {
            let mut ledger = self.ledger.lock().expect("ledger lock");
            let open = self.open_entry(&mut ledger, hour);
            match &open.rendered[slot] {
                Some((v, r)) if *v == open.version => return Ok(r.clone()),
                _ => open.version,
            }
        };
        let _one_render = self.render_locks[slot].lock().await;
        let (meta, filter, version) = {
            let mut ledger = self.ledger.lock().expect("ledger lock");
            let open = self.open_entry(&mut ledger, hour);
            if let Some((v, r)) = &open.rendered[slot] {
                if *v >= wanted {
                    return Ok(r.clone());
                }
            }
            let meta = Meta::hour(hour.rfc3339(), false, open.count());
            (meta, open.filter().clone(), open.version)
        };
        let rendered = Arc::new(render_off_thread(meta, filter, repr, Effort::Fast).await);
        let mut ledger = self.ledger.lock().expect("ledger lock");
        if let Some(open) = ledger.hours.get_mut(&hour) {
            if open.rendered[slot]
                .as_ref()
                .is_none_or(|(v, _)| *v < version)
            {
                open.rendered[slot] = Some((version, rendered.clone()));
            }
        }
        Ok(rendered)
    }

    /// Pulls keys other nodes appended to the open hour, at most once per `refresh`.
    pub(super) async fn refresh(&self, hour: Hour) -> Result<()> {
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
