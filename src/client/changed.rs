//! The question pollers ask: which of my IDs may have changed since an hour? Answered
//! hour by hour or with one since-union, whichever the planner says costs fewer bytes.

use super::{fetch, plan, Changed, Client, ClientError, Index, Result, Strategy};
use crate::bloom::{Filter, Key};
use crate::hour::Hour;

impl Client {
    /// Which of `ids` may have changed from `since` through the server's current hour,
    /// per hour when that costs fewer bytes, else as one range ([`Strategy::Auto`]).
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
        let pick = |filter: &Filter| -> Vec<String> {
            keys.iter()
                .zip(ids)
                .filter(|(key, _)| filter.contains_key(**key))
                .map(|(_, id)| id.as_ref().to_owned())
                .collect()
        };
        let hourly = match strategy {
            // Unions are not signed: a verifying client reads hour by hour.
            _ if self.pubkey.is_some() || self.pin => true,
            Strategy::Hourly => true,
            Strategy::Union => false,
            Strategy::Auto => plan::hourly_is_cheaper(&self.plan_inputs(&index, since, now)),
        };
        if !hourly {
            let fetched = self.since(since).await?;
            let (_, to) = fetched.range()?;
            let ids = pick(&fetched.filter);
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
        while hour <= now {
            let fetched = self.hour(hour).await?;
            let ids = pick(&fetched.filter);
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

    /// What the planner needs: per hour, whether we hold it complete and its count.
    fn plan_inputs(&self, index: &Index, since: Hour, now: Hour) -> plan::Inputs {
        let counts: std::collections::HashMap<String, u64> = index
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
                cached_complete: cached.as_ref().is_some_and(|f| f.meta.complete),
                cached_count: cached.map(|f| f.meta.count),
                open: hour == now,
            });
            hour = hour.next();
        }
        plan::Inputs {
            hours,
            target_fpp: index.target_fpp,
            capacity: index.capacity,
        }
    }
}
