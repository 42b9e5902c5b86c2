//! `bloomcast check`: which of these IDs may have changed since an hour?

use super::{collect_ids, verifying_builder, CliError};
use crate::client::{Answer, ClientError, Coverage, Forms, Strategy};
use crate::hour::{Hour, HourError};
use clap::{Args, ValueEnum};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// Print the IDs that may have changed (exit code 0 whether or not any did; 3 when the
/// source is not shown current, so hours after the last one read may have changed unseen,
/// unless --accept-stale). The hours read are said on stderr (`read FIRST through LAST`);
/// on a terminal, a progress line on stderr meanwhile counts the requests and bytes.
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
    /// Fetch per hour, one union, the closed hours as one version 2 union beside the
    /// open hour (compact), per hour with every closed hour read by the pages the IDs
    /// fall in (pages: HTTP Range on the hour's paged form), or whichever costs fewer
    /// bytes (auto, which also reads a closed hour by the page when that costs less).
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
    /// ribbons, sealed hours read as exact bodies: "exact", also "exacts" when above 0;
    /// of the ribbons, those of version 2, "ribbons2", when above 0; pages read by Range,
    /// "pages", when above 0) instead of lines;
    /// bloomcast-py writes the same fields.
    #[arg(long)]
    json: bool,
    /// Verify everything read against the publisher's public key (64 hex digits; after
    /// rotations, any key it lists: keys are trusted only through successions signed
    /// from it, each hour under the key listed for it): every closed hour (v1 filter or
    /// exact body or ribbon, each by its own signature; one served unsigned is not used),
    /// each version of the open hour (its signature, made within --freshness; one served
    /// unsigned is used and listed unverified), and the publisher's checkpoint; refuse a
    /// tampered one. Reads hour by hour (unions are not signed).
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<crate::chain::PublicKey>,
    /// Exit 0 even when the source is not shown current (its newest hour more than 2
    /// hours behind this machine's clock; with --pubkey, a checkpoint naming a newer
    /// sealed hour, made long ago, or missing). Either way the answer is printed and each
    /// reason said on stderr; without this flag such an answer exits 3.
    #[arg(long)]
    accept_stale: bool,
    /// With --pubkey, how old a version of the open hour may be (its signature says when
    /// it was made): an older one (a replay hiding the changes since) is refused.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    freshness: u64,
    /// Read each page a closed hour's IDs need among N pages (N - 1 chosen at random), so
    /// that whoever serves the pages learns less of which IDs are followed, for N times
    /// the bytes.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pages_cover: u32,
    /// IDs to check; `-` reads one per line from stdin.
    #[arg(required = true)]
    ids: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum StrategyArg {
    Auto,
    Hourly,
    Union,
    Compact,
    Pages,
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
    /// Runs the check, prints the result, then on stderr what it covers; returns the
    /// exit code: 0 answered, 3 answered but the source is not shown current (unless
    /// `--accept-stale`), 1 for a failure, printed as one line on stderr: unreadable IDs,
    /// an unreachable server, an error status (e.g. 404 for a `since` before the
    /// server's first hour, 410 past its retention), hours of the range the server could
    /// not verify ([`ClientError::Corrupt`], naming them), anything refused with
    /// `--pubkey`. With `--json`, a failure is also printed as one JSON object (`error`,
    /// `message`, and for hours the server could not verify, `hours`), so a program
    /// reading stdout never takes it for no change.
    pub async fn run(self) -> ExitCode {
        let json = self.json;
        let accept_stale = self.accept_stale;
        let result = self.check().await;
        if let (true, Err(e)) = (json, &result) {
            if !matches!(e, CliError::StdoutClosed) {
                // Best effort: the failure is said on stderr too.
                let _ = super::outln!("{}", json_error(e));
            }
        }
        match result {
            Ok(coverage) => report(&coverage, accept_stale, !json),
            Err(e) => super::finish(Err(e)),
        }
    }

    async fn check(self) -> Result<Coverage, CliError> {
        let ids = collect_ids(&self.ids)?;
        // Stale answers are returned, said on stderr, and exit 3 here (unless accepted).
        let client = verifying_builder(&self.server, None, self.pubkey, self.fetch_cost)
            .registered(self.registered)
            .freshness(Duration::from_secs(self.freshness))
            .accept_stale(true)
            .pages_cover(self.pages_cover)
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
            StrategyArg::Compact => Strategy::Compact,
            StrategyArg::Pages => Strategy::Pages,
        };
        let forms = if self.exact {
            Forms::Exact
        } else {
            Forms::Auto
        };
        let started = std::time::Instant::now();
        let Answer { changes, coverage } = super::progress::Progress::new()
            .around(
                client.changed_since_covering(&ids, since, strategy, forms),
                || {
                    let stats = client.stats();
                    format!(
                        "checking {} IDs since {}: {} requests, {} bytes, {:.0}s",
                        ids.len(),
                        since.rfc3339(),
                        stats.requests,
                        stats.body_bytes,
                        started.elapsed().as_secs_f64()
                    )
                },
            )
            .await?;
        let hour_names = |hours: &[Hour]| hours.iter().map(|h| h.rfc3339()).collect::<Vec<_>>();

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
                "from": coverage.first.map(Hour::rfc3339),
                "to": coverage.last.map(Hour::rfc3339),
                "changed": changed,
                "ranges": changes.iter().map(|c| json!({
                    "from": c.from.rfc3339(),
                    "to": c.to.rfc3339(),
                    "ids": c.ids,
                })).collect::<Vec<_>>(),
                "requests": stats.requests,
                "bytes": stats.body_bytes,
                "ribbons": stats.ribbons,
                "unverified": coverage.unverified.as_deref().map(hour_names),
                "stale": coverage.stale,
            });
            // "exact" always, as bloomcast-py writes it; "exacts", its first name here,
            // still only when some were (kept for scripts that read it).
            doc["exact"] = json!(stats.exacts);
            if stats.exacts > 0 {
                doc["exacts"] = json!(stats.exacts);
            }
            // Of the ribbons, those of version 2 (`.ribbon2`), when some were.
            if stats.pages > 0 {
                doc["pages"] = json!(stats.pages);
            }
            if stats.ribbons2 > 0 {
                doc["ribbons2"] = json!(stats.ribbons2);
            }
            writeln!(out, "{doc}")
        } else {
            changed.iter().try_for_each(|id| writeln!(out, "{id}"))
        };
        written
            .and_then(|()| out.flush())
            .map_err(super::stdout_error)?;
        Ok(coverage)
    }
}

