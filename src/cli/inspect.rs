//! `bloomcast inspect`: a filter's parameters, count (exact and estimated), fill and
//! fpp, from a URL or a file.

mod saved;

use super::{verifying_builder, CliError};
use crate::bloom::Filter;
use crate::wire::{Document, Meta};
use clap::Args;
use serde_json::json;
use std::io::Read;

/// Show a filter's parameters, count, fill and estimated false-positive probability.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A filter URL (http://host:port/2008/09/03/13, or .../13.ribbon,
    /// .../13.ribbon.json or .../13.ribbon2 for the compact form, or .../13.exact for a sealed hour's exact
    /// body: universe, changed, k, split, rows, seeds, bytes) or a file holding a JSON
    /// document (optionally gzip-compressed), a ribbon body or its JSON form, an exact
    /// body, or raw hex or bytes with --m and --k.
    target: String,
    #[command(flatten)]
    raw: RawShape,
    /// Print one JSON object instead of lines.
    #[arg(long)]
    json: bool,
    /// Verify it against the publisher's public key (64 hex digits) before saying
    /// anything: a URL by what the server sends; a saved file by --headers, its .sig
    /// sidecar or the mirror directory around it, else refused.
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<crate::chain::PublicKey>,
    /// The headers a saved file was served with (`curl -s -D FILE URL > BODY`): its
    /// signature and chain link, or the Bloom-* parameters of a raw body.
    #[arg(long, value_name = "FILE")]
    headers: Option<std::path::PathBuf>,
    /// With --pubkey, how old a version of the open hour fetched from a URL may be (its
    /// signature says when it was made): an older one (a replay) is refused.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    freshness: u64,
}

/// The parameters of raw hex or binary files, which carry none of their own (shared by
/// the verbs that read filters from files).
#[derive(Debug, Args)]
pub struct RawShape {
    /// m, for a raw hex or binary file.
    #[arg(long, requires = "k")]
    m: Option<u64>,
    /// k, for a raw hex or binary file.
    #[arg(long, requires = "m")]
    k: Option<u64>,
}

impl RawShape {
    /// `(m, k)` when both were given.
    pub fn get(&self) -> Option<(u64, u64)> {
        self.m.zip(self.k)
    }
}

impl InspectArgs {
    /// Fetches or reads the filter and prints what it says about itself.
    ///
    /// # Errors
    /// An unreachable URL, an error status, an unreadable file or filter.
    pub async fn run(self) -> Result<(), CliError> {
        let url = self.target.starts_with("http://") || self.target.starts_with("https://");
        if url && self.headers.is_some() {
            return Err(CliError::Input(
                "--headers is for a saved file; a URL brings its own".into(),
            ));
        }
        if let (false, Some(key)) = (url, &self.pubkey) {
            return self.saved(key);
        }
        let mut trusted_hour = None;
        if let (true, Some(key)) = (url, &self.pubkey) {
            match trusted_for_url(&self.target, key).await? {
                Some((trusted, hour, base)) => {
                    if self.signed_form_url(&trusted, hour, &base).await? {
                        return Ok(());
                    }
                    trusted_hour = Some((trusted, hour));
                }
                None => {
                    return Err(crate::mirror::TrustError::Unverifiable(format!(
                        "{}: --pubkey cannot verify it: unions (days, since) are not signed; \
                         inspect an hour",
                        self.target
                    ))
                    .into())
                }
            }
        }
        if let Some(exact) = super::exact::load(&self.target, self.pubkey).await? {
            super::exact::print(&exact, self.json, None)?;
            return Ok(());
        }
        if let Some(ribbon) = super::ribbon::load_v2(&self.target).await? {
            super::ribbon::print_v2(&ribbon, self.json, None)?;
            return Ok(());
        }
        if let Some(ribbon) = super::ribbon::load(&self.target).await? {
            super::ribbon::print(&ribbon, self.json, None)?;
            return Ok(());
        }
        let freshness = std::time::Duration::from_secs(self.freshness);
        let (meta, filter) = load(&self.target, self.raw.get(), self.pubkey, freshness).await?;
        let verified = match (&trusted_hour, &meta) {
            (Some((trusted, hour)), Some(meta)) => {
                // The count is not signed: it must fit the filter's bits.
                crate::mirror::trust::check_count(&self.target, meta.count, &filter)?;
                if !meta.complete {
                    return self.open_hour_url(trusted, *hour).await;
                }
                let key = trusted
                    .key_for(*hour)
                    .map_err(crate::mirror::TrustError::from)?;
                Some(format!("{} under key {}", hour.rfc3339(), key.id()))
            }
            _ => None,
        };
        self.print_bloom(meta.as_ref(), &filter, verified.as_deref())?;
        Ok(())
    }

