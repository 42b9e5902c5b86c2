//! Compact (ribbon) views of closed hours and closed unions (a past day): built from the
//! keys once per precision, after every hour in them is sealed, and kept in the render
//! cache beside the v1 representations. Nothing that touches the open hour has a compact
//! form (the open hour, today, every `since`): its keys still change, and a static
//! structure cannot take more. A ribbon cannot be OR-ed either, so a union's is built
//! from the sorted distinct union of its hours' keys.
//!
//! Any reader can ask for any closed hour at any precision a client may name, so every
//! compact build, an hour's as a union's, is bounded as union builds are: readers of one
//! range, precision and form share one build; builds take a slot of the union pool
//! (`TooManyWaiting` past it, at once) and reserve their working memory from the build
//! budget before they read a key (`BudgetTaken` while others hold it, `TooLargeForBudget`
//! when the build alone exceeds it); the result is kept in the render cache.

use super::cache::CompactKey;
use super::parts::Forms;
use super::unions::fair::BuildSlot;
use super::unions::runs::{part_bytes, Order, Runs};
use super::unions::{Held, Step};
use super::validators::{compact_kind, Form};
use super::vouch::{
    answers_every, answers_every_part, answers_every_set, reading_bytes, vouching_bytes,
};
use super::{Result, Service, ServiceError, Target, View, Work};
use crate::bloom::{
    distinct_keys, FilterError, Grade, Key, KeyParts, Pages, PagesHeader, Ribbon, Ribbon2,
};
use crate::chain::BodyForm;
use crate::hour::{Day, Hour};
use crate::render::{
    render_compact, render_pages, render_ribbon, render_ribbon2, Compact, Rendered, Repr,
};
use crate::store::FormName;
use crate::wire::Meta;
use std::future::Future;
use std::sync::Arc;

impl Service {
    /// The rendering of `from..=to` (all closed) in `form`, and whether it is complete.
    async fn compact(
        &self,
        from: Hour,
        to: Hour,
        r: u32,
        form: Compact,
    ) -> Result<(Arc<Rendered>, bool)> {
        if form.graded() {
            return self.ribbon_body(from, to, r, form).await;
        }
        let key = (from.index(), to.index(), r, form);
        if let Some(hit) = self.cache.get_compact(&key) {
            return Ok((hit, true));
        }
        let (body, complete) = self.ribbon_body(from, to, r, Compact::Ribbon).await?;
        match form {
            Compact::Ribbon | Compact::Ribbon2 | Compact::Pages => Ok((body, complete)),
            // The JSON form carries the body just built or cached: never a second build.
            Compact::RibbonJson => {
                // The same body, so the same place in the chain and signature.
                let chain = body.chain;
                let work = |slot| async move {
                    let held = self.reserve(slot, from, to, json_bytes(body.identity.len()))?;
                    let meta = meta(from, to, complete, body.count);
                    let step = if from == to {
                        Step::HourRibbon
                    } else {
                        Step::Render
                    };
                    let mut json = self
                        .unions
                        .run(held, step, move || -> Result<Rendered> {
                            let ribbon = Ribbon::from_bytes(&body.identity)?;
                            Ok(render_compact(&meta, &ribbon, Compact::RibbonJson))
                        })
                        .await??;
                    json.chain = chain;
                    Ok(self.keep(key, complete, json).await)
                };
                self.once(key, work).await
            }
        }
    }

