//! Open-hour deltas (RFC 9842, Compression Dictionary Transport): which served versions
//! of the open hour are kept as dictionaries, and the `dcz` bodies made from them. The
//! HTTP layer only says so in headers (`Use-As-Dictionary`, `Content-Encoding: dcz`)
//! and chooses the response.
//!
//! The served body of the open hour is always current (a reader after an acknowledged
//! ingest sees the ID). What is throttled is which versions are *kept*: the first one
//! served for an (hour, representation), then one at most every `open_max_age` seconds
//! or after `delta_ids` new IDs, bounded in bytes (the oldest go first). Only a kept
//! version is offered to clients as a dictionary, so a client's dictionary is one the
//! server holds until it expires. A version of another `m` than the current one is
//! dropped: a filter that grew is sent whole once.
//!
//! Each kept version is also *linked* (`Link: rel="compression-dictionary"`): served at
//! its own URL with a lifetime of its own, so a client polling less often than
//! `open_max_age` still holds it. That lifetime is a promise: a version is kept until
//! `dictionary_max_age` after it was kept (never past the end of its hour), and the byte
//! budget never pushes out a version whose promise still runs. When the budget is full
//! of promised versions, a new version is not kept (its response offers none, and the
//! pollers' deltas are made against the newest kept one) until a promise runs out. Only
//! a filter that grows breaks it: versions of another `m` are no base for a delta.
//!
//! A `dcz` body is the current version compressed against a kept one, made once per
//! (dictionary, current version) and shared by every poller holding that dictionary.
//! It is made on the blocking pool (zstd takes 3-10 ms for a 300k-ID hour, which would
//! stall every connection on an async worker), once: pollers asking for the same delta
//! while it is made wait for that one build.

use crate::dcz;
use crate::hour::Hour;
use crate::render::{Encodings, Rendered, Repr};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;

/// zstd level of a delta: 3 makes deltas as small as 19 here (sparse bit changes
/// against the previous version) at a hundredth of the CPU (docs/BENCHMARKS.md).
const LEVEL: i32 = 3;

/// One open hour's representation: what a dictionary may serve for.
type Resource = (Hour, Repr);
/// A delta: the resource, the dictionary's SHA-256 and the current version's.
type DeltaKey = (Resource, [u8; 32], [u8; 32]);
/// A delta being made, awaited by every request that wants it meanwhile.
type Making = Arc<OnceCell<Option<Bytes>>>;

/// Kept versions and made deltas.
///
/// Lock order: `inner` (a std mutex) is a leaf, held only inside [`Deltas::offer`] and
/// [`Deltas::delta`], never across an await and never while taking another lock. A
/// delta being made is a `OnceCell` taken out of `inner` and awaited after `inner` is
/// released; `inner` is taken again, alone, to record it once made.
pub(in crate::service) struct Deltas {
    budget: usize,
    every_seconds: i64,
    every_ids: u64,
    /// How long a kept version is promised (`dictionary_max_age`), in whole seconds.
    linked_seconds: i64,
    inner: Mutex<Inner>,
}

/// A kept version as served at its own URL: its identity bytes, what they are, and how
/// many more whole seconds the server keeps them.
pub struct Linked {
    pub repr: Repr,
    pub identity: Bytes,
    pub sha256: [u8; 32],
    pub max_age: u64,
}

/// The length of a dictionary id in bytes: the first 80 bits of its SHA-256, the same
/// as the identity ETag's tag (and `Use-As-Dictionary`'s `id`).
pub const ID_BYTES: usize = 10;

#[derive(Default)]
struct Inner {
    /// Oldest first.
    versions: VecDeque<Version>,
    bytes: usize,
    /// `dcz` bodies by (dictionary, current version); cleared when over a quarter of
    /// the budget (they are remade on demand).
    made: FxHashMap<DeltaKey, Bytes>,
    made_bytes: usize,
    /// Deltas being made now.
    making: FxHashMap<DeltaKey, Making>,
}

struct Version {
    resource: Resource,
    sha256: [u8; 32],
    identity: Bytes,
    m: u64,
    count: u64,
    at: DateTime<Utc>,
    /// Kept at least until then (`at` plus the linked lifetime, within the hour).
    until: DateTime<Utc>,
}

