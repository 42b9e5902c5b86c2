//! What the chain vouches for. A sealed hour's filter, verified against its chain link,
//! is the authority for everything derived from the hour:
//!
//! - the keys a ribbon, an exact body or a union is built from are checked against it:
//!   the filter they make at the sealed shape must be the sealed bytes (a key swapped,
//!   added or lost changes them), so keys the chain does not vouch for are damage, and
//!   nothing is built from them. The digest of the keys is recorded when the filter is
//!   built from them at the seal (`FormName::Keys`; else once they are first vouched
//!   for), and a read of the same keys is checked against it instead of rebuilding the
//!   filter (keys with no record, or that differ from it, are rebuilt and checked);
//! - every derived body is checked before it is first served or signed: it answers
//!   "yes" for every key it was built from ([`answers_every`]), and an exact body "no"
//!   for every other key of its universe;
//! - and its digest is recorded the first time ([`crate::store::FormRecord`]): a later
//!   build of the same range and form whose bytes differ is refused as corrupt, never
//!   served under a URL that promised other bytes.

use super::{Result, Service, ServiceError};
use crate::bloom::{Filter, Key, KeyParts, Pages, Params};
use crate::chain::{self, BodyForm, SignatureField};
use crate::hour::Hour;
use crate::render::{ChainPlace, Rendered, Repr};
use crate::store::{FormName, FormRecord, StoreError};

/// Filters this large (bits) are rebuilt off the runtime to check keys against them.
const OFF_RUNTIME_BITS: u32 = 1 << 19;

/// Keys this many (512 KiB of them) are hashed off the runtime.
const OFF_RUNTIME_KEYS: usize = 1 << 16;

impl Service {
    /// The distinct keys of a closed hour, vouched for by its sealed filter when it is
    /// sealed (an hour not sealed yet is read from its batches, checked against its
    /// batch record, as sealing reads it).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] (recorded, naming the hour) when the keys are not the
    /// ones its sealed filter was built from; store failures.
    pub(super) async fn vouched_keys(&self, hour: Hour) -> Result<Vec<Key>> {
        let keys = self.closed_keys(hour).await?;
        let verdict = match self.store.sealed(hour).await {
            Ok(Some(sealed)) => {
                let params = Params::new(sealed.m.into(), sealed.k.into())?;
                // A record that cannot be read now only costs the rebuild.
                let recorded = self
                    .store
                    .form_digest(hour, hour, FormName::Keys)
                    .await
                    .inspect_err(
                        |e| tracing::debug!(%hour, error = %e, "no digest of vouched keys read"),
                    )
                    .unwrap_or(None);
                let (keys, vouched) =
                    vouch_by_filter(keys, params, sealed.filter, recorded).await?;
                if let Vouched::Rebuilt(digest) = vouched {
                    self.record_vouched(hour, digest).await;
                }
                let vouched = !matches!(vouched, Vouched::Not);
                (keys, vouched.then_some(()).ok_or("its sealed filter"))
            }
            Ok(None) => return Ok(keys),
            // The sealed row itself is damaged: the keys are checked against the chain
            // link, through the filter they make at the hour's shape; without a link
            // nothing vouches for them (nor for the hour).
            Err(e @ StoreError::Corrupt(_)) => {
                let link = self.store.last_link(hour.next()).await?;
                let Some(link) = link.filter(|l| l.hour == hour) else {
                    return Err(self.corrupt(hour, e));
                };
                let (keys, filter) = self.build(hour, keys).await?;
                let same = chain::digest(&filter.to_bytes()) == link.digest;
                (keys, same.then_some(()).ok_or("its chain link"))
            }
            Err(e) => return Err(e.into()),
        };
        match verdict {
            (keys, Ok(())) => Ok(keys),
            (keys, Err(authority)) => {
                let e = StoreError::Corrupt(format!(
                    "the stored keys of hour {hour} ({} keys) are not the ones {authority} was \
                     built from: they were damaged, so no form is built from them (the hour's \
                     own filter is served as sealed)",
                    keys.len()
                ));
                self.note_corrupt(hour, &e);
                Err(ServiceError::Corrupt {
                    hour,
                    keys_only: true,
                    source: e,
                })
            }
        }
    }

