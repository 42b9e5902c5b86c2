//! `bloomcast verify --pubkey KEY --since HOUR [--url BASE]`: checks a whole range of
//! the hour chain, and every listed hour's filter, from any base URL (a mirror).

use super::check::parse_hour;
use super::CliError;
use crate::chain::PublicKey;
use crate::client::Client;
use crate::hour::Hour;
use clap::Args;

/// Verify the hour chain and every hour's filter against the publisher's key.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The publisher's public key (64 hex digits; `/.well-known/bloomcast.json` of the
    /// publisher, or its startup log). After key rotations, any key the publisher lists:
    /// each hour is verified under the key listed for it.
    #[arg(long, value_parser = parse_pubkey)]
    pubkey: PublicKey,
    /// The first hour to verify, e.g. 2008-09-03T05 (UTC).
    #[arg(long, value_parser = parse_hour)]
    since: Hour,
    /// Where to read from: the publisher or any mirror of it.
    #[arg(long, alias = "server", env = "BLOOMCAST_SERVER")]
    url: String,
}

pub(super) fn parse_pubkey(s: &str) -> Result<PublicKey, String> {
    s.parse()
        .map_err(|e: crate::chain::ChainError| e.to_string())
}

impl VerifyArgs {
    /// Verifies and prints one line per verified hour, then a summary.
    ///
    /// # Errors
    /// The first hour that fails verification (named), an unreachable server, an error
    /// status.
    pub async fn run(self) -> Result<(), CliError> {
        let client = Client::builder(&self.url).pubkey(self.pubkey).build()?;
        let report = client.verify_chain(self.since).await?;
        for hour in &report.hours {
            println!("ok {}", hour.rfc3339());
        }
        match (report.hours.first(), report.hours.last(), report.header) {
            (Some(first), Some(last), Some(header)) => println!(
                "verified {} hours from {} to {}; newest header {}",
                report.hours.len(),
                first.rfc3339(),
                last.rfc3339(),
                crate::chain::hex(&header)
            ),
            _ => println!("no sealed hours from {} on", self.since.rfc3339()),
        }
        Ok(())
    }
}
