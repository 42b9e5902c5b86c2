//! The service's public face, by part: each part is a handle on the service
//! (`service.hours().view(..)`) whose methods sit in the modules that do its work, so
//! that what a caller may ask of each part is listed in one place (here) and read
//! beside its code. The handles borrow the whole service: the parts' state lives in
//! their own structs (`open_hours`, `unions`, `sealer`, `health`, `scrub`, `warm`,
//! `cache`), which every part may read.
//!
//! - [`Ingest`]: recording IDs into the open hour, and the universe of IDs;
//! - [`Hours`]: the filters of hours, days and ranges, their deltas and dictionaries,
//!   what the service knows of them, and sealing;
//! - [`Forms`]: the compact (ribbon) and exact forms, and the grades they are served at;
//! - [`Signing`]: the hour chain, its checkpoints and signing keys;
//! - [`Health`]: what `/healthz` reports, the scrub, and the clock;
//! - [`Stats`]: figures for operators.
//!
//! `Service` itself keeps its lifecycle: start, load, tick, the background tasks, and
//! the time it runs on.

use super::Service;
use std::ops::Deref;

/// Recording IDs: the open hour's and the universe's.
#[derive(Clone, Copy)]
pub struct Ingest<'a>(&'a Service);

/// Hours, days and ranges as filters, and sealing.
#[derive(Clone, Copy)]
pub struct Hours<'a>(&'a Service);

/// The compact and exact forms of closed hours and days, and the grades of the former.
#[derive(Clone, Copy)]
pub struct Forms<'a>(&'a Service);

/// The hour chain: its links, checkpoints and keys.
#[derive(Clone, Copy)]
pub struct Signing<'a>(&'a Service);

/// Health: the store, the open hour's load, corrupt data, the scrub, the clock.
#[derive(Clone, Copy)]
pub struct Health<'a>(&'a Service);

/// Figures for operators (`/stats`, `/metrics`).
#[derive(Clone, Copy)]
pub struct Stats<'a>(&'a Service);

impl Service {
    pub fn ingest(&self) -> Ingest<'_> {
        Ingest(self)
    }

    pub fn hours(&self) -> Hours<'_> {
        Hours(self)
    }

    pub fn forms(&self) -> Forms<'_> {
        Forms(self)
    }

    pub fn signing(&self) -> Signing<'_> {
        Signing(self)
    }

    pub fn health(&self) -> Health<'_> {
        Health(self)
    }

    pub fn stats(&self) -> Stats<'_> {
        Stats(self)
    }
}

macro_rules! service_part {
    ($($part:ident),*) => {$(
        impl Deref for $part<'_> {
            type Target = Service;

            fn deref(&self) -> &Service {
                self.0
            }
        }
    )*};
}

service_part!(Ingest, Hours, Forms, Signing, Health, Stats);
