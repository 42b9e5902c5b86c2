//! The publisher's universe of IDs (as keys), from which exact bodies are built
//! (docs/PROTOCOL.md section 14): what the store says of it.

use crate::hour::Hour;

/// The universe as stored: its distinct keys and the first hour it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniverseInfo {
    pub count: u64,
    /// The hour open when the universe was created: the first with an exact body.
    pub since: Hour,
}

/// What adding a batch to the universe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniverseAdded {
    /// Recorded; the universe now holds `count` distinct keys.
    Added { count: u64 },
    /// Refused whole: it would take the universe past its limit; `count` is unchanged.
    Full { count: u64 },
}
