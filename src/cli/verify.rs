//! `bloomcast verify --pubkey KEY --since HOUR (--url BASE | --dir DIR)`: checks a whole
//! range of the hour chain, and every listed hour's filter, from any base URL (a
//! mirror), or a static mirror's directory offline (`--dir DIR`, `--url file:///DIR`):
//! there every file of each hour too. The publisher's checkpoint is verified and the
//! source judged as the Python client's `verify` judges it: exit 3 when it is not shown
//! current, unless `--accept-stale`.

use super::check::parse_hour;
use super::CliError;
use crate::chain::{Checkpoint, PublicKey};
use crate::client::{checkpoint_reasons, lag_reason, no_checkpoint_reason, Client};
use crate::hour::Hour;
use crate::mirror::{trust, MirrorDir};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// The exit code of an answer whose source is not shown current.
const STALE: u8 = 3;

/// Verify the hour chain and every hour's filter against the publisher's key.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The publisher's public key (64 hex digits; `/.well-known/bloomcast.json` of the
    /// publisher, or its startup log). After key rotations, any key the publisher lists:
    /// each hour is verified under the key listed for it, trusted only through the
    /// successions this key signed.
    #[arg(long, value_parser = parse_pubkey)]
    pubkey: PublicKey,
    /// The first hour to verify, e.g. 2008-09-03T05 (UTC).
    #[arg(long, value_parser = parse_hour)]
    since: Hour,
    /// Where to read from: the publisher or any mirror of it; file:///DIR for a static
    /// mirror's directory (as --dir).
    #[arg(long, alias = "server", env = "BLOOMCAST_SERVER")]
    url: Option<String>,
    /// A static mirror's directory (bloomcast mirror), verified offline: the chain
    /// pages, every file of each hour (the v1 forms and their .gz copies against the
    /// chain, the signed forms by their .sig sidecars) and checkpoint.json. A file that
    /// cannot be verified is listed and makes it exit 1.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Exit 0 even when the source is not shown current (its newest hour older than
    /// the publication lag bound of 2 hours, behind or without the publisher's signed
    /// checkpoint); it is still said on stderr.
    #[arg(long)]
    accept_stale: bool,
}

pub(super) fn parse_pubkey(s: &str) -> Result<PublicKey, String> {
    s.parse()
        .map_err(|e: crate::chain::ChainError| e.to_string())
}

/// What was verified, and why the source is not shown current.
struct Verified {
    hours: Vec<Hour>,
    header: Option<crate::chain::Hash>,
    stale: Vec<String>,
}

impl VerifyArgs {
    /// Runs the verb: exit 0 when everything verified and the source is shown current,
    /// 3 when it verified but is stale (unless `--accept-stale`), 1 on a failure.
    pub async fn exit(self) -> ExitCode {
        match self.run().await {
            Ok(code) => code,
            Err(e) => super::finish(Err(e)),
        }
    }

    /// Verifies and prints one line per verified hour, then a summary; why the source
    /// is stale on stderr.
    ///
    /// # Errors
    /// The first hour, file, key list or checkpoint that fails verification (named), a
    /// file that cannot be verified, an unreachable server, an error status.
    pub async fn run(self) -> Result<ExitCode, CliError> {
        let dir = match (&self.dir, self.url.as_deref()) {
            (Some(dir), _) => Some(dir.clone()),
            (None, Some(url)) if url.starts_with("file://") => {
                let path = reqwest::Url::parse(url)
                    .ok()
                    .and_then(|u| u.to_file_path().ok())
                    .ok_or_else(|| CliError::Input(format!("--url {url}: not a file URL")))?;
                Some(path)
            }
            (None, Some(_)) => None,
            (None, None) => {
                return Err(CliError::Input(
                    "--url or --dir is required (or set BLOOMCAST_SERVER)".into(),
                ))
            }
        };
        let verified = match (dir, self.url.as_deref()) {
            (Some(dir), _) => self.verify_dir(dir)?,
            (None, Some(url)) => self.verify_url(url).await?,
            (None, None) => unreachable!("refused above"),
        };
        for hour in &verified.hours {
            super::outln!("ok {}", hour.rfc3339())?;
        }
        match (
            verified.hours.first(),
            verified.hours.last(),
            verified.header,
        ) {
            (Some(first), Some(last), Some(header)) => super::outln!(
                "verified {} hours from {} to {}; newest header {}",
                verified.hours.len(),
                first.rfc3339(),
                last.rfc3339(),
                crate::chain::hex(&header)
            )?,
            _ => super::outln!("no sealed hours from {} on", self.since.rfc3339())?,
        }
        for reason in &verified.stale {
            let accepted = if self.accept_stale {
                " (accepted: --accept-stale)"
            } else {
                ""
            };
            eprintln!("bloomcast: {reason}{accepted}");
        }
        Ok(if verified.stale.is_empty() || self.accept_stale {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(STALE)
        })
    }

