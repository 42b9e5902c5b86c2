//! The exact form of a sealed hour (PROTOCOL.md section 14): for every ID of the
//! publisher's universe, whether it changed, with no false positive. Checked against the
//! response's `Repr-Digest`, `Bloom-Count` and `Bloom-Universe`, verified (when the client
//! verifies) under the hour's chain header, and kept once fetched (a sealed hour's body
//! never changes).

use super::fetch::{check, header_hour};
use super::{Client, ClientError, Result};
use crate::chain::{self, Claim, Hash};
use crate::exact::Exact;
use crate::hour::Hour;
use reqwest::header::{HeaderMap, ACCEPT};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The content type of an exact body.
pub const EXACT_TYPE: &str = "application/vnd.bloomcast.exact";
/// The response header naming the universe's size, `N`.
pub const HEADER_UNIVERSE: &str = "bloom-universe";

impl Client {
    /// Fetches a sealed hour's exact body (`/YYYY/MM/DD/HH.exact`): it answers
    /// [`Exact::changed_id`] exactly for every ID of the publisher's universe as it stood
    /// when the hour was sealed (for any other ID the answer is arbitrary). `None` when the
    /// server has no exact body for the hour (404: no universe, an hour before the index's
    /// `exact_since`, a future hour). A body held already is answered without a request.
    ///
    /// The body is checked against `Repr-Digest`, `Bloom-Count` and `Bloom-Universe`;
    /// a verifying client ([`super::ClientBuilder::pubkey`]) also verifies its signature
    /// under the hour's chain header: the v1 hour's when this client verified it, else
    /// its chain entry's (`/chain/YYYY/MM/DD/HH?limit=1`, verified first).
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast_client::Client) -> Result<(), bloomcast_client::ClientError> {
    /// let hour = bloomcast_client::hour::Hour::parse_flexible("2008-09-03T13").unwrap();
    /// if let Some(exact) = client.exact(hour).await? {
    ///     let changed = exact.changed_id("user:42"); // no false positive
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] 406 for the open hour (its exact body is built when it is
    /// sealed), 410 past retention; [`ClientError::Protocol`] for a body that is not an
    /// exact body or disagrees with its headers; [`ClientError::Unverified`] for one whose
    /// signature does not verify; transport errors.
    pub async fn exact(&self, hour: Hour) -> Result<Option<Arc<Exact>>> {
        if let Some(held) = self.exacts.get(hour) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(held));
        }
        let path = format!("{}.exact", hour.path());
        let request = self.get(&path).header(ACCEPT, EXACT_TYPE);
        let response = match check(self.send(request).await?).await {
            Ok(response) => response,
            Err(ClientError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let headers = response.headers().clone();
        let body = self.body(response, None).await?;
        // Before it is parsed or kept: a tampered body is refused, never held.
        self.check_form(chain::BodyForm::Exact, hour, &path, &headers, &body)
            .await?;
        let exact = decode_checked(&path, &headers, &body)?;
        self.counters.exacts.fetch_add(1, Ordering::Relaxed);
        let exact = Arc::new(exact);
        self.exacts.put(hour, Arc::clone(&exact));
        Ok(Some(exact))
    }

    /// Fetches the exact body of the sealed hours from `since` through the hour before
    /// the server's open one (`/since/YYYY/MM/DD/HH.exact`, PROTOCOL.md section 14,
    /// "Ranges"), and the last hour it covers (its `Bloom-To`): an ID of the universe as
    /// it stood when that hour was sealed is [`Exact::changed_id`] exactly when it
    /// changed in any of them. The open hour is read on its own. Checked against its
    /// headers as an hour's; unsigned (unions are), so a verifying client does not read it.
    ///
    /// ```no_run
    /// # async fn demo(client: bloomcast_client::Client) -> Result<(), bloomcast_client::ClientError> {
    /// let since = bloomcast_client::hour::Hour::parse_flexible("2008-09-02T13").unwrap();
    /// let (exact, to) = client.since_exact(since).await?;
    /// let changed = exact.changed_id("user:42"); // in some hour from `since` to `to`
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] 404 from a server without a universe, for a range starting
    /// before the index's `exact_since`, or from one that serves no exact ranges; 406 for
    /// a since-range from the open hour; [`ClientError::Protocol`] for a body that is not
    /// an exact body, disagrees with its headers, or does not start at `since`; transport
    /// errors.
    pub async fn since_exact(&self, since: Hour) -> Result<(Exact, Hour)> {
        let path = format!("/since{}.exact", since.path());
        let request = self.get(&path).header(ACCEPT, EXACT_TYPE);
        let response = check(self.send(request).await?).await?;
        let headers = response.headers().clone();
        let hour = |name: &str| header_hour(&headers, name);
        let (from, to) = match (hour(crate::wire::HEADER_FROM), hour(crate::wire::HEADER_TO)) {
            (Some(from), Some(to)) => (from, to),
            _ => match hour(crate::wire::HEADER_HOUR) {
                Some(one) => (one, one),
                None => {
                    return Err(ClientError::Protocol(format!(
                        "{path}: no Bloom-From and Bloom-To headers"
                    )))
                }
            },
        };
        if from != since || to < since {
            return Err(ClientError::Protocol(format!(
                "{path}: covers {from}..{to}, not a range from {since}"
            )));
        }
        let body = self.body(response, None).await?;
        let exact = decode_checked(&path, &headers, &body)?;
        self.counters.exacts.fetch_add(1, Ordering::Relaxed);
        Ok((exact, to))
    }

    /// The chain header of a sealed hour: the one this client verified with the v1 hour,
    /// else its chain entry's, whose signature and link are verified (and linked with
    /// the neighbouring hours verified before) first.
    pub(crate) async fn chain_header(&self, hour: Hour) -> Result<Hash> {
        if let Some((_, header)) = crate::sync::lock(&self.verified).get(&hour.index()) {
            return Ok(*header);
        }
        let name = hour.rfc3339();
        let entry = self.chain_entry(hour).await?.ok_or_else(|| {
            super::verify::malformed(
                &name,
                "the chain lists no entry for it, so its exact body cannot be verified",
            )
        })?;
        let signature = entry
            .signature
            .ok_or_else(|| super::verify::malformed(&name, "the chain entry is not signed"))?;
        let keys = self.keys(Some(hour)).await?.ok_or_else(|| {
            super::verify::malformed(&name, "the server no longer publishes its keys")
        })?;
        let key = keys.key_for(hour, entry.key_id)?;
        let claim = Claim {
            hour: name.clone(),
            index: hour.index(),
            digest: entry.digest,
            prev: entry.prev,
            signature,
        };
        let header = self.link_verified(&claim, &key, hour)?;
        if header != entry.header {
            return Err(super::verify::malformed(
                &name,
                "the listed header is not SHA-256(digest || prev)",
            ));
        }
        self.note_verified(hour).await;
        Ok(header)
    }
}

