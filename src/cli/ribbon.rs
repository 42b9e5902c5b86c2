//! The compact (ribbon) form in the CLI: `bloomcast inspect` of a `.ribbon`,
//! `.ribbon.json` or `.ribbon2` URL, or of a file holding a ribbon body (it starts with
//! `BCR1` or `BCR2`) or its JSON document (`"structure": "ribbon"`, optionally
//! gzip-compressed).

use super::CliError;
use crate::bloom::{Ribbon, Ribbon2};
use crate::wire::{decode_compact, Meta};
use serde_json::json;
use std::io::Read;

/// A ribbon, with its metadata when its form carries any (the JSON form does).
pub(super) type Loaded = (Option<Meta>, Ribbon);

/// The body at `url` (of `target`, as the user wrote it), an error status as an error.
/// Sent without Accept-Encoding: a JSON form comes as identity bytes.
async fn fetch(target: &str, url: reqwest::Url) -> Result<bytes::Bytes, CliError> {
    let response = reqwest::get(url)
        .await
        .map_err(|e| CliError::Input(format!("{target}: {e}")))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| CliError::Input(format!("{target}: {e}")))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(CliError::Input(format!("{target}: {status}: {text}")));
    }
    Ok(body)
}

/// The version 2 ribbon at `target`, when it is one: a URL whose path ends in
/// `.ribbon2`, or a file holding its body. `None` for anything else.
pub(super) async fn load_v2(target: &str) -> Result<Option<Ribbon2>, CliError> {
    let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{target}: {e}"));
    if target.starts_with("http://") || target.starts_with("https://") {
        let url = reqwest::Url::parse(target)
            .map_err(|_| CliError::Input(format!("bad URL {target:?}")))?;
        if !url.path().ends_with(".ribbon2") {
            return Ok(None);
        }
        let body = fetch(target, url).await?;
        return Ribbon2::from_bytes(&body).map(Some).map_err(bad);
    }
    match std::fs::read(target) {
        Ok(bytes) if bytes.starts_with(b"BCR2") => {
            Ribbon2::from_bytes(&bytes).map(Some).map_err(bad)
        }
        _ => Ok(None),
    }
}

/// Prints what a version 2 ribbon says about itself (and, verified, how).
pub(super) fn print_v2(
    ribbon: &Ribbon2,
    as_json: bool,
    verified: Option<&str>,
) -> Result<(), super::CliError> {
    let grade = ribbon.grade();
    let (shards_a, shards_b) = ribbon.shard_counts();
    let floor = f64::from(ribbon.n()) * (1.0 / ribbon.fpp()).log2() / 8.0;
    let fields = [
        ("structure", json!("ribbon2")),
        ("count", json!(ribbon.n())),
        ("k", json!(grade.k)),
        ("split", json!(grade.split)),
        ("shards", json!([shards_a, shards_b])),
        ("rows", json!(ribbon.rows())),
        ("hash", json!(crate::bloom::SHA1_KM32)),
        ("bytes", json!(ribbon.byte_len())),
        (
            "bits_per_id",
            json!(ribbon.byte_len() as f64 * 8.0 / f64::from(ribbon.n().max(1))),
        ),
        (
            "of_floor",
            json!((floor > 0.0).then(|| ribbon.byte_len() as f64 / floor)),
        ),
        ("fpp", json!(ribbon.fpp())),
    ];
    let verified = verified.map(|v| ("verified", json!(v)));
    super::inspect::print_fields(
        fields.into_iter().chain(verified),
        as_json,
        "unknown (binary body)",
    )
}

/// The ribbon at `target`, when it is one: a URL whose path ends in `.ribbon` or
/// `.ribbon.json`, or a file holding either form. `None` for anything else (a Bloom
/// filter).
pub(super) async fn load(target: &str) -> Result<Option<Loaded>, CliError> {
    let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{target}: {e}"));
    if target.starts_with("http://") || target.starts_with("https://") {
        let url = reqwest::Url::parse(target)
            .map_err(|_| CliError::Input(format!("bad URL {target:?}")))?;
        if !url.path().ends_with(".ribbon") && !url.path().ends_with(".ribbon.json") {
            return Ok(None);
        }
        let body = fetch(target, url).await?;
        return decode_compact(&body).map(Some).map_err(bad);
    }
    let Ok(mut bytes) = std::fs::read(target) else {
        // Unreadable: the Bloom path reads it and says what is wrong.
        return Ok(None);
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        if flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .is_err()
        {
            return Ok(None);
        }
        bytes = plain;
    }
    if bytes.starts_with(b"BCR1") || is_ribbon_document(&bytes) {
        return decode_compact(&bytes).map(Some).map_err(bad);
    }
    // Not a ribbon: the Bloom path reads it.
    Ok(None)
}

/// Whether a file is the compact form's JSON document (not a v1 Bloom document).
fn is_ribbon_document(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        structure: Option<String>,
    }
    serde_json::from_slice::<Probe>(bytes)
        .is_ok_and(|p| p.structure.as_deref() == Some(crate::wire::RIBBON_STRUCTURE))
}

/// Prints what a ribbon says about itself, as `inspect` does for Bloom filters (and,
/// verified, how).
pub(super) fn print(
    (meta, ribbon): &Loaded,
    as_json: bool,
    verified: Option<&str>,
) -> Result<(), super::CliError> {
    // The binary body says nothing of its time; its JSON form does.
    let covers = super::inspect::covers(meta.as_ref());
    let fields = [
        ("structure", json!("ribbon")),
        ("covers", json!(covers)),
        ("complete", json!(meta.as_ref().map(|m| m.complete))),
        ("count", json!(ribbon.n())),
        ("m", json!(ribbon.m())),
        ("r", json!(ribbon.r())),
        ("seed", json!(ribbon.seed())),
        ("hash", json!(crate::bloom::SHA1_KM32)),
        ("bytes", json!(ribbon.byte_len())),
        (
            "bits_per_id",
            json!(ribbon.byte_len() as f64 * 8.0 / f64::from(ribbon.n().max(1))),
        ),
        ("fpp", json!(ribbon.fpp())),
    ];
    let verified = verified.map(|v| ("verified", json!(v)));
    super::inspect::print_fields(
        fields.into_iter().chain(verified),
        as_json,
        "unknown (binary body)",
    )
}
