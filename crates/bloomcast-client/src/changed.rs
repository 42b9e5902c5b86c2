//! The question pollers ask: which of my IDs may have changed since an hour? Answered
//! hour by hour or with one since-union, whichever the planner says costs fewer bytes;
//! hour by hour, each closed hour in its cheapest form ([`super::cheapest_form`]).

use super::choice::{cheapest_form, wasted, Form};
use super::{fetch, plan, Changed, Client, ClientError, Fetched, Index, Result, Strategy};
use crate::bloom::{Filter, Key, Ribbon};
use crate::hour::Hour;
use std::collections::HashMap;
use std::sync::Arc;

/// A closed hour as held: whichever form was cheapest.
enum Held {
    Bloom(Arc<Fetched>),
    Ribbon(Arc<Ribbon>),
}

impl Held {
    fn contains_key(&self, key: Key) -> bool {
        match self {
            Held::Bloom(fetched) => fetched.filter.contains_key(key),
            Held::Ribbon(ribbon) => ribbon.contains(key),
        }
    }

    fn fpp(&self) -> f64 {
        match self {
            Held::Bloom(fetched) => fetched.filter.fpp(),
            Held::Ribbon(ribbon) => ribbon.fpp(),
        }
    }
}

impl Client {
    /// Which of `ids` may have changed from `since` through the server's current hour,
    /// per hour when that costs fewer bytes, else as one range ([`Strategy::Auto`]).
    ///
    /// Bytes are counted as filter bytes plus `ids.len() × fpp ×` the fetch cost
    /// ([`super::ClientBuilder::fetch_cost`]): each closed hour is read as a v1 Bloom
    /// filter or a ribbon at the precision minimising that sum; the open hour as a v1
    /// filter (revalidated, or a delta). A verifying client reads v1 filters only.
    ///
    /// Every ID that changed in the range is returned (no false negatives); an ID that
    /// did not is returned with the filters' false-positive probability.
    ///
    /// # Errors
    /// As [`Client::since`].
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
    /// As [`Client::since`].
    pub async fn changed_since_with<S: AsRef<str>>(
        &self,
        ids: &[S],
        since: Hour,
        strategy: Strategy,
    ) -> Result<Vec<Changed>> {
        let index = self.index().await?;
        let now = index.current_hour()?;
        if since > now {
            return Err(ClientError::Argument(format!(
                "since {since} is after the server's current hour {now}"
            )));
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
        let hourly = match strategy {
            // Unions are not signed: a verifying client reads hour by hour.
            _ if inputs.bloom_only => true,
            // A static mirror serves no unions.
            _ if index.static_layout => true,
            Strategy::Hourly => true,
            Strategy::Union => false,
            Strategy::Auto => plan::hourly_is_cheaper(&inputs),
        };
        if !hourly {
            let fetched = self.since(since).await?;
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
        for input in &inputs.hours {
            let ids = if input.open || inputs.bloom_only {
                let fetched = self.hour(hour).await?;
                pick(&|key| fetched.filter.contains_key(key))
            } else {
                let count = input.count.unwrap_or(inputs.capacity);
                let held = self.closed_hour(hour, count, &inputs).await?;
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
    /// held already when it is no worse than fetching another, else the cheapest form.
    async fn closed_hour(&self, hour: Hour, count: u64, inputs: &plan::Inputs) -> Result<Held> {
        let (followed, cost) = (inputs.followed, inputs.fetch_cost);
        let choice = cheapest_form(count, inputs.target_fpp, followed, cost);
        let fetching = choice.expected_bytes(followed, cost) + plan::RESPONSE_OVERHEAD;
        if let Some(held) = self.held(hour) {
            if wasted(held.fpp(), followed, cost) <= fetching {
                return Ok(held);
            }
        }
        let Form::Ribbon { r } = choice.form else {
            return Ok(Held::Bloom(self.hour(hour).await?));
        };
        match self.ribbon(hour, Some((-f64::from(r)).exp2())).await {
            Ok(ribbon) => Ok(Held::Ribbon(ribbon)),
            // A server without the compact form (404 for the suffix), or an hour it does
            // not serve compactly (406): the v1 filter answers the same question.
            Err(ClientError::Status {
                status: 404 | 406, ..
            }) => Ok(Held::Bloom(self.hour(hour).await?)),
            Err(e) => Err(e),
        }
    }

    /// The most precise complete filter of `hour` this client holds, in either form.
    fn held(&self, hour: Hour) -> Option<Held> {
        let bloom = self
            .cache
            .get(&fetch::bin_path(&hour.path()))
            .filter(|f| f.meta.complete)
            .map(Held::Bloom);
        let ribbon = self.ribbons.get(hour).map(Held::Ribbon);
        match (bloom, ribbon) {
            (Some(b), Some(r)) => Some(if b.fpp() <= r.fpp() { b } else { r }),
            (b, r) => b.or(r),
        }
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
        }
    }
}
