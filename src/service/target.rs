//! What a client asks the service for (an hour, a day, or the hours since one), and the
//! view it is served: the rendered filter, with where it stands among the others.

use crate::hour::{Day, Hour};
use crate::render::Rendered;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// What a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Hour(Hour),
    Day(Day),
    /// From this hour through the current one.
    Since(Hour),
}

/// A served filter, with where it stands among the others.
#[derive(Debug, Clone)]
pub struct View {
    pub rendered: Arc<Rendered>,
    /// `None` when complete (immutable); else when the content may next change for good
    /// (the end of the open hour).
    pub open_until: Option<DateTime<Utc>>,
    /// The previous hour or day, if the service has it.
    pub prev: Option<Target>,
    /// The next hour or day, if it exists yet.
    pub next: Option<Target>,
    /// The open hour this view shows, whose versions may serve as compression
    /// dictionaries for later ones (RFC 9842); `None` for closed hours and unions.
    pub open_hour: Option<Hour>,
    /// A closed hour served before its signature exists (its seal is not yet linked, or
    /// only a node holding the key registered for it can sign it): complete, but not in
    /// the form every cache may keep for ever.
    pub signature_pending: bool,
}
