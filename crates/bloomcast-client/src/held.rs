//! A closed hour as this client holds it, in whichever form it was read: an approximate
//! filter (v1 Bloom or a ribbon), an exact body alone (for IDs the caller declared
//! registered), or an exact body refining an approximate filter ([`super::refine`]).

use super::choice::{Choice, Form};
use super::{fetch, Client, ClientError, Fetched, Result};
use crate::bloom::{Key, Ribbon, Ribbon2};
use crate::exact::Exact;
use crate::hour::Hour;
use std::sync::Arc;

/// A closed hour as held.
pub(crate) enum Held {
    Bloom(Arc<Fetched>),
    Ribbon(Arc<Ribbon>),
    Ribbon2(Arc<Ribbon2>),
    /// Alone: only for a caller that declared its IDs registered.
    Exact(Arc<Exact>),
    /// An approximate filter (fpp at most the service's target) and the exact body: an ID
    /// is changed when both say so.
    Refined(Box<Held>, Arc<Exact>),
}

impl Held {
    pub(crate) fn contains_key(&self, key: Key) -> bool {
        match self {
            Held::Bloom(fetched) => fetched.filter.contains_key(key),
            Held::Ribbon(ribbon) => ribbon.contains(key),
            Held::Ribbon2(ribbon) => ribbon.contains(key),
            Held::Exact(exact) => exact.changed(key),
            Held::Refined(under, exact) => under.contains_key(key) && exact.changed(key),
        }
    }

    /// The false-positive probability the cost model weighs: for a form with an exact
    /// body, none among the universe's IDs (an ID outside it is bounded by the
    /// approximate filter refined, or, alone, asked about by a caller that declared it
    /// registered).
    pub(crate) fn fpp(&self) -> f64 {
        match self {
            Held::Bloom(fetched) => fetched.filter.fpp(),
            Held::Ribbon(ribbon) => ribbon.fpp(),
            Held::Ribbon2(ribbon) => ribbon.fpp(),
            Held::Exact(_) | Held::Refined(..) => 0.0,
        }
    }
}

impl Client {
    /// The most precise complete form of `hour` this client holds, as it may be used: its
    /// exact body alone for a caller that declared its IDs registered; else the exact
    /// body refining the most precise approximate filter held when that one's fpp is at
    /// most `target_fpp`; else that filter alone.
    pub(crate) fn held(&self, hour: Hour, target_fpp: f64) -> Option<Held> {
        let exact = self.exacts.get(hour);
        if let (Some(exact), true) = (&exact, self.registered) {
            return Some(Held::Exact(Arc::clone(exact)));
        }
        let approximate = self.held_approximate(hour);
        match (approximate, exact) {
            (Some(under), Some(exact)) if under.fpp() <= target_fpp => {
                Some(Held::Refined(Box::new(under), exact))
            }
            (approximate, _) => approximate,
        }
    }

    /// The most precise complete approximate filter of `hour` held (v1 or ribbon).
    fn held_approximate(&self, hour: Hour) -> Option<Held> {
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

    /// `exact` refining `under`, or an approximate filter of `hour` held already that is
    /// no less precise.
    pub(crate) async fn refined(
        &self,
        hour: Hour,
        exact: Arc<Exact>,
        under: Choice,
    ) -> Result<Held> {
        let approximate = match self.held_approximate(hour) {
            Some(held) if held.fpp() <= under.fpp => held,
            _ => self.approximate(hour, under).await?,
        };
        Ok(Held::Refined(Box::new(approximate), exact))
    }

    /// A closed hour in the approximate form `choice` names: a ribbon where the server
    /// serves one, else the v1 filter.
    pub(crate) async fn approximate(&self, hour: Hour, choice: Choice) -> Result<Held> {
        let fetched = match choice.form {
            Form::Ribbon { r } => self
                .ribbon(hour, Some((-f64::from(r)).exp2()))
                .await
                .map(Held::Ribbon),
            Form::Ribbon2 { k } => self
                .ribbon2(hour, Some((-f64::from(k)).exp2()))
                .await
                .map(Held::Ribbon2),
            // Pages are read with the IDs they answer for ([`Client::pages`]), not held.
            Form::Bloom | Form::Exact | Form::Pages { .. } => {
                return Ok(Held::Bloom(self.hour(hour).await?))
            }
        };
        match fetched {
            Ok(held) => Ok(held),
            // A server without the compact form (404 for the suffix), or an hour it does
            // not serve compactly (406): the v1 filter answers the same question.
            Err(ClientError::Status {
                status: 404 | 406, ..
            }) => Ok(Held::Bloom(self.hour(hour).await?)),
            // Served without a signature to a client with a key: not used.
            Err(ClientError::Unsigned { .. }) => Ok(Held::Bloom(self.hour(hour).await?)),
            Err(e) => Err(e),
        }
    }
}
