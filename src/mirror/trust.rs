//! Verifying the files of a static mirror, or a saved body, against the one key a client
//! holds (PROTOCOL.md section 11, "Trust", and section 13): the key list trusted only
//! from that key ([`KeyList::trusted_from`]), chain entries under the trusted key listed
//! for their hour, the v1 forms against the chain's digest (a document's unsigned
//! `count` must fit its bits), the derived forms by their signatures (a static mirror's
//! `.sig` sidecars) over the hour's chain header, and the checkpoint.
//!
//! Shared by `bloomcast mirror` (before it writes), `bloomcast verify --dir` and
//! `bloomcast inspect --pubkey FILE`. The formats are the Python client's
//! (clients/python/bloomcast_client/mirror_check.py): a sidecar holds the form's
//! `Bloom-Signature` value on one line.

use crate::bloom::pages::signed_page;
use crate::bloom::{Pages, PagesHeader};
use crate::chain::{
    self, BodyForm, ChainError, Checkpoint, Hash, KeyId, KeyList, PublicKey, SignatureField,
    Trusted,
};
use crate::client::ChainEntry;
use crate::hour::Hour;
use crate::wire::{Document, Meta};
use serde_json::Value;
use std::io::Read;

/// A sealed hour's v1 forms as a mirror holds them: the JSON document at the hour's own
/// path and at `.json`, the hex and binary bodies.
pub const V1_FORMS: [&str; 4] = ["", ".json", ".hex", ".bin"];
/// The derived forms, each signed on its own: suffix and signing form.
pub const DERIVED_FORMS: [(&str, BodyForm); 4] = [
    (".ribbon", BodyForm::Ribbon),
    (".ribbon.json", BodyForm::Ribbon),
    (".ribbon2", BodyForm::Ribbon2),
    (".exact", BodyForm::Exact),
];
/// A derived form's signature beside it in a static mirror: `<file>.sig`.
pub const SIDECAR: &str = ".sig";
/// The publisher's checkpoint in a static mirror.
pub const CHECKPOINT_FILE: &str = "/checkpoint.json";

/// Why something read does not verify, or cannot be.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A signature, link, digest or key that fails (names the hour).
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// A file or body that is not what it claims (names the file and what failed).
    #[error("{0}")]
    Refused(String),
    /// Nothing signed came with it: it cannot be verified (names it and what is
    /// missing).
    #[error("{0}")]
    Unverifiable(String),
}

/// The keys trusted from `anchor` in a well-known document (`None`: no document, the
/// key given alone): its `keys`, else its `public_key` alone (a service before keys
/// rotated), walked from `anchor` through signed successions.
///
/// # Errors
/// A malformed list, or one that does not name `anchor` ([`ChainError::BadKeyList`]).
pub fn trusted_keys(well_known: Option<&Value>, anchor: &PublicKey) -> Result<Trusted, TrustError> {
    let list = match well_known {
        Some(doc) => match (&doc["keys"], doc["public_key"].as_str()) {
            (Value::Array(keys), _) if !keys.is_empty() => {
                crate::client::parse_key_list(&doc["keys"])?
            }
            (_, Some(key)) => KeyList::single(key.parse()?),
            _ => KeyList::single(*anchor),
        },
        None => KeyList::single(*anchor),
    };
    Ok(list.trusted_from(anchor)?)
}

/// The trusted key for `hour`, checked against the key id a signature names.
///
/// # Errors
/// [`ChainError::OtherKey`]: the hour is listed under a key not trusted, or the
/// signature names another key than the one listed.
pub fn key_for(
    trusted: &Trusted,
    hour: Hour,
    named: Option<KeyId>,
) -> Result<PublicKey, TrustError> {
    let key = trusted.key_for(hour)?;
    match named {
        Some(id) if id != key.id() => Err(ChainError::OtherKey {
            hour: hour.rfc3339(),
            detail: format!(
                "signed by key {id}, but the key listed for it is {}",
                key.id()
            ),
        }
        .into()),
        _ => Ok(key),
    }
}

/// The entries of a chain page (`where_` names it in errors), parsed as the SDK parses
/// them ([`crate::client::parse_chain_page`]).
///
/// # Errors
/// [`TrustError::Refused`] for a page or entry that does not parse.
pub fn parse_page(where_: &str, bytes: &[u8]) -> Result<Vec<ChainEntry>, TrustError> {
    crate::client::parse_chain_page(bytes)
        .map_err(|e| TrustError::Refused(format!("{where_}: {e}")))
}