    /// A static mirror's directory, offline.
    fn verify_dir(&self, dir: PathBuf) -> Result<Verified, CliError> {
        if !dir.is_dir() {
            return Err(CliError::Input(format!(
                "--dir {}: not a directory",
                dir.display()
            )));
        }
        let source = format!("the mirror {}", dir.display());
        let mirror = MirrorDir::open(dir, &self.pubkey)?;
        let report = mirror.verify(self.since)?;
        if !report.unverified.is_empty() {
            for line in &report.unverified {
                eprintln!("bloomcast: unverified: {line}");
            }
            return Err(CliError::Input(format!(
                "{} files could not be verified (listed above): nothing signed came with them",
                report.unverified.len()
            )));
        }
        let newest = mirror.newest().or(report.hours.last().copied());
        let stale = stale_reasons(&source, newest, true, report.checkpoint.as_ref());
        Ok(Verified {
            hours: report.hours,
            header: report.header,
            stale,
        })
    }

    /// A server or any mirror of it, over HTTP.
    async fn verify_url(&self, url: &str) -> Result<Verified, CliError> {
        let client = Client::builder(url).pubkey(self.pubkey).build()?;
        let base = client.base().to_owned();
        // The key list, trusted only from the key given: a list that does not name it,
        // or an hour under a key it never vouched for, is refused naming the key.
        let well_known = fetch(&base, crate::mirror::WELL_KNOWN).await?;
        let doc = match &well_known {
            Some(bytes) => Some(serde_json::from_slice(bytes).map_err(|e| {
                CliError::Input(format!(
                    "{base}{}: not JSON ({e})",
                    crate::mirror::WELL_KNOWN
                ))
            })?),
            None => None,
        };
        let trusted = trust::trusted_keys(doc.as_ref(), &self.pubkey)?;
        for entry in client.chain(self.since).await? {
            trust::key_for(&trusted, entry.hour, entry.key_id)?;
        }
        let report = client.verify_chain(self.since).await?;
        let checkpoint = match fetch(&base, "/checkpoint").await? {
            Some(bytes) => {
                let checkpoint = trust::verify_checkpoint(&trusted, &bytes)?;
                let listed = client.chain(checkpoint.hour).await.ok();
                let entry = listed
                    .as_ref()
                    .and_then(|l| l.iter().find(|e| e.hour == checkpoint.hour));
                if entry.is_some_and(|e| e.header != checkpoint.header) {
                    return Err(trust::TrustError::Refused(format!(
                        "hour {} (checkpoint): the checkpoint's header is not the chain's for that hour",
                        checkpoint.hour.rfc3339()
                    ))
                    .into());
                }
                Some(checkpoint)
            }
            None => None,
        };
        let index = client.index().await?;
        let newest_sealed = report.hours.last().copied();
        let mut stale = Vec::new();
        let current = index.current_hour()?;
        let now = chrono::Utc::now().timestamp();
        stale.extend(lag_reason(&base, current, index.static_layout, now));
        match &checkpoint {
            Some(cp) => stale.extend(checkpoint_reasons(&base, cp, newest_sealed, now)),
            None => stale.push(no_checkpoint_reason(&base, current, index.static_layout)),
        }
        Ok(Verified {
            hours: report.hours,
            header: report.header,
            stale,
        })
    }
}

/// The body at `base` + `path`, `None` for a 404.
async fn fetch(base: &str, path: &str) -> Result<Option<Vec<u8>>, CliError> {
    let url = format!("{base}{path}");
    let failed = |e: reqwest::Error| CliError::Input(format!("{url}: {e}"));
    let response = reqwest::get(&url).await.map_err(failed)?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(CliError::Input(format!("{url}: {}", response.status())));
    }
    Ok(Some(response.bytes().await.map_err(failed)?.to_vec()))
}

/// Why a static mirror whose newest hour is `newest` is not shown current.
fn stale_reasons(
    source: &str,
    newest: Option<Hour>,
    is_static: bool,
    checkpoint: Option<&Checkpoint>,
) -> Vec<String> {
    let Some(newest) = newest else {
        return vec![format!("{source} offers no sealed hour")];
    };
    let now = chrono::Utc::now().timestamp();
    let mut reasons: Vec<String> = lag_reason(source, newest, is_static, now)
        .into_iter()
        .collect();
    match checkpoint {
        Some(cp) => reasons.extend(checkpoint_reasons(source, cp, Some(newest), now)),
        None => reasons.push(no_checkpoint_reason(source, newest, is_static)),
    }
    reasons
}
