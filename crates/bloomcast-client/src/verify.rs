//! Verifying what a server (or any mirror or cache in front of it) sends against the
//! publisher's public key: each closed hour's digest, chain link and signature (see
//! [`crate::chain`]), and whole ranges of the chain for `bloomcast verify`.

use super::{Client, ClientError, Fetched, Result};
use crate::chain::{self, ChainError, Claim, Hash, KeyId, PublicKey, SignatureField};
use crate::hour::Hour;
use reqwest::header::HeaderMap;
use serde::Deserialize;

/// What [`Client::verify_chain`] checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// Hours whose chain link, signature and filter bytes verified, oldest first.
    pub hours: Vec<Hour>,
    /// The newest verified header.
    pub header: Option<Hash>,
}

/// One entry of the hour chain (`GET /chain/...`), parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainEntry {
    pub hour: Hour,
    /// SHA-256 of the hour's filter bytes (the `.bin` body).
    pub digest: Hash,
    /// The previous hour's header, or the genesis value after a gap.
    pub prev: Hash,
    /// SHA-256(digest || prev).
    pub header: Hash,
    /// The publisher's signature, when it signs.
    pub signature: Option<[u8; 64]>,
    /// The id of the key that made it (absent from servers before keys rotated: the key
    /// listed for the hour).
    pub key_id: Option<KeyId>,
}

/// One entry of `GET /chain/...` as sent.
#[derive(Debug, Clone, Deserialize)]
struct Entry {
    hour: String,
    digest: String,
    prev: String,
    header: String,
    signature: Option<String>,
    /// Absent from servers before keys rotated: the key listed for the hour.
    #[serde(default)]
    key_id: Option<String>,
}

pub(super) fn malformed(hour: &str, detail: impl Into<String>) -> ClientError {
    ClientError::Unverified(ChainError::Malformed {
        hour: hour.to_owned(),
        detail: detail.into(),
    })
}

impl Client {
    /// Checks a freshly fetched filter from `path` when the client has a public key: a
    /// complete hour must carry a valid signature over its bytes' digest and link up
    /// with the neighbouring hours this client verified before; a version of the open
    /// hour, its `Bloom-Open-Signature` within the freshness bound (unsigned: used, and
    /// listed unverified). Unions are not signed and pass unchecked.
    pub(super) async fn check_signed(
        &self,
        path: &str,
        headers: &HeaderMap,
        fetched: &Fetched,
    ) -> Result<()> {
        let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
        let Ok(hour) = Hour::parse_path(stem) else {
            return Ok(());
        };
        let Some(keys) = self.keys(Some(hour)).await? else {
            return Ok(());
        };
        if !fetched.meta.complete {
            let current = self.current.load(std::sync::atomic::Ordering::Relaxed);
            if hour.index() < current {
                return Err(malformed(
                    &hour.rfc3339(),
                    format!(
                        "served as open (complete: false), but the source's current hour is \
                         {}: a sealed hour is signed as sealed, and an open version cannot \
                         stand for it",
                        Hour::from_index(current).rfc3339()
                    ),
                ));
            }
            // A version of the open hour: signed on its own, with when it was made.
            let value = headers
                .get(chain::HEADER_OPEN_SIGNATURE)
                .and_then(|v| v.to_str().ok());
            let digest = chain::digest(&fetched.filter.bytes());
            return self.check_open(&keys, hour, &digest, value);
        }
        let name = hour.rfc3339();
        let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let (prev, field) = if header(chain::HEADER_PREV).is_none()
            && header(chain::HEADER_SIGNATURE).is_none()
        {
            // A static mirror sends no per-hour headers: the hour's chain entry signs it.
            let entry = self.chain_entry(hour).await?.ok_or_else(|| {
                malformed(
                    &name,
                    "the response carries no chain link and the chain lists no entry for it: not signed",
                )
            })?;
            let signature = entry
                .signature
                .ok_or_else(|| malformed(&name, "the chain entry is not signed"))?;
            let field = SignatureField {
                signature,
                key_id: entry.key_id,
            };
            (entry.prev, field)
        } else {
            let prev = header(chain::HEADER_PREV)
                .and_then(chain::parse_hex::<32>)
                .ok_or_else(|| {
                    malformed(
                        &name,
                        "the response carries no chain link (Bloom-Prev-Header): not signed",
                    )
                })?;
            let field = header(chain::HEADER_SIGNATURE).ok_or_else(|| {
                malformed(&name, "the response carries no Bloom-Signature: not signed")
            })?;
            let field = SignatureField::parse(field).ok_or_else(|| {
                malformed(
                    &name,
                    "its Bloom-Signature is not 128 hex digits with an optional keyid=\"16 hex digits\"",
                )
            })?;
            (prev, field)
        };
        let key = &keys.key_for(hour, field.key_id)?;
        let claim = Claim {
            hour: name.clone(),
            index: hour.index(),
            digest: chain::digest(&fetched.filter.bytes()),
            prev,
            signature: field.signature,
        };
        self.link_verified(&claim, key, hour)?;
        self.note_verified(hour).await;
        Ok(())
    }