/// Verifies one chain entry under the trusted key listed for its hour, and its link to
/// `last`, the entry verified before it (contiguous hours link; after a gap the chain
/// restarts from the genesis value). Returns its header.
///
/// # Errors
/// The entry's signature, header, key or link fails, or it is unsigned.
pub fn verify_entry(
    trusted: &Trusted,
    entry: &ChainEntry,
    last: Option<(Hour, Hash)>,
) -> Result<Hash, TrustError> {
    let name = entry.hour.rfc3339();
    let known_prev = match last {
        Some((h, header)) if h.next() == entry.hour => Some(header),
        Some((h, _)) if entry.prev != chain::GENESIS => {
            return Err(ChainError::Link {
                hour: name,
                detail: format!(
                    "the hours after {} up to it are missing from the chain",
                    h.rfc3339()
                ),
            }
            .into())
        }
        _ => None,
    };
    let signature = entry.signature.ok_or_else(|| {
        TrustError::Unverifiable(format!("hour {name}: the chain entry is not signed"))
    })?;
    let key = key_for(trusted, entry.hour, entry.key_id)?;
    let claim = chain::Claim {
        hour: name.clone(),
        index: entry.hour.index(),
        digest: entry.digest,
        prev: entry.prev,
        signature,
    };
    let header = claim.verify(&key, known_prev.as_ref())?;
    if header != entry.header {
        return Err(ChainError::Malformed {
            hour: name,
            detail: "the listed header is not SHA-256(digest || prev)".into(),
        }
        .into());
    }
    Ok(header)
}

/// Refuses a v1 document whose `count` (not signed) is fewer IDs than its bits need:
/// each ID sets at most k bits, so more than `count * k` bits set means the count was
/// lowered.
///
/// # Errors
/// [`TrustError::Refused`] naming `where_`.
pub fn check_count(
    where_: &str,
    count: u64,
    filter: &crate::bloom::Filter,
) -> Result<(), TrustError> {
    let ones = filter.ones();
    let most = count.saturating_mul(u64::from(filter.k()));
    if ones > most {
        return Err(TrustError::Refused(format!(
            "{where_}: count is {count}, but the filter has {ones} bits set, more than \
             {count} IDs set at k = {} ({most}): the count was altered",
            filter.k()
        )));
    }
    Ok(())
}

/// The plain bytes of a body that may be gzip-compressed.
///
/// # Errors
/// [`TrustError::Refused`] for a body that starts as gzip but does not decode.
pub fn ungzip(where_: &str, bytes: Vec<u8>) -> Result<Vec<u8>, TrustError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_end(&mut plain)
        .map_err(|e| TrustError::Refused(format!("{where_}: not gzip ({e})")))?;
    Ok(plain)
}

/// The filter bytes a v1 form's body holds (`suffix` one of [`V1_FORMS`]), and for a
/// document its metadata, checked to be the sealed `hour` with a count that fits.
///
/// # Errors
/// [`TrustError::Refused`] naming `where_`: not a filter, another hour, an open one, a
/// lowered count.
pub fn v1_bytes(
    where_: &str,
    hour: Hour,
    suffix: &str,
    body: &[u8],
) -> Result<(Vec<u8>, Option<Meta>), TrustError> {
    let bad = |what: String| TrustError::Refused(format!("{where_}: {what}"));
    match suffix {
        ".bin" => Ok((body.to_vec(), None)),
        ".hex" => {
            let text = std::str::from_utf8(body).map_err(|_| bad("not hex".into()))?;
            let bytes = crate::bloom::from_hex(text.trim())
                .map_err(|e| bad(format!("not a valid filter ({e})")))?;
            Ok((bytes, None))
        }
        _ => {
            let (meta, filter) =
                Document::parse(body).map_err(|e| bad(format!("not a valid filter ({e})")))?;
            let name = hour.rfc3339();
            if meta.hour.as_deref() != Some(name.as_str()) || !meta.complete {
                return Err(bad(format!(
                    "it is the document of hour {}, complete {}, not of the sealed hour {name}",
                    meta.hour.as_deref().unwrap_or("none"),
                    meta.complete
                )));
            }
            check_count(where_, meta.count, &filter)?;
            Ok((filter.bytes().into_owned(), Some(meta)))
        }
    }
}

