//! The question pollers ask: which of my IDs may have changed since an hour? Answered
//! hour by hour or with one since-union, whichever the planner says costs fewer bytes;
//! hour by hour, each closed hour in its cheapest form ([`super::cheapest_form`]; from
//! the index's `exact_since`, [`super::exact_or`]).

use super::choice::{cheapest_form_of, exact_or, wasted, Choice, Form, Forms};
use super::{fetch, plan, Changed, Client, ClientError, Fetched, Index, Result, Strategy};
use crate::bloom::{Filter, Key, Ribbon, Ribbon2};
use crate::exact::Exact;
use crate::hour::Hour;
use std::collections::HashMap;
use std::sync::Arc;

/// A closed hour as held: whichever form was cheapest.
enum Held {
    Bloom(Arc<Fetched>),
    Ribbon(Arc<Ribbon>),
    Ribbon2(Arc<Ribbon2>),
    Exact(Arc<Exact>),
}

impl Held {
    fn contains_key(&self, key: Key) -> bool {
        match self {
            Held::Bloom(fetched) => fetched.filter.contains_key(key),
            Held::Ribbon(ribbon) => ribbon.contains(key),
            Held::Ribbon2(ribbon) => ribbon.contains(key),
            Held::Exact(exact) => exact.changed(key),
        }
    }

    fn fpp(&self) -> f64 {
        match self {
            Held::Bloom(fetched) => fetched.filter.fpp(),
            Held::Ribbon(ribbon) => ribbon.fpp(),
            Held::Ribbon2(ribbon) => ribbon.fpp(),
            // None among the universe's IDs, the only ones a caller asks about.
            Held::Exact(_) => 0.0,
        }
    }
}

