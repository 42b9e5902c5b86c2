//! The compact (ribbon) form of a closed hour: the fewest filter bytes per ID, at the
//! precision the caller asks for, kept once fetched (a closed hour never changes).
//! Either form decodes ([`crate::wire::decode_compact`]): the `BCR1` body or its JSON
//! document.

use super::fetch::{check, header_hour};
use super::{Client, ClientError, Result};
use crate::bloom::{Ribbon, Ribbon2};
use crate::chain::{self, BodyForm, SignatureField};
use crate::hour::Hour;
use reqwest::header::HeaderMap;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl Client {
    /// Fetches a closed hour as a ribbon filter, at the server's target false-positive
    /// rate or at `fpp` (rounded down to a power of two, 2^-4 to 2^-24). A ribbon of the
    /// hour at least as precise, fetched before by this client, is answered without a
    /// request.
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast_client::Client) -> Result<(), bloomcast_client::ClientError> {
    /// let hour = bloomcast_client::hour::Hour::parse_flexible("2008-09-03T13").unwrap();
    /// let filter = client.ribbon(hour, Some(0.001)).await?;
    /// assert!(filter.fpp() <= 0.001);
    /// let maybe_changed = filter.contains_id("flickr:12345");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] 406 for the open hour (it has no compact form yet), 400
    /// for an `fpp` out of range, as [`Client::filter`] otherwise; a body that is not a
    /// ribbon is a protocol error.
    pub async fn ribbon(&self, hour: Hour, fpp: Option<f64>) -> Result<Arc<Ribbon>> {
        if let Some(held) = fpp.and_then(|p| self.ribbons.get(hour).filter(|r| r.fpp() <= p)) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(held);
        }
        let mut path = format!("{}.ribbon", hour.path());
        if let Some(p) = fpp {
            path.push_str(&format!("?fpp={p:e}"));
        }
        let response = check(self.send(self.get(&path)).await?).await?;
        let headers = response.headers().clone();
        let body = self.body(response, None).await?;
        // Signed over the binary body (the JSON form's hex decodes to it), verified before
        // it is parsed or kept: a tampered or unsigned ribbon is never held.
        let json = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !json {
            self.check_form(BodyForm::Ribbon, hour, &path, &headers, &body)
                .await?;
        }
        let (_, ribbon) = crate::wire::decode_compact(&body)
            .map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
        if json {
            self.check_form(BodyForm::Ribbon, hour, &path, &headers, &ribbon.to_bytes())
                .await?;
        }
        self.counters.ribbons.fetch_add(1, Ordering::Relaxed);
        let ribbon = Arc::new(ribbon);
        self.ribbons.put(hour, Arc::clone(&ribbon));
        Ok(ribbon)
    }
}

impl Client {
    /// Fetches a closed hour as a version 2 ribbon (`.ribbon2`, PROTOCOL.md section 12):
    /// at `fpp` or at most it (the server serves the next stricter grade of its published
    /// set, `ribbon_grades` in `GET /`, within 1.05x of that grade's floor; `fpp` is sent
    /// in the server's canonical spelling, shortest scientific), or at the server's target. One of the hour at least as
    /// precise, fetched before by this client, is answered without a request. A static
    /// mirror (section 13) ignores `fpp`: the filter's own [`Ribbon2::fpp`] is the one
    /// served.
    ///
    /// # Errors
    /// [`ClientError::Status`] 406 for the open hour, 404 from a server without version
    /// 2, 400 for an `fpp` out of range; a body that is not version 2 is a protocol error.
    pub async fn ribbon2(&self, hour: Hour, fpp: Option<f64>) -> Result<Arc<Ribbon2>> {
        if let Some(held) = fpp.and_then(|p| self.ribbons2.get(hour).filter(|r| r.fpp() <= p)) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(held);
        }
        let mut path = format!("{}.ribbon2", hour.path());
        if let Some(p) = fpp {
            path.push_str(&format!("?fpp={p:e}"));
        }
        let response = check(self.send(self.get(&path)).await?).await?;
        let headers = response.headers().clone();
        let body = self.body(response, None).await?;
        // Verified before it is parsed or kept.
        self.check_form(BodyForm::Ribbon2, hour, &path, &headers, &body)
            .await?;
        let ribbon = Ribbon2::from_bytes(&body)
            .map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
        self.counters.ribbons.fetch_add(1, Ordering::Relaxed);
        self.counters.ribbons2.fetch_add(1, Ordering::Relaxed);
        let ribbon = Arc::new(ribbon);
        self.ribbons2.put(hour, Arc::clone(&ribbon));
        Ok(ribbon)
    }
}

