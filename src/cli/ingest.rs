//! `bloomcast ingest`: stream IDs to the server in batches, retrying transient failures.

use super::{check_id, client, read_ids, CliError};
use crate::client::{PublishOptions, PublishSummary};
use clap::Args;
use std::time::Instant;
use tokio::sync::mpsc;

/// Publish IDs (from arguments, or `-` for stdin) into the server's current hour.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (or 127.0.0.1:8080).
    #[arg(long, env = "BLOOMCAST_SERVER")]
    server: String,
    /// A bearer token the server accepts (one of its ingest_tokens, or the one it
    /// generated into <data_dir>/ingest-token, data/ingest-token by default).
    #[arg(long, env = "BLOOMCAST_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// IDs per request.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    batch: u32,
    /// Attempts per batch before giving up on transient failures (503, timeouts).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    attempts: u32,
    /// IDs to publish; `-` reads one per line from stdin.
    #[arg(required = true)]
    ids: Vec<String>,
}

/// Where a token comes from, for a user who has none at hand.
const NO_TOKEN: &str = "no ingest token: pass --token or set BLOOMCAST_TOKEN. A server \
    without ingest_tokens configured generated one on its first start into \
    <data_dir>/ingest-token: export BLOOMCAST_TOKEN=$(cat data/ingest-token)";

type Batch = Result<Vec<String>, CliError>;

impl IngestArgs {
    /// Streams the IDs and prints a summary on stderr.
    ///
    /// # Errors
    /// An unreadable or invalid ID (batches before it are published), a rejected
    /// token, or a batch still failing after every attempt. The message says how many
    /// IDs were acknowledged before.
    pub async fn run(self) -> Result<(), CliError> {
        let Some(token) = self.token.as_deref() else {
            return Err(CliError::Input(NO_TOKEN.into()));
        };
        let client = client(&self.server, Some(token))?;
        let options = PublishOptions {
            attempts: self.attempts,
            ..PublishOptions::default()
        };
        let (tx, mut rx) = mpsc::channel::<Batch>(2);
        let (sources, size) = (self.ids, self.batch as usize);
        // Reading stdin blocks: do it on its own thread, a couple of batches ahead.
        let reader = tokio::task::spawn_blocking(move || batch_sources(&sources, size, &tx));

        let started = Instant::now();
        let mut total = PublishSummary::default();
        let mut progress = super::progress::Progress::new();
        while let Some(batch) = rx.recv().await {
            let published = match batch {
                Ok(batch) => client.publish(&batch, &options).await,
                Err(e) => {
                    progress.clear();
                    return Err(with_total(e, &total));
                }
            };
            match published {
                Ok(summary) => total.absorb(summary),
                Err(e) => {
                    progress.clear();
                    return Err(with_total(e.into(), &total));
                }
            }
            progress.show(|| {
                let rate = total.ids as f64 / started.elapsed().as_secs_f64().max(1e-3);
                format!(
                    "ingested {} IDs in {} requests, {} retries, {rate:.0} IDs/s",
                    total.ids, total.requests, total.retries
                )
            });
        }
        let _ = reader.await;
        progress.clear();
        let hours: Vec<String> = total
            .hours
            .iter()
            .map(|(h, n)| format!("{h}: {n}"))
            .collect();
        eprintln!(
            "ingested {} IDs in {} requests ({} retries) in {:.1}s; by hour: {}",
            total.ids,
            total.requests,
            total.retries,
            started.elapsed().as_secs_f64(),
            if hours.is_empty() {
                "none".into()
            } else {
                hours.join(", ")
            }
        );
        Ok(())
    }
}

fn with_total(e: CliError, total: &PublishSummary) -> CliError {
    CliError::Input(format!(
        "{e} ({} IDs were acknowledged before this; the rest were not)",
        total.ids
    ))
}

/// Cuts the arguments (with `-` expanded to stdin's lines) into batches.
fn batch_sources(sources: &[String], size: usize, tx: &mpsc::Sender<Batch>) {
    let mut batch = Vec::with_capacity(size);
    let mut push = |id: String| -> Result<(), CliError> {
        batch.push(id);
        if batch.len() == size {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(size));
            tx.blocking_send(Ok(full))
                .map_err(|_| CliError::Input("publishing stopped".into()))?;
        }
        Ok(())
    };
    let result = sources.iter().try_for_each(|source| {
        if source == "-" {
            read_ids(std::io::stdin().lock(), &mut push)
        } else {
            check_id(source).map_err(|e| CliError::Input(format!("{source:?} {e}")))?;
            push(source.clone())
        }
    });
    let last = match result {
        Ok(()) => Ok(std::mem::take(&mut batch)),
        Err(e) => {
            // What was read before the bad line still goes out, then the error.
            let _ = tx.blocking_send(Ok(std::mem::take(&mut batch)));
            Err(e)
        }
    };
    let _ = tx.blocking_send(last);
}
