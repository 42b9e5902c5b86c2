//! Exact hours (docs/PROTOCOL.md section 14): the publisher's universe, and each sealed
//! hour's exact body over it. An hour's body is built once, from the universe as it
//! stood when the hour was sealed (the keys that joined by then) and the hour's keys,
//! stored (the first stored wins, so every node serves the same bytes), and kept in
//! the render cache. A range's (a past day, a since-range's sealed hours) is built the
//! same way over the universe as it stood when its last hour was sealed, from the
//! distinct union of its hours' keys; recorded, not stored. A build is bounded as
//! compact builds are: one per hour or range at a time, a slot of the build pool, and
//! its peak memory reserved before a key is read.

use super::parts::{Forms, Ingest};
use super::sealer::UniverseSeen;
use super::unions::runs::Runs;
use super::unions::Step;
use super::{Result, Service, ServiceError, Target, View, Work};
use crate::bloom::{distinct_keys, Key, KeyParts};
use crate::chain::{self, BodyForm};
use crate::exact::Exact;
use crate::hour::Hour;
use crate::render::{render_exact, Rendered, Repr};
use crate::store::{FormName, StoreError, UniverseAdded, UniverseInfo};
use crate::wire::Meta;
use std::sync::Arc;

impl Service {
    /// The size of `hour`'s exact body when it is built and kept, for the index.
    pub(super) fn exact_bytes(&self, hour: Hour) -> Option<usize> {
        self.cache
            .get_exact(hour, hour)
            .map(|hit| hit.identity.len())
    }

