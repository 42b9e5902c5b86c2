//! Logging setup: `tracing` to stderr, filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal;
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
