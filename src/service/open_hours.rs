//! The open hours' own state: the ledger (`ledger.rs`: each open hour's keys, in the
//! sorted runs of `keyset.rs`, its filter and newest renderings; private to this
//! module, so the compiler keeps every other part out of it), the turns that make
//! readers share one refresh and one render, and when the store's marks were last read.
//! Ingest, refresh, rendering and unions read the store, so they stay the service's work (`service.rs`, `views.rs`, `unions/view.rs`, `incremental.rs`,
//! `stats.rs`); they reach the state above only through [`OpenHours`]' methods, which
//! take the ledger once inside and hand back values, never the lock (nothing outside
//! this module takes the ledger or touches an `OpenHour`):
//! - ingest: [`OpenHours::reserve`] holds room for a batch (or refuses it whole),
//!   [`OpenHours::release`] gives it back when the append failed, and
//!   [`OpenHours::acknowledge`] records the appended keys and releases their room in one
//!   hold of the ledger, so a concurrent reservation sees one or the other;
//! - refresh, under [`OpenHours::refresh_turn`]: [`OpenHours::refresh_due`], then
//!   [`OpenHours::add_read`] with each piece the store sends and
//!   [`OpenHours::read_through`] with the cursor it returns;
//! - rendering (`reads.rs`): [`OpenHours::rendering`], then under
//!   [`OpenHours::render_turn`] [`OpenHours::render_job`] and
//!   [`OpenHours::keep_rendering`];
//! - unions (`reads.rs`): [`OpenHours::snapshot`] (the keys with the version and
//!   position they show), [`OpenHours::gained_since`] (to carry a union forward) and
//!   [`OpenHours::version`];
//! - reads (`reads.rs`): [`OpenHours::count`], [`OpenHours::figures`];
//! - sealing: [`OpenHours::forget_through`]; the marks: [`OpenHours::marks_due`],
//!   [`OpenHours::marks_read`];
//! - deltas ([`OpenHours::deltas`], `deltas.rs`): which served versions of the open
//!   hour are kept as compression dictionaries, and the `dcz` bodies made from them.
//!
//! A closed hour's entry is never recreated (a reader racing the seal must serve the
//! seal): the methods that may create an entry take the service's `closed_through` mark
//! as an argument, and also heed the newest hour this node sealed (`forget_through`).
//!
//! Lock order: the refresh turn and the render turns (tokio locks) are each taken with
//! no other tokio lock held, and the ledger is taken only briefly under them, never the
//! other way round. The ledger (a std mutex) is innermost: taken only inside a method
//! here, never held across an await or while taking a tokio lock. `marks_read_at` and the kept versions (`deltas`) are leaves,
//! each held only inside a method, never with the ledger or another lock held; a delta
//! being made is awaited with no lock held.

mod deltas;
mod keyset;
mod ledger;
mod reads;

pub(super) use deltas::Deltas;
pub use deltas::{Linked, ID_BYTES as DICTIONARY_ID_BYTES};

pub(super) use reads::{Figures, Rendering};

use super::{lock, Result, ServiceError};
use crate::bloom::Key;
use crate::hour::Hour;
use crate::render::Rendered;
use ledger::{Ledger, OpenHour};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The open hours' state. Lock order, outermost first (never the other way round):
/// the refresh turn or a render turn (tokio locks, each taken with no other tokio lock
/// held), then the ledger (a std mutex, innermost: held only inside a method here,
/// never across an await). `marks_read_at` and the kept versions' mutex inside `deltas`
/// are leaves, never taken with the ledger or another lock held; a delta being made is
/// awaited with none held.
pub(super) struct OpenHours {
    ledger: Mutex<Ledger>,
    /// One refresh from the store at a time: readers share the next one.
    refresh_turn: tokio::sync::Mutex<()>,
    /// One open-hour render per representation at a time.
    render_turns: [tokio::sync::Mutex<()>; 3],
    /// When the marks were last read from the store (other nodes move them too).
    marks_read_at: Mutex<Option<Instant>>,
    /// Versions of the open hour kept as compression dictionaries, and the deltas made
    /// from them.
    deltas: Deltas,
    /// What a new open hour's filter is sized for first, and the target it keeps.
    capacity: u64,
    target_fpp: f64,
}

