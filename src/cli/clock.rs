//! `bloomcast confirm-clock`: tells the server its clock is right, so a forward jump it
//! holds (`/healthz` `degraded` with `clock_ahead_seconds`: a jump while running, or a
//! start far past its last heartbeat) is followed at once.

use super::{client, CliError};
use clap::Args;

/// Confirm the server's clock (POST /clock/confirm with the ingest token).
#[derive(Debug, Args)]
pub struct ConfirmClockArgs {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (or 127.0.0.1:8080).
    #[arg(long, env = "BLOOMCAST_SERVER")]
    server: String,
    /// A bearer token the server accepts for ingest.
    #[arg(long, env = "BLOOMCAST_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

impl ConfirmClockArgs {
    /// Confirms, and prints what the server's time now is.
    ///
    /// # Errors
    /// No token; the server holds no jump (409 `nothing_to_confirm`, its message says
    /// what its clock does); a rejected token; transport errors.
    pub async fn run(self) -> Result<(), CliError> {
        let Some(token) = self.token.as_deref() else {
            return Err(CliError::Input(
                "no ingest token: pass --token or set BLOOMCAST_TOKEN".into(),
            ));
        };
        let report = client(&self.server, Some(token))?.confirm_clock().await?;
        super::outln!(
            "confirmed: the server follows its clock, {} s on from the time it ran on",
            report.followed_seconds
        )?;
        super::outln!("now {}", report.now)?;
        super::outln!("current_hour {}", report.current_hour)?;
        Ok(())
    }
}
