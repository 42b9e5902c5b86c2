//! Logging setup: `tracing` to stderr, filtered by `RUST_LOG` (default `info`); and the
//! calling thread's CPU clock, for figures of what work cost.

use std::io::IsTerminal;
use std::time::Duration;
use tracing_subscriber::EnvFilter;

/// For the server: `info` unless `RUST_LOG` says otherwise.
pub fn init() {
    init_with_default("info");
}

/// For the client verbs, whose output is their result: only warnings (retries) and
/// errors unless `RUST_LOG` says otherwise.
pub fn init_cli() {
    init_with_default("warn");
}

fn init_with_default(level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// The CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`); `None`
/// where it cannot be read.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn thread_cpu() -> Option<Duration> {
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
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

/// The CPU time the calling thread has used so far; not readable here.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn thread_cpu() -> Option<Duration> {
    None
}
