//! Criterion's measurement in CPU time of the benchmarking thread (Linux `schedstat`,
//! as the server counts its own work: `telemetry::thread_cpu`), for benches that run on
//! a shared machine; wall clock where it cannot be read. Included by the benches that
//! use it with `#[path]`.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use std::time::Instant;

/// CPU time of the calling thread, in nanoseconds.
pub struct CpuTime;

static WALL: WallTime = WallTime;

impl CpuTime {
    fn now() -> f64 {
        bloomcast::telemetry::thread_cpu()
            .map(|cpu| cpu.as_nanos() as f64)
            .unwrap_or_else(|| {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                START.get_or_init(Instant::now).elapsed().as_nanos() as f64
            })
    }
}

impl Measurement for CpuTime {
    type Intermediate = f64;
    type Value = f64;

    fn start(&self) -> f64 {
        CpuTime::now()
    }
    fn end(&self, start: f64) -> f64 {
        CpuTime::now() - start
    }
    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn zero(&self) -> f64 {
        0.0
    }
    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        // Values are nanoseconds, as wall time's are, so its formatting applies.
        WALL.formatter()
    }
}
