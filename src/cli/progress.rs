//! A progress line on stderr for the long verbs (`ingest`, `mirror`, `check` over many
//! hours): shown only when stderr is a terminal, rewritten in place at most 5 times a
//! second and cleared before anything else is printed; piped or redirected, nothing.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the line is rewritten at most.
const EVERY: Duration = Duration::from_millis(200);

/// The progress line of one run.
pub(super) struct Progress {
    tty: bool,
    last: Option<Instant>,
}

impl Progress {
    /// Shown when stderr is a terminal.
    pub(super) fn new() -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    /// Rewrites the line with `line()`'s text, unless it was written less than
    /// [`EVERY`] ago (or stderr is no terminal: then `line` is not called).
    pub(super) fn show(&mut self, line: impl FnOnce() -> String) {
        if !self.tty || self.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", line());
        let _ = err.flush();
    }

    /// Erases the line, if one was written, so the next output starts clean.
    pub(super) fn clear(&mut self) {
        if self.tty && self.last.take().is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }

    /// Awaits `work`, showing `line()` every [`EVERY`] meanwhile (for work that reports
    /// nothing as it goes, but whose counters say how far it got), then clears it.
    pub(super) async fn around<F: Future>(
        &mut self,
        work: F,
        mut line: impl FnMut() -> String,
    ) -> F::Output {
        if !self.tty {
            return work.await;
        }
        tokio::pin!(work);
        // The first line after EVERY: work done sooner shows none.
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let out = loop {
            tokio::select! {
                out = &mut work => break out,
                _ = tick.tick() => self.show(&mut line),
            }
        };
        self.clear();
        out
    }
}