/// Decodes an exact body and checks it against the headers that came with it.
pub(crate) fn decode_checked(path: &str, headers: &HeaderMap, body: &[u8]) -> Result<Exact> {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(sent) = header(chain::HEADER_REPR_DIGEST) {
        let got = chain::repr_digest(body);
        if sent != got {
            return Err(ClientError::Protocol(format!(
                "{path}: Repr-Digest says {sent}, the body is {got}"
            )));
        }
    }
    let exact = Exact::from_bytes(body)
        .map_err(|e| ClientError::Protocol(format!("{path}: not an exact body: {e}")))?;
    for (name, value) in [
        (crate::wire::HEADER_COUNT, exact.changed_count()),
        (HEADER_UNIVERSE, exact.universe()),
    ] {
        if let Some(sent) = header(name) {
            if sent != value.to_string() {
                return Err(ClientError::Protocol(format!(
                    "{path}: {name} says {sent}, the body {value}"
                )));
            }
        }
    }
    Ok(exact)
}

/// Exact bodies by hour index, and the hours in insertion order for eviction.
type Held = (HashMap<i64, Arc<Exact>>, VecDeque<i64>);

/// The exact bodies held, bounded like the validator cache (the oldest hour goes first).
#[derive(Debug)]
pub(crate) struct ExactCache {
    inner: Mutex<Held>,
    capacity: usize,
}