    /// The `.ribbon` body (`form` [`Compact::Ribbon`], `r` bits), the `.ribbon2` body
    /// (`form` [`Compact::Ribbon2`], `r` a [`Grade`] code) or an hour's `.pages` body
    /// (`form` [`Compact::Pages`], `r` a grade code) of `from..=to`, from the cache or
    /// built.
    async fn ribbon_body(
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
        let work = |slot| async move {
            // Each hour sealed first (its count known), then the working memory of the
            // build reserved, and only then the keys read.
            let (counts, complete) = if from == to {
                // Seals the hour if needed and says whether it is durably closed.
                let (bin, complete) = self.closed_view(from, Repr::Bin).await?;
                (vec![(from, bin.count)], complete)
            } else {
                (self.closed_counts(from, to).await?, true)
            };
            let read: u64 = counts.iter().map(|(_, n)| n).sum();
            let largest = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
            // A version 2 body is built part by part, from a file past a part's worth of
            // keys; version 1 from every key at once.
            let runs = if form.graded() {
                Runs::new(read, Order::Shards)
            } else {
                Runs::held()
            };
            let p = self.tuning.target_fpp;
            let bytes = build_bytes(read, counts.len(), largest, r, form, runs.spilled(), p);
            let held = self.reserve(slot, from, to, bytes)?;
            // What it holds, as it goes: the keys as read (an hour at a time vouched
            // for), then all it reserved, as it builds (`/stats`).
            let stage = held.stage();
            stage.hold(reading_bytes(&runs, largest, p));
            // Pages are signed as they are built, when this node signs the hour.
            let signing = match form {
                Compact::Pages if complete => self.page_signing(from).await?,
                _ => None,
            };
            let (mut runs, complete) = if from == to {
                (runs.add(self.vouched_keys(from).await?).await?, complete)
            } else {
                let read = |runs: &Runs| stage.hold(reading_bytes(runs, largest, p));
                self.closed_runs(from, to, &counts, runs, read).await?
            };
            let step = if from == to {
                Step::HourRibbon
            } else {
                Step::Build
            };
            let body = self
                .unions
                .run(held, step, move || -> Result<(Rendered, [u8; 32])> {
                    stage.hold_all();
                    // Checked before it is first served: "yes" for every key it holds.
                    if form == Compact::Pages {
                        let grade = grade_of(r)?;
                        let mut pages = Pages::build_in_parts(&mut runs, grade, from.index())?;
                        answers_every_set("an hour's pages", &mut runs, |set| {
                            pages.count_missing(set)
                        })?;
                        // What is recorded: the bytes checked, before their signatures.
                        let checked = crate::dcz::sha256(pages.as_bytes());
                        if let Some(signing) = signing {
                            signing.sign(&mut pages);
                        }
                        let meta = meta(from, to, complete, pages.header().n);
                        return Ok((render_pages(&meta, pages), checked));
                    }
                    if form == Compact::Ribbon2 {
                        let grade = grade_of(r)?;
                        let ribbon = Ribbon2::build_in_parts(&mut runs, grade)?;
                        answers_every_part("a version 2 ribbon", &mut runs, |k| {
                            ribbon.contains(k)
                        })?;
                        let meta = meta(from, to, complete, u64::from(ribbon.n()));
                        return Ok(unsigned(render_ribbon2(&meta, &ribbon)));
                    }
                    // Every part's distinct keys (parts share none), in key order.
                    let mut keys = Vec::new();
                    runs.for_each_part(&mut |sets| keys.extend(distinct_keys(sets)))
                        .map_err(ServiceError::Spill)?;
                    keys.sort_unstable();
                    let meta = meta(from, to, complete, keys.len() as u64);
                    let ribbon = Ribbon::build(&keys, r)?;
                    answers_every("a ribbon", &keys, |k| ribbon.contains(k))?;
                    Ok(unsigned(render_ribbon(&meta, &ribbon)))
                })
                .await?;
            let (mut body, checked) = self.noting_corrupt(from, body)?;
            if complete {
                // The bytes its URL promises from now on, on every node.
                let (name, signed) = match form {
                    Compact::Ribbon2 => (FormName::Ribbon2 { grade: r }, BodyForm::Ribbon2),
                    Compact::Pages => (FormName::Pages { grade: r }, BodyForm::Page),
                    _ => (FormName::Ribbon { r }, BodyForm::Ribbon),
                };
                self.vouch_form(from, to, name, &checked).await?;
                // An hour's body is bound to its place in the chain, and signed (pages
                // are signed within).
                if from == to && form != Compact::Pages {
                    let (bin, _) = self.closed_view(from, Repr::Bin).await?;
                    if let Some(place) = bin.chain {
                        let place = self
                            .body_chain_place(from, signed, &bin, place, &body.identity)
                            .await?;
                        body.chain = Some(place);
                    }
                }
            }
            Ok(self.keep(key, complete, body).await)
        };
        self.once(key, work).await
    }

    /// The count of each hour of a closed range, sealing those not sealed yet (one the
    /// store cannot seal now is counted from its keys).
    pub(super) async fn closed_counts(&self, from: Hour, to: Hour) -> Result<Vec<(Hour, u64)>> {
        let sealed = self.sealed_counts(from, to).await?;
        let mut counts = Vec::new();
        let mut h = from;
        while h <= to {
            let count = match sealed.iter().find(|(s, _)| *s == h) {
                Some((_, count)) => *count,
                None => self.closed_count(h).await?.0,
            };
            counts.push((h, count));
            h = h.next();
        }
        Ok(counts)
    }

