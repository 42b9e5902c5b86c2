//! Publishing: any hour, day or since-range as a rendered filter, from the render cache,
//! the open hour's in-memory keys, or the store's sealed filter (verified; rebuilt from
//! the hour's keys when it fails verification or cannot be sealed yet).

use super::open_hours::Rendering;
use super::parts::Hours;
use super::validators::{name, Named};
use super::{Linked, Result, Service, ServiceError, Target, View, Work, DICTIONARY_ID_BYTES};
use crate::bloom::{Filter, SHA1_KM32};
use crate::chain::SignatureField;
use crate::hour::{Day, Hour};
use crate::render::{render, Effort, Encodings, OpenSignature, Rendered, Repr};
use crate::store::StoreError;
use crate::wire::Meta;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How old an open hour's version's signature may get before it is signed again.
pub(super) const OPEN_RESIGN_SECONDS: i64 = 60;

impl Service {
    /// A day's first and last hour, once it is known not to lie in the future and the
    /// part of it up to `now` is one the service speaks for.
    pub(super) fn day_hours(&self, day: Day, now: Hour) -> Result<(Hour, Hour)> {
        let (first, last) = (day.first_hour(), day.last_hour());
        if first > now {
            return Err(ServiceError::InFuture {
                asked: Target::Day(day),
                now,
            });
        }
        self.check(last.min(now), now)?;
        Ok((first, last))
    }

    /// The open hour, rendered at least as new as when the request arrived; `None` once
    /// the hour is closed (the caller serves its seal). One render per representation
    /// runs at a time: readers arriving while ingest keeps changing the hour share the
    /// next render instead of each starting their own.
    pub(super) async fn open_view(&self, hour: Hour, repr: Repr) -> Result<Option<Arc<Rendered>>> {
        self.refresh(hour).await?;
        let slot = repr.index();
        let closed = self.closed_through();
        let fresh = |r: &Rendered| self.signature_fresh(r);
        let wanted = match self.open.rendering(hour, slot, closed, fresh) {
            Rendering::Closed => return Ok(None),
            Rendering::Ready(r) => return Ok(Some(r)),
            Rendering::Due(version) => version,
        };
        let _one_render = self.open.render_turn(slot).await;
        let closed = self.closed_through();
        let job = match self.open.render_job(hour, slot, wanted, closed, fresh) {
            Rendering::Closed => return Ok(None),
            Rendering::Ready(r) => return Ok(Some(r)),
            Rendering::Due(job) => job,
        };
        let meta = Meta::hour(hour.rfc3339(), false, job.count);
        let signer = self.open_signer(hour);
        let rendered = render_off_thread(meta, job.filter, repr, Effort::Fast, signer.is_some());
        let (mut rendered, digest) = rendered.await?;
        if let (Some(signer), Some(digest)) = (signer, digest) {
            let made = self.now().timestamp();
            rendered.open = Some(OpenSignature {
                made,
                field: SignatureField {
                    signature: signer.sign_open(hour, made, &digest),
                    key_id: Some(signer.public_key().id()),
                },
            });
        }
        let rendered = Arc::new(rendered);
        self.open.keep_rendering(hour, slot, job.version, &rendered);
        Ok(Some(rendered))
    }