    /// Records the digest of `keys`, those `hour`'s sealed filter was just built from and
    /// stored with, as [`Service::vouched_keys`] would after rebuilding the filter: the
    /// first read of them after the seal is then checked against it too.
    pub(super) async fn record_sealed_keys(&self, hour: Hour, keys: Vec<Key>) {
        let digest = if keys.len() < OFF_RUNTIME_KEYS {
            keys_digest(&keys)
        } else {
            match tokio::task::spawn_blocking(move || keys_digest(&keys)).await {
                Ok(digest) => digest,
                Err(_) => return,
            }
        };
        self.record_vouched(hour, digest).await;
    }

    /// Records `digest` as that of `hour`'s keys, just vouched for by their sealed
    /// filter: the next read of the keys is then checked against it instead of rebuilding
    /// the filter again. A record that cannot be written now is left for the next read
    /// to make.
    async fn record_vouched(&self, hour: Hour, digest: chain::Hash) {
        let record = FormRecord {
            from: hour,
            to: hour,
            form: FormName::Keys,
            digest,
        };
        match self.store.record_form(&record).await {
            // The first record stays: one that names other keys than those the sealed
            // filter vouches for was damaged, and every read rebuilds the filter.
            Ok(stored) if stored != digest => tracing::warn!(
                %hour,
                recorded = %chain::hex(&stored),
                vouched = %chain::hex(&digest),
                "the recorded digest of an hour's keys is not that of the keys its sealed \
                 filter vouches for; the keys are checked against the filter on every read"
            ),
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(%hour, error = %e, "the digest of vouched keys was not recorded")
            }
        }
    }

    /// Checks a body whose SHA-256 is `digest`, the `form` of `from..=to`, against the
    /// record of what that form's bytes are, recording it when there is none (its first
    /// build, on any node).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] (recorded) when a record holds other bytes: the body is
    /// never served or signed. Store failures (the record cannot be written now).
    pub(super) async fn vouch_form(
        &self,
        from: Hour,
        to: Hour,
        form: FormName,
        digest: &chain::Hash,
    ) -> Result<()> {
        let digest = *digest;
        let record = FormRecord {
            from,
            to,
            form,
            digest,
        };
        let stored = self.note_write(self.store.record_form(&record).await)?;
        if stored == digest {
            return Ok(());
        }
        let range = if from == to {
            format!("hour {from}")
        } else {
            format!("{from}..{to}")
        };
        let e = StoreError::Corrupt(format!(
            "the {form} form of {range} built now (SHA-256 {}) is not the one first served \
             (recorded {}): its keys changed since, or were damaged; it is not served",
            chain::hex(&digest),
            chain::hex(&stored)
        ));
        Err(self.corrupt(from, e))
    }
}

impl Service {
    /// A derived body's place in the chain: the hour's previous header, and a signature
    /// over the form's message (docs/PROTOCOL.md section 11, "Derived forms") when this
    /// node holds the key listed for the hour. Called only with a body checked and
    /// recorded ([`Service::vouch_form`]): nothing else is signed.
    pub(super) async fn body_chain_place(
        &self,
        hour: Hour,
        form: BodyForm,
        bin: &Rendered,
        place: ChainPlace,
        body: &[u8],
    ) -> Result<ChainPlace> {
        let header = chain::header(&bin.sha256, &place.prev);
        let signature = self
            .hour_signer(hour, &place)
            .await?
            .map(|signer| SignatureField {
                signature: signer.sign_body(form, hour.index(), &header, body),
                key_id: Some(signer.public_key().id()),
            });
        Ok(ChainPlace {
            prev: place.prev,
            signature,
        })
    }

    /// How this node signs `hour`'s pages: with the hour's chain header and its key,
    /// when the hour is linked and signed and its listed key is this node's (as
    /// [`Service::body_chain_place`] signs a body); `None` otherwise (the pages are
    /// served unsigned, and not kept by caches).
    pub(super) async fn page_signing(&self, hour: Hour) -> Result<Option<PageSigning>> {
        if self.tuning.signer.is_none() {
            return Ok(None);
        }
        let (bin, _) = self.closed_view(hour, Repr::Bin).await?;
        let Some(place) = bin.chain else {
            return Ok(None);
        };
        Ok(self
            .hour_signer(hour, &place)
            .await?
            .map(|signer| PageSigning {
                header: chain::header(&bin.sha256, &place.prev),
                signer: signer.clone(),
            }))
    }