    /// With `--pubkey`, the open hour at the URL: a version fetched here, verified by its
    /// `Bloom-Open-Signature` (refused without one), then shown.
    async fn open_hour_url(
        &self,
        trusted: &crate::chain::Trusted,
        hour: crate::hour::Hour,
    ) -> Result<(), CliError> {
        let (headers, body) = get(&self.target)
            .await?
            .ok_or_else(|| CliError::Input(format!("{}: 404 Not Found", self.target)))?;
        let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{}: {e}", self.target));
        let (meta, filter) = if body.first() == Some(&b'{') {
            Document::parse(&body).map_err(bad)?
        } else {
            let field = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let hex = self
                .target
                .split('?')
                .next()
                .is_some_and(|p| p.ends_with(".hex"));
            crate::wire::decode_raw(field, &body, hex).map_err(bad)?
        };
        crate::mirror::trust::check_count(&self.target, meta.count, &filter)?;
        let signature = headers
            .get(crate::chain::HEADER_OPEN_SIGNATURE)
            .and_then(|v| v.to_str().ok());
        let made = saved::verify_open(&self.target, trusted, hour, &filter.bytes(), signature)?;
        let verified = format!("{} (open, made={made})", hour.rfc3339());
        self.print_bloom(Some(&meta), &filter, Some(&verified))?;
        Ok(())
    }

    /// With `--pubkey`, a ribbon's URL (`.ribbon`, `.ribbon.json`, `.ribbon2`): verified
    /// by its signature (`Bloom-Signature`, or a static mirror's `.sig` sidecar) under its
    /// hour's verified chain entry, then shown. `false` for another URL.
    async fn signed_form_url(
        &self,
        trusted: &crate::chain::Trusted,
        hour: crate::hour::Hour,
        base: &str,
    ) -> Result<bool, CliError> {
        use crate::mirror::trust::{self, TrustError, DERIVED_FORMS, SIDECAR};
        let path = &self.target[base.len()..];
        let path = path.split('?').next().unwrap_or(path);
        let stem = hour.path();
        let Some(&(suffix, form)) = DERIVED_FORMS
            .iter()
            .filter(|(s, _)| *s != ".exact")
            .find(|(s, _)| path == format!("{stem}{s}"))
        else {
            return Ok(false);
        };
        let (headers, body) = get(&self.target)
            .await?
            .ok_or_else(|| CliError::Input(format!("{}: 404 Not Found", self.target)))?;
        let (raw, _) = trust::derived_body(&self.target, suffix, &body)?;
        let page_url = format!("{base}/chain{stem}?limit=1");
        let (_, page) = get(&page_url).await?.ok_or_else(|| {
            TrustError::Unverifiable(format!(
                "hour {}: {page_url}: no chain entry to verify {} by",
                hour.rfc3339(),
                trust::form_label(suffix)
            ))
        })?;
        let entry = trust::parse_page(&page_url, &page)?
            .into_iter()
            .find(|e| e.hour == hour)
            .ok_or_else(|| {
                TrustError::Unverifiable(format!(
                    "hour {}: the chain lists no entry for it",
                    hour.rfc3339()
                ))
            })?;
        let header = trust::verify_entry(trusted, &entry, None)?;
        let field = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(prev) = field(crate::chain::HEADER_PREV) {
            if crate::chain::parse_hex::<32>(prev) != Some(entry.prev) {
                return Err(TrustError::Refused(format!(
                    "hour {}: {}'s Bloom-Prev-Header is not the chain's link for the hour",
                    hour.rfc3339(),
                    trust::form_label(suffix)
                ))
                .into());
            }
        }
        let signature = match field(crate::chain::HEADER_SIGNATURE) {
            Some(value) => Some(value.to_owned()),
            None => get(&format!("{base}{path}{SIDECAR}"))
                .await?
                .and_then(|(_, bytes)| trust::sidecar_value(&bytes)),
        };
        let signature = signature.ok_or_else(|| {
            TrustError::Unverifiable(format!(
                "hour {}: {} carries no signature (no Bloom-Signature, no .sig sidecar): unverified",
                hour.rfc3339(),
                trust::form_label(suffix)
            ))
        })?;
        let label = (trust::form_label(suffix), self.target.as_str());
        trust::verify_form(trusted, form, label, hour, &header, &raw, &signature)?;
        let verified = format!(
            "{} under key {}",
            hour.rfc3339(),
            trusted.key_for(hour).map_err(TrustError::from)?.id()
        );
        let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{}: {e}", self.target));
        if suffix == ".ribbon2" {
            let ribbon = crate::bloom::Ribbon2::from_bytes(&body).map_err(bad)?;
            super::ribbon::print_v2(&ribbon, self.json, Some(&verified))?;
        } else {
            let loaded = crate::wire::decode_compact(&body).map_err(bad)?;
            super::ribbon::print(&loaded, self.json, Some(&verified))?;
        }
        Ok(true)
    }

