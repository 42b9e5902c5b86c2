//! The three representations of a filter (JSON, hex, binary): their content types and
//! the URL suffixes that select them.

/// The three representations of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr {
    /// The v1 JSON document (`application/json`, the default; suffix `.json`).
    Json,
    /// Raw lowercase hex (`text/plain`, suffix `.hex`) with `Bloom-*` headers.
    Hex,
    /// Raw bytes (`application/octet-stream`, suffix `.bin`) with `Bloom-*` headers.
    Bin,
}

impl Repr {
    pub const ALL: [Repr; 3] = [Repr::Json, Repr::Hex, Repr::Bin];

    pub fn content_type(self) -> &'static str {
        match self {
            Repr::Json => "application/json",
            Repr::Hex => "text/plain; charset=utf-8",
            Repr::Bin => "application/octet-stream",
        }
    }

    /// The URL suffix that selects this representation.
    pub fn suffix(self) -> &'static str {
        match self {
            Repr::Json => "json",
            Repr::Hex => "hex",
            Repr::Bin => "bin",
        }
    }

    pub fn from_suffix(s: &str) -> Option<Repr> {
        Repr::ALL.into_iter().find(|r| r.suffix() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}