impl Client {
    /// The closed hours from `since` as one version 2 ribbon (`/since/...ribbon2`,
    /// PROTOCOL.md section 12, "Catching up") at `fpp` or under (or the server's target),
    /// and the newest hour it covers (its `Bloom-To`, or `Bloom-Hour` when it covers one
    /// hour): the open hour is not in it, and is read on its own. Unsigned (a union), so
    /// never read by a verifying client; what it holds changes once an hour, so it is not
    /// kept.
    ///
    /// # Errors
    /// [`ClientError::Status`] 406 for a `since` at the open hour, or from a server that
    /// serves no version 2 since-range; a body that is not version 2, or a response that
    /// names no hour it covers, is a protocol error.
    pub async fn since_ribbon2(&self, since: Hour, fpp: Option<f64>) -> Result<(Ribbon2, Hour)> {
        let mut path = format!("/since{}.ribbon2", since.path());
        if let Some(p) = fpp {
            path.push_str(&format!("?fpp={p:e}"));
        }
        let response = check(self.send(self.get(&path)).await?).await?;
        let header = |name: &str| header_hour(response.headers(), name);
        let to = header(crate::wire::HEADER_TO)
            .or_else(|| header(crate::wire::HEADER_HOUR))
            .ok_or_else(|| {
                ClientError::Protocol(format!("{path}: no Bloom-To or Bloom-Hour header"))
            })?;
        let body = self.body(response, None).await?;
        let ribbon = Ribbon2::from_bytes(&body)
            .map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
        self.counters.ribbons.fetch_add(1, Ordering::Relaxed);
        self.counters.ribbons2.fetch_add(1, Ordering::Relaxed);
        Ok((ribbon, to))
    }