    /// This node's key, when it signs `hour`'s derived forms: the hour is signed in the
    /// chain (`place`) and the key listed for it is this node's.
    async fn hour_signer(&self, hour: Hour, place: &ChainPlace) -> Result<Option<&chain::Signer>> {
        let Some(signer) = self
            .tuning
            .signer
            .as_ref()
            .filter(|_| place.signature.is_some())
        else {
            return Ok(None);
        };
        let list = self.signing().key_list().await?;
        let ours = signer.public_key();
        Ok((list.for_hour(hour).map(|k| k.public_key) == Some(ours)).then_some(signer))
    }

    /// `result`, recording `hour` as corrupt when its data failed verification (a body
    /// that fails its checks is found where it is built, off the runtime).
    pub(super) fn noting_corrupt<T>(&self, hour: Hour, result: Result<T>) -> Result<T> {
        match result {
            Err(ServiceError::Store(e @ StoreError::Corrupt(_))) => Err(self.corrupt(hour, e)),
            other => other,
        }
    }
}

/// The working memory of vouching for one sealed hour of `count` keys at target `p`:
/// its sealed filter as read and the filter its keys make beside it. Hours are vouched
/// for one at a time, so a build over several reserves this for the largest.
pub(super) fn vouching_bytes(count: u64, p: f64) -> u64 {
    if count == 0 {
        return 0;
    }
    let filter = Params::optimal(count, p).map_or(1 << 29, |s| u64::from(s.m).div_ceil(8));
    2 * filter
}

/// What a build holds while it reads its keys: those `runs` hold, and an hour's being
/// vouched for (of at most `largest` keys, at target `p`).
pub(super) fn reading_bytes(runs: &super::unions::runs::Runs, largest: u64, p: f64) -> u64 {
    runs.held_bytes() + vouching_bytes(largest, p)
}

/// How a sealed hour's keys were vouched for by its filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vouched {
    /// They are the keys vouched for before: their digest is the one recorded then.
    Recorded,
    /// The filter they make at the sealed shape is the sealed bytes; their digest.
    Rebuilt(chain::Hash),
    /// They make another filter: they are not the keys it was built from.
    Not,
}

/// Whether `keys` are those the `sealed` filter (of `params`) was built from: the keys
/// whose digest was `recorded` once vouched for, else the filter they make is the sealed
/// bytes; off the runtime when large, the keys back with the verdict. Hashing the keys
/// costs about half of rebuilding the filter (docs/BENCHMARKS.md, "Builds").
async fn vouch_by_filter(
    keys: Vec<Key>,
    params: Params,
    sealed: Vec<u8>,
    recorded: Option<chain::Hash>,
) -> Result<(Vec<Key>, Vouched)> {
    let check = move || {
        let digest = keys_digest(&keys);
        let vouched = if recorded == Some(digest) {
            Vouched::Recorded
        } else if Filter::from_keys(params, &keys).to_bytes() == sealed {
            Vouched::Rebuilt(digest)
        } else {
            Vouched::Not
        };
        (keys, vouched)
    };
    if params.m < OFF_RUNTIME_BITS {
        return Ok(check());
    }
    Ok(tokio::task::spawn_blocking(check).await?)
}

/// The SHA-256 of `keys` as the store holds them (8 bytes each, in order).
fn keys_digest(keys: &[Key]) -> chain::Hash {
    use sha2::Digest as _;
    let mut sha = sha2::Sha256::new();
    for chunk in keys.chunks(1024) {
        let mut bytes = [0u8; 8 * 1024];
        for (to, key) in bytes.chunks_exact_mut(8).zip(chunk) {
            to.copy_from_slice(&key.to_bytes());
        }
        sha.update(&bytes[..8 * chunk.len()]);
    }
    sha.finalize().into()
}