    /// Builds the exact bodies of the sealed hours `from..to` that have none, after they
    /// are sealed (best effort: an hour that fails is built when first asked for), as the
    /// background's builds.
    pub(super) async fn build_exact_after_seal(&self, from: Hour, to: Hour) {
        let since = match self.forms().exact_since().await {
            Ok(Some(since)) => since,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the universe; exact hours are built when asked for");
                return;
            }
        };
        let mut hour = from.max(since);
        let forms = self.forms();
        while hour < to {
            if self.cache.get_exact(hour, hour).is_none() {
                // The server's own build: it takes its turn in the build queue as the
                // background's, like warming (PROTOCOL.md section 12, "Fair builds").
                let view = forms.exact_view(Target::Hour(hour));
                let view = super::BUILD_CLIENT.scope(super::BuildClient::Background, view);
                if let Err(e) = view.await {
                    tracing::warn!(%hour, error = %e, "cannot build the exact hour yet; it is built when asked for");
                }
            }
            hour = hour.next();
        }
    }

    /// The rendering of the exact body of the sealed hours `from..=to`, from the cache,
    /// the store (an hour's), or built.
    async fn exact_rendering(
        &self,
        from: Hour,
        to: Hour,
        info: UniverseInfo,
    ) -> Result<Arc<Rendered>> {
        if let Some(hit) = self.cache.get_exact(from, to) {
            return Ok(hit);
        }
        // Readers of one hour or range share its build: those waiting find it cached.
        let _same_range = self.unions.exact_turn(from, to).await;
        if let Some(hit) = self.cache.get_exact(from, to) {
            return Ok(hit);
        }
        let rendered = Arc::new(if from == to {
            self.exact_hour(from, info).await?
        } else {
            self.exact_range(from, to, info).await?
        });
        self.cache.insert_exact(from, to, rendered.clone());
        Ok(rendered)
    }

    /// A sealed hour's exact body, rendered with its place in the chain.
    async fn exact_hour(&self, hour: Hour, info: UniverseInfo) -> Result<Rendered> {
        // Sealed first (its keys final, its chain link made), then the body.
        let (bin, complete) = self.closed_view(hour, Repr::Bin).await?;
        if !complete {
            return Err(not_sealed_yet(hour));
        }
        let stored = match self.store.exact(hour).await {
            Ok(stored) => stored,
            // A body that fails its checksum is built again: the same keys give the same bytes.
            Err(e @ StoreError::Corrupt(_)) => {
                self.note_corrupt(hour, &e);
                None
            }
            Err(e) => return Err(e.into()),
        };
        let body = self
            .vouched_exact(hour, info.count, bin.count, stored)
            .await?;
        let exact = Exact::from_bytes(&body)?;
        let chain = match bin.chain {
            Some(place) => Some(
                self.body_chain_place(hour, BodyForm::Exact, &bin, place, &body)
                    .await?,
            ),
            None => None,
        };
        let meta = Meta::hour(hour.rfc3339(), true, u64::from(exact.changed_count()));
        Ok(render_exact(&meta, body, exact.universe(), chain))
    }

    /// The exact body of the sealed hours `from..=to` (`from < to`): over the universe as
    /// it stood when `to` was sealed (which holds every key of the range), "changed" for
    /// the keys of any of its hours. Built from the hours' vouched keys, checked as an
    /// hour's is, recorded as the bytes its URLs serve from now on (a build on any node
    /// gives the same bytes), never stored: it is built again after a restart.
    async fn exact_range(&self, from: Hour, to: Hour, info: UniverseInfo) -> Result<Rendered> {
        // Every hour sealed first (its count known), then the build's memory reserved,
        // and only then a key read.
        let counts = self.closed_counts(from, to).await?;
        let read: u64 = counts.iter().map(|(_, n)| n).sum();
        let largest = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let slot = self.unions.queued_slot().await?;
        // The build over the universe and the hours' distinct keys (the universe, as
        // stored, sorted: read in place, and kept to check the body against; at most
        // `read` changed, an ID of two hours read twice), and the hours' keys as read.
        let bytes = Exact::build_bytes_up_to(info.count, read)
            + 8 * read
            + super::vouch::vouching_bytes(largest, self.tuning.target_fpp);
        let held = self
            .unions
            .reserve(slot, bytes)
            .map_err(|refused| refused.error(Work::Exact { from, to }))?;
        let (mut runs, complete) = self
            .closed_runs(from, to, &counts, Runs::held(), |_| ())
            .await?;
        if !complete {
            return Err(not_sealed_yet(to));
        }
        let universe = match self.store.universe_keys(to).await {
            Err(e @ StoreError::Corrupt(_)) => return Err(self.corrupt(to, e)),
            other => other?,
        };
        let recorded = self.store.form_digest(from, to, FormName::Exact).await?;
        let checked = self
            .unions
            .run(
                held,
                Step::Build,
                move || -> Result<(Vec<u8>, chain::Hash)> {
                    // Every hour's distinct keys, in key order (one part: held runs).
                    let mut keys = Vec::new();
                    runs.for_each_part(&mut |sets| keys.extend(distinct_keys(sets)))
                        .map_err(ServiceError::Spill)?;
                    keys.sort_unstable();
                    // The hours' keys as read are not needed beside the solver.
                    drop(runs);
                    let built = Exact::build_over(&universe, &keys)?;
                    let mut body = built.to_bytes();
                    let mut digest = chain::digest(&body);
                    if built.complemented() && recorded.is_some_and(|first| first != digest) {
                        // First served before complemented bodies existed: the same range
                        // in version 1, if that is what was recorded (else it is reported).
                        drop(built);
                        body = Exact::build_over_uncomplemented(&universe, &keys)?.to_bytes();
                        digest = chain::digest(&body);
                    }
                    check_exact(&body, &universe, &keys)?;
                    Ok((body, digest))
                },
            )
            .await?;
        let (body, digest) = self.noting_corrupt(from, checked)?;
        self.vouch_form(from, to, FormName::Exact, &digest).await?;
        let exact = Exact::from_bytes(&body)?;
        let changed = u64::from(exact.changed_count());
        let meta = Meta::range(from.rfc3339(), to.rfc3339(), true, changed);
        Ok(render_exact(&meta, body, exact.universe(), None))
    }

    /// `hour`'s exact body, checked before it is served or signed: the `stored` one, or
    /// else one built over the universe as it stood when the hour was sealed (the keys
    /// that joined in it or before, which include the hour's own) and stored. Either way
    /// it must answer "changed" for every key of the hour (vouched for by its sealed
    /// filter) and "unchanged" for every other key of that universe (checked against
    /// the tally its seal recorded), and be the bytes first served for the hour.
    async fn vouched_exact(
        &self,
        hour: Hour,
        universe: u64,
        changed: u64,
        stored: Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let slot = self.unions.queued_slot().await?;
        // The build over the universe's keys (as stored, sorted: read in place, and kept to
        // check the body against) and the hour's.
        let bytes = Exact::build_bytes(universe, changed)
            + super::vouch::vouching_bytes(changed, self.tuning.target_fpp);
        let held = self.unions.reserve(slot, bytes).map_err(|refused| {
            refused.error(Work::Exact {
                from: hour,
                to: hour,
            })
        })?;
        let keys = self.vouched_keys(hour).await?;
        let universe = match self.store.universe_keys(hour).await {
            Err(e @ StoreError::Corrupt(_)) => return Err(self.corrupt(hour, e)),
            other => other?,
        };
        let built = stored.is_none();
        let checked = self
            .unions
            .run(held, Step::HourExact, move || -> Result<_> {
                let body = match stored {
                    Some(body) => body,
                    None => Exact::build_over(&universe, &keys)?.to_bytes(),
                };
                check_exact(&body, &universe, &keys)?;
                Ok((body, universe, keys))
            })
            .await?;
        let (body, universe, keys) = self.noting_corrupt(hour, checked)?;
        let body = if built {
            tracing::info!(%hour, bytes = body.len(), "built an exact hour");
            let kept = self.note_write(self.store.put_exact(hour, &body).await)?;
            if kept != body {
                // Another node stored its body first: that is the one served, once checked.
                let theirs = kept.clone();
                let checked =
                    tokio::task::spawn_blocking(move || check_exact(&theirs, &universe, &keys))
                        .await?;
                self.noting_corrupt(hour, checked)?;
            }
            kept
        } else {
            body
        };
        self.vouch_form(hour, hour, FormName::Exact, &chain::digest(&body))
            .await?;
        Ok(body)
    }
}