/// What an answer covers, on stderr after it: the hours read (`human`: the JSON says it
/// otherwise), those unverified, and why the source is not shown current. Returns the
/// exit status: [`STALE`] for a stale answer not accepted, else success.
fn report(coverage: &Coverage, accept_stale: bool, human: bool) -> ExitCode {
    if human {
        match (coverage.first, coverage.last) {
            (Some(first), Some(last)) => eprintln!(
                "bloomcast: read {} through {}",
                first.rfc3339(),
                last.rfc3339()
            ),
            _ => eprintln!("bloomcast: read no hour"),
        }
    }
    if let Some(hours) = coverage.unverified.as_deref().filter(|h| !h.is_empty()) {
        let named: Vec<String> = hours.iter().map(|h| h.rfc3339()).collect();
        eprintln!(
            "bloomcast: unverified (no signature to check): {}",
            named.join(", ")
        );
    }
    let accepted = if accept_stale {
        " (accepted: --accept-stale)"
    } else {
        ""
    };
    for reason in &coverage.stale {
        eprintln!("bloomcast: {reason}{accepted}");
    }
    if coverage.stale.is_empty() || accept_stale {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(STALE)
    }
}

/// The exit status of an answer whose source is not shown current (not accepted).
pub const STALE: u8 = 3;

/// A failure as `check --json` prints it.
fn json_error(e: &CliError) -> serde_json::Value {
    let code = match e {
        CliError::Client(ClientError::Status { code, .. }) => code.as_str(),
        CliError::Client(ClientError::Corrupt { .. }) => "corrupt",
        CliError::Client(ClientError::Transport(_)) => "transport",
        CliError::Client(ClientError::Decode(_)) => "decode",
        CliError::Client(ClientError::Unverified(_) | ClientError::Unsigned { .. }) => "unverified",
        CliError::Client(ClientError::Stale(_)) => "stale",
        CliError::Client(ClientError::Protocol(_)) => "protocol",
        CliError::Client(ClientError::Argument(_) | ClientError::Url(_)) | CliError::Input(_) => {
            "argument"
        }
        CliError::Mirror(_) | CliError::Io { .. } | CliError::StdoutClosed => "io",
    };
    let mut doc = json!({ "error": code, "message": e.to_string() });
    if let CliError::Client(ClientError::Corrupt { hours }) = e {
        doc["hours"] = json!(hours.iter().map(|h| h.rfc3339()).collect::<Vec<_>>());
    }
    doc
}
