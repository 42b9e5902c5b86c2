//! `Client::confirm_clock`: an operator confirms the server's clock (`POST
//! /clock/confirm`, with the ingest token), so a forward jump the server holds is followed
//! at once.

use super::fetch::check;
use super::{Client, ClientError, Result};
use serde::Deserialize;

/// The server's clock once a jump is confirmed (`POST /clock/confirm`'s answer).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ClockReport {
    pub confirmed: bool,
    /// How far the server's time moved forward by the confirmation.
    pub followed_seconds: i64,
    /// The server's time now (RFC 3339).
    pub now: String,
    pub current_hour: String,
    pub clock_ahead_seconds: i64,
    pub clock_behind_seconds: i64,
    /// Cluster mode: how far the node's own clock is ahead of the cluster's.
    #[serde(default)]
    pub node_clock_offset_seconds: Option<i64>,
    pub clock_jumps: u64,
}

impl Client {
    /// Confirms the server's clock: a forward jump it holds (`/healthz` `degraded` with
    /// `clock_ahead_seconds`) is followed at once.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), bloomcast_client::ClientError> {
    /// let client = bloomcast_client::Client::builder("http://127.0.0.1:8080")
    ///     .token("secret-token")
    ///     .build()?;
    /// let report = client.confirm_clock().await?;
    /// println!("now {}, moved {} s", report.now, report.followed_seconds);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ClientError::Status`] 409 `nothing_to_confirm` when the server holds no jump
    /// (its message says what its clock does), 401 without a valid token; transport
    /// errors.
    pub async fn confirm_clock(&self) -> Result<ClockReport> {
        let mut request = self.http.post(format!("{}/clock/confirm", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = check(self.send(request).await?).await?;
        let body = self.body(response, None).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("clock report: {e}")))
    }
}
