//! The compact (ribbon) form in the CLI: `bloomcast inspect` of a `.ribbon` URL or of a
//! file holding a ribbon body (it starts with `BCR1`).

use super::CliError;
use crate::bloom::Ribbon;
use serde_json::json;

/// The ribbon at `target`, when it is one: a URL whose path ends in `.ribbon`, or a file
/// starting with the ribbon magic. `None` for anything else (a Bloom filter).
pub(super) async fn load(target: &str) -> Result<Option<Ribbon>, CliError> {
    let bad = |e: crate::bloom::FilterError| CliError::Input(format!("{target}: {e}"));
    if target.starts_with("http://") || target.starts_with("https://") {
        let url = reqwest::Url::parse(target)
            .map_err(|_| CliError::Input(format!("bad URL {target:?}")))?;
        if !url.path().ends_with(".ribbon") {
            return Ok(None);
        }
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
        return Ribbon::from_bytes(&body).map(Some).map_err(bad);
    }
    match std::fs::read(target) {
        Ok(bytes) if bytes.starts_with(b"BCR1") => {
            Ribbon::from_bytes(&bytes).map(Some).map_err(bad)
        }
        // Not a ribbon, or unreadable: the Bloom path reads it and says what is wrong.
        _ => Ok(None),
    }
}

/// Prints what a ribbon says about itself, as `inspect` does for Bloom filters.
pub(super) fn print(ribbon: &Ribbon, as_json: bool) {
    let fields = [
        ("structure", json!("ribbon")),
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
    if as_json {
        let object: serde_json::Map<String, serde_json::Value> = fields
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        println!("{}", serde_json::Value::Object(object));
    } else {
        for (name, value) in fields {
            let shown = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            println!("{name:<16}{shown}");
        }
    }
}
