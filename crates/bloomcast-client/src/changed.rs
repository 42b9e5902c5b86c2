//! The question pollers ask: which of my IDs may have changed since an hour? Answered
//! hour by hour, with one since-union, or with the closed hours as one version 2
//! since-union beside the open hour, whichever the planner says costs fewer bytes;
//! hour by hour, each closed hour in its cheapest form ([`super::cheapest_form`]; from
//! the index's `exact_since`, with its exact body: alone for IDs declared registered,
//! [`super::exact_or`], else refining an approximate form, [`super::refined_or`]).

use super::choice::{wasted, Choice, Form, Forms};
use super::held::Held;
use super::plan::Plan;
use super::refine::Reading;
use super::{fetch, plan, Answer, Changed, Client, ClientError, Coverage, Index, Result, Strategy};
use crate::bloom::{Filter, Key};
use crate::hour::Hour;
use std::collections::HashMap;

/// The IDs asked about that a filter's `contains` says may have changed.
type Pick<'a> = dyn Fn(&dyn Fn(Key) -> bool) -> Vec<String> + 'a;

impl Client {
    /// Which of `ids` may have changed from `since` through the server's current hour,
    /// per hour when that costs fewer bytes, else as one range, or as the closed hours'
    /// range in version 2 at the precision that suits `ids.len()` and the open hour on
    /// its own ([`Strategy::Auto`]).
    ///
    /// Bytes are counted as filter bytes plus `ids.len() × fpp ×` the fetch cost
    /// ([`super::ClientBuilder::fetch_cost`]): each closed hour is read as a v1 Bloom
    /// filter or a ribbon at the precision minimising that sum, or, for a sealed hour at
    /// or after the index's `exact_since`, with its exact body when that costs no more (it
    /// wastes no fetch among the universe's IDs: PROTOCOL.md section 14): alone when the
    /// client declared its IDs [registered](super::ClientBuilder::registered), else
    /// refining an approximate form at the service's target fpp or under, whose bytes and
    /// second request it then counts too. The open hour is read as a v1 filter
    /// (revalidated, or a delta). A verifying client reads hour by hour (unions are not
    /// signed), each form verified by its own signature under the hour's chain header;
    /// a ribbon or exact body served without a signature is not used (the hour's v1
    /// filter is read instead). An exact body the server does not serve (404) falls back
    /// to the other form.
    ///
    /// Every ID that changed in the range is returned (no false negatives); an ID that
    /// did not is returned with the filters' false-positive probability. From an hour read
    /// with its exact body: none for the IDs of the publisher's universe; for any other
    /// ID, at most the target (refined), or arbitrary (alone: never read so unless the
    /// caller declared its IDs registered).
    ///
    /// # Errors
    /// As [`Client::since`]; [`ClientError::Corrupt`] naming the hours of the range the
    /// server could not verify (listed `corrupt` in its index, or answering `500
    /// corrupt`) that this client does not hold complete: no answer is given for the
    /// range, never one that reads them as "no change".
    pub async fn changed_since<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
    ) -> Result<Vec<Changed>> {
        self.changed_since_with(ids, since, Strategy::Auto).await
    }

    /// [`Client::changed_since`] with a chosen [`Strategy`].
    ///
    /// # Errors
    /// As [`Client::changed_since`].
    pub async fn changed_since_with<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
        strategy: Strategy,
    ) -> Result<Vec<Changed>> {
        self.changed_since_in(ids, since, strategy, Forms::Auto)
            .await
    }

    /// [`Client::changed_since_with`], choosing whether sealed hours from the index's
    /// `exact_since` may ([`Forms::Auto`]) or must ([`Forms::Exact`]) be read with their
    /// exact bodies. [`Forms::Exact`] reads hour by hour whatever the strategy, each such
    /// hour's exact body alone when the client declared its IDs
    /// [registered](super::ClientBuilder::registered), else with the cheapest approximate
    /// form at the service's target fpp or under ([`super::cheapest_within`]), an ID
    /// changed when both say so; hours before `exact_since` and the open hour are read as
    /// [`Forms::Auto`] would.
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast_client::Client, since: bloomcast_client::hour::Hour) -> Result<(), bloomcast_client::ClientError> {
    /// use bloomcast_client::{Forms, Strategy};
    /// let ids = ["user:1", "user:2"]; // exact for IDs of the publisher's universe
    /// let changes = client.changed_since_in(&ids, since, Strategy::Auto, Forms::Exact).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Client::changed_since`]; with [`Forms::Exact`], [`ClientError::Argument`] when the
    /// server has no universe (its index's `exact_since` is null) and
    /// [`ClientError::Protocol`] when it has no exact body for a sealed hour from
    /// `exact_since`.
    pub async fn changed_since_in<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
        strategy: Strategy,
        forms: Forms,
    ) -> Result<Vec<Changed>> {
        Ok(self
            .changed_since_covering(ids, since, strategy, forms)
            .await?
            .changes)
    }

    /// [`Client::changed_since_in`], with what the answer covers ([`Coverage`]): the
    /// first and last hours read, with a key the hours used unverified (an open hour
    /// served unsigned), and why the source is not shown current (PROTOCOL.md section
    /// 11): its newest hour more than [`crate::LAG_HOURS`] hours before this machine's
    /// current hour, or with a key, its verified checkpoint (`GET /checkpoint`; a static
    /// mirror's `/checkpoint.json`) naming a sealed hour it does not offer or made more
    /// than that long ago, or no checkpoint where nothing else signed shows it current.
    ///
    /// # Errors
    /// As [`Client::changed_since_in`]; [`ClientError::Stale`] carrying the answer when
    /// it is stale, unless the client accepts stale answers
    /// ([`super::ClientBuilder::accept_stale`]); [`ClientError::Unverified`] for a
    /// checkpoint that does not verify.
    pub async fn changed_since_covering<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
        strategy: Strategy,
        forms: Forms,
    ) -> Result<Answer> {
        let (changes, index, last) = self.changes_in(ids, since, strategy, forms).await?;
        let verifying = self.keys(None).await?.is_some();
        let stale = self.staleness(&index).await?;
        let answer = Answer {
            changes,
            coverage: Coverage {
                first: Some(since),
                last: Some(last),
                unverified: verifying.then(|| self.unverified_hours(since, last)),
                stale,
            },
        };
        if !answer.coverage.stale.is_empty() && !self.accept_stale {
            return Err(ClientError::Stale(Box::new(answer)));
        }
        Ok(answer)
    }

    /// The changes from `since`, the index they were read by, and the last hour read.
    async fn changes_in<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
        strategy: Strategy,
        forms: Forms,
    ) -> Result<(Vec<Changed>, Index, Hour)> {
        let index = self.index().await?;
        let now = index.current_hour()?;
        if since > now {
            return Err(ClientError::Argument(format!(
                "since {since} is after the server's current hour {now}"
            )));
        }
        let exact_since = index.exact_since_hour()?;
        let target_fpp = index.target_fpp;
        let forced = forms == Forms::Exact;
        if forced && exact_since.is_none() {
            return Err(ClientError::Argument(format!(
                "{} publishes no exact hours: its index's exact_since is null, so its \
                 publisher has registered no universe (POST /universe)",
                self.base
            )));
        }
        // An hour the server could not verify is unknown: answer for none of the range,
        // unless this client holds the hour's complete filter from before (it never
        // changes).
        let damaged = index.corrupt_hours(since, now)?;
        let unknown: Vec<Hour> = (damaged.iter().copied())
            .filter(|hour| self.held(*hour, target_fpp).is_none())
            .collect();
        if !unknown.is_empty() {
            return Err(ClientError::Corrupt { hours: unknown });
        }
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id.as_ref())).collect();
        let pick = |contains: &dyn Fn(Key) -> bool| -> Vec<String> {
            keys.iter()
                .zip(ids)
                .filter(|(key, _)| contains(**key))
                .map(|(_, id)| id.as_ref().to_owned())
                .collect()
        };
        let inputs = self.plan_inputs(&index, since, now, ids.len() as u64);
        let exact = exact_sizes(&index, since, now, exact_since);
        let mut plan = match strategy {
            _ if forced => Plan::Hourly,
            // Unions are not signed: a verifying client reads hour by hour.
            _ if self.verifies() => Plan::Hourly,
            // A static mirror serves no unions.
            _ if index.static_layout => Plan::Hourly,
            // A union over a damaged hour answers 500: the hours held are read instead.
            Strategy::Auto if !damaged.is_empty() => Plan::Hourly,
            Strategy::Hourly | Strategy::Pages => Plan::Hourly,
            Strategy::Union => Plan::Union,
            Strategy::Compact => plan::compact_plan(&inputs).unwrap_or(Plan::Union),
            Strategy::Auto => plan::cheapest_plan(&inputs, &exact, true),
        };
        let corrupt = |e: ClientError| match e {
            ClientError::Status {
                status: 500,
                ref code,
                ..
            } if code == "corrupt" && !damaged.is_empty() => ClientError::Corrupt {
                hours: damaged.clone(),
            },
            other => other,
        };
        // The version 2 union from its first hour on, the hours before it read on their
        // own; from a server that does not serve it, those hours are read on their own
        // too, or as the v1 union when it was to start at `since`.
        // An exact body of the range's closed hours is read the same way; from a server
        // without one, hour by hour.
        let mut compact = match plan {
            Plan::Compact { k: _, from } | Plan::Exact { from } => {
                let start = Hour::from_index(since.index() + from as i64);
                match self
                    .union_rest(start, plan, now, &pick)
                    .await
                    .map_err(corrupt)?
                {
                    Some(rest) if from == 0 => return Ok((rest.0, index, rest.1)),
                    Some(rest) => Some((from, rest)),
                    None if from == 0 && matches!(plan, Plan::Compact { .. }) => {
                        plan = Plan::Union;
                        None
                    }
                    None => None,
                }
            }
            _ => None,
        };
        if plan == Plan::Union {
            let fetched = self.since(since).await.map_err(corrupt)?;
            let (_, to) = fetched.range()?;
            let filter: &Filter = &fetched.filter;
            let ids = pick(&|key| filter.contains_key(key));
            let changes = if ids.is_empty() {
                vec![]
            } else {
                vec![Changed {
                    from: since,
                    to,
                    ids,
                }]
            };
            return Ok((changes, index, to));
        }
        let mut out = Vec::new();
        let mut hour = since;
        // The fewest IDs of an hour whose exact body the server would not build (406: more
        // memory than its build budget, or not sealed yet). Later hours hold at least the
        // universe it had, so one as large is read in its approximate form at once.
        let mut refused = u64::MAX;
        for (i, (input, exact)) in inputs.hours.iter().zip(&exact).enumerate() {
            if compact.as_ref().is_some_and(|(from, _)| *from == i) {
                let (_, (changes, last)) = compact.take().expect("checked");
                out.extend(changes);
                return Ok((out, index, last));
            }
            let ids = if damaged.contains(&hour) {
                // Held complete (checked above): the server cannot serve it.
                let held = (self.held(hour, target_fpp))
                    .ok_or(ClientError::Corrupt { hours: vec![hour] })?;
                pick(&|key| held.contains_key(key))
            } else if input.open || (inputs.bloom_only && exact.is_none()) {
                let fetched = self.hour(hour).await.map_err(|e| e.of_hour(hour))?;
                pick(&|key| fetched.filter.contains_key(key))
            } else if forced && exact.is_some() {
                let exact = self.exact(hour).await.map_err(|e| e.of_hour(hour))?;
                let exact = exact.ok_or_else(|| {
                    ClientError::Protocol(format!(
                        "{} has no exact body for the sealed hour {} (404), though its \
                         index says exact hours start at {}",
                        self.base,
                        hour.rfc3339(),
                        index.exact_since.as_deref().unwrap_or("?"),
                    ))
                })?;
                let held = match self.registered {
                    true => Held::Exact(exact),
                    false => {
                        let count = input.count.unwrap_or(inputs.capacity);
                        (self.refined(hour, exact, inputs.within(count)).await)
                            .map_err(|e| e.of_hour(hour))?
                    }
                };
                pick(&|key| held.contains_key(key))
            } else {
                let count = input.count.unwrap_or(inputs.capacity);
                let paged = strategy == Strategy::Pages;
                let exact = exact.filter(|_| count < refused);
                match (self
                    .closed_pages(hour, count, &inputs, exact, paged, &pick)
                    .await)
                    .map_err(|e| e.of_hour(hour))?
                {
                    Some(ids) => ids,
                    None => {
                        let held = (self.closed_hour(hour, count, &inputs, exact).await)
                            .map_err(|e| e.of_hour(hour))?;
                        if held.refused_exact {
                            refused = refused.min(count);
                        }
                        let held = held.held;
                        pick(&|key| held.contains_key(key))
                    }
                }
            };
            if !ids.is_empty() {
                out.push(Changed {
                    from: hour,
                    to: hour,
                    ids,
                });
            }
            hour = hour.next();
        }
        Ok((out, index, now))
    }

    /// The closed hours from `from` as one union read as `plan` says (a version 2 union at
    /// `2^-k`, or an exact body) and each hour after it through `now` (the open hour) on
    /// its own: the changes `pick` finds in them and the last hour read; `None` from a
    /// server that serves no such since-range (406, or 404 without it).
    async fn union_rest(
        &self,
        from: Hour,
        plan: Plan,
        now: Hour,
        pick: &Pick<'_>,
    ) -> Result<Option<(Vec<Changed>, Hour)>> {
        let read = match plan {
            Plan::Compact { k, .. } => {
                let fpp = Some((-f64::from(k)).exp2());
                (self.since_ribbon2(from, fpp).await)
                    .map(|(ribbon, to)| (pick(&|key| ribbon.contains(key)), to))
            }
            _ => (self.since_exact(from).await)
                .map(|(exact, to)| (pick(&|key| exact.changed(key)), to)),
        };
        let (ids, to) = match read {
            Ok(read) => read,
            Err(ClientError::Status {
                status: 404 | 406, ..
            }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut changes = Vec::new();
        if !ids.is_empty() {
            changes.push(Changed { from, to, ids });
        }
        // The open hour on its own (and an hour closed since the index was read, if any).
        let mut hour = to.next();
        while hour <= now {
            let fetched = self.hour(hour).await.map_err(|e| e.of_hour(hour))?;
            let ids = pick(&|key| fetched.filter.contains_key(key));
            if !ids.is_empty() {
                changes.push(Changed {
                    from: hour,
                    to: hour,
                    ids,
                });
            }
            hour = hour.next();
        }
        Ok(Some((changes, to.max(now))))
    }

    /// A closed hour in the form that minimises filter bytes plus wasted fetches: one
    /// held already when it is no worse than fetching another, else the cheapest reading
    /// (with its exact body, of `exact` bytes, when it has one and that costs no more).
    async fn closed_hour(
        &self,
        hour: Hour,
        count: u64,
        inputs: &plan::Inputs,
        exact: Option<u64>,
    ) -> Result<ClosedHour> {
        let read = |held| ClosedHour {
            held,
            refused_exact: false,
        };
        let (followed, cost) = (inputs.followed, inputs.fetch_cost);
        let reading = inputs.reading(count, exact);
        let fetching = reading.expected_bytes(followed, cost) + plan::RESPONSE_OVERHEAD;
        if let Some(held) = self.held(hour, inputs.target_fpp) {
            if wasted(held.fpp(), followed, cost) <= fetching {
                return Ok(read(held));
            }
        }
        // `None`: the exact body alone (the caller declared its IDs registered).
        let under = match reading {
            Reading::One(choice) if choice.form != Form::Exact => {
                return self.approximate(hour, choice).await.map(read)
            }
            Reading::One(_) => None,
            Reading::Refined { under, .. } => Some(under),
        };
        match (self.exact(hour).await, under) {
            (Ok(Some(exact)), None) => Ok(read(Held::Exact(exact))),
            (Ok(Some(exact)), Some(under)) => self.refined(hour, exact, under).await.map(read),
            // Not built (406: more memory than the server's build budget, or not sealed
            // yet): the approximate form answers the same question.
            (Err(ClientError::Status { status: 406, .. }), _) => {
                let held = self.approximate(hour, inputs.other(count)).await?;
                Ok(ClosedHour {
                    held,
                    refused_exact: true,
                })
            }
            // No exact body after all (404), or one served unsigned to a client with a
            // key: not used.
            (Ok(None) | Err(ClientError::Unsigned { .. }), _) => {
                self.approximate(hour, inputs.other(count)).await.map(read)
            }
            (Err(e), _) => Err(e),
        }
    }

    /// The IDs of `pick` a closed hour read by the page answers changed, when its pages
    /// cost less than its cheapest whole reading (or `forced`) and no form of it held
    /// answers well enough; `None` to read it whole (also from a server without pages,
    /// or pages served unsigned to a client with a key).
    async fn closed_pages(
        &self,
        hour: Hour,
        count: u64,
        inputs: &plan::Inputs,
        exact: Option<u64>,
        forced: bool,
        pick: &Pick<'_>,
    ) -> Result<Option<Vec<String>>> {
        let Some(pages) = inputs.paged(count) else {
            return Ok(None);
        };
        let (followed, cost) = (inputs.followed, inputs.fetch_cost);
        let whole =
            inputs.reading(count, exact).expected_bytes(followed, cost) + plan::RESPONSE_OVERHEAD;
        let paging = pages.expected_bytes(followed, cost);
        let held = self.held(hour, inputs.target_fpp);
        if held.is_some_and(|h| wasted(h.fpp(), followed, cost) <= paging)
            || !(forced || paging < whole)
        {
            return Ok(None);
        }
        let Form::Pages { k } = pages.form else {
            return Ok(None);
        };
        // The keys followed, as `pick` hands them over.
        let keys = std::cell::RefCell::new(Vec::new());
        pick(&|key| {
            keys.borrow_mut().push(key);
            false
        });
        match self
            .pages(hour, Some((-f64::from(k)).exp2()), &keys.into_inner())
            .await
        {
            Ok(read) => Ok(Some(pick(&|key| read.contains(key)))),
            Err(ClientError::Status {
                status: 404 | 406, ..
            })
            | Err(ClientError::Unsigned { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether this client verifies what it reads (a key given, or pinned on first use).
    fn verifies(&self) -> bool {
        self.pubkey.is_some() || self.pin
    }

    /// What the planner needs: per hour, what we hold of it and its count.
    fn plan_inputs(&self, index: &Index, since: Hour, now: Hour, followed: u64) -> plan::Inputs {
        let counts: HashMap<String, u64> = index
            .hours
            .iter()
            .filter_map(|h| Some((h.hour.clone(), h.count?)))
            .collect();
        let mut hours = Vec::new();
        let mut hour = since;
        while hour <= now {
            let cached = self.cache.get(&fetch::bin_path(&hour.path()));
            hours.push(plan::HourInput {
                count: counts.get(&hour.rfc3339()).copied(),
                held_fpp: self.held(hour, index.target_fpp).map(|h| h.fpp()),
                cached_count: cached.map(|f| f.meta.count),
                open: hour == now,
            });
            hour = hour.next();
        }
        plan::Inputs {
            hours,
            target_fpp: index.target_fpp,
            capacity: index.capacity,
            followed,
            fetch_cost: self.fetch_cost,
            // Every form of a sealed hour is signed and verified (its ribbons too).
            bloom_only: false,
            ribbon2: index.ribbon_versions.contains(&2),
            pages_cover: self.pages_cover,
            registered: self.registered,
            // The newest hour listed with its exact body's size bounds the universe.
            universe: (index.hours.iter())
                .filter(|h| h.complete == Some(true))
                .find_map(|h| plan::universe_at_most(h.count?, h.exact_bytes?)),
        }
    }
}

/// A closed hour as read, and whether the server refused its exact body (406).
struct ClosedHour {
    held: Held,
    refused_exact: bool,
}

/// Per hour from `since` through `now`, the bytes of its exact body when it may be read in
/// that form: a sealed hour at or after `exact_since`, at the index's `exact_bytes`, or
/// for an hour the index does not list (or lists without them) the v1 body's predicted
/// bytes, which an exact body does not exceed once 1% of the universe changed.
fn exact_sizes(
    index: &Index,
    since: Hour,
    now: Hour,
    exact_since: Option<Hour>,
) -> Vec<Option<u64>> {
    let listed: HashMap<&str, (Option<u64>, Option<u64>)> = index
        .hours
        .iter()
        .map(|h| (h.hour.as_str(), (h.count, h.exact_bytes)))
        .collect();
    let mut out = Vec::new();
    let mut hour = since;
    while hour <= now {
        let eligible = hour < now && exact_since.is_some_and(|first| hour >= first);
        out.push(eligible.then(|| {
            let (count, bytes) = listed
                .get(hour.rfc3339().as_str())
                .copied()
                .unwrap_or((None, None));
            bytes.unwrap_or_else(|| {
                Choice::bloom(count.unwrap_or(index.capacity), index.target_fpp).filter_bytes
            })
        }));
        hour = hour.next();
    }
    out
}