    /// A saved file with `--pubkey`: verified by what was saved with it, then shown
    /// with a `verified` line.
    fn saved(&self, key: &crate::chain::PublicKey) -> Result<(), CliError> {
        let headers = self
            .headers
            .as_deref()
            .map(saved::Headers::read)
            .transpose()?;
        let file = saved::load(&self.target, headers.as_ref(), self.raw.get())?;
        let verified = saved::verify(&self.target, &file, headers.as_ref(), key)?;
        tracing::debug!(target = %self.target, %verified, "verified");
        let verified = Some(verified.as_str());
        match file {
            saved::Saved::Bloom(meta, filter) => self.print_bloom(meta.as_ref(), &filter, verified),
            saved::Saved::Ribbon(meta, ribbon, _) => {
                super::ribbon::print(&(meta, ribbon), self.json, verified)
            }
            saved::Saved::Ribbon2(ribbon, _) => {
                super::ribbon::print_v2(&ribbon, self.json, verified)
            }
            saved::Saved::Exact(exact, _) => {
                super::exact::print(&(None, exact), self.json, verified)
            }
        }
    }

    /// Prints what a Bloom filter says about itself.
    fn print_bloom(
        &self,
        meta: Option<&Meta>,
        filter: &Filter,
        verified: Option<&str>,
    ) -> Result<(), CliError> {
        // A raw file says nothing about its time or exact count.
        let covers = covers(meta);
        let mut fields: Vec<(&str, serde_json::Value)> = vec![
            ("covers", json!(covers)),
            ("complete", json!(meta.map(|m| m.complete))),
            ("count", json!(meta.map(|m| m.count))),
            // Swamidass–Baldi, from the bits alone: beside the exact count to compare.
            ("estimated_count", json!(filter.estimated_count().round())),
            ("m", json!(filter.m())),
            ("k", json!(filter.k())),
            ("hash", json!(filter.hash().name())),
            ("bytes", json!(filter.params().byte_len())),
            ("bits_set", json!(filter.ones())),
            ("fill", json!(filter.fill_ratio())),
            ("fpp", json!(filter.fpp())),
        ];
        fields.extend(verified.map(|v| ("verified", json!(v))));
        print_fields(fields, self.json, "unknown (raw file)")
    }
}

/// GET `url` in identity encoding: its headers and body, `None` for a 404.
async fn get(url: &str) -> Result<Option<(reqwest::header::HeaderMap, Vec<u8>)>, CliError> {
    let failed = |e: reqwest::Error| CliError::Input(format!("{url}: {e}"));
    let response = reqwest::Client::new()
        .get(url)
        .header(reqwest::header::ACCEPT_ENCODING, "identity")
        .send()
        .await
        .map_err(failed)?;
    match response.status() {
        reqwest::StatusCode::NOT_FOUND => Ok(None),
        status if status.is_success() => {
            let headers = response.headers().clone();
            Ok(Some((
                headers,
                response.bytes().await.map_err(failed)?.to_vec(),
            )))
        }
        status => Err(CliError::Input(format!("{url}: {status}"))),
    }
}

