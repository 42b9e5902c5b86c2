//! `bloomcast mirror DIR --url BASE [--pubkey KEY] [--follow]`: a static copy of a
//! server's sealed hours for any file server (see [`crate::mirror`], docs/DEPLOY.md).

use super::CliError;
use crate::chain::PublicKey;
use crate::mirror::{Mirror, Summary};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Write every sealed hour in every form (each signed form's signature as a `.sig`
/// sidecar), the chain pages, the index, the well-known document and the checkpoint
/// (`checkpoint.json`) into DIR, laid out as the URLs; hours already there are not
/// written again. On a terminal, a progress line on stderr counts the hours written.
#[derive(Debug, Args)]
pub struct MirrorArgs {
    /// The mirror directory (created if missing); serve it with nginx (deploy/
    /// nginx-mirror.conf) or upload it to an object store.
    dir: PathBuf,
    /// The server to mirror, e.g. http://127.0.0.1:8080.
    #[arg(long, alias = "server", env = "BLOOMCAST_SERVER")]
    url: String,
    /// Mirror only what verifies against the publisher's public key (64 hex digits): its
    /// key list (trusted from this key through signed successions), chain, checkpoint
    /// and every form of each hour, each checked before the hour's first file is
    /// written; a mismatch refuses the hour, nothing of it written (exit 1).
    #[arg(long, value_parser = super::verify::parse_pubkey)]
    pubkey: Option<PublicKey>,
    /// Keep the mirror current: a pass every --interval seconds until interrupted.
    #[arg(long)]
    follow: bool,
    /// Seconds between passes with --follow.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    interval: u64,
}

impl MirrorArgs {
    /// Runs one pass, or passes until Ctrl-C or SIGTERM with `--follow`; prints one
    /// line per pass that wrote something (always for the first).
    ///
    /// # Errors
    /// A refused directory (not writable, another service's mirror), a failing
    /// verification, an unreachable server (without `--follow`; with it, the pass is
    /// retried at the next interval).
    pub async fn run(self) -> Result<(), CliError> {
        let mirror = Mirror::new(self.dir.clone(), &self.url, self.pubkey)?;
        let summary = pass(&mirror).await?;
        self.print(&summary)?;
        if !self.follow {
            return Ok(());
        }
        let stop = crate::startup::shutdown_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return Ok(()),
                () = tokio::time::sleep(Duration::from_secs(self.interval)) => {}
            }
            match pass(&mirror).await {
                Ok(summary) if summary.files > 0 => self.print(&summary)?,
                Ok(_) => {}
                Err(e) if e.is_transient() => {
                    tracing::warn!(error = %e, "mirror pass failed; retrying at the next interval");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn print(&self, s: &Summary) -> Result<(), CliError> {
        let newest = s.newest.map_or("none".to_owned(), |h| h.rfc3339());
        super::outln!(
            "mirrored {} new hours into {} ({} files, {} bytes); {} already there; newest {newest}",
            s.written,
            self.dir.display(),
            s.files,
            s.bytes,
            s.kept
        )
    }
}

/// One pass, with a progress line on a terminal: hours written of those to write.
async fn pass(mirror: &Mirror) -> Result<Summary, crate::mirror::MirrorError> {
    let mut progress = super::progress::Progress::new();
    let started = std::time::Instant::now();
    let summary = mirror
        .pass_reporting(|done, todo| {
            progress.show(|| {
                let secs = started.elapsed().as_secs_f64();
                format!("mirrored {done} of {todo} new hours in {secs:.0}s")
            });
        })
        .await;
    progress.clear();
    summary
}
