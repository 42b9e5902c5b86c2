//! `bloomcast history`: in which hours may these IDs have changed?

use super::{collect_ids, CliError};
use crate::client::{default_cache_dir, Client};
use crate::hour::Hour;
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// Print, per ID, the hours whose filter holds it: `ID<TAB>HOUR HOUR ...` (RFC 3339).
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (or 127.0.0.1:8080).
    #[arg(long, env = "BLOOMCAST_SERVER")]
    server: String,
    /// The first hour to look at, e.g. 2008-09-03T05 (UTC) [default: the oldest the
    /// server has].
    #[arg(long, value_parser = super::check::parse_hour)]
    since: Option<Hour>,
    /// Where complete hours' filters are kept between runs, so a second call fetches only
    /// new hours [default: $XDG_CACHE_HOME/bloomcast, else ~/.cache/bloomcast].
    #[arg(long, env = "BLOOMCAST_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Keep nothing on disk.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Print one JSON object (per-ID hours, requests and cache hits) instead of lines.
    #[arg(long)]
    json: bool,
    /// IDs to look up; `-` reads one per line from stdin.
    #[arg(required = true)]
    ids: Vec<String>,
}

impl HistoryArgs {
    /// Looks the IDs up and prints the result.
    ///
    /// # Errors
    /// Unreadable IDs, an unreachable server, an error status, a `since` in the future.
    pub async fn run(self) -> Result<(), CliError> {
        let ids = collect_ids(&self.ids)?;
        let mut builder = Client::builder(&self.server);
        if !self.no_cache {
            if let Some(dir) = self.cache_dir.or_else(default_cache_dir) {
                builder = builder.cache_dir(dir);
            }
        }
        let client = builder.build()?;
        // The client clamps an early hour to the oldest the server still has.
        let since = self.since.unwrap_or(Hour::from_index(0));
        let history = client.history(&ids, since).await?;
        let mut out = std::io::stdout().lock();
        let written = if self.json {
            let stats = client.stats();
            let doc = json!({
                "server": client.base(),
                "ids": history.iter().map(|h| json!({
                    "id": h.id,
                    "hours": h.hours.iter().map(|h| h.rfc3339()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "requests": stats.requests,
                "cache_hits": stats.cache_hits,
            });
            writeln!(out, "{doc}")
        } else {
            history.iter().try_for_each(|h| {
                let hours: Vec<String> = h.hours.iter().map(|h| h.rfc3339()).collect();
                writeln!(out, "{}\t{}", h.id, hours.join(" "))
            })
        };
        written.map_err(super::stdout_error)
    }
}