/// Whether `contains` answers "yes" for every one of `keys`: what a body built from
/// them must do before it is served (no false negative, ever).
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` and how many keys it misses.
pub(super) fn answers_every(
    what: &str,
    keys: &[Key],
    contains: impl Fn(Key) -> bool,
) -> std::result::Result<(), StoreError> {
    let missed = keys.iter().filter(|&&k| !contains(k)).count();
    answered(what, keys.len() as u64, missed as u64)
}

/// [`answers_every`] over keys handed over part by part (a union read from a file).
///
/// # Errors
/// As [`answers_every`]; `Spill` when a part cannot be read.
pub(super) fn answers_every_part(
    what: &str,
    parts: &mut impl KeyParts<Error = std::io::Error>,
    contains: impl Fn(Key) -> bool,
) -> super::Result<()> {
    answers_every_set(what, parts, |set| {
        set.iter().filter(|&&key| !contains(key)).count() as u64
    })
}

/// [`answers_every_part`] with a check of a whole key set at a time, `missing` saying
/// how many of the set answer "no" (for a body that answers best in its own order).
///
/// # Errors
/// As [`answers_every_part`].
pub(super) fn answers_every_set(
    what: &str,
    parts: &mut impl KeyParts<Error = std::io::Error>,
    missing: impl Fn(&[Key]) -> u64,
) -> super::Result<()> {
    let (mut checked, mut missed) = (0u64, 0u64);
    parts
        .for_each_part(&mut |part| {
            for set in part {
                checked += set.len() as u64;
                missed += missing(set);
            }
        })
        .map_err(ServiceError::Spill)?;
    Ok(answered(what, checked, missed)?)
}

/// `Corrupt` when a body built from `checked` keys answers "no" for `missed` of them.
fn answered(what: &str, checked: u64, missed: u64) -> std::result::Result<(), StoreError> {
    if missed == 0 {
        return Ok(());
    }
    Err(StoreError::Corrupt(format!(
        "{what} built from {checked} keys answers \"no\" for {missed} of them: it is not served"
    )))
}

/// What signs an hour's pages: its chain header and the key listed for it.
pub(super) struct PageSigning {
    header: chain::Hash,
    signer: chain::Signer,
}

impl PageSigning {
    /// Signs every page of `pages` (of the hour this was made for).
    pub(super) fn sign(&self, pages: &mut Pages) {
        let (header, index) = (self.header, pages.header().hour);
        let key_id = self.signer.public_key().id().0;
        pages.sign(header, key_id, |page| {
            (self.signer).sign_body(BodyForm::Page, index, &header, page)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("id-{i}"))).collect()
    }

    #[test]
    fn a_body_that_misses_a_key_it_was_built_from_is_refused() {
        let ks = keys(50);
        let filter = Filter::sized_within(&ks, 0.01).unwrap();
        assert!(answers_every("x", &ks, |k| filter.contains_key(k)).is_ok());
        let missing = ks[7];
        let e = answers_every("the body", &ks, |k| k != missing).unwrap_err();
        assert!(e.to_string().contains("1 of them"), "{e}");
    }

    #[tokio::test]
    async fn keys_are_vouched_for_only_when_they_are_the_sealed_keys() {
        let ks = keys(1000);
        let sealed = Filter::sized_within(&ks, 0.01).unwrap();
        let (params, bytes) = (sealed.params(), sealed.to_bytes());
        let vouch =
            |keys: Vec<Key>, recorded| vouch_by_filter(keys, params, bytes.clone(), recorded);
        let digest = keys_digest(&ks);
        let mut swapped = ks.clone();
        swapped[3] = Key::of("not one of them");

        // First read: no record, the filter is rebuilt; the keys' digest comes back.
        let (_, v) = vouch(ks.clone(), None).await.unwrap();
        assert_eq!(v, Vouched::Rebuilt(digest));
        assert_eq!(
            vouch(swapped.clone(), None).await.unwrap().1,
            Vouched::Not,
            "a swapped key changes the bits"
        );
        assert_eq!(
            vouch(ks[1..].to_vec(), None).await.unwrap().1,
            Vouched::Not,
            "a lost key changes the bits"
        );

        // Later reads: the same keys match the record; other keys are rebuilt and fail.
        assert_eq!(
            vouch(ks.clone(), Some(digest)).await.unwrap().1,
            Vouched::Recorded
        );
        assert_eq!(vouch(swapped, Some(digest)).await.unwrap().1, Vouched::Not);
        let mut reordered = ks.clone();
        reordered.swap(0, 1);
        assert_ne!(
            keys_digest(&reordered),
            digest,
            "the digest is of the keys in order"
        );
        // A damaged record is no authority: the filter still vouches for the keys.
        let (_, v) = vouch(ks.clone(), Some([7; 32])).await.unwrap();
        assert_eq!(v, Vouched::Rebuilt(digest));
    }
}
