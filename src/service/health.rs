//! What `/healthz` reports: whether the store takes writes (the last write, or a
//! heartbeat written through the same path), whether the open hour is loaded, and which
//! hours were found corrupt.

use super::{lock, Result, Service};
use crate::hour::Hour;
use crate::store::{full_message, StoreError};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A heartbeat is written at most this often, however often `/healthz` is asked.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// Health state, written where writes and reads happen and read by `/healthz`.
pub(super) struct Health {
    /// Why the last write failed, while it did: cleared by the next write that succeeds.
    write_failure: Mutex<Option<String>>,
    /// Hours that could not be served because their stored data failed verification.
    corrupt: Mutex<BTreeSet<Hour>>,
    /// Verification failures found (including those repaired from intact keys).
    pub corrupt_found: AtomicU64,
    /// The open hour has been loaded from the store since start: the flag is what every
    /// request reads (a plain load, nothing shared written), the channel wakes waiters.
    loaded_flag: AtomicBool,
    loaded: watch::Sender<bool>,
    /// Set while a heartbeat is running or recent, so a flood of probes costs one write.
    last_heartbeat: tokio::sync::Mutex<Option<Instant>>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            write_failure: Mutex::new(None),
            corrupt: Mutex::new(BTreeSet::new()),
            corrupt_found: AtomicU64::new(0),
            loaded_flag: AtomicBool::new(false),
            loaded: watch::Sender::new(false),
            last_heartbeat: tokio::sync::Mutex::new(None),
        }
    }
}

/// The overall state, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// The store does not take writes: ingest answers 503.
    Unavailable,
    /// The open hour is still being loaded after a start.
    Loading,
    /// Serving, but some hours failed verification and answer 500 `corrupt`, or the
    /// wall clock jumped ahead and is not followed.
    Degraded,
    Ok,
}

/// The `/healthz` document.
#[derive(Debug, Clone, Serialize)]
pub struct HealthReport {
    pub status: HealthStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub current_hour: String,
    pub clock_behind_seconds: i64,
    /// How far the wall clock is ahead of the time the service runs on: non-zero while a
    /// forward jump is neither corrected nor confirmed (see `clock_jump_confirm_seconds`).
    pub clock_ahead_seconds: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrupt_hours: Vec<String>,
}

impl HealthReport {
    /// Whether a load balancer should send traffic here (`/healthz` answers 200).
    pub fn is_serving(&self) -> bool {
        matches!(self.status, HealthStatus::Ok | HealthStatus::Degraded)
    }
}

impl Service {
    /// Records how a store write ended, for `/healthz`, and passes the result on.
    pub(super) fn note_write<T>(&self, result: crate::store::Result<T>) -> Result<T> {
        match &result {
            Ok(_) => {
                if lock(&self.health.write_failure).take().is_some() {
                    tracing::info!("the store takes writes again");
                }
            }
            Err(e @ StoreError::Unavailable { .. }) => {
                let text = full_message(e);
                tracing::warn!(error = %text, "a store write failed");
                *lock(&self.health.write_failure) = Some(text);
            }
            Err(_) => {}
        }
        Ok(result?)
    }

    /// Records an hour whose stored data failed verification and could not be rebuilt.
    pub(super) fn note_corrupt(&self, hour: Hour, error: &StoreError) {
        tracing::error!(%hour, error = %full_message(error), "stored data failed verification");
        self.health.corrupt_found.fetch_add(1, Ordering::Relaxed);
        lock(&self.health.corrupt).insert(hour);
    }

    /// Verification failures found so far (for `/metrics`).
    pub fn corrupt_found(&self) -> u64 {
        self.health.corrupt_found.load(Ordering::Relaxed)
    }

    /// Marks the open hour loaded: waiting requests proceed, `/healthz` stops saying so.
    pub(super) fn set_loaded(&self) {
        self.health.loaded_flag.store(true, Ordering::Release);
        self.health.loaded.send_replace(true);
    }

    pub fn is_loaded(&self) -> bool {
        self.health.loaded_flag.load(Ordering::Acquire)
    }

    /// Resolves once the open hour is loaded (at once in steady state).
    pub async fn wait_loaded(&self) {
        if self.is_loaded() {
            return;
        }
        let mut rx = self.health.loaded.subscribe();
        let _ = rx.wait_for(|loaded| *loaded).await;
    }

    /// The health report: a heartbeat write through the store's write path (at most
    /// one a second), the last write's outcome, loading and corruption.
    pub async fn health(&self) -> HealthReport {
        self.heartbeat().await;
        let corrupt: Vec<String> = lock(&self.health.corrupt)
            .iter()
            .map(|h| h.rfc3339())
            .collect();
        let write_failure = lock(&self.health.write_failure).clone();
        let jump = self.clock_jump();
        let (status, reason) = if let Some(why) = write_failure {
            (HealthStatus::Unavailable, Some(why))
        } else if !self.is_loaded() {
            (
                HealthStatus::Loading,
                Some("loading the open hour from the store".to_owned()),
            )
        } else if !corrupt.is_empty() {
            (
                HealthStatus::Degraded,
                Some("some hours failed verification and are not served".to_owned()),
            )
        } else if jump.ahead_seconds > 0 {
            (
                HealthStatus::Degraded,
                Some(format!(
                    "the wall clock jumped {} s ahead; the service runs on the time measured \
                     since and follows the clock once it is corrected, or after it holds for \
                     {} s more",
                    jump.ahead_seconds,
                    jump.confirm_in_seconds.unwrap_or(0)
                )),
            )
        } else {
            (HealthStatus::Ok, None)
        };
        HealthReport {
            status,
            reason,
            current_hour: self.current_hour().rfc3339(),
            clock_behind_seconds: self.clock_behind_seconds(),
            clock_ahead_seconds: jump.ahead_seconds,
            corrupt_hours: corrupt,
        }
    }

    async fn heartbeat(&self) {
        let mut last = self.health.last_heartbeat.lock().await;
        if last.is_some_and(|t| t.elapsed() < HEARTBEAT_EVERY) {
            return;
        }
        let outcome = self.store.ping().await;
        *last = Some(Instant::now());
        match outcome {
            Err(e @ (StoreError::Failed { .. } | StoreError::Corrupt(_))) => {
                // A dead writer answers Failed: as unable to write as a full disk.
                *lock(&self.health.write_failure) = Some(full_message(&e));
            }
            other => {
                let _ = self.note_write(other);
            }
        }
    }
}