impl ExactCache {
    pub(crate) fn new(capacity: usize) -> ExactCache {
        ExactCache {
            inner: Mutex::default(),
            capacity,
        }
    }

    pub(crate) fn get(&self, hour: Hour) -> Option<Arc<Exact>> {
        crate::sync::lock(&self.inner).0.get(&hour.index()).cloned()
    }

    pub(crate) fn put(&self, hour: Hour, exact: Arc<Exact>) {
        if self.capacity == 0 {
            return;
        }
        let mut guard = crate::sync::lock(&self.inner);
        let (map, order) = &mut *guard;
        if map.insert(hour.index(), exact).is_none() {
            order.push_back(hour.index());
        }
        while map.len() > self.capacity {
            match order.pop_front() {
                Some(oldest) => map.remove(&oldest),
                None => break,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Key;
    use crate::chain::{ChainError, PublicKey, Signer};

    fn body() -> Vec<u8> {
        let universe: Vec<Key> = (0..500).map(|i| Key::of(&format!("u:{i}"))).collect();
        let changed: Vec<Key> = universe.iter().step_by(50).copied().collect();
        Exact::build(universe, &changed).unwrap().to_bytes()
    }

    fn headers_for(body: &[u8]) -> HeaderMap {
        let exact = Exact::from_bytes(body).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            chain::HEADER_REPR_DIGEST,
            chain::repr_digest(body).parse().unwrap(),
        );
        headers.insert(
            crate::wire::HEADER_COUNT,
            exact.changed_count().to_string().parse().unwrap(),
        );
        headers.insert(
            HEADER_UNIVERSE,
            exact.universe().to_string().parse().unwrap(),
        );
        headers
    }

    #[test]
    fn a_body_that_matches_its_headers_decodes_and_answers_exactly() {
        let body = body();
        let exact = decode_checked("/x.exact", &headers_for(&body), &body).unwrap();
        assert_eq!((exact.universe(), exact.changed_count()), (500, 10));
        for i in 0..500 {
            assert_eq!(exact.changed_id(&format!("u:{i}")), i % 50 == 0, "u:{i}");
        }
    }

    #[test]
    fn a_changed_byte_or_a_lying_header_is_refused() {
        let body = body();
        let headers = headers_for(&body);
        let mut flipped = body.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let err = decode_checked("/x.exact", &headers, &flipped).unwrap_err();
        assert!(err.to_string().contains("Repr-Digest"), "{err}");
        let mut lying = headers.clone();
        lying.insert(HEADER_UNIVERSE, "501".parse().unwrap());
        let err = decode_checked("/x.exact", &lying, &body).unwrap_err();
        assert!(err.to_string().contains("bloom-universe says 501"), "{err}");
        let mut lying = headers;
        lying.insert(crate::wire::HEADER_COUNT, "9".parse().unwrap());
        assert!(decode_checked("/x.exact", &lying, &body).is_err());
    }

    #[test]
    fn the_signature_binds_the_body_to_its_hour_and_header() {
        let body = body();
        let signer = Signer::from_seed(&[3; 32]);
        let key: PublicKey = signer.public_key();
        let signature = signer.sign_exact(42, &[5; 32], &body);
        assert!(key
            .verify_exact("h", 42, &[5; 32], &body, &signature)
            .is_ok());
        let mut tampered = body.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(matches!(
            key.verify_exact("h", 42, &[5; 32], &tampered, &signature),
            Err(ChainError::Signature { .. })
        ));
    }

    #[test]
    fn the_cache_keeps_the_newest_hours() {
        let cache = ExactCache::new(2);
        let exact = Arc::new(Exact::from_bytes(&body()).unwrap());
        for i in 0..3 {
            cache.put(Hour::from_index(i), Arc::clone(&exact));
        }
        assert!(cache.get(Hour::from_index(0)).is_none());
        assert!(cache.get(Hour::from_index(2)).is_some());
    }
}
