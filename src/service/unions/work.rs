//! What union work, and a closed hour's compact work (counted apart), has cost, for
//! operators (`GET /stats`, `GET /metrics`): how many times each step ran and the CPU
//! time it took, counted on the thread that did it. A union ending in the open hour is
//! built once from the store, then carried forward as the hour takes keys (`advance`:
//! its new keys' bits set) and rendered once per version and representation asked for,
//! so `advance` plus `render` per version is what a trickle of ingest costs a poller
//! looping on it.
//!
//! Lock order: atomics only, no lock.

use crate::telemetry::thread_cpu;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The steps of union work counted.
#[derive(Debug, Clone, Copy)]
pub(in crate::service) enum Step {
    /// A union built from its hours' keys (and rendered in the form asked for).
    Build,
    /// A union ending in the open hour carried forward to the hour's newest keys.
    Advance,
    /// A union built before rendered in one more form or version.
    Render,
    /// A closed hour's compact (ribbon) work: its ribbon built at one precision, or that
    /// ribbon rendered in its JSON form.
    HourRibbon,
    /// A closed hour's exact body built over the universe.
    HourExact,
}

#[derive(Default)]
struct Counter {
    runs: AtomicU64,
    nanos: AtomicU64,
}

/// The counters, one per [`Step`].
#[derive(Default)]
pub(super) struct Work {
    steps: [Counter; 5],
}

/// One step's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepStats {
    pub runs: u64,
    pub cpu_seconds: f64,
}

/// The figures of every step, for `/stats`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UnionWork {
    pub builds: StepStats,
    pub advances: StepStats,
    pub renders: StepStats,
    /// Closed hours' compact work (not a union's, counted apart).
    pub hour_ribbons: StepStats,
    /// Closed hours' exact bodies built.
    pub hour_exacts: StepStats,
}

impl Work {
    pub fn record(&self, step: Step, cpu: Duration) {
        let counter = &self.steps[step as usize];
        counter.runs.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
        counter.nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn stats(&self) -> UnionWork {
        let of = |step: Step| {
            let counter = &self.steps[step as usize];
            StepStats {
                runs: counter.runs.load(Ordering::Relaxed),
                cpu_seconds: counter.nanos.load(Ordering::Relaxed) as f64 / 1e9,
            }
        };
        UnionWork {
            builds: of(Step::Build),
            advances: of(Step::Advance),
            renders: of(Step::Render),
            hour_ribbons: of(Step::HourRibbon),
            hour_exacts: of(Step::HourExact),
        }
    }
}

/// Runs `f`, returning what it returns and the CPU time the calling thread spent in it
/// (wall-clock time where the thread's own clock cannot be read).
pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let (cpu, wall) = (thread_cpu(), Instant::now());
    let out = f();
    let spent = match (cpu, thread_cpu()) {
        (Some(start), Some(end)) => end.saturating_sub(start),
        _ => wall.elapsed(),
    };
    (out, spent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_counts_the_cpu_a_busy_loop_spends_and_not_a_sleep() {
        let (_, busy) = timed(|| {
            (0..20_000_000u64).fold(0u64, |a, i| std::hint::black_box(a ^ i.wrapping_mul(31)))
        });
        assert!(busy > Duration::ZERO, "{busy:?}");
        let ((), asleep) = timed(|| std::thread::sleep(Duration::from_millis(50)));
        assert!(asleep < Duration::from_millis(25), "{asleep:?}");
    }

    #[test]
    fn records_add_up_per_step() {
        let work = Work::default();
        work.record(Step::Advance, Duration::from_millis(3));
        work.record(Step::Advance, Duration::from_millis(5));
        work.record(Step::Render, Duration::from_millis(7));
        let stats = work.stats();
        assert_eq!(stats.builds.runs, 0);
        assert_eq!(stats.advances.runs, 2);
        assert!((stats.advances.cpu_seconds - 0.008).abs() < 1e-9);
        assert_eq!(stats.renders.runs, 1);
        assert!((stats.renders.cpu_seconds - 0.007).abs() < 1e-9);
    }
}