/// Room held in an open hour for a batch being appended, so that concurrent ingests
/// cannot together pass `max_hour_ids`; given back by [`OpenHours::release`] or
/// [`OpenHours::acknowledge`].
#[must_use]
#[derive(Debug, Clone, Copy)]
pub(super) struct Reservation {
    hour: Hour,
    room: u64,
}

impl OpenHours {
    /// No open hour yet; the marks were just read.
    pub fn new(capacity: u64, target_fpp: f64, deltas: Deltas) -> OpenHours {
        OpenHours {
            ledger: Mutex::new(Ledger::default()),
            refresh_turn: tokio::sync::Mutex::new(()),
            render_turns: Default::default(),
            marks_read_at: Mutex::new(Some(Instant::now())),
            deltas,
            capacity,
            target_fpp,
        }
    }

    /// The ledger of open hours. A panic while it was held may have left it half
    /// updated: it is then emptied, and every open hour reloads from the store (the
    /// truth) on its next read, instead of every later request failing on the poison.
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        crate::sync::lock_repairing(&self.ledger, |ledger| {
            tracing::error!(
                "a panic interrupted an update of the open hours; reloading them from the store"
            );
            *ledger = Ledger::default();
        })
    }

    /// The open entry of `hour`, created if needed, unless the hour is closed (by this
    /// node's seal, or in the store through `closed_through`): a closed hour's entry is
    /// never recreated (a reader racing the seal must serve the seal).
    fn entry<'l>(
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

    /// Holds room in `hour` for the batch's new keys, or refuses it whole when the hour
    /// would pass `max` distinct keys. A closed hour holds none: the store puts the keys
    /// in a later hour.
    ///
    /// # Errors
    /// [`ServiceError::HourFull`], holding nothing.
    pub fn reserve(
        &self,
        hour: Hour,
        keys: &[Key],
        max: u64,
        closed_through: Option<Hour>,
    ) -> Result<Reservation> {
        let mut ledger = self.ledger();
        let Some(open) = self.entry(&mut ledger, hour, closed_through) else {
            return Ok(Reservation { hour, room: 0 });
        };
        let new = open.count_new(keys);
        let count = open.count() + open.reserved;
        if count + new > max {
            return Err(ServiceError::HourFull { hour, count, max });
        }
        open.reserved += new;
        Ok(Reservation { hour, room: new })
    }

    /// Gives back the room of a batch that was not appended.
    pub fn release(&self, reservation: Reservation) {
        release(&mut self.ledger(), reservation);
    }

    /// Records a batch the store appended to `hour` (its batch `cursor`, when told) and
    /// gives back its room. The next refresh need not read the batch back when it is the
    /// one right after everything the entry has read.
    pub fn acknowledge(
        &self,
        reservation: Reservation,
        hour: Hour,
        keys: &[Key],
        cursor: Option<i64>,
        closed_through: Option<Hour>,
    ) {
        let mut ledger = self.ledger();
        release(&mut ledger, reservation);
        if let Some(open) = self.entry(&mut ledger, hour, closed_through) {
            open.add(keys);
            if let Some(c) = cursor.filter(|&c| open.cursor == c - 1) {
                open.cursor = c;
            }
        }
    }

    /// When the open `hour` is due a refresh (never refreshed, or `every` ago or more):
    /// the store cursor to read after, and whether it was ever refreshed. `None` when
    /// not due or closed.
    pub fn refresh_due(
        &self,
        hour: Hour,
        closed_through: Option<Hour>,
        every: Duration,
    ) -> Option<(i64, bool)> {
        let mut ledger = self.ledger();
        let open = self.entry(&mut ledger, hour, closed_through)?;
        let due = open.expired || open.refreshed_at.is_none_or(|t| t.elapsed() >= every);
        due.then_some((open.cursor, open.refreshed_at.is_some()))
    }

    /// Adds keys of `hour` read from the store (unless the hour closed meanwhile).
    pub fn add_read(&self, hour: Hour, keys: &[Key], closed_through: Option<Hour>) {
        let mut ledger = self.ledger();
        if let Some(open) = self.entry(&mut ledger, hour, closed_through) {
            open.add(keys);
        }
    }

    /// A read of `hour` from the store is complete up to `cursor` (its keys added by
    /// [`OpenHours::add_read`]): the hour is refreshed now.
    pub fn read_through(&self, hour: Hour, cursor: i64, closed_through: Option<Hour>) {
        let mut ledger = self.ledger();
        if let Some(open) = self.entry(&mut ledger, hour, closed_through) {
            open.cursor = open.cursor.max(cursor);
            open.refreshed_at = Some(Instant::now());
        }
    }

    /// A refresh of `hour` starts reading the store: what other nodes said they wrote
    /// before now is in what it reads ([`OpenHours::expire`] after this starts another).
    pub fn reading(&self, hour: Hour, closed_through: Option<Hour>) {
        let mut ledger = self.ledger();
        if let Some(open) = self.entry(&mut ledger, hour, closed_through) {
            open.expired = false;
        }
    }

    /// Another node wrote to `hour`: the next read refreshes it from the store at once,
    /// whatever `refresh` says.
    pub fn expire(&self, hour: Hour, closed_through: Option<Hour>) {
        let mut ledger = self.ledger();
        if let Some(open) = self.entry(&mut ledger, hour, closed_through) {
            open.expired = true;
        }
    }

    /// `hour` is sealed: it and every hour before it are open no more. Returns what
    /// this node held of `hour` itself, to be checked against the seal
    /// ([`Held::missing_from`]) outside the ledger's lock.
    pub fn forget_through(&self, hour: Hour) -> Option<Held> {
        let mut ledger = self.ledger();
        let held = ledger.hours.remove(&hour).map(Held);
        ledger.hours.retain(|h, _| *h > hour);
        if ledger.sealed_through.is_none_or(|s| s < hour) {
            ledger.sealed_through = Some(hour);
        }
        held
    }

    /// Heap bytes the open hours hold (normally one, two around the turn of an hour):
    /// what `max_hour_ids` bounds, outside the memory budget. Their keys and filters,
    /// and their newest renderings but for the bodies kept as dictionaries, which the
    /// deltas' part counts.
    pub fn heap_bytes(&self) -> u64 {
        let (held, renderings) = {
            let ledger = self.ledger();
            let held: u64 = ledger.hours.values().map(OpenHour::heap_bytes).sum();
            let renderings: Vec<Arc<Rendered>> = ledger
                .hours
                .values()
                .flat_map(|h| h.rendered.iter().flatten().map(|(_, r)| r.clone()))
                .collect();
            (held, renderings)
        };
        // The deltas' mutex is a leaf: taken with the ledger released.
        let rendered: usize = renderings
            .iter()
            .map(|r| {
                let kept = self.deltas.keeps(&r.sha256);
                r.size() - if kept { r.identity.len() } else { 0 }
            })
            .sum();
        held + rendered as u64
    }

    /// The open hour's versions kept as compression dictionaries.
    pub fn deltas(&self) -> &Deltas {
        &self.deltas
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

/// Gives back a reservation's room (its entry may be gone: sealed, or reloaded).
fn release(ledger: &mut Ledger, reservation: Reservation) {
    if let Some(open) = ledger.hours.get_mut(&reservation.hour) {
        open.reserved -= reservation.room;
    }
}

/// The keys a node held of an hour once sealed: each acknowledged by the store, by this
/// node's ingest or read back from the store.
pub struct Held(OpenHour);

impl Held {
    /// How many of these keys the sealed filter lacks: keys the store acknowledged and
    /// then lost (a failover to a standby that never received them).
    pub fn missing_from(&self, sealed: &crate::bloom::Filter) -> u64 {
        self.0.missing_from(sealed)
    }
}
