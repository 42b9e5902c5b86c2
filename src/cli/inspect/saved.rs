//! `inspect --pubkey KEY FILE`: a saved body verified offline by what was saved with it
//! (PROTOCOL.md sections 11 and 13; the Python client's `inspect` does the same):
//!
//! - the response's headers (`--headers FILE`, as `curl -s -D FILE URL > BODY` writes
//!   them): `Bloom-Prev-Header` and `Bloom-Signature` of a sealed hour or a signed form,
//!   `Bloom-Open-Signature` of a version of the open hour, and the `Bloom-*` parameters
//!   of a raw body;
//! - a signed form's `.sig` sidecar beside it;
//! - the mirror directory around it (a `chain/` or `.well-known/` beside its year): the
//!   hour's chain page and the key list, trusted only from KEY.
//!
//! With none of these, `--pubkey` is refused for the file, never answered with "verified
//! nothing". A v1 document's `count` is not signed: it must fit the filter's bits.

use crate::bloom::{Filter, Ribbon, Ribbon2};
use crate::chain::{self, BodyForm, KeyList, PublicKey, SignatureField, Trusted};
use crate::exact::Exact;
use crate::hour::Hour;
use crate::mirror::trust::{self, TrustError, SIDECAR};
use crate::mirror::MirrorDir;
use crate::wire::{Document, Meta};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What to say when nothing signed came with a file.
const NO_MATERIAL: &str = "--pubkey cannot verify it: nothing signed came with it; give \
    --headers FILE (the response's headers, e.g. saved with curl -s -D FILE URL > BODY), \
    keep its .sig sidecar beside it, or keep it in its mirror directory (beside chain/ and \
    .well-known/)";

/// A saved file, decoded.
pub(super) enum Saved {
    /// A v1 filter: a JSON document, or a raw body described by its headers (no
    /// metadata: a raw body given --m and --k).
    Bloom(Option<Meta>, Filter),
    /// A version 1 ribbon (`.ribbon`, or its JSON form with its metadata), and its
    /// binary body.
    Ribbon(Option<Meta>, Ribbon, Vec<u8>),
    Ribbon2(Ribbon2, Vec<u8>),
    Exact(Exact, Vec<u8>),
}

/// A response's headers, names lowercased.
pub(super) struct Headers(HashMap<String, String>);