    /// Verifies `claim` and links it with the neighbouring hours verified before; returns
    /// its header.
    pub(super) fn link_verified(&self, claim: &Claim, key: &PublicKey, hour: Hour) -> Result<Hash> {
        let mut verified = crate::sync::lock(&self.verified);
        let known_prev = verified.get(&hour.prev().index()).map(|(_, h)| *h);
        let header = claim.verify(key, known_prev.as_ref())?;
        if let Some((next_prev, _)) = verified.get(&hour.next().index()) {
            if *next_prev != header {
                return Err(ClientError::Unverified(ChainError::Link {
                    hour: claim.hour.clone(),
                    detail: "the next hour, verified before, links to another header".into(),
                }));
            }
        }
        verified.insert(hour.index(), (claim.prev, header));
        Ok(header)
    }

    /// The chain from `since` to the newest sealed hour the server lists, oldest first,
    /// page by page; with a public key every entry's header, signature and link to the
    /// one before are verified (an entry after a gap must start from the genesis value).
    ///
    /// A page without `Link: rel="next"` is followed by the page that starts after its
    /// last entry, until one is empty or absent (404): a static mirror (PROTOCOL.md
    /// section 13) holds one-entry pages and sends no `Link` header.
    ///
    /// # Errors
    /// [`ClientError::Unverified`] naming the first entry that fails; transport errors
    /// and error statuses of the first page.
    pub async fn chain(&self, since: Hour) -> Result<Vec<ChainEntry>> {
        // Asked for `since`: a refused key list refuses it, by name.
        let verifying = self.keys(Some(since)).await?.is_some();
        let mut entries: Vec<ChainEntry> = Vec::new();
        let mut path = Some(format!("/chain{}?limit=1000", since.path()));
        let mut last: Option<(Hour, Hash)> = None;
        while let Some(next) = path.take() {
            let (page, link) = match self.chain_page(&next).await {
                Ok(page) => page,
                Err(ClientError::Status { status: 404, .. }) if !entries.is_empty() => break,
                Err(e) => return Err(e),
            };
            let continued = page.last().map(|e| e.hour.clone());
            for e in page {
                let entry = parse_entry(&e)?;
                if verifying {
                    let keys = self.keys(Some(entry.hour)).await?.ok_or_else(|| {
                        malformed(&e.hour, "the server no longer publishes its keys")
                    })?;
                    let key = keys.key_for(entry.hour, entry.key_id)?;
                    last = Some((entry.hour, verify_link(&key, &entry, last)?));
                }
                entries.push(entry);
            }
            path = match (link, continued) {
                (Some(link), _) => Some(link),
                (None, Some(hour)) => {
                    let hour =
                        Hour::parse_flexible(&hour).map_err(|_| malformed(&hour, "not an hour"))?;
                    Some(format!("/chain{}?limit=1000", hour.next().path()))
                }
                (None, None) => None,
            };
        }
        Ok(entries)
    }

