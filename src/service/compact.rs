//! Compact (ribbon) views of closed hours and closed unions (a past day): built from the
//! keys once per precision, after every hour in them is sealed, and kept in the render
//! cache beside the v1 representations. Nothing that touches the open hour has a compact
//! form (the open hour, today, every `since`): its keys still change, and a static
//! structure cannot take more. A ribbon cannot be OR-ed either, so a union's is built
//! from the sorted distinct union of its hours' keys.

use super::cache::CompactKey;
use super::unions::Step;
use super::{Result, Service, ServiceError, Target, View};
use crate::bloom::{distinct_keys, Key, Ribbon};
use crate::hour::{Day, Hour};
use crate::render::{render_compact, render_ribbon, Compact, Rendered, Repr};
use crate::wire::Meta;
use std::future::Future;
use std::sync::Arc;

impl Service {
    /// A closed hour or a past day as a ribbon filter of `2^-r` false-positive rate,
    /// in the form asked for.
    ///
    /// # Errors
    /// As [`Service::view`] for the target; `NotAcceptable` for anything that includes
    /// the open hour; `Busy` when a union must be built and the union pool is full; a
    /// filter error for `r` outside `1..=32`.
    pub async fn compact_view(&self, target: Target, r: u32, form: Compact) -> Result<View> {
        let mut now = self.current_hour();
        let asked = match target {
            Target::Hour(h) | Target::Since(h) => h,
            Target::Day(d) => d.first_hour(),
        };
        if asked > now {
            self.read_marks_if_due().await?;
            now = self.current_hour();
        }
        let (from, to, prev, next) = match target {
            Target::Hour(hour) => {
                self.check(hour, now)?;
                if hour == now {
                    return Err(ServiceError::NotAcceptable(format!(
                        "{hour} is still open: its compact form exists once it closes; \
                         fetch it as .bin, .hex or .json until then"
                    )));
                }
                let prev = (hour.prev() >= self.earliest(now)).then(|| hour.prev().path());
                (hour, hour, prev, Some(hour.next().path()))
            }
            Target::Day(day) => {
                let (first, last) = self.day_hours(day, now)?;
                if last >= now {
                    return Err(ServiceError::NotAcceptable(format!(
                        "{} includes the open hour {now}: its compact form exists once the \
                         day is over; fetch it as .bin, .hex or .json until then",
                        day.path()
                    )));
                }
                let prev_day = Day::from_hour_index(first.index() - 24);
                let prev = (prev_day.last_hour() >= self.earliest(now)).then(|| prev_day.path());
                let next = Day::from_hour_index(first.index() + 24).path();
                (first.max(self.earliest(now)), last, prev, Some(next))
            }
            Target::Since(from) => {
                if from > now {
                    return Err(ServiceError::BadRange(format!(
                        "since {from} is in the future; the current hour is {now}"
                    )));
                }
                self.check(from, now)?;
                return Err(ServiceError::NotAcceptable(format!(
                    "a since-range ends in the open hour {now}, which has no compact form; \
                     fetch its closed hours and past days in compact form, or the range as \
                     .bin, .hex or .json"
                )));
            }
        };
        let (rendered, complete) = self.compact(from, to, r, form).await?;
        Ok(View {
            rendered,
            open_until: (!complete).then(|| now.end()),
            prev,
            next,
            open_hour: None,
        })
    }

    /// The rendering of `from..=to` (all closed) in `form`, and whether it is complete.
    async fn compact(
        &self,
        from: Hour,
        to: Hour,
        r: u32,
        form: Compact,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), r, form);
        if let Some(hit) = self.cache.get_compact(&key) {
            return Ok((hit, true));
        }
        let (body, complete) = self.ribbon_body(from, to, r).await?;
        match form {
            Compact::Ribbon => Ok((body, complete)),
            // The JSON form carries the body just built or cached: never a second build.
            Compact::RibbonJson => {
                let work = || async move {
                    let meta = meta(from, to, complete, body.count);
                    // A compact union's rendering is union work (an hour's own is not).
                    let step = (from != to).then_some(Step::Render);
                    let json = self
                        .unions
                        .measured(step, move || -> Result<Rendered> {
                            let ribbon = Ribbon::from_bytes(&body.identity)?;
                            Ok(render_compact(&meta, &ribbon, Compact::RibbonJson))
                        })
                        .await??;
                    Ok(self.keep(key, complete, json))
                };
                self.once(key, from != to, work).await
            }
        }
    }

    /// The `.ribbon` body of `from..=to`, from the cache or built.
    async fn ribbon_body(&self, from: Hour, to: Hour, r: u32) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), r, Compact::Ribbon);
        if let Some(hit) = self.cache.get_compact(&key) {
            return Ok((hit, true));
        }
        let work = || async move {
            let (sets, complete) = if from == to {
                // Seals the hour if needed and says whether it is durably closed.
                let (_, complete) = self.closed_view(from, Repr::Bin).await?;
                (vec![self.closed_keys(from).await?], complete)
            } else {
                self.closed_sets(from, to).await?
            };
            // A compact union's build is union work too (an hour's own is not).
            let step = (from != to).then_some(Step::Build);
            let body = self
                .unions
                .measured(step, move || -> Result<Rendered> {
                    let sets: Vec<&[Key]> = sets.iter().map(Vec::as_slice).collect();
                    let keys = distinct_keys(&sets);
                    let ribbon = Ribbon::build(&keys, r)?;
                    let count = keys.len() as u64;
                    Ok(render_ribbon(&meta(from, to, complete, count), &ribbon))
                })
                .await??;
            Ok(self.keep(key, complete, body))
        };
        self.once(key, from != to, work).await
    }

    /// The keys of each hour of a closed range, sealing those not sealed yet; complete
    /// only if every hour is (one the store cannot seal now is read from its keys).
    async fn closed_sets(&self, from: Hour, to: Hour) -> Result<(Vec<Vec<Key>>, bool)> {
        let sealed = self.sealed_counts(from, to).await?;
        let mut complete = true;
        let mut sets = Vec::new();
        let mut h = from;
        while h <= to {
            let (keys, sealed) = self.past_hour_keys(h, &sealed).await?;
            complete &= sealed;
            sets.push(keys);
            h = h.next();
        }
        Ok((sets, complete))
    }

    /// Runs `work` for `key`: at once for an hour (as v1 hours are), else as v1 unions
    /// are built, one build per range and form at a time (readers of one share it) on
    /// the bounded union pool, refused at once (503 busy) when the pool is full.
    async fn once<F, Fut>(
        &self,
        key: CompactKey,
        pooled: bool,
        work: F,
    ) -> Result<(Arc<Rendered>, bool)>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(Arc<Rendered>, bool)>>,
    {
        if !pooled {
            return work().await;
        }
        let _same_range = self.unions.compact_turn(key).await;
        if let Some(hit) = self.cache.get_compact(&key) {
            return Ok((hit, true));
        }
        let _slot = self.unions.slot()?;
        work().await
    }

    /// Caches a complete rendering; an incomplete one is served once and built again.
    fn keep(&self, key: CompactKey, complete: bool, rendered: Rendered) -> (Arc<Rendered>, bool) {
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert_compact(key, rendered.clone());
        }
        (rendered, complete)
    }
}

/// What a compact rendering of `from..=to` says about itself: an hour, or a range.
fn meta(from: Hour, to: Hour, complete: bool, count: u64) -> Meta {
    if from == to {
        Meta::hour(from.rfc3339(), complete, count)
    } else {
        Meta::range(from.rfc3339(), to.rfc3339(), complete, count)
    }
}