/// Checks filter bytes against the digest of the hour's verified chain entry.
///
/// # Errors
/// [`ChainError::Digest`] naming the hour and `where_`.
pub fn check_digest(where_: &str, hour: Hour, bytes: &[u8], want: &Hash) -> Result<(), TrustError> {
    let got = chain::digest(bytes);
    if &got != want {
        return Err(ChainError::Digest {
            hour: format!("{} ({where_})", hour.rfc3339()),
            got: chain::hex(&got),
            want: chain::hex(want),
        }
        .into());
    }
    Ok(())
}

/// What a derived form is called in messages.
pub fn form_label(suffix: &str) -> &'static str {
    match suffix {
        ".ribbon.json" => "the ribbon's JSON form",
        ".ribbon" => "the ribbon",
        ".ribbon2" => "the version 2 ribbon",
        _ => "the exact body",
    }
}

/// The binary body a derived form's file holds (the JSON form's `filter`, decoded) and
/// the number of IDs it says it holds (`None` for an exact body).
///
/// # Errors
/// [`TrustError::Refused`] for a malformed body.
pub fn derived_body(
    where_: &str,
    suffix: &str,
    body: &[u8],
) -> Result<(Vec<u8>, Option<u32>), TrustError> {
    let bad = |e: &dyn std::fmt::Display| TrustError::Refused(format!("{where_}: malformed ({e})"));
    match suffix {
        ".ribbon.json" => {
            let doc: Value = serde_json::from_slice(body).map_err(|e| bad(&e))?;
            let (_, ribbon) = crate::wire::decode_compact(body).map_err(|e| bad(&e))?;
            let raw = doc["filter"]
                .as_str()
                .and_then(|h| crate::bloom::from_hex(h).ok())
                .ok_or_else(|| bad(&"its filter is not hex"))?;
            Ok((raw, Some(ribbon.n())))
        }
        ".ribbon" => {
            let ribbon = crate::bloom::Ribbon::from_bytes(body).map_err(|e| bad(&e))?;
            Ok((body.to_vec(), Some(ribbon.n())))
        }
        ".ribbon2" => {
            let ribbon = crate::bloom::Ribbon2::from_bytes(body).map_err(|e| bad(&e))?;
            Ok((body.to_vec(), Some(ribbon.n())))
        }
        _ => {
            crate::exact::Exact::from_bytes(body).map_err(|e| bad(&e))?;
            Ok((body.to_vec(), None))
        }
    }
}