    /// With a key, verifies a derived `form` of the sealed `hour` (its binary `body`,
    /// fetched from `path` with `headers`): its `Bloom-Signature` (else the one line of
    /// its `.sig` sidecar, on a static mirror) over the form's domain, the hour's index,
    /// its verified chain header and the body's SHA-256, by the key listed for the hour.
    ///
    /// # Errors
    /// [`ClientError::Unsigned`] without a signature; [`ClientError::Unverified`] naming
    /// the hour when it does not verify.
    pub(crate) async fn check_form(
        &self,
        form: BodyForm,
        hour: Hour,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<()> {
        let Some(keys) = self.keys(Some(hour)).await? else {
            return Ok(());
        };
        let label = match form {
            BodyForm::Exact => "its exact body",
            BodyForm::Ribbon => "its ribbon (.ribbon)",
            BodyForm::Ribbon2 => "its version 2 ribbon (.ribbon2)",
            BodyForm::Page => "a page of its paged form (.pages)",
        };
        let value = match headers
            .get(chain::HEADER_SIGNATURE)
            .and_then(|v| v.to_str().ok())
        {
            Some(v) => v.to_owned(),
            None => self
                .sidecar(path)
                .await?
                .ok_or(ClientError::Unsigned { hour, form: label })?,
        };
        let name = hour.rfc3339();
        let field = SignatureField::parse(&value).ok_or_else(|| {
            super::verify::malformed(
                &name,
                format!("{label}: its Bloom-Signature is not 128 hex digits with an optional keyid=\"16 hex digits\""),
            )
        })?;
        let header = self.chain_header(hour).await?;
        let key = keys.key_for(hour, field.key_id)?;
        key.verify_body(
            form,
            &format!("{name} ({label})"),
            hour.index(),
            &header,
            body,
            &field.signature,
        )?;
        Ok(())
    }

    /// The one line of the `.sig` sidecar of the form at `path` (a static mirror's,
    /// PROTOCOL.md section 13), `None` when there is none.
    async fn sidecar(&self, path: &str) -> Result<Option<String>> {
        let bare = path.split('?').next().unwrap_or(path);
        let response = match check(self.send(self.get(&format!("{bare}.sig"))).await?).await {
            Ok(response) => response,
            Err(ClientError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let body = self.body(response, None).await?;
        let text = String::from_utf8_lossy(&body);
        Ok(text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_owned))
    }
}

/// Ribbons by hour index, and the hours in insertion order for eviction.
type Held<T> = (HashMap<i64, Arc<T>>, VecDeque<i64>);

/// A filter of a precision: what the cache keeps the best of.
pub(crate) trait Precise {
    fn fpp(&self) -> f64;
}

impl Precise for Ribbon {
    fn fpp(&self) -> f64 {
        Ribbon::fpp(self)
    }
}

impl Precise for Ribbon2 {
    fn fpp(&self) -> f64 {
        Ribbon2::fpp(self)
    }
}

/// The most precise ribbon (of one version) held per hour, bounded like the validator
/// cache (the oldest hour goes first).
#[derive(Debug)]
pub(crate) struct RibbonCache<T = Ribbon> {
    inner: Mutex<Held<T>>,
    capacity: usize,
}

impl<T: Precise> RibbonCache<T> {
    pub(crate) fn new(capacity: usize) -> RibbonCache<T> {
        RibbonCache {
            inner: Mutex::default(),
            capacity,
        }
    }

    pub(crate) fn get(&self, hour: Hour) -> Option<Arc<T>> {
        self.lock().0.get(&hour.index()).cloned()
    }

    /// Keeps `ribbon` unless a more precise one of the hour is held.
    pub(crate) fn put(&self, hour: Hour, ribbon: Arc<T>) {
        if self.capacity == 0 {
            return;
        }
        let mut guard = self.lock();
        let (map, order) = &mut *guard;
        match map.get(&hour.index()) {
            Some(held) if held.fpp() <= ribbon.fpp() => return,
            Some(_) => {}
            None => order.push_back(hour.index()),
        }
        map.insert(hour.index(), ribbon);
        while map.len() > self.capacity {
            match order.pop_front() {
                Some(oldest) => map.remove(&oldest),
                None => break,
            };
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held<T>> {
        crate::sync::lock(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Key;

    fn ribbon(r: u32) -> Arc<Ribbon> {
        Arc::new(Ribbon::build(&[Key::of("a")], r).unwrap())
    }

    fn hour(i: i64) -> Hour {
        Hour::from_index(i)
    }

    #[test]
    fn the_most_precise_ribbon_of_an_hour_is_kept() {
        let cache = RibbonCache::new(4);
        cache.put(hour(1), ribbon(10));
        cache.put(hour(1), ribbon(7));
        assert_eq!(cache.get(hour(1)).unwrap().r(), 10);
        cache.put(hour(1), ribbon(20));
        assert_eq!(cache.get(hour(1)).unwrap().r(), 20);
    }

    #[test]
    fn the_oldest_hour_goes_first_when_full() {
        let cache = RibbonCache::new(2);
        for i in 0..3 {
            cache.put(hour(i), ribbon(7));
        }
        assert!(cache.get(hour(0)).is_none());
        assert!(cache.get(hour(1)).is_some() && cache.get(hour(2)).is_some());
    }
}