/// The error of an hour the store cannot seal right now: it has no exact body yet.
fn not_sealed_yet(hour: Hour) -> ServiceError {
    ServiceError::Store(StoreError::unavailable(
        format!("{hour} cannot be sealed right now, so it has no exact body yet"),
        std::io::Error::other("the seal is being retried"),
    ))
}

/// Checks an exact body against what it must say: "changed" for every key of `changed`
/// (sorted), "unchanged" for every other key of `universe`.
///
/// # Errors
/// [`StoreError::Corrupt`] saying how many keys it answers wrongly; a body that does not
/// decode.
pub(super) fn check_exact(body: &[u8], universe: &[Key], changed: &[Key]) -> Result<()> {
    let exact = Exact::from_bytes(body)?;
    super::vouch::answers_every("the exact body", changed, |k| exact.changed(k))?;
    let wrong = universe
        .iter()
        .filter(|k| changed.binary_search(k).is_err() && exact.changed(**k))
        .count();
    if wrong > 0 {
        return Err(StoreError::Corrupt(format!(
            "the exact body answers \"changed\" for {wrong} IDs of its universe that did not \
             change: it is not served"
        ))
        .into());
    }
    Ok(())
}

impl Ingest<'_> {
    /// The universe, if the publisher created one.
    ///
    /// # Errors
    /// Store failures.
    pub async fn universe(&self) -> Result<Option<UniverseInfo>> {
        let info = self.store.universe().await;
        if let Err(e @ StoreError::Corrupt(_)) = &info {
            self.note_corrupt_record("universe", e);
        }
        Ok(info?)
    }

    /// Durably adds `keys` to the universe (creating it, from the open hour on, at the
    /// first call); its size after.
    ///
    /// # Errors
    /// [`ServiceError::UniverseFull`] past `max_universe_ids` (nothing recorded); store
    /// failures (nothing recorded).
    pub async fn add_to_universe(&self, keys: &[Key]) -> Result<u64> {
        let max = self.tuning.max_universe_ids;
        let open = self.current_hour();
        match self.note_write(self.store.add_to_universe(keys, open, max).await)? {
            UniverseAdded::Added { count } => {
                if !matches!(self.sealer.universe_seen(), UniverseSeen::Since(_)) {
                    self.sealer
                        .keep_universe(self.store.universe().await?.map(|u| u.since));
                }
                Ok(count)
            }
            UniverseAdded::Full { count } => Err(ServiceError::UniverseFull { count, max }),
        }
    }
}