/// A sidecar's signature: its first line, trimmed (`None` when empty).
pub fn sidecar_value(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.trim().lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// A sidecar's bytes for a `Bloom-Signature` value: the value on one line.
pub fn sidecar_of(value: &str) -> Vec<u8> {
    format!("{}\n", value.trim()).into_bytes()
}

/// Verifies a derived `form`'s binary `body` of the sealed `hour` by its signature
/// (`Bloom-Signature` value or sidecar line) under the hour's verified chain `header`.
///
/// # Errors
/// A malformed signature, a key not trusted for the hour, a signature that does not
/// verify ("the bytes were altered").
pub fn verify_form(
    trusted: &Trusted,
    form: BodyForm,
    (label, file): (&str, &str),
    hour: Hour,
    header: &Hash,
    body: &[u8],
    signature: &str,
) -> Result<(), TrustError> {
    let name = hour.rfc3339();
    let field = SignatureField::parse(signature).ok_or_else(|| {
        TrustError::Refused(format!(
            "hour {name}: {label} ({file}): its signature is not 128 hex digits with an \
             optional keyid"
        ))
    })?;
    let key = key_for(trusted, hour, field.key_id)?;
    key.verify_body(form, &name, hour.index(), header, body, &field.signature)
        .map_err(|_| {
            TrustError::Refused(format!(
                "hour {name}: {label} ({file}): its signature does not verify with the key \
                 listed for the hour: the bytes were altered"
            ))
        })
}

/// Whether a paged body names a signing key (its pages carry signatures).
pub fn pages_signed(body: &[u8]) -> bool {
    PagesHeader::parse(body).is_ok_and(|h| h.signed())
}

/// Checks an hour's paged body (section 12, "Huge hours by the page"): well formed, of
/// the hour, and with `trusted`, signed by the key listed for the hour over the hour's
/// verified chain header, every page. Returns its distinct count.
///
/// # Errors
/// [`TrustError::Refused`] naming the file and what is wrong.
pub fn check_pages(
    trusted: Option<&Trusted>,
    entry: &ChainEntry,
    file: &str,
    body: &[u8],
) -> Result<u32, TrustError> {
    let hour = entry.hour;
    let name = hour.rfc3339();
    let refused = |what: String| TrustError::Refused(format!("hour {name}: {file}: {what}"));
    let pages = Pages::from_bytes(body).map_err(|e| refused(format!("malformed ({e})")))?;
    let header = *pages.header();
    if header.hour != hour.index() {
        return Err(refused(format!(
            "its header is of hour index {}, not {}",
            header.hour,
            hour.index()
        )));
    }
    let n = u32::try_from(header.n).map_err(|_| refused(format!("n = {}", header.n)))?;
    let Some(trusted) = trusted else {
        return Ok(n);
    };
    if !header.signed() {
        return Err(refused("its pages are unsigned".into()));
    }
    if header.chain_header != entry.header {
        return Err(refused("its chain header is not the hour's".into()));
    }
    let key = key_for(trusted, hour, Some(KeyId(header.key_id)))?;
    let bytes = header.to_bytes();
    for p in 0..header.pages {
        let range = header.slot_range(p);
        let slot = &body[range.start as usize..range.end as usize];
        let page = pages
            .page(p)
            .map_err(|e| refused(format!("malformed ({e})")))?;
        key.verify_body(
            BodyForm::Page,
            &name,
            hour.index(),
            &header.chain_header,
            &signed_page(&bytes, p, slot),
            &page.signature,
        )
        .map_err(|_| {
            refused(format!(
                "page {p}'s signature does not verify with the key listed for the hour: \
                 the bytes were altered"
            ))
        })?;
    }
    Ok(n)
}

/// A checkpoint as served (`GET /checkpoint`, a mirror's `checkpoint.json`), verified
/// under the trusted key listed for its hour.
///
/// # Errors
/// A malformed checkpoint, a key not trusted, a signature that does not verify.
pub fn verify_checkpoint(trusted: &Trusted, bytes: &[u8]) -> Result<Checkpoint, TrustError> {
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| TrustError::Refused(format!("the checkpoint is not JSON ({e})")))?;
    let bad = || TrustError::Refused(format!("the checkpoint is malformed: {doc}"));
    let hour = doc["hour"]
        .as_str()
        .and_then(|h| Hour::parse_flexible(h).ok())
        .ok_or_else(bad)?;
    let made = doc["made"].as_i64().ok_or_else(bad)?;
    let header = doc["header"]
        .as_str()
        .and_then(chain::parse_hex::<32>)
        .ok_or_else(bad)?;
    let signature = doc["signature"]
        .as_str()
        .and_then(chain::parse_hex::<64>)
        .ok_or_else(bad)?;
    let named = match doc["key_id"].as_str() {
        Some(id) => Some(id.parse::<KeyId>().map_err(|_| bad())?),
        None => None,
    };
    let checkpoint = Checkpoint {
        hour,
        header,
        made,
        signature,
    };
    key_for(trusted, hour, named)?.verify_checkpoint(&checkpoint)?;
    Ok(checkpoint)
}

/// Reads a file of a mirror by URL path (`None`: there is none).
pub type Reader<'r> = &'r dyn Fn(&str) -> Result<Option<Vec<u8>>, TrustError>;

/// The file at `url_path` and its `.gz` copy, those present: (shown name, plain bytes).
fn bodies(
    read: Reader<'_>,
    shown: &dyn Fn(&str) -> String,
    url_path: &str,
) -> Result<Vec<(String, Vec<u8>)>, TrustError> {
    let mut out = Vec::new();
    if let Some(bytes) = read(url_path)? {
        out.push((shown(url_path), bytes));
    }
    let gz = format!("{url_path}.gz");
    if let Some(bytes) = read(&gz)? {
        let name = shown(&gz);
        if !bytes.starts_with(&[0x1f, 0x8b]) {
            return Err(TrustError::Refused(format!("{name}: not gzip")));
        }
        out.push((name.clone(), ungzip(&name, bytes)?));
    }
    Ok(out)
}