    /// Verifies the chain from `since` to the newest sealed hour the server lists
    /// ([`Client::chain`]), then fetches every listed hour's filter and checks it against
    /// its link. Works against any base URL serving bloomcast's paths (a mirror, a CDN,
    /// a static mirror).
    ///
    /// # Errors
    /// [`ClientError::Argument`] without a public key; [`ClientError::Unverified`]
    /// naming the first hour that fails (a changed byte, a missing or swapped hour, a
    /// broken link, another key); transport errors and error statuses.
    pub async fn verify_chain(&self, since: Hour) -> Result<ChainReport> {
        if self.keys(Some(since)).await?.is_none() {
            return Err(ClientError::Argument(
                "verifying needs the publisher's public key (--pubkey)".into(),
            ));
        }
        let entries = self.chain(since).await?;
        let mut report = ChainReport {
            hours: Vec::new(),
            header: entries.last().map(|e| e.header),
        };
        for entry in &entries {
            let fetched = self.hour(entry.hour).await?;
            let digest = chain::digest(&fetched.filter.bytes());
            if digest != entry.digest {
                return Err(ClientError::Unverified(ChainError::Digest {
                    hour: entry.hour.rfc3339(),
                    got: chain::hex(&digest),
                    want: chain::hex(&entry.digest),
                }));
            }
            report.hours.push(entry.hour);
        }
        if let Some(newest) = report.hours.last() {
            self.note_verified(*newest).await;
        }
        Ok(report)
    }

    /// The chain entry of one sealed hour, for a response that carries no signature
    /// headers (a static mirror): the first entry of `/chain/<hour>?limit=1`.
    pub(super) async fn chain_entry(&self, hour: Hour) -> Result<Option<ChainEntry>> {
        let (page, _) = match self
            .chain_page(&format!("/chain{}?limit=1", hour.path()))
            .await
        {
            Ok(page) => page,
            Err(ClientError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        match page.first() {
            Some(e) => {
                let entry = parse_entry(e)?;
                Ok((entry.hour == hour).then_some(entry))
            }
            None => Ok(None),
        }
    }

    /// One page of the chain and the path of the next one (`Link: rel="next"`).
    async fn chain_page(&self, path: &str) -> Result<(Vec<Entry>, Option<String>)> {
        let response = super::fetch::check(self.send(self.get(path)).await?).await?;
        let next = response
            .headers()
            .get(reqwest::header::LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.split(',')
                    .find(|l| l.contains("rel=\"next\""))
                    .and_then(|l| Some(l.split_once('<')?.1.split_once('>')?.0.to_owned()))
            });
        let body = self.body(response, None).await?;
        let page = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("chain page {path}: {e}")))?;
        Ok((page, next))
    }
}

/// The entries of a `/chain/...` page's body (as `GET /chain` or a static mirror's
/// `chain/` file holds it), parsed as [`Client::chain`] reads them: nothing verified yet.
///
/// # Errors
/// [`ClientError::Protocol`] for a body that is no chain page; [`ClientError::Unverified`]
/// naming the hour of an entry whose fields do not parse.
pub fn parse_chain_page(body: &[u8]) -> Result<Vec<ChainEntry>> {
    let page: Vec<Entry> = serde_json::from_slice(body)
        .map_err(|e| ClientError::Protocol(format!("not a chain page ({e})")))?;
    page.iter().map(parse_entry).collect()
}

fn parse_entry(e: &Entry) -> Result<ChainEntry> {
    let hour = Hour::parse_flexible(&e.hour).map_err(|_| malformed(&e.hour, "not an hour"))?;
    let hash = |s: &str, what: &str| {
        chain::parse_hex::<32>(s)
            .ok_or_else(|| malformed(&e.hour, format!("{what} is not 32 bytes of hex")))
    };
    let signature = match e.signature.as_deref() {
        None => None,
        Some(text) => Some(
            chain::parse_hex::<64>(text)
                .ok_or_else(|| malformed(&e.hour, "the signature is not 64 bytes of hex"))?,
        ),
    };
    let key_id = match e.key_id.as_deref() {
        None => None,
        Some(id) => Some(
            id.parse::<KeyId>()
                .map_err(|_| malformed(&e.hour, format!("key_id {id:?} is not 16 hex digits")))?,
        ),
    };
    Ok(ChainEntry {
        hour,
        key_id,
        digest: hash(&e.digest, "digest")?,
        prev: hash(&e.prev, "prev")?,
        header: hash(&e.header, "header")?,
        signature,
    })
}