impl Forms<'_> {
    /// The exact body of a sealed hour, of a past day, or of a since-range's sealed hours
    /// (the open hour fetched on its own: the view is fresh until it closes).
    ///
    /// # Errors
    /// `NoUniverse`, `BeforeUniverse` (for the target's first hour); `OpenHasNoExactForm`
    /// for the open hour, today, and a since-range from the open hour; as
    /// [`Hours::view`](super::Hours::view) for the target; `TooManyWaiting`, `BudgetTaken`
    /// or `TooLargeForBudget` when the build pool or its memory is taken; store failures.
    pub async fn exact_view(&self, target: Target) -> Result<View> {
        let now = self.current_hour_for(target).await?;
        let open = ServiceError::OpenHasNoExactForm {
            asked: target,
            open: now,
        };
        let (from, to, open_until) = match target {
            Target::Hour(hour) => {
                self.check(hour, now)?;
                if hour == now {
                    return Err(open);
                }
                (hour, hour, None)
            }
            Target::Day(day) => {
                let (first, last) = self.day_hours(day, now)?;
                if last >= now {
                    return Err(open);
                }
                (first.max(self.earliest(now)), last, None)
            }
            Target::Since(from) => {
                if from > now {
                    return Err(ServiceError::InFuture { asked: target, now });
                }
                self.check(from, now)?;
                if from == now {
                    return Err(open);
                }
                // What it holds changes once an hour, when the next closes.
                (from, now.prev(), Some(now.end()))
            }
        };
        let info = match self.ingest().universe().await {
            Err(ServiceError::Store(e @ StoreError::Corrupt(_))) => {
                return Err(self.corrupt(from, e))
            }
            other => other?,
        };
        let info = info.ok_or(ServiceError::NoUniverse)?;
        if from < info.since {
            return Err(ServiceError::BeforeUniverse {
                hour: from,
                since: info.since,
            });
        }
        let rendered = self.exact_rendering(from, to, info).await?;
        Ok(View {
            rendered,
            open_until,
            prev: None,
            next: None,
            open_hour: None,
            signature_pending: false,
        })
    }

    /// The first hour with an exact body, for the index: read from the store once it
    /// exists (it never changes), and while it does not, at most once per `refresh`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn exact_since(&self) -> Result<Option<Hour>> {
        match self.sealer.universe_seen() {
            UniverseSeen::Since(hour) => return Ok(Some(hour)),
            UniverseSeen::Missing(at) if at.elapsed() < self.tuning.refresh => return Ok(None),
            _ => {}
        }
        let since = match self.ingest().universe().await {
            // Recorded: no exact hour is served while the universe is damaged, and the
            // index says none, rather than failing.
            Err(ServiceError::Store(StoreError::Corrupt(_))) => return Ok(None),
            other => other?.map(|u| u.since),
        };
        self.sealer.keep_universe(since);
        Ok(since)
    }
}