/// Checks every file a mirror holds (or is about to write) for the sealed hour of the
/// verified `entry`, read through `read` and named by `shown`: the v1 forms and their
/// `.gz` copies against the entry's digest (a document's count must fit its bits), the
/// derived forms by their `.sig` sidecars over the entry's header when `trusted` is
/// given (each parsed in any case), and each document's count against the `n` of the
/// signed ribbons. Returns the derived forms without a sidecar, as lines.
///
/// # Errors
/// The first file that fails, naming it and what failed.
pub fn check_hour_files(
    trusted: Option<&Trusted>,
    entry: &ChainEntry,
    read: Reader<'_>,
    shown: &dyn Fn(&str) -> String,
) -> Result<Vec<String>, TrustError> {
    let hour = entry.hour;
    let stem = hour.path();
    let (mut counts, mut signed_n, mut unverified) = (Vec::new(), Vec::new(), Vec::new());
    for suffix in V1_FORMS {
        for (file, body) in bodies(read, shown, &format!("{stem}{suffix}"))? {
            let (bytes, meta) = v1_bytes(&file, hour, suffix, &body)?;
            check_digest(&file, hour, &bytes, &entry.digest)?;
            if let Some(meta) = meta {
                counts.push((file, meta.count));
            }
        }
    }
    for (suffix, form) in DERIVED_FORMS {
        let path = format!("{stem}{suffix}");
        for (file, body) in bodies(read, shown, &path)? {
            let (raw, n) = derived_body(&file, suffix, &body)?;
            let Some(trusted) = trusted else {
                continue;
            };
            let sidecar = format!("{path}{SIDECAR}");
            let Some(signature) = read(&sidecar)?.and_then(|b| sidecar_value(&b)) else {
                unverified.push(format!(
                    "{}: {file} has no signature (no {})",
                    hour.rfc3339(),
                    shown(&sidecar)
                ));
                continue;
            };
            let label = (form_label(suffix), file.as_str());
            verify_form(trusted, form, label, hour, &entry.header, &raw, &signature)?;
            if let Some(n) = n {
                signed_n.push((file, n));
            }
        }
    }
    let pages = format!("{stem}.pages");
    if let Some(body) = read(&pages)? {
        let file = shown(&pages);
        let n = check_pages(trusted, entry, &file, &body)?;
        signed_n.push((file, n));
    }
    for (file, count) in &counts {
        for (signed, n) in &signed_n {
            if *count != u64::from(*n) {
                return Err(TrustError::Refused(format!(
                    "hour {}: {file} says count {count}, but the signed {signed} holds {n} \
                     IDs: the count was altered",
                    hour.rfc3339()
                )));
            }
        }
    }
    Ok(unverified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Signer;

    #[test]
    fn a_sidecar_is_the_signature_value_on_one_line_and_reads_back() {
        let value = "ab; keyid=\"0123456789abcdef\"";
        assert_eq!(sidecar_of(value), format!("{value}\n").into_bytes());
        assert_eq!(sidecar_value(&sidecar_of(value)).as_deref(), Some(value));
        assert_eq!(sidecar_value(b"\n  \n"), None);
    }

    #[test]
    fn a_list_without_the_key_given_is_refused_and_no_list_is_the_key_alone() {
        let ours = Signer::from_seed(&[1; 32]).public_key();
        let theirs = Signer::from_seed(&[2; 32]).public_key();
        let doc = serde_json::json!({"public_key": theirs.to_string()});
        let err = trusted_keys(Some(&doc), &ours).unwrap_err().to_string();
        assert!(err.contains(&ours.id().to_string()), "{err}");
        let alone = trusted_keys(None, &ours).unwrap();
        assert_eq!(alone.keys().len(), 1);
        assert_eq!(alone.keys()[0].public_key, ours);
    }

    #[test]
    fn a_lowered_count_is_refused() {
        let mut filter = crate::bloom::Filter::new(crate::bloom::Params::new(1000, 7).unwrap());
        for i in 0..5 {
            filter.insert(&format!("id{i}"));
        }
        check_count("f", 5, &filter).unwrap();
        let err = check_count("f", 0, &filter).unwrap_err().to_string();
        assert!(err.contains("count was altered"), "{err}");
    }
}
