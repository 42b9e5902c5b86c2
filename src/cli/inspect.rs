//! `bloomcast inspect`: a filter's parameters, count (exact and estimated), fill and
//! fpp, from a URL or a file.

use super::{verifying_client, CliError};
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
    /// Verify a closed hour (or its exact body) fetched from a URL against the
    /// publisher's public key.
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<crate::chain::PublicKey>,
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
        if let Some(exact) = super::exact::load(&self.target, self.pubkey).await? {
            super::exact::print(&exact, self.json);
            return Ok(());
        }
        if let Some(ribbon) = super::ribbon::load_v2(&self.target).await? {
            super::ribbon::print_v2(&ribbon, self.json);
            return Ok(());
        }
        if let Some(ribbon) = super::ribbon::load(&self.target).await? {
            super::ribbon::print(&ribbon, self.json);
            return Ok(());
        }
        let (meta, filter) = load(&self.target, self.raw.get(), self.pubkey).await?;
        // A raw file says nothing about its time or exact count.
        let covers = covers(meta.as_ref());
        let fields: Vec<(&str, serde_json::Value)> = vec![
            ("covers", json!(covers)),
            ("complete", json!(meta.as_ref().map(|m| m.complete))),
            ("count", json!(meta.as_ref().map(|m| m.count))),
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
        print_fields(fields, self.json, "unknown (raw file)");
        Ok(())
    }
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
) {
    if as_json {
        let object: serde_json::Map<String, serde_json::Value> = fields
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        println!("{}", serde_json::Value::Object(object));
        return;
    }
    for (name, value) in fields {
        let shown = match value {
            serde_json::Value::Null => unknown.to_owned(),
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        println!("{name:<16}{shown}");
    }
}

/// A filter from a URL or a file (raw files need `(m, k)`), with its metadata when
/// the source carries any.
pub(super) async fn load(
    target: &str,
    raw: Option<(u64, u64)>,
    pubkey: Option<crate::chain::PublicKey>,
) -> Result<(Option<Meta>, Filter), CliError> {
    if target.starts_with("http://") || target.starts_with("https://") {
        fetch(target, pubkey).await
    } else {
        read_file(target, raw)
    }
}

async fn fetch(
    url: &str,
    pubkey: Option<crate::chain::PublicKey>,
) -> Result<(Option<Meta>, Filter), CliError> {
    let parsed =
        reqwest::Url::parse(url).map_err(|_| CliError::Input(format!("bad URL {url:?}")))?;
    let base = &url[..url.len() - parsed.path().len() - parsed.query().map_or(0, |q| q.len() + 1)];
    let fetched = verifying_client(base, None, pubkey, crate::client::DEFAULT_FETCH_COST)?
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
