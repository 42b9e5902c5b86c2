//! Waiting for something to happen: a test polls for the condition itself, a bounded
//! number of times, instead of sleeping for a while it guesses is long enough. The pause
//! between tries is tokio's (so paused time runs through it at once) or, for a test that
//! has no runtime, the thread's.
//!
//! The bound only keeps a test that is broken from hanging: it is far longer than any
//! condition takes on a loaded machine, and reaching it fails the test naming what never
//! happened. No test asserts how long a condition took.

#![allow(dead_code)]

use std::fmt::Display;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// How many times a condition is tried before the wait fails.
pub const TRIES: u32 = 3_000;

/// The pause between tries: with [`TRIES`], a minute.
pub const PAUSE: Duration = Duration::from_millis(20);

/// How long a test lets one step that should end (a read, a shutdown) run before it
/// fails as hung instead of hanging: far longer than any step takes on a loaded machine.
/// Not a measure of the code's speed; no test asserts one.
pub const HANG: Duration = Duration::from_secs(60);

/// Awaits `probe` until it gives `Some`, and returns that.
///
/// # Panics
/// When it gave `None` [`TRIES`] times, naming `what` was awaited.
pub async fn until<T, F, Fut>(what: impl Display, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match tried(probe).await {
        Some(found) => found,
        None => panic!("{what}: still not so after {TRIES} tries"),
    }
}

/// Awaits `probe` until it gives `Some`, at most [`TRIES`] times: what it gave, or
/// `None`, for a test that has something to clean up before it fails.
pub async fn tried<T, F, Fut>(mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..TRIES {
        if let Some(found) = probe().await {
            return Some(found);
        }
        tokio::time::sleep(PAUSE).await;
    }
    None
}

/// Waits until `condition` holds.
///
/// # Panics
/// As [`until`].
pub async fn eventually(what: impl Display, mut condition: impl FnMut() -> bool) {
    until(what, || std::future::ready(condition().then_some(()))).await;
}

/// [`eventually`] for a test without a runtime: the thread pauses between tries.
///
/// # Panics
/// As [`until`].
pub fn eventually_blocking(what: impl Display, mut condition: impl FnMut() -> bool) {
    for _ in 0..TRIES {
        if condition() {
            return;
        }
        std::thread::sleep(PAUSE);
    }
    panic!("{what}: still not so after {TRIES} tries");
}

/// Lets `by` pass at once on tokio's clock, which the service's holds, backoffs and
/// heartbeats read and its timers run on: the clock is paused, moved on and let run
/// again. Tasks ready to run do first, so a request just spawned has armed its timers
/// before the time passes. Only on a current-thread runtime (`#[tokio::test]`'s).
pub async fn pass(by: Duration) {
    tokio::task::yield_now().await;
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// Whether every connection to the SQLite store in `data_dir` is closed: the last one to
/// close checkpoints the write-ahead log into the file and deletes it, so the store's
/// writer thread, which outlives a dropped store until it sees its channel close, has let
/// go of the file.
pub fn sqlite_closed(data_dir: &Path) -> bool {
    !data_dir.join("bloomcast.sqlite3-wal").exists()
}

/// Waits until the SQLite store in `data_dir`, dropped, has closed its file
/// ([`sqlite_closed`]).
pub async fn sqlite_store_closed(data_dir: &Path) {
    eventually(
        format!("the store in {} closes its file", data_dir.display()),
        || sqlite_closed(data_dir),
    )
    .await;
}
