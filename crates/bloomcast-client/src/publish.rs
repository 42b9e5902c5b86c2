//! Publishing with retries: a batch is sent again, unchanged, until the server
//! acknowledges it or says it never will.
//!
//! Retrying cannot lose IDs (a batch is all-or-nothing: an error means nothing was
//! recorded) and cannot corrupt a filter (recording an ID twice in an hour is a no-op).
//! If an acknowledgement is lost in transit and the retry lands in the next hour, the
//! ID is in both hours: a possible extra fetch for a poller, never a missed update.

use super::{Client, Receipt, Result};
use std::collections::BTreeMap;
use std::time::Duration;

/// How [`Client::publish`] batches and retries.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// Attempts per batch before giving up (at least 1).
    pub attempts: u32,
    /// The first wait between attempts; doubled each time up to `max_backoff`, and
    /// replaced by the server's `Retry-After` when it sends one.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// Also retry when the connection is refused (a server expected to come up soon,
    /// e.g. during a restart). Off by default: a wrong address or a stopped server then
    /// fails at once instead of after every attempt's backoff.
    pub retry_refused: bool,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            attempts: 8,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            retry_refused: false,
        }
    }
}

/// What [`Client::publish`] got acknowledged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishSummary {
    /// IDs acknowledged (duplicates included, as the server counts them).
    pub ids: u64,
    /// Requests acknowledged (more than the batches sent when a batch was split).
    pub requests: u64,
    /// Attempts that failed transiently and were repeated.
    pub retries: u64,
    /// IDs acknowledged per hour (RFC 3339 hour start).
    pub hours: BTreeMap<String, u64>,
}

impl PublishSummary {
    /// Adds another summary's counts to this one.
    pub fn absorb(&mut self, other: PublishSummary) {
        self.ids += other.ids;
        self.requests += other.requests;
        self.retries += other.retries;
        for (hour, n) in other.hours {
            *self.hours.entry(hour).or_default() += n;
        }
    }
}

impl Client {
    /// Sends `ids` as one batch, retrying transient failures with backoff; a batch the
    /// server finds too large (413) is split in halves, each sent the same way.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), bloomcast_client::ClientError> {
    /// use bloomcast_client::{Client, PublishOptions};
    /// let client = Client::builder("http://127.0.0.1:8080").token("secret-token").build()?;
    /// let ids: Vec<String> = vec!["user:1".into(), "user:2".into()];
    /// let summary = client.publish(&ids, &PublishOptions::default()).await?;
    /// assert_eq!(summary.ids, 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The first non-transient error (401, 400 for a bad ID), or the last transient one
    /// once `attempts` are spent. After a 4xx nothing of the failed request was
    /// recorded; after a transport error it may or may not have been.
    pub async fn publish(
        &self,
        ids: &[String],
        options: &PublishOptions,
    ) -> Result<PublishSummary> {
        let mut summary = PublishSummary::default();
        // Halves still to send, last first, so that IDs go out in order.
        let mut pending: Vec<&[String]> = vec![ids];
        while let Some(batch) = pending.pop() {
            if batch.is_empty() {
                continue;
            }
            match self.send_with_retries(batch, options, &mut summary).await {
                Ok(receipt) => {
                    summary.ids += receipt.accepted;
                    summary.requests += 1;
                    *summary.hours.entry(receipt.hour).or_default() += receipt.accepted;
                }
                Err(e) if e.status() == Some(413) && batch.len() > 1 => {
                    let (first, second) = batch.split_at(batch.len() / 2);
                    pending.push(second);
                    pending.push(first);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(summary)
    }

    async fn send_with_retries(
        &self,
        batch: &[String],
        options: &PublishOptions,
        summary: &mut PublishSummary,
    ) -> Result<Receipt> {
        let mut backoff = options.first_backoff;
        let mut attempt = 1;
        loop {
            match self.ingest(batch).await {
                Ok(receipt) => return Ok(receipt),
                Err(e)
                    if e.is_transient()
                        && (options.retry_refused || !e.is_refused())
                        && attempt < options.attempts.max(1) =>
                {
                    let wait = e.retry_after().unwrap_or(backoff).min(options.max_backoff);
                    tracing::warn!(error = %e, attempt, ?wait, "ingest failed; retrying");
                    summary.retries += 1;
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(options.max_backoff);
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