/// With `--pubkey` on a URL of an hour: the key list the server publishes, trusted only
/// from the key given (a list that does not name it, or the hour under a key it never
/// vouched for, is refused naming the key), with the hour and the base URL; `None` for
/// a URL that is not an hour's.
async fn trusted_for_url(
    target: &str,
    key: &crate::chain::PublicKey,
) -> Result<Option<(crate::chain::Trusted, crate::hour::Hour, String)>, CliError> {
    let parsed =
        reqwest::Url::parse(target).map_err(|_| CliError::Input(format!("bad URL {target:?}")))?;
    let path = parsed.path();
    let stem = path.split_once('.').map_or(path, |(stem, _)| stem);
    let Ok(hour) = crate::hour::Hour::parse_path(stem) else {
        return Ok(None);
    };
    let base = &target[..target.len() - path.len() - parsed.query().map_or(0, |q| q.len() + 1)];
    let url = format!("{base}{}", crate::mirror::WELL_KNOWN);
    let doc: Option<serde_json::Value> = match get(&url).await? {
        None => None,
        Some((_, bytes)) => Some(
            serde_json::from_slice(&bytes)
                .map_err(|e| CliError::Input(format!("{url}: not JSON ({e})")))?,
        ),
    };
    let trusted = crate::mirror::trust::trusted_keys(doc.as_ref(), key)?;
    crate::mirror::trust::key_for(&trusted, hour, None)?;
    Ok(Some((trusted, hour, base.to_owned())))
}

/// What a filter's metadata says it covers: its hour, or `from .. to`.
pub(super) fn covers(meta: Option<&Meta>) -> Option<String> {
    meta.map(|meta| match (&meta.hour, &meta.from, &meta.to) {
        (Some(h), _, _) => h.clone(),
        (None, Some(f), Some(t)) => format!("{f} .. {t}"),
        _ => "unknown".into(),
    })
}

/// Prints `fields` as one JSON object, or as aligned `name value` lines with `unknown`
/// standing for a null (what the input did not say).
pub(super) fn print_fields<'f>(
    fields: impl IntoIterator<Item = (&'f str, serde_json::Value)>,
    as_json: bool,
    unknown: &str,
) -> Result<(), CliError> {
    if as_json {
        let object: serde_json::Map<String, serde_json::Value> = fields
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        return super::outln!("{}", serde_json::Value::Object(object));
    }
    for (name, value) in fields {
        let shown = match value {
            serde_json::Value::Null => unknown.to_owned(),
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        super::outln!("{name:<16}{shown}")?;
    }
    Ok(())
}

/// A filter from a URL or a file (raw files need `(m, k)`), with its metadata when
/// the source carries any.
pub(super) async fn load(
    target: &str,
    raw: Option<(u64, u64)>,
    pubkey: Option<crate::chain::PublicKey>,
    freshness: std::time::Duration,
) -> Result<(Option<Meta>, Filter), CliError> {
    if target.starts_with("http://") || target.starts_with("https://") {
        fetch(target, pubkey, freshness).await
    } else {
        read_file(target, raw)
    }
}

async fn fetch(
    url: &str,
    pubkey: Option<crate::chain::PublicKey>,
    freshness: std::time::Duration,
) -> Result<(Option<Meta>, Filter), CliError> {
    let parsed =
        reqwest::Url::parse(url).map_err(|_| CliError::Input(format!("bad URL {url:?}")))?;
    let base = &url[..url.len() - parsed.path().len() - parsed.query().map_or(0, |q| q.len() + 1)];
    let fetched = verifying_builder(base, None, pubkey, crate::client::DEFAULT_FETCH_COST)
        .freshness(freshness)
        .build()?
        .filter(parsed.path())
        .await?;
    Ok((Some(fetched.meta.clone()), fetched.filter.clone()))
}

fn read_file(path: &str, params: Option<(u64, u64)>) -> Result<(Option<Meta>, Filter), CliError> {
    let io = |source| CliError::Io {
        context: format!("cannot read {path}"),
        source,
    };
    let mut bytes = std::fs::read(path).map_err(io)?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .map_err(io)?;
        bytes = plain;
    }
    let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{path}: {e}"));
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        let (meta, filter) = Document::parse(&bytes).map_err(bad)?;
        return Ok((Some(meta), filter));
    }
    let Some((m, k)) = params else {
        return Err(CliError::Input(format!(
            "{path} is not a JSON document; a raw hex or binary filter needs --m and --k"
        )));
    };
    let text = std::str::from_utf8(&bytes).ok().map(str::trim);
    let filter = match text {
        Some(hex) if hex.len() as u64 == m.div_ceil(8) * 2 => {
            Filter::decode_hex(m, k, crate::bloom::SHA1_KM32, hex)
        }
        _ => Filter::decode_bytes(m, k, crate::bloom::SHA1_KM32, &bytes),
    }
    .map_err(bad)?;
    Ok((None, filter))
}