    /// `runs` with the keys of each hour of a closed range whose hours `counted` has
    /// just sealed where it could; complete only if every hour is sealed (one the store
    /// cannot seal now is read from its keys). `read` is shown the runs after each hour.
    pub(super) async fn closed_runs(
        &self,
        from: Hour,
        to: Hour,
        counted: &[(Hour, u64)],
        mut runs: Runs,
        read: impl Fn(&Runs),
    ) -> Result<(Runs, bool)> {
        let sealed = self.sealed_counts(from, to).await?;
        let mut complete = true;
        for &(h, _) in counted {
            let (keys, sealed) = self.past_hour_keys(h, &sealed).await?;
            complete &= sealed;
            runs = runs.add(keys).await?;
            read(&runs);
        }
        Ok((runs, complete))
    }

    /// Runs `work` for `key` as unions are built: one build per range, precision and
    /// form at a time (readers of one share it: those waiting find its result cached),
    /// on the bounded build pool, refused at once (`TooManyWaiting`) when the pool's queue is full.
    /// `work` gets the slot, reserves its memory with it and hands both to its work on
    /// the blocking pool.
    async fn once<F, Fut>(&self, key: CompactKey, work: F) -> Result<(Arc<Rendered>, bool)>
    where
        F: FnOnce(BuildSlot) -> Fut,
        Fut: Future<Output = Result<(Arc<Rendered>, bool)>>,
    {
        let _same_range = self.unions.compact_turn(key).await;
        if let Some(hit) = self.cache.get_compact(&key) {
            return Ok((hit, true));
        }
        let slot = self.unions.queued_slot().await?;
        work(slot).await
    }

    /// Reserves `bytes` of working memory for a compact build of `from..=to` holding
    /// `slot`: `BudgetTaken` while other builds hold too much of the budget, `TooLargeForBudget`
    /// when the build alone needs more than the whole budget (it never fits; the Bloom
    /// forms answer the same question).
    fn reserve(&self, slot: BuildSlot, from: Hour, to: Hour, bytes: u64) -> Result<Held> {
        self.unions
            .reserve(slot, bytes)
            .map_err(|refused| refused.error(Work::Compact { from, to }))
    }

    /// Caches a complete rendering, named by its hours' chain links so that it is
    /// revalidated without a build ([`Forms::known_compact_validator`]); an incomplete
    /// one is served once and built again.
    async fn keep(
        &self,
        key: CompactKey,
        complete: bool,
        mut rendered: Rendered,
    ) -> (Arc<Rendered>, bool) {
        if complete {
            let (from, to) = (Hour::from_index(key.0), Hour::from_index(key.1));
            let form = Form::Compact(key.3, key.2);
            rendered.validator = self
                .name_when_linked(compact_kind(from, to), from, to, form)
                .await;
        }
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert_compact(key, rendered.clone());
        }
        (rendered, complete)
    }
}

/// The working memory of building a ribbon (`r` bits, or for version 2 a grade code)
/// from `sets` key sets of `read` keys in all (their distinct union is at most that),
/// the largest of `largest` keys, vouched for one at a time at target `p`. Held at once
/// (`spilled` false): the sets as read, their distinct union (a merge of several holds
/// two levels of runs at once), and the build's own with the body rendered from it.
/// Spilled (version 2 only): an hour as read and vouched for, or one part read back
/// with its distinct keys and their grouping, beside the build's own.
fn build_bytes(
    read: u64,
    sets: usize,
    largest: u64,
    r: u32,
    form: Compact,
    spilled: bool,
    p: f64,
) -> u64 {
    let key = std::mem::size_of::<Key>() as u64;
    let vouching = vouching_bytes(largest, p);
    match Grade::from_code(r).filter(|_| form.graded()) {
        // Its own grouping of every key (8 bytes each) is held only when not spilled.
        Some(grade) if spilled => {
            let own = graded_build_bytes(form, read, grade) - read * key;
            own + (largest * key + vouching).max(3 * part_bytes(read))
        }
        Some(grade) => {
            let merged = if sets > 1 { 2 } else { 1 };
            read * key * (1 + merged) + graded_build_bytes(form, read, grade) + vouching
        }
        None => {
            let merged = if sets > 1 { 2 } else { 1 };
            let build = Ribbon::build_bytes(read, r) + Ribbon::solution_bytes(read, r);
            read * key * (1 + merged) + build + vouching
        }
    }
}

