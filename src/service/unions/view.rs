//! Unions of hours (a day, or a since-range): built from the hours' keys at a size fit for
//! their distinct count (`bloom::union_of`), never OR-ed from hourly filters of different
//! sizes.

use super::super::incremental::room;
use super::super::validators::Named;
use super::super::vouch::{reading_bytes, vouching_bytes};
use super::super::{Result, Service, ServiceError, Work};
use super::fair::BuildSlot;
use super::runs::{part_bytes, Order, Runs, PART_KEYS};
use super::{BuiltUnion, Growth, Held, OpenStamp, Refused, Step, UnionKey};
use crate::bloom::{union_in_parts, Key, Params, Sizing};
use crate::hour::Hour;
use crate::render::{render_next, Before, Effort, Encodings, HexCoding, Rendered, Repr};
use crate::store::FormName;
use crate::wire::Meta;
use std::sync::Arc;

/// Working memory of a build beside its keys, filter and rendering.
const BUILD_OVERHEAD: u64 = 64 * 1024;

/// The working memory of building and rendering a union of `read` keys, `unsorted` of
/// them the open hour's (copied once to be counted), the largest sealed hour of
/// `largest` keys (vouched for one at a time), at target `p`: five times the filter's
/// bytes (the filter, sized with room to grow, and a rendering: a hex body twice its
/// bytes, its gzip, and the copy of its bits the next version of an open union is
/// coded against), and the keys it holds at once: all of them when they fit one part
/// ([`Runs`]), else the largest of an hour as read and vouched for, the open hour's
/// copy, and one part.
fn union_build_bytes(read: u64, unsorted: u64, largest: u64, p: f64) -> u64 {
    build_bytes(read, unsorted, largest, p, read > PART_KEYS)
}

/// [`union_build_bytes`] with its keys `spilled` to a file or not.
fn build_bytes(read: u64, unsorted: u64, largest: u64, p: f64, spilled: bool) -> u64 {
    let key = std::mem::size_of::<Key>() as u64;
    let filter = filter_bytes(read, p);
    let vouching = vouching_bytes(largest, p);
    let keys = if spilled {
        (largest * key + vouching)
            .max(unsorted * key)
            .max(part_bytes(read))
    } else {
        (read + unsorted) * key + vouching
    };
    keys + 5 * filter + BUILD_OVERHEAD
}

/// The bytes of a union filter of `read` keys at target `p`. The classical optimum, as
/// cheap as a formula: the sizing rule's m is within a percent of it from a few hundred
/// keys on, and below that the overhead dominates.
fn filter_bytes(read: u64, p: f64) -> u64 {
    Params::optimal(room(read), p).map_or(1 << 29, |s| u64::from(s.m).div_ceil(8))
}

/// The start of the longest range ending at `to` whose build fits in `budget` bytes:
/// the open hour (`open` keys) and the `sealed` hours' counts, newest first.
fn longest_fitting(
    to: Hour,
    sealed: &[(Hour, u64)],
    open: u64,
    p: f64,
    budget: u64,
) -> Option<Hour> {
    let mut read = open;
    let mut largest = 0;
    let mut start = None;
    if union_build_bytes(read, open, 0, p) > budget {
        return None;
    }
    if open > 0 {
        start = Some(to);
    }
    let mut hours: Vec<&(Hour, u64)> = sealed.iter().filter(|(h, _)| *h <= to).collect();
    hours.sort_by_key(|(h, _)| std::cmp::Reverse(*h));
    for (hour, count) in hours {
        read += count;
        largest = largest.max(*count);
        if union_build_bytes(read, open, largest, p) > budget {
            break;
        }
        start = Some(*hour);
    }
    start
}

impl Service {
    /// The verified keys of the past hour `h`, sealing it first unless `sealed` (from
    /// [`Service::sealed_counts`]) lists it; `false` with them when the store cannot
    /// seal it now (they are read from its batches then, and the result is not final).
    pub(in crate::service) async fn past_hour_keys(
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
        let keys = if is_sealed {
            self.vouched_keys(h).await?
        } else {
            self.closed_keys(h).await?
        };
        Ok((keys, is_sealed))
    }

