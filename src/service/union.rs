//! Unions of hours (a day, or a since-range): built from the hours' keys at a size fit for
//! their distinct count (`bloom::union_of`), never OR-ed from hourly filters of different
//! sizes.

use super::incremental::room;
use super::unions::{BuiltUnion, Growth, OpenStamp, Step, UnionKey};
use super::{Result, Service, ServiceError};
use crate::bloom::{union_of, union_with_room, Key};
use crate::hour::Hour;
use crate::render::{render_next, Effort, Encodings, HexCoding, Rendered, Repr};
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
        // builds of different ranges run on a bounded pool, and past it a request is
        // refused at once (`Busy`) rather than queued past its deadline.
        let _same_range = self.unions.turn(key).await;
        if let Some(r) = cached() {
            return Ok((r, complete));
        }
        let _slot = self.unions.slot()?;
        self.build_union(from, to, repr, complete, asked).await
    }

    async fn build_union(
        &self,
        from: Hour,
        to: Hour,
        repr: Repr,
        complete: bool,
        asked: Encodings,
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
                if let Some(open) = self.open.snapshot(h) {
                    hours.push(open.keys);
                    // Taken with the keys, so the stamp never claims newer content.
                    stamp = Some((h.index(), open.version));
                    growth = Some((open.id, open.count));
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
        let (effort, encodings, before) = self.rendering_of(key, complete, asked);
        let (rendered, filter, count) = self
            .unions
            .measured(Step::Build, move || {
                let sets: Vec<&[Key]> = hours.iter().map(Vec::as_slice).collect();
                let built = match growth {
                    Some(_) => union_with_room(&sets, p, room),
                    None => union_of(&sets, p),
                };
                built.map(|(filter, count)| {
                    let rendered =
                        render_next(&meta_of(count), &filter, repr, effort, encodings, before);
                    (rendered, Arc::new(filter), count)
                })
            })
            .await??;
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
        Ok(self.keep_union(key, complete, stamp, rendered))
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
        let rendered = self
            .unions
            .measured(Step::Render, move || {
                render_next(&meta, &filter, repr, effort, encodings, before)
            })
            .await?;
        Ok(self.keep_union(key, complete, built.stamp, rendered))
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
    ) -> (Effort, Encodings, Option<HexCoding>) {
        if complete {
            (Effort::Best, Encodings::Both, None)
        } else {
            let before = self.unions.coding_before(&(key, asked));
            (Effort::Fast, asked, before)
        }
    }

    /// Caches a rendering: immutable ones in the render cache, open ones with their stamp
    /// and what they left for rendering the next version.
    fn keep_union(
        &self,
        key: UnionKey,
        complete: bool,
        stamp: Option<OpenStamp>,
        (rendered, coding): (Rendered, Option<HexCoding>),
    ) -> (Arc<Rendered>, bool) {
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
