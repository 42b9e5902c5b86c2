//! The open hours' own state: the ledger (each open hour's keys, filter and newest
//! renderings), the board that publishes those renderings to the read path's fast lane,
//! the turns that make readers share one refresh and one render, and when the store's
//! marks were last read. Ingest, refresh and rendering read the store, so they stay the
//! service's work (`mod.rs`, `views.rs`); all of the state above is reached through
//! [`OpenHours`] only.
//!
//! Lock order: the refresh turn and the render turns (tokio locks) are each taken with
//! no other tokio lock held, and the ledger is taken only briefly under them, never the
//! other way round. The ledger (a std mutex) is innermost: never held across an await
//! or while taking a tokio lock; the board takes no lock (atomics and `arc-swap`) and is
//! written while the ledger is held, with the change it describes. `marks_read_at` is a
//! leaf, held only inside a method here.

use super::ledger::{Ledger, OpenHour};
use super::lock;
use super::ready::Board;
use crate::hour::Hour;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub(super) struct OpenHours {
    ledger: Mutex<Ledger>,
    /// The open hour's latest renderings, for the read path's fast lane.
    board: Board,
    /// One refresh from the store at a time: readers share the next one.
    refresh_turn: tokio::sync::Mutex<()>,
    /// One open-hour render per representation at a time.
    render_turns: [tokio::sync::Mutex<()>; 3],
    /// When the marks were last read from the store (other nodes move them too).
    marks_read_at: Mutex<Option<Instant>>,
    /// What a new open hour's filter is sized for first, and the target it keeps.
    capacity: u64,
    target_fpp: f64,
}

impl OpenHours {
    /// No open hour yet; the marks were just read.
    pub fn new(capacity: u64, target_fpp: f64) -> OpenHours {
        OpenHours {
            ledger: Mutex::new(Ledger::default()),
            board: Board::new(),
            refresh_turn: tokio::sync::Mutex::new(()),
            render_turns: Default::default(),
            marks_read_at: Mutex::new(Some(Instant::now())),
            capacity,
            target_fpp,
        }
    }

    /// The ledger of open hours. A panic while it was held may have left it half
    /// updated: it is then emptied, and every open hour reloads from the store (the
    /// truth) on its next read, instead of every later request failing on the poison.
    pub fn ledger(&self) -> MutexGuard<'_, Ledger> {
        match self.ledger.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                tracing::error!("a panic interrupted an update of the open hours; reloading them from the store");
                let mut guard = poisoned.into_inner();
                *guard = Ledger::default();
                self.board.changed();
                self.ledger.clear_poison();
                guard
            }
        }
    }

    /// The open entry of `hour`, created if needed, unless the hour is closed (by this
    /// node's seal, or in the store through `closed_through`): a closed hour's entry is
    /// never recreated (a reader racing the seal must serve the seal).
    pub fn entry<'l>(
        &self,
        ledger: &'l mut Ledger,
        hour: Hour,
        closed_through: Option<Hour>,
    ) -> Option<&'l mut OpenHour> {
        let closed = ledger
            .sealed_through
            .into_iter()
            .chain(closed_through)
            .max();
        if closed.is_some_and(|c| hour <= c) {
            return None;
        }
        Some(
            ledger
                .hours
                .entry(hour)
                .or_insert_with(|| OpenHour::new(self.capacity, self.target_fpp)),
        )
    }

    /// The content version of the open `hour` (0 when it has no entry).
    pub fn version(&self, hour: Hour) -> u64 {
        self.ledger().hours.get(&hour).map_or(0, |o| o.version)
    }

    /// The distinct-key count of the open `hour` as this node sees it.
    pub fn count(&self, hour: Hour) -> u64 {
        self.ledger().hours.get(&hour).map_or(0, OpenHour::count)
    }

    /// `hour` is sealed: it and every hour before it are open no more.
    pub fn forget_through(&self, hour: Hour) {
        let mut ledger = self.ledger();
        ledger.hours.retain(|h, _| *h > hour);
        if ledger.sealed_through.is_none_or(|s| s < hour) {
            ledger.sealed_through = Some(hour);
        }
    }

    /// The open hour's published renderings.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// Waits for the turn to refresh from the store.
    pub async fn refresh_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.refresh_turn.lock().await
    }

    /// Waits for the turn to render the representation of index `slot`.
    pub async fn render_turn(&self, slot: usize) -> tokio::sync::MutexGuard<'_, ()> {
        self.render_turns[slot].lock().await
    }

    /// Whether the marks were last read `every` ago or more (or never).
    pub fn marks_due(&self, every: Duration) -> bool {
        lock(&self.marks_read_at).is_none_or(|t| t.elapsed() >= every)
    }

    /// The marks were just read.
    pub fn marks_read(&self) {
        *lock(&self.marks_read_at) = Some(Instant::now());
    }
}
