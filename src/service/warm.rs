//! Warm grades (docs/PROTOCOL.md section 12, "Warm grades"): once an hour is sealed, its
//! `.ribbon2` body at every grade of the published set is built in the background, one
//! build at a time, and kept in the one cache (which may evict it; a later request
//! builds it again), so that the grades the SDKs ask for are answered without a build.
//! The builds queue as one client of their own ([`BuildClient::Background`]): they
//! take their turn with readers' builds, never all the slots, and never hold up ingest
//! or a seal (which take no build slot). At start the newest sealed hour is warmed too.

use super::parts::Stats;
use super::unions::fair::{BuildClient, BUILD_CLIENT};
use super::{Service, Target};
use crate::hour::Hour;
use crate::render::Compact;
use serde::Serialize;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the newest sealed hour is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// A build refused for want of memory is tried again after this, at most this often.
const RETRY_EVERY: Duration = Duration::from_secs(1);
const RETRIES: u32 = 120;

/// What warming has done (`warm` in `/stats`).
#[derive(Default)]
pub(super) struct Warm {
    hours: AtomicU64,
    grades_built: AtomicU64,
    pending: AtomicU64,
    failures: AtomicU64,
    /// The hour warmed or being warmed (an index; `i64::MIN` for none).
    hour: AtomicI64,
}

impl Warm {
    pub(super) fn new() -> Warm {
        Warm {
            hour: AtomicI64::new(i64::MIN),
            ..Warm::default()
        }
    }
}

/// Warming's figures.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct WarmStats {
    /// Hours whose every grade has been made ready, since start.
    pub hours: u64,
    /// Grade bodies made ready (built, or found kept), since start.
    pub grades_built: u64,
    /// Grades of the hour being warmed not ready yet.
    pub pending: u64,
    /// Grades that could not be made ready (logged).
    pub failures: u64,
    /// The hour warmed last or now (RFC 3339), if any.
    pub hour: Option<String>,
}

impl Service {
    /// Warms the newest sealed hour whenever it changes (and at start), until
    /// `shutdown` resolves.
    pub async fn run_warming(self: Arc<Self>, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        self.wait_loaded().await;
        let mut warmed: Option<Hour> = None;
        loop {
            if let Some(newest) = self.closed_through() {
                if warmed != Some(newest) {
                    tokio::select! {
                        () = self.warm_hour(newest) => warmed = Some(newest),
                        () = &mut shutdown => return,
                    }
                    continue;
                }
            }
            tokio::select! {
                () = tokio::time::sleep(LOOK_EVERY) => {}
                () = &mut shutdown => return,
            }
        }
    }

    /// Makes `hour`'s `.ribbon2` body ready at every grade of the set, one at a time, as
    /// the background's builds.
    pub(super) async fn warm_hour(&self, hour: Hour) {
        let grades = self.grades.ribbon2().to_vec();
        let warm = &self.warm;
        warm.hour.store(hour.index(), Ordering::Relaxed);
        warm.pending.store(grades.len() as u64, Ordering::Relaxed);
        let forms = self.forms();
        for grade in grades {
            let mut tries = 0;
            loop {
                let view = BUILD_CLIENT.scope(
                    BuildClient::Background,
                    forms.compact_view(Target::Hour(hour), grade.code(), Compact::Ribbon2),
                );
                match view.await {
                    Ok(_) => {
                        warm.grades_built.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.is_busy() && tries < RETRIES => {
                        tries += 1;
                        tokio::time::sleep(RETRY_EVERY).await;
                        continue;
                    }
                    Err(e) => {
                        warm.failures.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(hour = %hour.rfc3339(), k = grade.k, split = grade.split,
                            error = %e, "could not warm a grade");
                    }
                }
                break;
            }
            warm.pending.fetch_sub(1, Ordering::Relaxed);
        }
        warm.hours.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(hour = %hour.rfc3339(), "warmed every grade");
    }
}

impl Stats<'_> {
    /// Warming's figures now.
    pub fn warm_stats(&self) -> WarmStats {
        let warm = &self.warm;
        let hour = warm.hour.load(Ordering::Relaxed);
        WarmStats {
            hours: warm.hours.load(Ordering::Relaxed),
            grades_built: warm.grades_built.load(Ordering::Relaxed),
            pending: warm.pending.load(Ordering::Relaxed),
            failures: warm.failures.load(Ordering::Relaxed),
            hour: (hour != i64::MIN).then(|| Hour::from_index(hour).rfc3339()),
        }
    }
}