impl Deltas {
    /// Keeps at most `budget` bytes of versions; a new one at most `every`
    /// (`open_max_age`, in whole seconds) unless `every_ids` new IDs arrived (0: never);
    /// each for at least `linked` (`dictionary_max_age`) within its hour, the budget
    /// permitting when it is kept (0: no promise, no linked dictionaries).
    pub fn new(budget: usize, every: Duration, every_ids: u64, linked: Duration) -> Deltas {
        Deltas {
            budget,
            every_seconds: every.as_secs().min(3600) as i64,
            every_ids,
            linked_seconds: linked.as_secs().min(3600) as i64,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Whether a version with this identity body's SHA-256 is kept (its body counted
    /// here).
    pub fn keeps(&self, sha256: &[u8; 32]) -> bool {
        self.inner().versions.iter().any(|v| v.sha256 == *sha256)
    }

    /// Bytes held now: the versions kept and the deltas made from them.
    pub fn bytes(&self) -> u64 {
        let inner = self.inner();
        (inner.bytes + inner.made_bytes) as u64
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// Offers a version of the open `hour` served at `now`: whether it is kept as a
    /// dictionary (its response then offers it as one).
    pub fn offer(&self, hour: Hour, r: &Rendered, now: DateTime<Utc>) -> bool {
        if self.budget == 0 || r.identity.len() > self.budget || r.encodings != Encodings::Both {
            return false;
        }
        let resource = (hour, r.repr);
        let mut inner = self.inner();
        let newest = inner.versions.iter().rev().find(|v| v.resource == resource);
        if let Some(v) = newest {
            if v.sha256 == r.sha256 {
                return true;
            }
            let due = (now - v.at).num_seconds() >= self.every_seconds
                || (self.every_ids > 0 && r.count >= v.count + self.every_ids)
                || v.m != r.m;
            if !due {
                return inner.versions.iter().any(|v| v.sha256 == r.sha256);
            }
        }
        // Versions of another `m` can no longer serve this resource; the others go oldest
        // first with the budget, once their promise ran out.
        let inner = &mut *inner;
        let before = inner.versions.len();
        inner
            .versions
            .retain(|v| v.resource != resource || v.m == r.m);
        let need = r.identity.len();
        inner.bytes = inner.versions.iter().map(|v| v.identity.len()).sum();
        while inner.bytes + need > self.budget {
            let Some(i) = inner.versions.iter().position(|v| v.until <= now) else {
                break;
            };
            let old = inner.versions.remove(i).expect("a position");
            inner.bytes -= old.identity.len();
        }
        if inner.versions.len() < before {
            // Some went: no delta made from them may be served any more.
            inner.made.clear();
            inner.made_bytes = 0;
        }
        if inner.bytes + need > self.budget {
            // Every version held is promised: this one is not kept.
            return false;
        }
        let until = (now + chrono::Duration::seconds(self.linked_seconds)).min(hour.end());
        inner.versions.push_back(Version {
            resource,
            sha256: r.sha256,
            identity: r.identity.clone(),
            m: r.m,
            count: r.count,
            at: now,
            until: until.max(now),
        });
        inner.bytes += need;
        true
    }

    /// The SHA-256 of the newest version of the open `hour` in representation `repr`
    /// still promised at `now` (what its responses link to), when it has the filter
    /// size `m` of the current version.
    pub fn linked(&self, hour: Hour, repr: Repr, m: u64, now: DateTime<Utc>) -> Option<[u8; 32]> {
        if self.linked_seconds == 0 {
            return None;
        }
        let inner = self.inner();
        let v = inner
            .versions
            .iter()
            .rev()
            .find(|v| v.resource == (hour, repr))?;
        (v.m == m && v.until > now).then_some(v.sha256)
    }

    /// The kept version of `hour` whose id (the first [`ID_BYTES`] of its SHA-256) is
    /// `id`, while its promise runs at `now`.
    pub fn dictionary(
        &self,
        hour: Hour,
        id: &[u8; ID_BYTES],
        now: DateTime<Utc>,
    ) -> Option<Linked> {
        if self.linked_seconds == 0 {
            return None;
        }
        let inner = self.inner();
        let v = inner
            .versions
            .iter()
            .find(|v| v.resource.0 == hour && v.sha256[..ID_BYTES] == id[..] && v.until > now)?;
        Some(Linked {
            repr: v.resource.1,
            identity: v.identity.clone(),
            sha256: v.sha256,
            max_age: (v.until - now).num_seconds().max(0) as u64,
        })
    }

    /// The current version `r` of the open `hour` as a `dcz` body against the kept
    /// version named `dictionary`; `None` when that version is unknown, expired or of
    /// another filter size (the caller then answers as without a dictionary).
    pub async fn delta(&self, hour: Hour, r: &Rendered, dictionary: &[u8; 32]) -> Option<Bytes> {
        let key = ((hour, r.repr), *dictionary, r.sha256);
        let (making, base) = {
            let mut inner = self.inner();
            if let Some(made) = inner.made.get(&key) {
                return Some(made.clone());
            }
            let base = inner
                .versions
                .iter()
                .find(|v| v.sha256 == *dictionary && v.resource == key.0 && v.m == r.m)?
                .identity
                .clone();
            let making = Arc::clone(inner.making.entry(key).or_default());
            (making, base)
        };
        let (dictionary, current) = (*dictionary, r.identity.clone());
        let body = making
            .get_or_init(|| async move {
                let encode = move || dcz::encode(&base, &dictionary, &current, LEVEL);
                tokio::task::spawn_blocking(encode)
                    .await
                    .ok()
                    .flatten()
                    .map(Bytes::from)
            })
            .await
            .clone();
        let mut inner = self.inner();
        if inner
            .making
            .get(&key)
            .is_some_and(|m| Arc::ptr_eq(m, &making))
        {
            inner.making.remove(&key);
            if let Some(body) = &body {
                if inner.made_bytes + body.len() > self.budget / 4 {
                    inner.made.clear();
                    inner.made_bytes = 0;
                }
                inner.made_bytes += body.len();
                inner.made.insert(key, body.clone());
            }
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;
    use crate::render::{render, Effort};
    use crate::wire::Meta;

    fn version(ids: std::ops::Range<u32>, capacity: u64) -> Rendered {
        let mut f = Filter::with_capacity(capacity, 0.01).unwrap();
        for i in ids.clone() {
            f.insert(&i.to_string());
        }
        let meta = Meta::hour("2026-11-23T13:00:00Z".into(), false, ids.len() as u64);
        render(&meta, &f, Repr::Bin, Effort::Fast)
    }

    fn secs(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_795_000_000 + seconds, 0).unwrap()
    }

    #[tokio::test]
    async fn keeps_versions_by_time_or_new_ids_and_deltas_decode() {
        let hour = Hour::from_index(500_000);
        let deltas = Deltas::new(1 << 20, secs(30), 40, secs(0));
        let v0 = version(0..1000, 3000);
        let v1 = version(0..1010, 3000);
        let v2 = version(0..1050, 3000);
        assert!(deltas.offer(hour, &v0, at(0)));
        assert!(
            deltas.offer(hour, &v0, at(1)),
            "the same version stays kept"
        );
        assert!(
            !deltas.offer(hour, &v1, at(10)),
            "too soon, too few new IDs"
        );
        assert!(deltas.offer(hour, &v2, at(11)), "enough new IDs");
        assert!(deltas.offer(hour, &v1, at(60)), "enough time");
        for (dict, current) in [(&v0, &v2), (&v1, &v2), (&v0, &v1)] {
            let body = deltas.delta(hour, current, &dict.sha256).await.unwrap();
            assert_eq!(
                dcz::decode(&dict.identity, &body).unwrap(),
                current.identity
            );
            assert!(body.len() < current.gzip.len() / 4, "{}", body.len());
        }
        assert!(deltas.delta(hour.next(), &v2, &v0.sha256).await.is_none());
        assert!(deltas.delta(hour, &v2, &[7; 32]).await.is_none());
    }

    #[tokio::test]
    async fn a_resized_filter_or_the_budget_expires_versions() {
        let hour = Hour::from_index(500_000);
        let small = version(0..100, 200);
        let grown = version(0..500, 3000);
        assert_ne!(small.m, grown.m);
        let deltas = Deltas::new(1 << 20, secs(30), 0, secs(0));
        assert!(deltas.offer(hour, &small, at(0)));
        assert!(
            deltas.delta(hour, &grown, &small.sha256).await.is_none(),
            "another m"
        );
        assert!(deltas.offer(hour, &grown, at(1)), "a new m is kept at once");
        assert!(deltas.delta(hour, &grown, &small.sha256).await.is_none());

        let a = version(0..100, 3000);
        let b = version(0..200, 3000);
        let deltas = Deltas::new(a.identity.len() + 1, secs(0), 0, secs(0));
        assert!(deltas.offer(hour, &a, at(0)));
        let c = version(0..150, 3000);
        assert!(deltas.delta(hour, &c, &a.sha256).await.is_some());
        assert!(deltas.offer(hour, &b, at(1)));
        assert!(
            deltas.delta(hour, &c, &a.sha256).await.is_none(),
            "made from an expired one"
        );
        assert!(
            deltas.delta(hour, &b, &a.sha256).await.is_none(),
            "a went for b"
        );
        assert!(
            !Deltas::new(0, secs(0), 0, secs(0)).offer(hour, &a, at(0)),
            "0 turns deltas off"
        );
    }

    #[tokio::test]
    async fn a_linked_version_is_kept_while_promised_and_found_by_its_id() {
        let hour = Hour::from_index(500_000);
        let (a, b, c) = (
            version(0..100, 3000),
            version(0..200, 3000),
            version(0..300, 3000),
        );
        // Room for one version, each promised for 60 seconds.
        let deltas = Deltas::new(a.identity.len() + 1, secs(0), 0, secs(60));
        let id = |r: &Rendered| -> [u8; ID_BYTES] { r.sha256[..ID_BYTES].try_into().unwrap() };
        assert!(deltas.offer(hour, &a, at(0)));
        assert_eq!(deltas.linked(hour, a.repr, a.m, at(1)), Some(a.sha256));
        let linked = deltas.dictionary(hour, &id(&a), at(10)).unwrap();
        assert_eq!((linked.identity, linked.max_age), (a.identity.clone(), 50));
        assert!(deltas.dictionary(hour.next(), &id(&a), at(10)).is_none());
        assert!(deltas.dictionary(hour, &id(&b), at(10)).is_none());

        assert!(
            !deltas.offer(hour, &b, at(30)),
            "a is promised: b is not kept"
        );
        assert!(deltas.delta(hour, &b, &a.sha256).await.is_some());
        assert_eq!(deltas.linked(hour, b.repr, b.m, at(30)), Some(a.sha256));
        assert!(deltas.offer(hour, &c, at(60)), "a's promise ran out");
        assert!(deltas.dictionary(hour, &id(&a), at(60)).is_none());
        assert_eq!(deltas.linked(hour, c.repr, c.m, at(61)), Some(c.sha256));

        // Never past the end of the hour, and nothing is linked without a lifetime.
        let end = hour.end();
        let before_end = |s: i64| end - chrono::Duration::seconds(s);
        let long = Deltas::new(1 << 20, secs(0), 0, secs(600));
        assert!(long.offer(hour, &a, before_end(20)));
        let late = long.dictionary(hour, &id(&a), before_end(5));
        assert_eq!(late.map(|l| l.max_age), Some(5));
        assert!(long.linked(hour, a.repr, a.m, end).is_none());
        let unlinked = Deltas::new(1 << 20, secs(0), 0, secs(0));
        assert!(unlinked.offer(hour, &a, at(0)));
        assert!(unlinked.linked(hour, a.repr, a.m, at(0)).is_none());
        assert!(unlinked.dictionary(hour, &id(&a), at(0)).is_none());
    }

    #[tokio::test]
    async fn pollers_asking_at_once_share_one_delta() {
        let hour = Hour::from_index(500_000);
        let deltas = Deltas::new(1 << 20, secs(30), 0, secs(0));
        let (old, current) = (version(0..1000, 3000), version(0..1100, 3000));
        assert!(deltas.offer(hour, &old, at(0)));
        let (a, b) = tokio::join!(
            deltas.delta(hour, &current, &old.sha256),
            deltas.delta(hour, &current, &old.sha256)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.as_ptr(), b.as_ptr(), "made once, while both waited");
        assert!(deltas.inner().making.is_empty());
        let again = deltas.delta(hour, &current, &old.sha256).await.unwrap();
        assert_eq!(again.as_ptr(), a.as_ptr(), "kept once made");
        assert_eq!(dcz::decode(&old.identity, &a).unwrap(), current.identity);
    }
}
