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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `struct timespec` that outlives the call, and
    // this clock id is always supported by Linux.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
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

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use super::*;

    #[test]
    fn the_thread_cpu_time_is_read_and_never_goes_back() {
        let before = thread_cpu().expect("readable on 64-bit Linux");
        let sum: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
        assert_eq!(sum, 499_999_500_000);
        let after = thread_cpu().expect("readable on 64-bit Linux");
        assert!(after >= before, "{after:?} < {before:?}");
        assert!(after > Duration::ZERO);
    }
}
