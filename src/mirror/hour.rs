//! One sealed hour's files: every form the server serves for it, identity and gzip, as
//! the server sent them, with each signed form's signature as a `.sig` sidecar, all
//! checked before any is written ([`super::trust::check_hour_files`]).

use super::trust::{self, SIDECAR};
use super::{Mirror, MirrorError, Result};
use crate::chain::{self, Trusted};
use crate::client::ChainEntry;
use crate::hour::Hour;
use reqwest::header;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The forms of a sealed hour: the suffix, and whether a `.gz` sibling goes with it (the
/// ribbon body is near-random bits and is never gzipped, PROTOCOL.md section 12).
const FORMS: [(&str, bool); 7] = [
    (".json", true),
    (".hex", true),
    (".bin", true),
    (".ribbon", false),
    (".ribbon.json", true),
    (".ribbon2", false),
    (".pages", false),
];

/// Tries of a request the server answers busy (503, 429) before the pass fails.
const BUSY_ATTEMPTS: u32 = 10;
/// The longest `Retry-After` waited for, in seconds.
const MAX_RETRY_AFTER: u64 = 10;

/// A response body as received, whether it came gzip-encoded, and its signature
/// headers.
pub(super) struct Got {
    pub identity: Vec<u8>,
    pub gzipped: bool,
    /// `Bloom-Signature`, as sent.
    pub signature: Option<String>,
    /// `Bloom-Prev-Header`, as sent.
    pub prev: Option<String>,
}

impl Mirror {
    /// GETs `path` (in identity or, when `gzip`, gzip encoding) and checks the body
    /// against its `Repr-Digest` when the server sent one.
    pub(super) async fn get(&self, path: &str, gzip: bool) -> Result<Got> {
        self.get_or_missing(path, gzip)
            .await?
            .ok_or_else(|| MirrorError::Protocol {
                url: format!("{}{path}", self.base),
                detail: format!("status {}", reqwest::StatusCode::NOT_FOUND),
            })
    }

    /// [`Mirror::get`] in identity encoding, `None` (said in the log) for a 404 or 406.
    async fn get_or_declined(&self, path: &str) -> Result<Option<Got>> {
        let got = self.get_unless(path, false, &[404, 406]).await?;
        if got.is_none() {
            let url = format!("{}{path}", self.base);
            tracing::warn!(%url, "not served, or declined (404, 406): not mirrored");
        }
        Ok(got)
    }

    /// [`Mirror::get`], `None` for a 404.
    pub(super) async fn get_or_missing(&self, path: &str, gzip: bool) -> Result<Option<Got>> {
        self.get_unless(path, gzip, &[404]).await
    }

    /// [`Mirror::get`], `None` for a status of `absent`.
    async fn get_unless(&self, path: &str, gzip: bool, absent: &[u16]) -> Result<Option<Got>> {
        let url = format!("{}{path}", self.base);
        let transport = |source| MirrorError::Transport {
            url: url.clone(),
            source,
        };
        let encoding = if gzip { "gzip" } else { "identity" };
        let mut attempt = 1;
        let response = loop {
            let response = self
                .http
                .get(&url)
                .header(header::ACCEPT_ENCODING, encoding)
                .send()
                .await
                .map_err(transport)?;
            // Busy (a ribbon build waits for a slot, PROTOCOL.md section 12): wait as told.
            let busy = matches!(response.status().as_u16(), 429 | 503);
            if !busy || attempt == BUSY_ATTEMPTS {
                break response;
            }
            let wait = response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.trim().parse().ok())
                .unwrap_or(1)
                .min(MAX_RETRY_AFTER);
            tracing::debug!(%url, wait, "busy; retrying");
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            attempt += 1;
        };
        if absent.contains(&response.status().as_u16()) {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(MirrorError::Protocol {
                url,
                detail: format!("status {}", response.status()),
            });
        }
        let gzipped = response
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        let field = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let digest = field(chain::HEADER_REPR_DIGEST);
        let signature = field(chain::HEADER_SIGNATURE);
        let prev = field(chain::HEADER_PREV);
        let body = response.bytes().await.map_err(transport)?.to_vec();
        if let Some(want) = digest {
            if chain::repr_digest(&body) != want {
                return Err(MirrorError::Protocol {
                    url,
                    detail: format!("the body does not match its Repr-Digest {want}"),
                });
            }
        }
        Ok(Some(Got {
            identity: body,
            gzipped,
            signature,
            prev,
        }))
    }

    /// Parses a JSON body.
    pub(super) fn json(&self, path: &str, body: &[u8]) -> Result<serde_json::Value> {
        serde_json::from_slice(body).map_err(|e| MirrorError::Protocol {
            url: format!("{}{path}", self.base),
            detail: format!("not JSON: {e}"),
        })
    }

    /// Every file of the hour of `entry`, URL path and bytes: each form, its `.gz`
    /// sibling, the plain path (the JSON document, as `GET /YYYY/MM/DD/HH` answers), each
    /// signed form's `.sig` sidecar, and with `exact` its exact body when served; all
    /// checked against the verified `entry` (and with `trusted`, every signed form
    /// verified; one served without a signature is left out) before the hour is handed
    /// back to be written.
    ///
    /// # Errors
    /// [`MirrorError::HourRefused`] naming the file and what failed; transport errors.
    pub(super) async fn hour_files(
        &self,
        entry: &ChainEntry,
        trusted: Option<&Trusted>,
        exact: bool,
    ) -> Result<BTreeMap<String, Vec<u8>>> {
        let stem = entry.hour.path();
        let refused = |source: trust::TrustError| MirrorError::HourRefused {
            hour: entry.hour.rfc3339(),
            source,
        };
        let mut out = BTreeMap::new();
        let forms = FORMS.iter().chain(exact.then_some(&(".exact", false)));
        // One request at a time per hour: the pass keeps a few hours in flight.
        for &(suffix, gz) in forms {
            let path = format!("{stem}{suffix}");
            // A ribbon is built on first request, one build at a time by default
            // (`union_builds`): ask for one at a time rather than be told busy.
            let _build = match suffix.starts_with(".ribbon") || suffix == ".pages" {
                true => Some(self.builds.acquire().await.expect("never closed")),
                false => None,
            };
            let got = if suffix == ".exact" {
                // An hour before the server's universe, or one it cannot build: none.
                match self.get_or_missing(&path, false).await? {
                    Some(got) => got,
                    None => continue,
                }
            } else if _build.is_some() {
                // A compact form the server does not build for this hour within its
                // budget (406, a huge hour's version 1 ribbon) or at all (404): not
                // mirrored; clients read the hour's other forms.
                match self.get_or_declined(&path).await? {
                    Some(got) => got,
                    None => continue,
                }
            } else {
                self.get(&path, false).await?
            };
            let signed = trust::DERIVED_FORMS.iter().any(|(s, _)| *s == suffix);
            if signed {
                match (&got.signature, trusted) {
                    (Some(value), _) => {
                        out.insert(format!("{path}{SIDECAR}"), trust::sidecar_of(value));
                    }
                    (None, Some(_)) => {
                        // Nothing to verify it by (an older hour whose form was first
                        // built after its key retired, or a signature stripped on the
                        // way): not mirrored, so never taken unverified. Clients read the
                        // hour's v1 forms instead.
                        tracing::warn!(
                            url = %format!("{}{path}", self.base),
                            "served without a Bloom-Signature: not mirrored (it cannot be verified)"
                        );
                        continue;
                    }
                    (None, None) => {}
                }
                let prev = got.prev.as_deref().map(chain::parse_hex::<32>);
                if prev.is_some_and(|p| p != Some(entry.prev)) {
                    return Err(refused(trust::TrustError::Refused(format!(
                        "{}{path}: its Bloom-Prev-Header is not the chain's link for the hour",
                        self.base
                    ))));
                }
            }
            if suffix == ".pages" && trusted.is_some() && !trust::pages_signed(&got.identity) {
                // As a form served without its signature: never mirrored to be taken
                // unverified.
                tracing::warn!(
                    url = %format!("{}{path}", self.base),
                    "pages served unsigned: not mirrored (they cannot be verified)"
                );
                continue;
            }
            let identity = got.identity;
            if gz {
                let gzipped = self.gzip_of(&path, &identity).await?;
                if suffix == ".json" {
                    out.insert(format!("{stem}.gz"), gzipped.clone());
                }
                out.insert(format!("{path}.gz"), gzipped);
            }
            if suffix == ".json" {
                out.insert(stem.clone(), identity.clone());
            }
            out.insert(path, identity);
        }
        let unverified = trust::check_hour_files(
            trusted,
            entry,
            &|path| Ok(out.get(path).cloned()),
            &|path| format!("{}{path}", self.base),
        )
        .map_err(refused)?;
        if let Some(first) = unverified.into_iter().next() {
            return Err(refused(trust::TrustError::Unverifiable(first)));
        }
        Ok(out)
    }

    /// The server's one-entry chain page of `hour` (`/chain/...?limit=1`), its own bytes
    /// (fields this version does not know included), checked to list `entry`: the
    /// entry's own hour, or after a gap the next sealed one.
    pub(super) async fn chain_page(&self, hour: Hour, entry: &ChainEntry) -> Result<Vec<u8>> {
        let path = format!("/chain{}?limit=1", hour.path());
        let page = self.get(&path, false).await?.identity;
        let listed = self.json(&path, &page)?;
        let first = &listed[0];
        if first["hour"] != entry.hour.rfc3339().as_str()
            || first["digest"] != chain::hex(&entry.digest).as_str()
        {
            return Err(MirrorError::Protocol {
                url: format!("{}{path}", self.base),
                detail: format!(
                    "it does not list the chain entry of {}",
                    entry.hour.rfc3339()
                ),
            });
        }
        Ok(page)
    }

    /// The gzip bytes of `path`: the server's when it gzips (checked to decode to
    /// `identity`), else compressed here.
    async fn gzip_of(&self, path: &str, identity: &[u8]) -> Result<Vec<u8>> {
        let got = self.get(path, true).await?;
        if !got.gzipped {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(identity).expect("writing to memory");
            return Ok(encoder.finish().expect("writing to memory"));
        }
        let mut decoded = Vec::with_capacity(identity.len());
        let same = flate2::read::MultiGzDecoder::new(&got.identity[..])
            .read_to_end(&mut decoded)
            .is_ok()
            && decoded == identity;
        if !same {
            return Err(MirrorError::Protocol {
                url: format!("{}{path}", self.base),
                detail: "the gzip body does not decode to the identity body".into(),
            });
        }
        Ok(got.identity)
    }
}