/// A graded build's own memory for `read` keys: version 2's, or for pages every page's
/// body end to end and the paged body made of them, with the keys' grouping.
fn graded_build_bytes(form: Compact, read: u64, grade: Grade) -> u64 {
    match form {
        Compact::Pages => {
            let key = std::mem::size_of::<Key>() as u64;
            read * key + Ribbon2::predicted_bytes(read, grade) + Pages::predicted_bytes(read, grade)
        }
        _ => Ribbon2::build_bytes(read, grade),
    }
}

/// A rendering with the digest of the bytes checked: its own, when no signature is
/// written into them.
fn unsigned(rendered: Rendered) -> (Rendered, [u8; 32]) {
    let checked = rendered.sha256;
    (rendered, checked)
}

/// The version 2 grade of code `r`.
fn grade_of(r: u32) -> Result<Grade> {
    Grade::from_code(r)
        .ok_or_else(|| FilterError::BadDocument(format!("no version 2 grade {r}")).into())
}

/// The working memory of rendering a ribbon body of `body` bytes in its JSON form: the
/// ribbon decoded, the document (hex: twice the bytes) and its gzip.
fn json_bytes(body: usize) -> u64 {
    4 * body as u64 + 64 * 1024
}

/// What a compact rendering of `from..=to` says about itself: an hour, or a range.
fn meta(from: Hour, to: Hour, complete: bool, count: u64) -> Meta {
    if from == to {
        Meta::hour(from.rfc3339(), complete, count)
    } else {
        Meta::range(from.rfc3339(), to.rfc3339(), complete, count)
    }
}

impl Forms<'_> {
    /// A closed hour or a past day as a ribbon filter of `2^-r` false-positive rate,
    /// in the form asked for.
    ///
    /// # Errors
    /// As [`Hours::view`](super::Hours::view) for the target; `OpenHasNoCompactForm` for anything that includes
    /// the open hour; `TooManyWaiting` when a union must be built and the pool's queue is full; a
    /// filter error for `r` outside `1..=32`.
    pub async fn compact_view(&self, target: Target, r: u32, form: Compact) -> Result<View> {
        let now = self.current_hour_for(target).await?;
        if form == Compact::Pages && !matches!(target, Target::Hour(_)) {
            return Err(ServiceError::PagesAreHourly { asked: target });
        }
        let (from, to, prev, next) = match target {
            Target::Hour(hour) => {
                self.check(hour, now)?;
                if hour == now {
                    return Err(ServiceError::OpenHasNoCompactForm {
                        asked: target,
                        open: now,
                    });
                }
                let prev = (hour.prev() >= self.earliest(now)).then(|| Target::Hour(hour.prev()));
                (hour, hour, prev, Some(Target::Hour(hour.next())))
            }
            Target::Day(day) => {
                let (first, last) = self.day_hours(day, now)?;
                if last >= now {
                    return Err(ServiceError::OpenHasNoCompactForm {
                        asked: target,
                        open: now,
                    });
                }
                let prev_day = Day::from_hour_index(first.index() - 24);
                let prev =
                    (prev_day.last_hour() >= self.earliest(now)).then_some(Target::Day(prev_day));
                let next = Target::Day(Day::from_hour_index(first.index() + 24));
                (first.max(self.earliest(now)), last, prev, Some(next))
            }
            Target::Since(from) => {
                if from > now {
                    return Err(ServiceError::InFuture { asked: target, now });
                }
                self.check(from, now)?;
                // Version 2 covers the range's closed hours, the open hour fetched on
                // its own: what it holds changes once an hour, when the next closes.
                if form != Compact::Ribbon2 || from == now {
                    return Err(ServiceError::OpenHasNoCompactForm {
                        asked: target,
                        open: now,
                    });
                }
                let (rendered, _) = self.compact(from, now.prev(), r, form).await?;
                return Ok(View {
                    rendered,
                    open_until: Some(now.end()),
                    prev: None,
                    next: None,
                    open_hour: None,
                    signature_pending: false,
                });
            }
        };
        let (rendered, complete) = self.compact(from, to, r, form).await?;
        // An hour's compact body is signed as its filter is (a day's is not): one served
        // unsigned by a service that signs is not for caches to keep.
        let signature_pending = complete
            && from == to
            && self.tuning.signer.is_some()
            && match form {
                Compact::Pages => !PagesHeader::parse(&rendered.identity).is_ok_and(|h| h.signed()),
                _ => rendered.chain.is_none_or(|c| c.signature.is_none()),
            };
        Ok(View {
            rendered,
            open_until: (!complete).then(|| now.end()),
            prev,
            next,
            open_hour: None,
            signature_pending,
        })
    }
}
