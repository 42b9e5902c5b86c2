//! `bloomcast check`: which of these IDs may have changed since an hour?

use super::{collect_ids, verifying_builder, CliError};
use crate::client::{ClientError, Forms, Strategy};
use crate::hour::{Hour, HourError};
use clap::{Args, ValueEnum};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;

/// Print the IDs that may have changed (exit code 0 whether or not any did).
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (or 127.0.0.1:8080).
    #[arg(long, env = "BLOOMCAST_SERVER")]
    server: String,
    /// The first hour to look at, e.g. 2008-09-03T05 (UTC).
    #[arg(long, conflicts_with = "hours", value_parser = parse_hour)]
    since: Option<Hour>,
    /// Look at the last N hours, the current one included [default: 24].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    hours: Option<u32>,
    /// Fetch per hour, one union, or whichever costs fewer bytes.
    #[arg(long, value_enum, default_value = "auto")]
    strategy: StrategyArg,
    /// What fetching one resource costs, in bytes: each closed hour is read in the form
    /// (v1 Bloom, ribbon, or from the server's exact_since with its exact body, which
    /// wastes none among registered IDs) and precision minimising filter bytes plus the
    /// expected wasted fetches, IDs checked × fpp × BYTES.
    #[arg(long, value_name = "BYTES", default_value_t = crate::client::DEFAULT_FETCH_COST)]
    fetch_cost: u64,
    /// Read every sealed hour from the server's exact_since with its exact body: no false
    /// positive among the IDs of the publisher's universe. Without --registered, each
    /// exact body refines an approximate form of its hour at the server's target fpp or
    /// under (an ID is flagged when both say so), so any other ID is flagged at most at
    /// the target. Reads hour by hour; earlier hours and the open one as usual. Fails when
    /// the server has no universe (its publisher never called POST /universe).
    #[arg(long)]
    exact: bool,
    /// Declare every ID checked registered in the publisher's universe (POST /universe)
    /// before the first hour checked: exact bodies are then read alone. An exact body
    /// answers an ID outside the universe arbitrarily, and the universe is never
    /// published, so without this flag each one only refines an approximate form.
    #[arg(long)]
    registered: bool,
    /// Print one JSON object (per-hour results, requests, bytes, closed hours read as
    /// ribbons and, when any were, sealed hours read as exact bodies: "exacts") instead
    /// of lines.
    #[arg(long)]
    json: bool,
    /// Verify every closed hour (v1 filter or exact body) against the publisher's public
    /// key (64 hex digits; after rotations, any key it lists: each hour under the key
    /// listed for it) and refuse a tampered one; reads hour by hour and no ribbons (unions
    /// and ribbons are not signed).
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<crate::chain::PublicKey>,
    /// IDs to check; `-` reads one per line from stdin.
    #[arg(required = true)]
    ids: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum StrategyArg {
    Auto,
    Hourly,
    Union,
}

pub(super) fn parse_hour(s: &str) -> Result<Hour, String> {
    Hour::parse_flexible(s).map_err(|e| match e {
        // The parser's own message shows its normalised text, not what was typed.
        HourError::Malformed(_) => {
            format!("{s:?} is not an hour: expected e.g. 2008-09-03T05 (UTC), 2008-09-03T05:00:00Z or 2008/09/03/05")
        }
        other => format!("{s:?}: {other}"),
    })
}

impl CheckArgs {
    /// Runs the check and prints the result; with `--json`, a failure is also printed
    /// as one JSON object (`error`, `message`, and for hours the server could not
    /// verify, `hours`), so a program reading stdout never takes it for no change.
    ///
    /// # Errors
    /// Unreadable IDs, an unreachable server, an error status (e.g. 404 for a `since`
    /// before the server's first hour, 410 past its retention), hours of the range the
    /// server could not verify ([`ClientError::Corrupt`], naming them).
    pub async fn run(self) -> Result<(), CliError> {
        let json = self.json;
        let result = self.check().await;
        if let (true, Err(e)) = (json, &result) {
            println!("{}", json_error(e));
        }
        result
    }

    async fn check(self) -> Result<(), CliError> {
        let ids = collect_ids(&self.ids)?;
        let client = verifying_builder(&self.server, None, self.pubkey, self.fetch_cost)
            .registered(self.registered)
            .build()?;
        let since = match self.since {
            Some(hour) => hour,
            None => {
                // A window of hours reaching back before the server's first hour, or
                // past its retention, starts at the oldest hour it can answer for.
                let window = client.index().await?.window(self.hours.unwrap_or(24))?;
                if window.clamped {
                    eprintln!(
                        "bloomcast: note: the server has hours from {} on; checking from there",
                        window.since.rfc3339()
                    );
                }
                window.since
            }
        };
        let strategy = match self.strategy {
            StrategyArg::Auto => Strategy::Auto,
            StrategyArg::Hourly => Strategy::Hourly,
            StrategyArg::Union => Strategy::Union,
        };
        let forms = if self.exact {
            Forms::Exact
        } else {
            Forms::Auto
        };
        let changes = client
            .changed_since_in(&ids, since, strategy, forms)
            .await?;

        // Each ID once, in the order given, however many hours it appears in.
        let flagged: HashSet<&str> = changes
            .iter()
            .flat_map(|c| c.ids.iter().map(String::as_str))
            .collect();
        let mut seen = HashSet::new();
        let changed: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| flagged.contains(id) && seen.insert(*id))
            .collect();

        let mut out = std::io::stdout().lock();
        let written = if self.json {
            let stats = client.stats();
            let mut doc = json!({
                "server": client.base(),
                "since": since.rfc3339(),
                "checked": ids.len(),
                "changed": changed,
                "ranges": changes.iter().map(|c| json!({
                    "from": c.from.rfc3339(),
                    "to": c.to.rfc3339(),
                    "ids": c.ids,
                })).collect::<Vec<_>>(),
                "requests": stats.requests,
                "bytes": stats.body_bytes,
                "ribbons": stats.ribbons,
            });
            // Only when some were: the output of a server without a universe is as before.
            if stats.exacts > 0 {
                doc["exacts"] = json!(stats.exacts);
            }
            // Of the ribbons, those of version 2 (`.ribbon2`), when some were.
            if stats.ribbons2 > 0 {
                doc["ribbons2"] = json!(stats.ribbons2);
            }
            writeln!(out, "{doc}")
        } else {
            changed.iter().try_for_each(|id| writeln!(out, "{id}"))
        };
        written.map_err(|source| CliError::Io {
            context: "cannot write to stdout".into(),
            source,
        })
    }
}

/// A failure as `check --json` prints it.
fn json_error(e: &CliError) -> serde_json::Value {
    let code = match e {
        CliError::Client(ClientError::Status { code, .. }) => code.as_str(),
        CliError::Client(ClientError::Corrupt { .. }) => "corrupt",
        CliError::Client(ClientError::Transport(_)) => "transport",
        CliError::Client(ClientError::Decode(_)) => "decode",
        CliError::Client(ClientError::Unverified(_)) => "unverified",
        CliError::Client(ClientError::Protocol(_)) => "protocol",
        CliError::Client(ClientError::Argument(_) | ClientError::Url(_)) | CliError::Input(_) => {
            "argument"
        }
        CliError::Mirror(_) | CliError::Io { .. } => "io",
    };
    let mut doc = json!({ "error": code, "message": e.to_string() });
    if let CliError::Client(ClientError::Corrupt { hours }) = e {
        doc["hours"] = json!(hours.iter().map(|h| h.rfc3339()).collect::<Vec<_>>());
    }
    doc
}
