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

/// One entry of `GET /chain/...`.
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

fn malformed(hour: &str, detail: impl Into<String>) -> ClientError {
    ClientError::Unverified(ChainError::Malformed {
        hour: hour.to_owned(),
        detail: detail.into(),
    })
}

impl Client {
    /// Checks a freshly fetched filter from `path` when the client has a public key: a
    /// complete hour must carry a valid signature over its bytes' digest and link up
    /// with the neighbouring hours this client verified before. Unions and the open
    /// hour are not signed (they are not part of the chain) and pass unchecked.
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
        if !fetched.meta.complete {
            return Ok(());
        }
        let Some(keys) = self.keys(Some(hour)).await? else {
            return Ok(());
        };
        let name = hour.rfc3339();
        let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
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
        let key = &keys.key_for(hour, field.key_id)?;
        let signature = field.signature;
        let claim = Claim {
            hour: name.clone(),
            index: hour.index(),
            digest: chain::digest(&fetched.filter.bytes()),
            prev,
            signature,
        };
        self.link_verified(&claim, key, hour)?;
        self.note_verified(hour).await;
        Ok(())
    }

    /// Verifies `claim` and links it with the neighbouring hours verified before.
    fn link_verified(&self, claim: &Claim, key: &PublicKey, hour: Hour) -> Result<()> {
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
        Ok(())
    }

    /// Verifies the chain from `since` to the newest sealed hour the server lists, page
    /// by page, then fetches every listed hour's filter and checks it against its link.
    /// Works against any base URL serving bloomcast's paths (a mirror, a CDN).
    ///
    /// # Errors
    /// [`ClientError::Argument`] without a public key; [`ClientError::Unverified`]
    /// naming the first hour that fails (a changed byte, a missing or swapped hour, a
    /// broken link, another key); transport errors and error statuses.
    pub async fn verify_chain(&self, since: Hour) -> Result<ChainReport> {
        if self.keys(None).await?.is_none() {
            return Err(ClientError::Argument(
                "verifying needs the publisher's public key (--pubkey)".into(),
            ));
        }
        let mut entries: Vec<(Hour, Claim, Hash, Option<KeyId>)> = Vec::new();
        let mut path = Some(format!("/chain{}?limit=1000", since.path()));
        while let Some(next) = path.take() {
            let (page, link) = self.chain_page(&next).await?;
            for e in page {
                entries.push(parse_entry(&e)?);
            }
            path = link;
        }
        let mut report = ChainReport {
            hours: Vec::new(),
            header: None,
        };
        let mut last: Option<(Hour, Hash)> = None;
        for (hour, claim, header, key_id) in &entries {
            // Contiguous hours link up; after a gap the publisher restarted the chain
            // from the genesis value (hours never sealed), or an hour was dropped.
            let known_prev = match last {
                Some((h, prev_header)) if h.next() == *hour => Some(prev_header),
                Some((h, _)) if claim.prev != chain::GENESIS => {
                    return Err(ClientError::Unverified(ChainError::Link {
                        hour: claim.hour.clone(),
                        detail: format!(
                            "the hours after {} up to it are missing from the chain",
                            h.rfc3339()
                        ),
                    }))
                }
                _ => None,
            };
            if claim.index != hour.index() {
                return Err(malformed(&claim.hour, "hour index mismatch"));
            }
            let keys = self
                .keys(Some(*hour))
                .await?
                .ok_or_else(|| malformed(&claim.hour, "the server no longer publishes its keys"))?;
            let got = claim.verify(&keys.key_for(*hour, *key_id)?, known_prev.as_ref())?;
            if got != *header {
                return Err(malformed(
                    &claim.hour,
                    "the listed header is not SHA-256(digest || prev)",
                ));
            }
            last = Some((*hour, got));
        }
        for (hour, claim, _, _) in &entries {
            let fetched = self.hour(*hour).await?;
            let digest = chain::digest(&fetched.filter.bytes());
            if digest != claim.digest {
                return Err(ClientError::Unverified(ChainError::Digest {
                    hour: claim.hour.clone(),
                    got: chain::hex(&digest),
                    want: chain::hex(&claim.digest),
                }));
            }
            report.hours.push(*hour);
        }
        report.header = last.map(|(_, h)| h);
        if let Some(newest) = report.hours.last() {
            self.note_verified(*newest).await;
        }
        Ok(report)
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

fn parse_entry(e: &Entry) -> Result<(Hour, Claim, Hash, Option<KeyId>)> {
    let hour = Hour::parse_flexible(&e.hour).map_err(|_| malformed(&e.hour, "not an hour"))?;
    let hash = |s: &str, what: &str| {
        chain::parse_hex::<32>(s)
            .ok_or_else(|| malformed(&e.hour, format!("{what} is not 32 bytes of hex")))
    };
    let signature = e
        .signature
        .as_deref()
        .and_then(chain::parse_hex::<64>)
        .ok_or_else(|| malformed(&e.hour, "the chain entry is not signed"))?;
    let claim = Claim {
        hour: hour.rfc3339(),
        index: hour.index(),
        digest: hash(&e.digest, "digest")?,
        prev: hash(&e.prev, "prev")?,
        signature,
    };
    let key_id = match e.key_id.as_deref() {
        None => None,
        Some(id) => Some(
            id.parse::<KeyId>()
                .map_err(|_| malformed(&e.hour, format!("key_id {id:?} is not 16 hex digits")))?,
        ),
    };
    Ok((hour, claim, hash(&e.header, "header")?, key_id))
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
        let (_, claim, header, key_id) = parse_entry(&entry()).unwrap();
        assert_eq!(key_id, Some(Signer::from_seed(&[7; 32]).public_key().id()));
        assert_eq!(claim.digest, chain::digest(b"filter"));
        assert_eq!(header, chain::header(&claim.digest, &GENESIS));
        let mut upper = entry();
        upper.signature = upper.signature.map(|s| s.to_uppercase());
        upper.digest = upper.digest.to_uppercase();
        let (_, upper_claim, _, _) = parse_entry(&upper).unwrap();
        assert_eq!(
            (upper_claim.digest, upper_claim.signature),
            (claim.digest, claim.signature)
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
