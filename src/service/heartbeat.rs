//! The heartbeat: a write through the store's write path that proves the store takes
//! writes (the write rule, in `health`) and records the service's clock for the next start
//! (`crate::clock::ClockRecord`); in cluster mode, after it, a new reading of the cluster's
//! clock (`time`).
//!
//! A background task writes one every [`HEARTBEAT_IDLE`] while the store takes writes and
//! every [`HEARTBEAT_EVERY`] while it does not, so a node nobody asks (one a load balancer
//! took out of rotation) finds out by itself that the store takes writes again, and the
//! record a restart checks against is never older than that. Every `/healthz` check writes
//! one too, at most one a second; one at a time, under the heartbeat's turn.

use super::Service;
use crate::store::StoreError;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A heartbeat is written at most this often, however often `/healthz` is asked; and
/// this often by the background task while the store does not take writes.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// How often the background task writes a heartbeat while the store takes writes.
const HEARTBEAT_IDLE: Duration = Duration::from_secs(10);

impl Service {
    /// Writes a heartbeat now and then every `HEARTBEAT_IDLE` (`HEARTBEAT_EVERY`
    /// while the store does not take writes) until `shutdown` resolves.
    pub async fn run_heartbeats(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            self.heartbeat().await;
            let wait = if self.health().store_takes_writes() {
                HEARTBEAT_IDLE
            } else {
                HEARTBEAT_EVERY
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut shutdown => return,
            }
        }
    }

    /// A heartbeat, unless one was written within [`HEARTBEAT_EVERY`].
    pub(super) async fn heartbeat(&self) {
        let mut last = self.health.last_heartbeat.lock().await;
        if last.is_some_and(|t| t.elapsed() < HEARTBEAT_EVERY) {
            return;
        }
        self.write_heartbeat(&mut last).await;
    }

    /// A heartbeat now, however recent the last (the clock was just confirmed).
    pub(super) async fn heartbeat_now(&self) {
        let mut last = self.health.last_heartbeat.lock().await;
        self.write_heartbeat(&mut last).await;
    }

    /// Writes the heartbeat with the clock record through the store's write path, then
    /// (cluster mode) reads the cluster's clock, under the heartbeat's turn. The read only
    /// after a write that succeeded: a store that does not answer costs a check one call
    /// timeout, not two.
    async fn write_heartbeat(&self, last: &mut Option<Instant>) {
        let record = self.clock.record();
        let began = Instant::now();
        let outcome = self.store.heartbeat(&record).await;
        *last = Some(Instant::now());
        if outcome.is_ok() {
            self.observe_reference().await;
        }
        match outcome {
            // A dead writer answers Failed: as unable to write as a full disk.
            Err(e @ (StoreError::Failed { .. } | StoreError::Corrupt(_))) => self.note_failure(&e),
            other => {
                let _ = self.note_write_begun(Some(began), other);
            }
        }
    }
}