    /// One filter over `from..=to`, rebuilt from the hours' keys at a size fit for
    /// their union's count, so its false-positive estimate stays within the target.
    pub(in crate::service) async fn union_view(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
        asked: Encodings,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), repr);
        let now = self.current_hour();
        // The open hour's version this request arrived after (0 when the range is closed).
        let mut wanted = (now.index(), 0);
        if to == now {
            self.refresh(now).await?;
            wanted.1 = self.open.version(now);
        }
        // A cached union serves if it shows at least that version (versions only grow).
        let cached = || -> Option<Arc<Rendered>> {
            if complete {
                return self.cache.get(&key);
            }
            self.unions.open(&(key, asked), wanted)
        };
        if let Some(r) = cached() {
            return Ok((r, complete));
        }
        // Readers of one range share its next build instead of each starting their own;
        // builds of different ranges take the bounded pool's slots in their clients' turn
        // (a request waiting past the request timeout is answered `timeout`).
        let _same_range = self.unions.turn(key).await;
        if let Some(r) = cached() {
            return Ok((r, complete));
        }
        let slot = self.unions.queued_slot().await?;
        self.build_union(from, to, repr, complete, asked, slot)
            .await
    }

    async fn build_union(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
        asked: Encodings,
        slot: BuildSlot,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (from.index(), to.index(), repr);
        let now = self.current_hour();
        // Another representation of a union just built: render the same filter again.
        let current = (to == now).then(|| (now.index(), self.open.version(now)));
        if let Some(built) = self.unions.built(from, to, current, complete) {
            return self.serve_built(key, built, asked).await;
        }
        // A union of this range built at an earlier version: add what the hour gained.
        if to == now {
            if let Some(built) = self.advance_union(from, now).await? {
                self.unions.remember(built.clone());
                return self.serve_built(key, built, asked).await;
            }
        }
        let mut stamp = None;
        let mut growth = None;
        // Final only if every past hour in it is: one the store cannot seal yet is read
        // from its keys, and the union is then not cached as complete.
        let mut fin = true;
        let sealed = self.sealed_counts(from, to.min(now.prev())).await?;
        // Its working memory, reserved before a key is read: of the sealed hours and the
        // open hour now, and of each hour not sealed yet as it is read.
        let p = self.tuning.target_fpp;
        let open_count = if to >= now { self.open.count(now) } else { 0 };
        let (mut held, spilled) = self.reserve_union(slot, from, to, &sealed, open_count)?;
        // What it holds, as it goes: its keys as read, then the filter, then the
        // rendering, when it holds all it reserved (`/stats`, docs/BENCHMARKS.md).
        let stage = held.stage();
        stage.hold(BUILD_OVERHEAD);
        // One run of keys per hour (sealed hours' come sorted and distinct), held as
        // read or, past a part's worth, written to a file and read back part by part.
        let mut read = sealed.iter().map(|(_, c)| c).sum::<u64>() + open_count;
        let mut largest = sealed.iter().map(|(_, c)| *c).max().unwrap_or(0);
        let mut runs = match spilled {
            true => Runs::new(read, Order::Keys),
            false => Runs::held(),
        };
        let mut h = from;
        while h <= to {
            if h == now {
                // Refreshed above; what this node acknowledged since is already in the ledger.
                if let Some(open) = self.open.snapshot(h) {
                    runs = runs.add(open.keys).await?;
                    // Taken with the keys, so the stamp never claims newer content.
                    stamp = Some((h.index(), open.version));
                    growth = Some((open.id, open.count));
                }
            } else {
                let listed = sealed.iter().any(|(s, _)| *s == h);
                let (keys, sealed) = self.past_hour_keys(h, &sealed).await?;
                if !listed {
                    let before = build_bytes(read, open_count, largest, p, spilled);
                    read += keys.len() as u64;
                    largest = largest.max(keys.len() as u64);
                    let more = build_bytes(read, open_count, largest, p, spilled) - before;
                    held.grow(more).map_err(|refused| {
                        refused.error(Work::Union {
                            from,
                            to,
                            fits: None,
                        })
                    })?;
                }
                fin &= sealed;
                runs = runs.add(keys).await?;
            }
            stage.hold(reading_bytes(&runs, largest, p) + BUILD_OVERHEAD);
            h = h.next();
        }
        let complete = complete && fin;
        // A union ending in the open hour is built with room to take the hour's next
        // keys (see `incremental`), unless a closed hour in it may still change.
        let growth = growth.filter(|_| fin);
        let meta_of = move |count| Meta::range(from.rfc3339(), to.rfc3339(), complete, count);
        let (effort, encodings, before) = self.rendering_of(key, complete, asked);
        // A day that ended before the probe-sequence rule is rebuilt as it was served.
        let sizing = self.sizing_of(to);
        let (rendered, filter, count, digest) = self
            .unions
            .run(held, Step::Build, move || {
                stage.hold(runs.held_bytes() + filter_bytes(read, p) + BUILD_OVERHEAD);
                let built = match growth {
                    Some(_) => union_in_parts(&mut runs, p, Sizing::Probes, room),
                    None => union_in_parts(&mut runs, p, sizing, |count| count),
                };
                built.map_err(ServiceError::from).map(|(filter, count)| {
                    stage.hold_all();
                    let rendered =
                        render_next(&meta_of(count), &filter, repr, effort, encodings, before);
                    // A complete union's bytes are what its URLs promise from now on.
                    let digest = complete.then(|| crate::chain::digest(&filter.to_bytes()));
                    (rendered, Arc::new(filter), count, digest)
                })
            })
            .await??;
        if let Some(digest) = digest {
            self.vouch_form(from, to, FormName::Bloom, &digest).await?;
        }
        self.unions.remember(BuiltUnion {
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
        Ok(self.keep_union(key, complete, stamp, rendered).await)
    }

    /// Reserves the working memory of building the union of `from..=to` from the
    /// `sealed` hours' keys and `open` keys of the open hour, holding `slot`: of holding
    /// every key read when the builds' part has room for it (the quickest build), else
    /// of holding its output and one part of the keys at a time, the rest in a file
    /// ([`Runs`]); and which (`true`: the file).
    ///
    /// # Errors
    /// `TooLargeForBudget` (with the longest range ending at `to` that fits) when it
    /// alone needs more than the builds' part of the budget; `BudgetTaken` while other
    /// builds hold what it needs.
    fn reserve_union(
        &self,
        slot: BuildSlot,
        from: Hour,
        to: Hour,
        sealed: &[(Hour, u64)],
        open: u64,
    ) -> Result<(Held, bool)> {
        let p = self.tuning.target_fpp;
        let read: u64 = sealed.iter().map(|(_, c)| c).sum::<u64>() + open;
        // Each sealed hour's keys are vouched for by its filter, one hour at a time.
        let largest = sealed.iter().map(|(_, c)| *c).max().unwrap_or(0);
        let held = build_bytes(read, open, largest, p, false);
        let spilled = union_build_bytes(read, open, largest, p);
        self.unions
            .reserve_either(slot, held, spilled)
            .map(|(reserved, first)| (reserved, !first && read > PART_KEYS))
            .map_err(|refused| {
                let fits = match refused {
                    Refused::TooLarge { budget, .. } => {
                        longest_fitting(to, sealed, open, p, budget)
                    }
                    Refused::Taken { .. } => None,
                };
                refused.error(Work::Union { from, to, fits })
            })
    }

    /// Renders a built union filter and caches the rendering.
    async fn serve_built(
        &self,
        key: UnionKey,
        built: BuiltUnion,
        asked: Encodings,
    ) -> Result<(Arc<Rendered>, bool)> {
        let repr = key.2;
        let (from, to) = (
            Hour::from_index(built.range.0),
            Hour::from_index(built.range.1),
        );
        let complete = built.complete;
        let meta = Meta::range(from.rfc3339(), to.rfc3339(), complete, built.count);
        let (effort, encodings, before) = self.rendering_of(key, complete, asked);
        let filter = built.filter.clone();
        // Its working memory, as a closed hour's rendering reserves (the bodies, hex twice
        // the filter's bytes, and their coding), held until the rendering ends: under the
        // adversarial mix, renderings of since-ranges were most of the RSS /stats did not
        // count (docs/BENCHMARKS.md, "One memory budget").
        let bytes = 6 * u64::from(filter.m()).div_ceil(8) + 64 * 1024;
        let memory = self.unions.reserve_memory(bytes).map_err(|refused| {
            refused.error(Work::Union {
                from,
                to,
                fits: None,
            })
        })?;
        let rendered = self
            .unions
            .measured(Step::Render, move || {
                let rendered = render_next(&meta, &filter, repr, effort, encodings, before);
                drop(memory);
                rendered
            })
            .await?;
        Ok(self.keep_union(key, complete, built.stamp, rendered).await)
    }

    /// How a union is rendered: a complete one once for good, in both encodings and at
    /// the best compression; one that changes with the open hour quickly, in the encoding
    /// this request asked for only (each new version is rendered again, see
    /// [`Encodings`]), from what its last rendering in that encoding left for coding the
    /// next.
    fn rendering_of(
        &self,
        key: UnionKey,
        complete: bool,
        asked: Encodings,
    ) -> (Effort, Encodings, Before) {
        if complete {
            (Effort::Best, Encodings::Both, Before::default())
        } else {
            (Effort::Fast, asked, self.unions.before(&(key, asked)))
        }
    }

    /// Caches a rendering: immutable ones in the render cache, open ones with their stamp
    /// and what they left for rendering the next version.
    /// A complete one is named by its hours' digests ([`Service::linked_name`]);
    /// by its bytes when they cannot be read now.
    async fn keep_union(
        &self,
        key: UnionKey,
        complete: bool,
        stamp: Option<OpenStamp>,
        (mut rendered, coding): (Rendered, Option<HexCoding>),
    ) -> (Arc<Rendered>, bool) {
        if complete {
            let (from, to) = (Hour::from_index(key.0), Hour::from_index(key.1));
            rendered.validator = self.name_when_linked(Named::Union, from, to, key.2).await;
        }
        let rendered = Arc::new(rendered);
        if complete {
            self.cache.insert(key, rendered.clone());
        } else if let Some(stamp) = stamp {
            let open = (key, rendered.encodings);
            self.unions.keep_open(open, stamp, rendered.clone(), coding);
        }
        (rendered, complete)
    }
}