impl Client {
    /// Which of `ids` may have changed from `since` through the server's current hour,
    /// per hour when that costs fewer bytes, else as one range ([`Strategy::Auto`]).
    ///
    /// Bytes are counted as filter bytes plus `ids.len() × fpp ×` the fetch cost
    /// ([`super::ClientBuilder::fetch_cost`]): each closed hour is read as a v1 Bloom
    /// filter or a ribbon at the precision minimising that sum, or, for a sealed hour at
    /// or after the index's `exact_since`, as its exact body when that costs no more (it
    /// wastes no fetch: PROTOCOL.md section 14); the open hour as a v1 filter
    /// (revalidated, or a delta). A verifying client reads v1 filters and exact bodies
    /// (both signed), never ribbons. An exact body the server does not serve (404) falls
    /// back to the other form.
    ///
    /// Every ID that changed in the range is returned (no false negatives); an ID that
    /// did not is returned with the filters' false-positive probability (none from an
    /// hour read exactly, for the IDs of the publisher's universe).
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
    /// `exact_since` may ([`Forms::Auto`]) or must ([`Forms::Exact`]) be read as exact
    /// bodies. [`Forms::Exact`] reads hour by hour whatever the strategy; hours before
    /// `exact_since` and the open hour are read as [`Forms::Auto`] would.
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast_client::Client, since: bloomcast_client::hour::Hour) -> Result<(), bloomcast_client::ClientError> {
    /// use bloomcast_client::{Forms, Strategy};
    /// let ids = ["user:1", "user:2"]; // IDs of the publisher's universe
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
        let index = self.index().await?;
        let now = index.current_hour()?;
        if since > now {
            return Err(ClientError::Argument(format!(
                "since {since} is after the server's current hour {now}"
            )));
        }
        let exact_since = index.exact_since_hour()?;
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
            .filter(|hour| self.held(*hour).is_none())
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
        let hourly = match strategy {
            _ if forced => true,
            // Unions are not signed: a verifying client reads hour by hour.
            _ if inputs.bloom_only => true,
            // A static mirror serves no unions.
            _ if index.static_layout => true,
            // A union over a damaged hour answers 500: the hours held are read instead.
            Strategy::Auto if !damaged.is_empty() => true,
            Strategy::Hourly => true,
            Strategy::Union => false,
            Strategy::Auto => plan::hourly_is_cheaper_with(&inputs, &exact),
        };
        if !hourly {
            let fetched = self.since(since).await.map_err(|e| match e {
                ClientError::Status {
                    status: 500,
                    ref code,
                    ..
                } if code == "corrupt" && !damaged.is_empty() => ClientError::Corrupt {
                    hours: damaged.clone(),
                },
                other => other,
            })?;
            let (_, to) = fetched.range()?;
            let filter: &Filter = &fetched.filter;
            let ids = pick(&|key| filter.contains_key(key));
            return Ok(if ids.is_empty() {
                vec![]
            } else {
                vec![Changed {
                    from: since,
                    to,
                    ids,
                }]
            });
        }
        let mut out = Vec::new();
        let mut hour = since;
        for (input, exact) in inputs.hours.iter().zip(&exact) {
            let ids = if damaged.contains(&hour) {
                // Held complete (checked above): the server cannot serve it.
                let held = (self.held(hour)).ok_or(ClientError::Corrupt { hours: vec![hour] })?;
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
                pick(&|key| exact.changed(key))
            } else {
                let count = input.count.unwrap_or(inputs.capacity);
                let held = (self.closed_hour(hour, count, &inputs, *exact).await)
                    .map_err(|e| e.of_hour(hour))?;
                pick(&|key| held.contains_key(key))
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
        Ok(out)
    }

    /// A closed hour in the form that minimises filter bytes plus wasted fetches: one
    /// held already when it is no worse than fetching another, else the cheapest form
    /// (its exact body, of `exact` bytes, when it may be read so and costs no more).
    async fn closed_hour(
        &self,
        hour: Hour,
        count: u64,
        inputs: &plan::Inputs,
        exact: Option<u64>,
    ) -> Result<Held> {
        let (followed, cost) = (inputs.followed, inputs.fetch_cost);
        let other = if inputs.bloom_only {
            // A verifying client: ribbons are not signed.
            Choice::bloom(count, inputs.target_fpp)
        } else {
            cheapest_form_of(count, inputs.target_fpp, followed, cost, inputs.ribbon2)
        };
        let choice = match exact {
            Some(bytes) => exact_or(bytes, other, followed, cost),
            None => other,
        };
        let fetching = choice.expected_bytes(followed, cost) + plan::RESPONSE_OVERHEAD;
        if let Some(held) = self.held(hour) {
            if wasted(held.fpp(), followed, cost) <= fetching {
                return Ok(held);
            }
        }
        if choice.form == Form::Exact {
            match self.exact(hour).await {
                Ok(Some(exact)) => return Ok(Held::Exact(exact)),
                // No exact body after all (404), or an hour the server has not sealed
                // yet (406): the other form answers the same question.
                Ok(None) | Err(ClientError::Status { status: 406, .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let fetched = match other.form {
            Form::Ribbon { r } => self
                .ribbon(hour, Some((-f64::from(r)).exp2()))
                .await
                .map(Held::Ribbon),
            Form::Ribbon2 { k } => self
                .ribbon2(hour, Some((-f64::from(k)).exp2()))
                .await
                .map(Held::Ribbon2),
            Form::Bloom | Form::Exact => return Ok(Held::Bloom(self.hour(hour).await?)),
        };
        match fetched {
            Ok(held) => Ok(held),
            // A server without the compact form (404 for the suffix), or an hour it does
            // not serve compactly (406): the v1 filter answers the same question.
            Err(ClientError::Status {
                status: 404 | 406, ..
            }) => Ok(Held::Bloom(self.hour(hour).await?)),
            Err(e) => Err(e),
        }
    }

    /// The most precise complete filter of `hour` this client holds, in any form (an
    /// exact body first).
    fn held(&self, hour: Hour) -> Option<Held> {
        if let Some(exact) = self.exacts.get(hour) {
            return Some(Held::Exact(exact));
        }
        let bloom = self
            .cache
            .get(&fetch::bin_path(&hour.path()))
            .filter(|f| f.meta.complete)
            .map(Held::Bloom);
        let ribbon = self.ribbons.get(hour).map(Held::Ribbon);
        let ribbon2 = self.ribbons2.get(hour).map(Held::Ribbon2);
        [bloom, ribbon, ribbon2]
            .into_iter()
            .flatten()
            .min_by(|a, b| a.fpp().total_cmp(&b.fpp()))
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
                held_fpp: self.held(hour).map(|h| h.fpp()),
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
            bloom_only: self.pubkey.is_some() || self.pin,
            ribbon2: index.ribbon_versions.contains(&2),
        }
    }
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
