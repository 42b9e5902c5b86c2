//! The exact form in the CLI (docs/PROTOCOL.md section 14): `bloomcast inspect` of a
//! `.exact` URL (checked against its headers and, with `--pubkey`, verified) or of a file
//! holding an exact body (it starts with `BCX1`).

use super::{verifying_client, CliError};
use crate::exact::Exact;
use crate::hour::Hour;
use serde_json::json;

/// An exact body, with the hour it answers for when its source says (a URL does).
pub(super) type Loaded = (Option<Hour>, Exact);

/// The exact body at `target`, when it is one: a URL whose path ends in `.exact`, or a
/// file that starts with `BCX1`. `None` for anything else.
pub(super) async fn load(
    target: &str,
    pubkey: Option<crate::chain::PublicKey>,
) -> Result<Option<Loaded>, CliError> {
    if target.starts_with("http://") || target.starts_with("https://") {
        let url = reqwest::Url::parse(target)
            .map_err(|_| CliError::Input(format!("bad URL {target:?}")))?;
        let Some(stem) = url.path().strip_suffix(".exact") else {
            return Ok(None);
        };
        let hour = Hour::parse_path(stem).map_err(|_| {
            CliError::Input(format!(
                "{target}: the exact form is an hour's only: /YYYY/MM/DD/HH.exact"
            ))
        })?;
        let base =
            &target[..target.len() - url.path().len() - url.query().map_or(0, |q| q.len() + 1)];
        let client = verifying_client(base, None, pubkey, crate::client::DEFAULT_FETCH_COST)?;
        return match client.exact(hour).await? {
            Some(exact) => Ok(Some((Some(hour), (*exact).clone()))),
            None => Err(CliError::Input(format!(
                "{target}: the server has no exact body for this hour (404: no universe, \
                 or an hour before its exact_since)"
            ))),
        };
    }
    let Ok(bytes) = std::fs::read(target) else {
        // Unreadable: the Bloom path reads it and says what is wrong.
        return Ok(None);
    };
    if !bytes.starts_with(b"BCX1") {
        return Ok(None);
    }
    let exact = Exact::from_bytes(&bytes).map_err(|e| CliError::Input(format!("{target}: {e}")))?;
    Ok(Some((None, exact)))
}

/// Prints what an exact body says about itself, as `inspect` does for filters (and,
/// verified, how).
pub(super) fn print(
    (hour, exact): &Loaded,
    as_json: bool,
    verified: Option<&str>,
) -> Result<(), super::CliError> {
    let [rows_a, rows_b, rows_r] = exact.rows();
    let [seed_a, seed_b, seed_r] = exact.seeds();
    let fields = [
        ("structure", json!("exact")),
        // The body says nothing of its time; its URL does.
        ("covers", json!(hour.map(|h| h.rfc3339()))),
        ("universe", json!(exact.universe())),
        ("changed", json!(exact.changed_count())),
        // Version 2: the systems hold the unchanged IDs (more than half changed).
        ("complemented", json!(exact.complemented())),
        ("k", json!(exact.k())),
        ("split", json!(exact.split())),
        (
            "rows",
            json!({"a": rows_a, "b": rows_b, "retrieval": rows_r}),
        ),
        (
            "seeds",
            json!({"a": seed_a, "b": seed_b, "retrieval": seed_r}),
        ),
        ("bytes", json!(exact.byte_len())),
        ("header_bytes", json!(exact.header_len())),
        (
            "floor_bytes",
            json!((crate::exact::floor_bits(
                u64::from(exact.universe()),
                u64::from(exact.changed_count())
            ) / 8.0)
                .ceil()),
        ),
        ("fpp", json!(0)),
    ];
    let verified = verified.map(|v| ("verified", json!(v)));
    super::inspect::print_fields(
        fields.into_iter().chain(verified),
        as_json,
        "unknown (file)",
    )
}