/// Verifies one entry against `key` and the entry verified before it, `last`; returns
/// its header.
fn verify_link(key: &PublicKey, entry: &ChainEntry, last: Option<(Hour, Hash)>) -> Result<Hash> {
    let name = entry.hour.rfc3339();
    // Contiguous hours link up; after a gap the publisher restarted the chain from the
    // genesis value (hours never sealed), or an hour was dropped.
    let known_prev = match last {
        Some((h, prev_header)) if h.next() == entry.hour => Some(prev_header),
        Some((h, _)) if entry.prev != chain::GENESIS => {
            return Err(ClientError::Unverified(ChainError::Link {
                hour: name,
                detail: format!(
                    "the hours after {} up to it are missing from the chain",
                    h.rfc3339()
                ),
            }))
        }
        _ => None,
    };
    let signature = entry
        .signature
        .ok_or_else(|| malformed(&name, "the chain entry is not signed"))?;
    let claim = Claim {
        hour: name,
        index: entry.hour.index(),
        digest: entry.digest,
        prev: entry.prev,
        signature,
    };
    let got = claim.verify(key, known_prev.as_ref())?;
    if got != entry.header {
        return Err(malformed(
            &claim.hour,
            "the listed header is not SHA-256(digest || prev)",
        ));
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{Signer, GENESIS};

    /// A chain entry for hour 2026-01-01T00 signed by seed 7, in hex as the server writes it.
    fn entry() -> Entry {
        let hour = Hour::parse_flexible("2026-01-01T00").unwrap();
        let digest = chain::digest(b"filter");
        let header = chain::header(&digest, &GENESIS);
        let signature = Signer::from_seed(&[7; 32]).sign(hour.index(), &header);
        Entry {
            hour: hour.rfc3339(),
            digest: chain::hex(&digest),
            prev: chain::hex(&GENESIS),
            header: chain::hex(&header),
            signature: Some(chain::hex(&signature)),
            key_id: Some(Signer::from_seed(&[7; 32]).public_key().id().to_string()),
        }
    }

    #[test]
    fn a_chain_entry_in_hex_of_either_case_parses() {
        let parsed = parse_entry(&entry()).unwrap();
        assert_eq!(
            parsed.key_id,
            Some(Signer::from_seed(&[7; 32]).public_key().id())
        );
        assert_eq!(parsed.digest, chain::digest(b"filter"));
        assert_eq!(parsed.header, chain::header(&parsed.digest, &GENESIS));
        let mut upper = entry();
        upper.signature = upper.signature.map(|s| s.to_uppercase());
        upper.digest = upper.digest.to_uppercase();
        let upper = parse_entry(&upper).unwrap();
        assert_eq!(
            (upper.digest, upper.signature),
            (parsed.digest, parsed.signature)
        );
    }

    #[test]
    fn a_chain_entry_with_a_loose_hex_field_is_malformed() {
        let spoil = |s: &str| {
            [
                format!("+f{}", &s[2..]),
                s[1..].to_owned(),
                format!("0x{}", &s[2..]),
            ]
        };
        for bad in spoil(entry().signature.as_deref().unwrap()) {
            let mut e = entry();
            e.signature = Some(bad.clone());
            let err = parse_entry(&e).expect_err(&bad);
            assert!(
                matches!(err, ClientError::Unverified(ChainError::Malformed { .. })),
                "{bad}: {err}"
            );
        }
        for bad in spoil(&entry().digest) {
            let mut e = entry();
            e.digest = bad.clone();
            assert!(parse_entry(&e).is_err(), "digest {bad}");
            let mut e = entry();
            e.prev = bad.clone();
            assert!(parse_entry(&e).is_err(), "prev {bad}");
        }
    }
}