impl Headers {
    /// The last header block of an HTTP response head (`curl -D FILE`, or `-i` output
    /// cut at the body).
    ///
    /// # Errors
    /// An unreadable file, or one without a header in it.
    pub(super) fn read(path: &Path) -> Result<Headers, TrustError> {
        let bytes = std::fs::read(path)
            .map_err(|e| TrustError::Refused(format!("cannot read {}: {e}", path.display())))?;
        let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
        let block = text
            .split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .last()
            .ok_or_else(|| TrustError::Refused(format!("{}: no headers in it", path.display())))?;
        let fields = block
            .lines()
            .filter(|l| !l.starts_with("HTTP/"))
            .filter_map(|l| l.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Ok(Headers(fields))
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// Reads and decodes a saved file (gzip-compressed or not); a raw body needs `(m, k)`
/// or its headers.
///
/// # Errors
/// An unreadable or malformed file.
pub(super) fn load(
    target: &str,
    headers: Option<&Headers>,
    raw: Option<(u64, u64)>,
) -> Result<Saved, TrustError> {
    let bad = |e: &dyn std::fmt::Display| TrustError::Refused(format!("{target}: {e}"));
    let bytes = std::fs::read(target).map_err(|e| bad(&format!("cannot read it ({e})")))?;
    let bytes = trust::ungzip(target, bytes)?;
    if bytes.starts_with(b"BCR1") {
        let ribbon = Ribbon::from_bytes(&bytes).map_err(|e| bad(&e))?;
        return Ok(Saved::Ribbon(None, ribbon, bytes));
    }
    if bytes.starts_with(b"BCR2") {
        return Ok(Saved::Ribbon2(
            Ribbon2::from_bytes(&bytes).map_err(|e| bad(&e))?,
            bytes,
        ));
    }
    if bytes.starts_with(b"BCX1") {
        return Ok(Saved::Exact(
            Exact::from_bytes(&bytes).map_err(|e| bad(&e))?,
            bytes,
        ));
    }
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
        if doc["structure"] == crate::wire::RIBBON_STRUCTURE {
            let (raw, _) = trust::derived_body(target, ".ribbon.json", &bytes)?;
            let (meta, ribbon) = crate::wire::decode_compact(&bytes).map_err(|e| bad(&e))?;
            return Ok(Saved::Ribbon(meta, ribbon, raw));
        }
        let (meta, filter) = Document::parse(&bytes).map_err(|e| bad(&e))?;
        return Ok(Saved::Bloom(Some(meta), filter));
    }
    let text = std::str::from_utf8(&bytes).ok().map(str::trim);
    if let Some(headers) = headers.filter(|h| h.get(crate::wire::HEADER_M).is_some()) {
        let m: Option<u64> = headers
            .get(crate::wire::HEADER_M)
            .and_then(|m| m.parse().ok());
        let hex = text.is_some_and(|t| Some(t.len() as u64) == m.map(|m| m.div_ceil(8) * 2));
        let (meta, filter) =
            crate::wire::decode_raw(|name| headers.get(name), &bytes, hex).map_err(|e| bad(&e))?;
        return Ok(Saved::Bloom(Some(meta), filter));
    }
    let Some((m, k)) = raw else {
        return Err(bad(
            &"not a JSON document; a raw hex or binary filter needs --headers FILE (its Bloom-* \
              headers) or --m and --k",
        ));
    };
    let filter = match text {
        Some(hex) if hex.len() as u64 == m.div_ceil(8) * 2 => {
            Filter::decode_hex(m, k, crate::bloom::SHA1_KM32, hex)
        }
        _ => Filter::decode_bytes(m, k, crate::bloom::SHA1_KM32, &bytes),
    }
    .map_err(|e| bad(&e))?;
    // A raw file says nothing of its hour or count.
    Ok(Saved::Bloom(None, filter))
}

/// The mirror directory around `target` and the hour and suffix its path names, when
/// it lies in one laid out as the URLs (`ROOT/YYYY/MM/DD/HH[.suffix]` with `chain/` or
/// `.well-known/` in ROOT).
fn mirror_around(target: &str) -> (Option<PathBuf>, Option<Hour>, String) {
    let path = std::path::absolute(target).unwrap_or_else(|_| PathBuf::from(target));
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() < 5 {
        return (None, None, String::new());
    }
    let [y, mo, d, last] = [
        &parts[parts.len() - 4],
        &parts[parts.len() - 3],
        &parts[parts.len() - 2],
        &parts[parts.len() - 1],
    ];
    let (h, suffix) = last.split_at(last.len().min(2));
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(y, 4) && digits(mo, 2) && digits(d, 2) && digits(h, 2))
        || !(suffix.is_empty() || suffix.starts_with('.'))
    {
        return (None, None, String::new());
    }
    let Ok(hour) = Hour::from_parts(y, mo, d, h) else {
        return (None, None, String::new());
    };
    let suffix = suffix.strip_suffix(".gz").unwrap_or(suffix).to_owned();
    let root: PathBuf = path
        .ancestors()
        .nth(4)
        .map(Path::to_owned)
        .unwrap_or_default();
    let is_mirror = ["chain", ".well-known"]
        .iter()
        .any(|p| root.join(p).exists());
    (is_mirror.then_some(root), Some(hour), suffix)
}

/// Verifies a saved file with what came with it (the module's doc); returns the
/// `verified` line: the hour (and `(open, made=...)` for an open version) and the key.
///
/// # Errors
/// Nothing signed came with it; what fails, named.
pub(super) fn verify(
    target: &str,
    saved: &Saved,
    headers: Option<&Headers>,
    pubkey: &PublicKey,
) -> Result<String, TrustError> {
    let (root, path_hour, _) = mirror_around(target);
    let mirror = root.map(|r| MirrorDir::open(r, pubkey)).transpose()?;
    let alone;
    let trusted: &Trusted = match &mirror {
        Some(m) => m.trusted(),
        None => {
            alone = KeyList::single(*pubkey).trusted_from(pubkey)?;
            &alone
        }
    };
    let header = |name: &str| headers.and_then(|h| h.get(name));
    let meta_hour = match saved {
        Saved::Bloom(Some(meta), _) | Saved::Ribbon(Some(meta), _, _) => meta.hour.clone(),
        _ => None,
    };
    let named = meta_hour.or_else(|| header(crate::wire::HEADER_HOUR).map(str::to_owned));
    let hour = match (named, path_hour) {
        (Some(h), _) => Hour::parse_flexible(&h)
            .map_err(|_| TrustError::Refused(format!("{target}: {h:?} is not an hour")))?,
        (None, Some(h)) => h,
        (None, None) => {
            return Err(TrustError::Unverifiable(format!(
                "{target}: --pubkey cannot verify it: it does not say which hour it is (no \
                 hour in it, no Bloom-Hour header, not in a mirror directory)"
            )))
        }
    };
    let no_material = || TrustError::Unverifiable(format!("{target}: {NO_MATERIAL}"));
    let (form, body) = match saved {
        Saved::Bloom(meta, filter) => {
            if let Some(meta) = meta {
                if meta.hour.is_none() {
                    return Err(TrustError::Unverifiable(format!(
                        "{target}: --pubkey cannot verify it: a union (days, since) is not signed"
                    )));
                }
                trust::check_count(target, meta.count, filter)?;
            }
            let bytes = filter.bytes();
            if meta.as_ref().is_some_and(|m| !m.complete) {
                let made = verify_open(
                    target,
                    trusted,
                    hour,
                    &bytes,
                    header(chain::HEADER_OPEN_SIGNATURE),
                )?;
                return Ok(format!("{} (open, made={made})", hour.rfc3339()));
            }
            let (prev, signature) = (header(chain::HEADER_PREV), header(chain::HEADER_SIGNATURE));
            if prev.is_some() || signature.is_some() {
                let name = hour.rfc3339();
                let prev = prev.and_then(chain::parse_hex::<32>).ok_or_else(|| {
                    TrustError::Refused(format!(
                        "hour {name}: its Bloom-Prev-Header is missing or not 32 bytes of hex"
                    ))
                })?;
                let field = signature.and_then(SignatureField::parse).ok_or_else(|| {
                    TrustError::Refused(format!(
                        "hour {name}: its Bloom-Signature is missing or not 128 hex digits \
                         with an optional keyid"
                    ))
                })?;
                let key = trust::key_for(trusted, hour, field.key_id)?;
                let claim = chain::Claim {
                    hour: name,
                    index: hour.index(),
                    digest: chain::digest(&bytes),
                    prev,
                    signature: field.signature,
                };
                claim.verify(&key, None)?;
            } else if let Some(mirror) = &mirror {
                let entry = mirror.entry(hour)?.ok_or_else(|| {
                    TrustError::Unverifiable(format!(
                        "{target}: its mirror directory holds no chain entry for {}",
                        hour.rfc3339()
                    ))
                })?;
                trust::check_digest(target, hour, &bytes, &entry.digest)?;
            } else {
                return Err(no_material());
            }
            return Ok(format!(
                "{} under key {}",
                hour.rfc3339(),
                trusted.key_for(hour)?.id()
            ));
        }
        Saved::Ribbon(meta, _, body) => {
            let label = if meta.is_some() {
                ".ribbon.json"
            } else {
                ".ribbon"
            };
            ((label, BodyForm::Ribbon), body)
        }
        Saved::Ribbon2(_, body) => ((".ribbon2", BodyForm::Ribbon2), body),
        Saved::Exact(_, body) => ((".exact", BodyForm::Exact), body),
    };
    let (suffix, form) = form;
    let sidecar = Path::new(&format!("{target}{SIDECAR}")).to_owned();
    let signature = match header(chain::HEADER_SIGNATURE) {
        Some(value) => Some(value.to_owned()),
        None => std::fs::read(&sidecar)
            .ok()
            .and_then(|b| trust::sidecar_value(&b)),
    };
    let Some(signature) = signature else {
        return Err(no_material());
    };
    let Some(mirror) = &mirror else {
        return Err(TrustError::Unverifiable(format!(
            "{target}: --pubkey cannot verify it: {} is signed under its hour's chain header; \
             keep it in its mirror directory (its chain/ page) or inspect its URL",
            trust::form_label(suffix)
        )));
    };
    let entry = mirror.entry(hour)?.ok_or_else(|| {
        TrustError::Unverifiable(format!(
            "{target}: its mirror directory holds no chain entry for {}",
            hour.rfc3339()
        ))
    })?;
    if let Some(prev) = header(chain::HEADER_PREV) {
        if chain::parse_hex::<32>(prev) != Some(entry.prev) {
            return Err(TrustError::Refused(format!(
                "hour {}: {}'s Bloom-Prev-Header is not the chain's link for the hour",
                hour.rfc3339(),
                trust::form_label(suffix)
            )));
        }
    }
    let label = (trust::form_label(suffix), target);
    trust::verify_form(trusted, form, label, hour, &entry.header, body, &signature)?;
    Ok(format!(
        "{} under key {}",
        hour.rfc3339(),
        trusted.key_for(hour)?.id()
    ))
}

/// Verifies a version of the open `hour` by its `Bloom-Open-Signature`; returns `made`.
pub(super) fn verify_open(
    target: &str,
    trusted: &Trusted,
    hour: Hour,
    bytes: &[u8],
    value: Option<&str>,
) -> Result<i64, TrustError> {
    let Some(value) = value else {
        return Err(TrustError::Unverifiable(format!(
            "{target}: a version of the open hour: {NO_MATERIAL}"
        )));
    };
    let name = format!("{} (open)", hour.rfc3339());
    let field = SignatureField::parse(value).ok_or_else(|| {
        TrustError::Refused(format!(
            "hour {name}: its Bloom-Open-Signature is malformed"
        ))
    })?;
    let made = value
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("made"))
        .and_then(|(_, v)| v.trim().trim_matches('"').parse::<i64>().ok())
        .ok_or_else(|| {
            TrustError::Refused(format!(
                "hour {name}: its Bloom-Open-Signature says no made="
            ))
        })?;
    let key = trust::key_for(trusted, hour, field.key_id)?;
    key.verify_open(hour, made, &chain::digest(bytes), &field.signature)?;
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_in_a_mirror_names_its_root_hour_and_suffix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("2008/09/03/05.ribbon.json.gz");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::create_dir_all(dir.path().join("chain")).unwrap();
        let (root, hour, suffix) = mirror_around(file.to_str().unwrap());
        assert_eq!(root.as_deref(), Some(dir.path()));
        assert_eq!(
            hour.map(Hour::rfc3339).as_deref(),
            Some("2008-09-03T05:00:00Z")
        );
        assert_eq!(suffix, ".ribbon.json");
        let (root, hour, _) = mirror_around("/tmp/saved-hour.json");
        assert!(root.is_none() && hour.is_none());
    }

    #[test]
    fn the_last_header_block_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("h");
        std::fs::write(
            &file,
            "HTTP/1.1 301 Moved\r\nLocation: /x\r\n\r\nHTTP/1.1 200 OK\r\nBloom-Signature: ab\r\n\r\n",
        )
        .unwrap();
        let headers = Headers::read(&file).unwrap();
        assert_eq!(headers.get("bloom-signature"), Some("ab"));
        assert_eq!(headers.get("location"), None);
    }
}
