//! What union work has cost, for operators (`GET /stats`): how many times each step ran
//! and the CPU time it took, counted on the thread that did it. A union ending in the
//! open hour is built once from the store, then carried forward as the hour takes keys
//! (`advance`: its new keys' bits set) and rendered once per version and representation
//! asked for, so `advance` plus `render` per version is what a trickle of ingest costs a
//! poller looping on it.
//!
//! Lock order: atomics only, no lock.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The steps of union work counted.
#[derive(Debug, Clone, Copy)]
pub(in crate::service) enum Step {
    /// A union built from its hours' keys (and rendered in the form asked for).
    Build,
    /// A union ending in the open hour carried forward to the hour's newest keys.
    Advance,
    /// A union built before rendered in one more form or version.
    Render,
}

#[derive(Default)]
struct Counter {
    runs: AtomicU64,
    nanos: AtomicU64,
}

/// The counters, one per [`Step`].
#[derive(Default)]
pub(super) struct Work {
    steps: [Counter; 3],
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
        }
    }
}

/// Runs `f`, returning what it returns and the CPU time the calling thread spent in it
/// (wall-clock time where the thread's own clock cannot be read).
pub(in crate::service) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = thread_cpu();
    let out = f();
    let spent = match (start, thread_cpu()) {
        (Clock::Cpu(a), Clock::Cpu(b)) => b.saturating_sub(a),
        (Clock::Wall(a), _) | (_, Clock::Wall(a)) => a.elapsed(),
    };
    (out, spent)
}

enum Clock {
    Cpu(Duration),
    Wall(std::time::Instant),
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu() -> Clock {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `struct timespec` (two 64-bit fields on 64-bit
    // Linux), and this clock id is always supported by Linux.
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Clock::Wall(std::time::Instant::now());
    }
    Clock::Cpu(Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    ))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu() -> Clock {
    Clock::Wall(std::time::Instant::now())
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
