//! What the open hours show, read under one hold of the ledger each: renderings of
//! the open hour (and keeping new ones), the keys unions are built and carried forward
//! from, and the small figures the index and the stats show.

use super::{OpenHour, OpenHours};
use crate::bloom::{Filter, Key};
use crate::hour::Hour;
use crate::render::Rendered;
use std::sync::Arc;

/// What serving an open hour's rendering takes.
pub enum Rendering<T> {
    /// The hour is closed: its seal serves.
    Closed,
    /// A rendering current enough.
    Ready(Arc<Rendered>),
    /// None is: render (`T` says what).
    Due(T),
}

/// The open hour's content to render, with the version it shows.
pub struct RenderJob {
    pub count: u64,
    pub filter: Filter,
    pub version: u64,
}

/// The open hour's keys, with the version, id and position (count) they show.
pub struct OpenSnapshot {
    pub keys: Vec<Key>,
    pub version: u64,
    pub id: u64,
    pub count: u64,
}

/// The distinct keys an open hour added since a position, in the order added, with its
/// count (the new position) and version now.
pub struct Gained {
    pub keys: Vec<u64>,
    pub count: u64,
    pub version: u64,
}

/// The open hour's filter figures, for the operators' stats.
pub struct Figures {
    pub count: u64,
    pub m: u32,
    pub k: u32,
    pub ones: u64,
    /// Its `fpp` as served.
    pub fpp: f64,
}

impl OpenHours {
    /// The open `hour`'s rendering in representation `slot` when it shows the current
    /// version (then published on the board, with the refresh it shows), else the
    /// version to render.
    pub fn rendering(
        &self,
        hour: Hour,
        slot: usize,
        closed_through: Option<Hour>,
        fresh: impl Fn(&Rendered) -> bool,
    ) -> Rendering<u64> {
        let mut ledger = self.ledger();
        let Some(open) = self.entry(&mut ledger, hour, closed_through) else {
            return Rendering::Closed;
        };
        match &open.rendered[slot] {
            Some((v, r)) if *v == open.version && fresh(r) => Rendering::Ready(r.clone()),
            _ => Rendering::Due(open.version),
        }
    }

    /// Under the render turn: a rendering of at least the `wanted` version if one was
    /// kept meanwhile, else the content to render.
    pub fn render_job(
        &self,
        hour: Hour,
        slot: usize,
        wanted: u64,
        closed_through: Option<Hour>,
        fresh: impl Fn(&Rendered) -> bool,
    ) -> Rendering<RenderJob> {
        let mut ledger = self.ledger();
        let Some(open) = self.entry(&mut ledger, hour, closed_through) else {
            return Rendering::Closed;
        };
        if let Some((v, r)) = &open.rendered[slot] {
            if *v >= wanted && fresh(r) {
                return Rendering::Ready(r.clone());
            }
        }
        Rendering::Due(RenderJob {
            count: open.count(),
            filter: open.filter().clone(),
            version: open.version,
        })
    }

    /// Keeps a rendering of a [`RenderJob`]'s `version`, unless a newer one was kept meanwhile or the hour is gone (one of the same version
    /// is replaced: it is the same content signed again, see `Service::open_view`).
    pub fn keep_rendering(&self, hour: Hour, slot: usize, version: u64, rendered: &Arc<Rendered>) {
        let mut ledger = self.ledger();
        if let Some(open) = ledger.hours.get_mut(&hour) {
            if open.rendered[slot]
                .as_ref()
                .is_none_or(|(v, _)| *v <= version)
            {
                open.rendered[slot] = Some((version, rendered.clone()));
            }
        }
    }

    /// The open `hour`'s keys, taken with the version, id and count they show, so that
    /// a stamp made from them never claims newer content. `None` when it has no entry.
    pub fn snapshot(&self, hour: Hour) -> Option<OpenSnapshot> {
        let ledger = self.ledger();
        let open = ledger.hours.get(&hour)?;
        Some(OpenSnapshot {
            keys: open.keys().collect(),
            version: open.version,
            id: open.id,
            count: open.count(),
        })
    }

    /// The keys the open `hour` added after `position` (a past count of the entry
    /// `hour_id`; see `OpenHour::keys_since`); `None` when that entry is gone or no
    /// longer keeps them all.
    pub fn gained_since(&self, hour: Hour, hour_id: u64, position: u64) -> Option<Gained> {
        let ledger = self.ledger();
        let open = ledger.hours.get(&hour).filter(|o| o.id == hour_id)?;
        Some(Gained {
            keys: open.keys_since(position)?.to_vec(),
            count: open.count(),
            version: open.version,
        })
    }

    /// The content version of the open `hour` (0 when it has no entry).
    pub fn version(&self, hour: Hour) -> u64 {
        self.ledger().hours.get(&hour).map_or(0, |o| o.version)
    }

    /// The distinct-key count of the open `hour` as this node sees it.
    pub fn count(&self, hour: Hour) -> u64 {
        self.ledger().hours.get(&hour).map_or(0, OpenHour::count)
    }

    /// The open `hour`'s filter figures; `None` when it is closed.
    pub fn figures(&self, hour: Hour, closed_through: Option<Hour>) -> Option<Figures> {
        let mut ledger = self.ledger();
        let open = self.entry(&mut ledger, hour, closed_through)?;
        let filter = open.filter();
        Some(Figures {
            count: open.count(),
            m: filter.m(),
            k: filter.k(),
            ones: filter.ones(),
            fpp: filter.fpp(),
        })
    }
}