    /// Pulls keys other nodes appended to the open hour (and the store's marks), at most
    /// once per `refresh`. A closed hour is left alone.
    pub(super) async fn refresh(&self, hour: Hour) -> Result<()> {
        let every = self.tuning.refresh;
        let due = || self.open.refresh_due(hour, self.closed_through(), every);
        if due().is_none() {
            return Ok(());
        }
        let _one_at_a_time = self.open.refresh_turn().await;
        let Some((cursor, ever)) = due() else {
            return Ok(());
        };
        self.open.reading(hour, self.closed_through());
        // The keys come in pieces as the store reads them, each added as it arrives, so
        // loading an hour of any size holds a piece or two beside the hour itself.
        // Requests wait for the first load (`wait_loaded`); a later refresh that stops
        // part way has added only keys of the hour, and keeps its cursor.
        let closed = self.closed_through();
        let mut read = 0;
        let cursor = crate::store::each_piece_after(&*self.store, hour, cursor, |piece| {
            read += piece.len();
            self.open.add_read(hour, &piece, closed);
        })
        .await;
        if cursor.is_ok() {
            // Other nodes move the marks too; learn them with the keys.
            if let Err(e) = self.read_marks_if_due().await {
                tracing::warn!(error = %e, "cannot read the store's hour marks");
            }
        }
        if read >= crate::memory::LARGE_BATCH {
            // The load at start: its pieces are gone, give them back (see `memory`).
            crate::memory::release_after_transient();
        }
        match cursor {
            Ok(cursor) => {
                let closed = self.closed_through();
                self.open.read_through(hour, cursor, closed);
                Ok(())
            }
            Err(e @ StoreError::Corrupt(_)) => Err(self.corrupt(hour, e)),
            // A view that was current once may be served a little stale while the store is away.
            Err(e) if ever && e.is_transient() => {
                tracing::warn!(error = %e, %hour, "refresh of the open hour failed; serving the last view");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A past hour: its sealed filter, verified. Returns whether it is complete.
    ///
    /// When the seal cannot be read back intact, or the hour cannot be sealed yet (the
    /// store takes no writes), it is served from its verified keys with the bytes its
    /// seal has or will have; complete only once the hour is durably closed.
    pub(super) async fn closed_view(
        &self,
        hour: Hour,
        repr: Repr,
    ) -> Result<(Arc<Rendered>, bool)> {
        let key = (hour.index(), hour.index(), repr);
        if let Some(r) = self.cache.get(&key) {
            return Ok((r, true));
        }
        // Readers of one hour and form share its rendering (a storm of polls of an hour
        // no longer kept renders it once), and each rendering reserves its working memory
        // from the builds' part of the budget first.
        let _same_hour = self.unions.hour_render_turn(key).await;
        if let Some(r) = self.cache.get(&key) {
            return Ok((r, true));
        }
        // Whether the hour was sealed but its row failed verification: what is rebuilt
        // from its keys is served only when its chain link vouches for the bytes.
        let mut rotten = false;
        let sealed = match self.store.sealed(hour).await {
            Ok(Some(sealed)) => Some(sealed),
            Ok(None) => match self.seal_or_backoff(hour).await {
                Ok(sealed) => Some(sealed),
                Err(ServiceError::Store(e)) if e.is_transient() => None,
                Err(e) => return Err(e),
            },
            Err(e @ StoreError::Corrupt(_)) => {
                tracing::error!(%hour, error = %e, "a sealed filter failed verification; rebuilding it from the hour's keys");
                self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
                rotten = true;
                None
            }
            Err(e) => return Err(e.into()),
        };
        let decoded = sealed.and_then(|s| {
            let decoded = Filter::decode_bytes(s.m.into(), s.k.into(), SHA1_KM32, &s.filter)
                .map(|filter| filter.sized_by_rule(self.sizing_of(hour)));
            match decoded {
                // Decoding accepts only the canonical bytes of the filter (the exact
                // length, no bits past `m`), so the stored bytes are what the chain
                // digests: they are not encoded again to be hashed.
                Ok(filter) => Some((filter, s.count, Some(s.filter))),
                Err(e) => {
                    tracing::error!(%hour, error = %e, "a sealed filter does not decode; rebuilding it from the hour's keys");
                    self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
                    rotten = true;
                    None
                }
            }
        });
        // The filter decoded, and the rendering: its bodies (hex twice the bytes, a gzip)
        // and their coding.
        let reserve = |filter_bytes: u64| {
            self.unions
                .reserve_memory(6 * filter_bytes + 64 * 1024)
                // Reserved up to the whole part: a rendering is never too large.
                .map_err(|refused| refused.error(Work::Render { hour }))
        };
        let (filter, count, bytes, _memory) = match decoded {
            Some((filter, count, bytes)) => {
                let memory = reserve(u64::from(filter.m()).div_ceil(8))?;
                (filter, count, bytes, memory)
            }
            None => {
                let keys = self.closed_keys(hour).await?;
                let (keys, filter) = self.build(hour, keys).await?;
                let closed = self.closed_through().is_some_and(|c| hour <= c);
                // Only a durably closed hour is final: its bytes are what its seal will hold.
                let bytes = closed.then(|| filter.to_bytes());
                let memory = reserve(u64::from(filter.m()).div_ceil(8))?;
                (filter, keys.len() as u64, bytes, memory)
            }
        };
        let complete = bytes.is_some();
        let (chain, validator) = if let Some(bytes) = &bytes {
            let digest = crate::chain::digest(bytes);
            let validator = name(Named::Hour, repr, hour, hour, [&digest]);
            (self.chain_place(hour, &digest).await?, Some(validator))
        } else {
            (None, None)
        };
        if rotten && chain.is_none() {
            return Err(self.corrupt(
                hour,
                StoreError::Corrupt(format!(
                    "hour {hour} is sealed but its row failed verification, and no chain link \
                     vouches for the filter its keys make"
                )),
            ));
        }
        let meta = Meta::hour(hour.rfc3339(), complete, count);
        let (mut rendered, _) = render_off_thread(meta, filter, repr, Effort::Best, false).await?;
        rendered.chain = chain;
        rendered.validator = validator;
        let rendered = Arc::new(rendered);
        // A sealed hour not yet linked (its seal is pending) or signed (by a node holding
        // its key) is rendered again once it is.
        let signed = rendered.chain.is_some_and(|c| c.signature.is_some());
        let linked = signed || self.tuning.signer.is_none();
        if complete && linked {
            self.cache.insert(key, rendered.clone());
        }
        Ok((rendered, complete))
    }

    /// Whether a rendering of the open hour may still be served as it is: unsigned, or
    /// signed less than [`OPEN_RESIGN_SECONDS`] ago. A quiet hour's version is signed
    /// again then (rendered anew, the same bytes), so its `made` never lags the time
    /// it is served by more than that, and a client's freshness bound never refuses an
    /// honest, quiet open hour.
    pub(super) fn signature_fresh(&self, rendered: &Rendered) -> bool {
        rendered
            .open
            .is_none_or(|o| o.made > self.now().timestamp() - OPEN_RESIGN_SECONDS)
    }

    /// The signer of the open `hour`'s versions: this node's key when the registry (as
    /// last read) lists it for the hour.
    fn open_signer(&self, hour: Hour) -> Option<&crate::chain::Signer> {
        let signer = self.tuning.signer.as_ref()?;
        let listed = self.sealer.keys().for_hour(hour).map(|k| k.public_key);
        (listed == Some(signer.public_key())).then_some(signer)
    }

    /// A past hour's count for the index, and whether it is complete (as `closed_view`).
    pub(super) async fn closed_count(&self, hour: Hour) -> Result<(u64, bool)> {
        match self.seal_or_backoff(hour).await {
            Ok(sealed) => Ok((sealed.count, true)),
            Err(ServiceError::Store(e)) if e.is_transient() => {
                let count = self.closed_keys(hour).await?.len() as u64;
                Ok((count, self.closed_through().is_some_and(|c| hour <= c)))
            }
            Err(e) => Err(e),
        }
    }
}

/// Renders on the blocking pool when the filter is large enough to stall the runtime;
/// with `digest`, also the SHA-256 of the filter's bytes (what an open hour's version is
/// signed over): the binary form's own name when it is that body, else hashed here.
async fn render_off_thread(
    meta: Meta,
    filter: Filter,
    repr: Repr,
    effort: Effort,
    digest: bool,
) -> Result<(Rendered, Option<crate::chain::Hash>)> {
    let large = filter.m() >= 1 << 19;
    let work = move || {
        let rendered = render(&meta, &filter, repr, effort);
        let digest = digest.then(|| match repr {
            Repr::Bin if !rendered.identity.is_empty() => rendered.sha256,
            _ => crate::chain::digest(&filter.to_bytes()),
        });
        (rendered, digest)
    };
    if !large {
        return Ok(work());
    }
    Ok(tokio::task::spawn_blocking(work).await?)
}

impl Hours<'_> {
    /// The filter for a target in a representation, for a request that accepts
    /// `encoding`: a union ending in the open hour is rendered in that one only (see
    /// [`Encodings`]); everything else holds both.
    ///
    /// # Errors
    /// `InFuture` for the future (a union that starts there too), `BeforeGenesis`,
    /// `PastRetention`, and store failures.
    pub async fn view(&self, target: Target, repr: Repr, encoding: Encodings) -> Result<View> {
        let now = self.current_hour_for(target).await?;
        match target {
            Target::Hour(hour) => {
                self.check(hour, now)?;
                let open = if hour == now {
                    self.open_view(hour, repr).await?
                } else {
                    None
                };
                let (rendered, complete) = match open {
                    Some(rendered) => (rendered, false),
                    // A past hour, or the open hour sealed while this request waited.
                    None => self.closed_view(hour, repr).await?,
                };
                // Read the clock again only when the hour asked was open at first: a past
                // hour's neighbours stand as they stood when the request came.
                let now = if hour < now { now } else { self.current_hour() };
                let signature_pending = complete
                    && self.tuning.signer.is_some()
                    && rendered.chain.is_none_or(|c| c.signature.is_none());
                Ok(View {
                    rendered,
                    open_until: (!complete).then(|| now.end()),
                    prev: (hour.prev() >= self.earliest(now)).then(|| Target::Hour(hour.prev())),
                    next: (hour < now).then(|| Target::Hour(hour.next())),
                    open_hour: (!complete).then_some(hour),
                    signature_pending,
                })
            }
            Target::Day(day) => {
                let (first, last) = self.day_hours(day, now)?;
                // A day is served from its first served hour to its last one up to now.
                let from = first.max(self.earliest(now));
                let to = last.min(now);
                let (rendered, complete) = self
                    .union_view(from, to, repr, last < now, encoding)
                    .await?;
                let prev_day = Day::from_hour_index(first.index() - 24);
                Ok(View {
                    rendered,
                    open_until: (!complete).then(|| now.end()),
                    prev: (prev_day.last_hour() >= self.earliest(now))
                        .then_some(Target::Day(prev_day)),
                    next: (last < now)
                        .then(|| Target::Day(Day::from_hour_index(first.index() + 24))),
                    open_hour: None,
                    signature_pending: false,
                })
            }
            Target::Since(from) => {
                if from > now {
                    return Err(ServiceError::InFuture { asked: target, now });
                }
                self.check(from, now)?;
                let (rendered, _) = self.union_view(from, now, repr, false, encoding).await?;
                Ok(View {
                    rendered,
                    open_until: Some(now.end()),
                    prev: None,
                    next: None,
                    open_hour: None,
                    signature_pending: false,
                })
            }
        }
    }

    /// The current rendering `r` of the open `hour` compressed against its kept version
    /// whose SHA-256 is `dictionary` (a `dcz` body, RFC 9842); `None` when that version
    /// is unknown, expired or of another filter size.
    pub async fn delta(&self, hour: Hour, r: &Rendered, dictionary: &[u8; 32]) -> Option<Bytes> {
        self.open.deltas().delta(hour, r, dictionary).await
    }

    /// A kept version of the open `hour` served at its own URL, by its id (the first
    /// [`DICTIONARY_ID_BYTES`] of its SHA-256); `None` when unknown, expired, or the hour
    /// is closed.
    pub fn dictionary(&self, hour: Hour, id: &[u8; DICTIONARY_ID_BYTES]) -> Option<Linked> {
        if hour != self.current_hour() {
            return None;
        }
        self.open.deltas().dictionary(hour, id, self.now())
    }

    /// Offers the rendering `r` of the open `hour` served now as a compression
    /// dictionary (RFC 9842): whether it is kept as one (see `open_hours::deltas`), so
    /// its response may offer it.
    pub fn keep_as_dictionary(&self, hour: Hour, r: &Rendered) -> bool {
        self.open.deltas().offer(hour, r, self.now())
    }

    /// The SHA-256 of the kept version of the open `hour` that responses showing its
    /// current rendering `r` link to as a dictionary of their own lifetime, if any.
    pub fn linked_dictionary(&self, hour: Hour, r: &Rendered) -> Option<[u8; 32]> {
        self.open.deltas().linked(hour, r.repr, r.m, self.now())
    }
}
