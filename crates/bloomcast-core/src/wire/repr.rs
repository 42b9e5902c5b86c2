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
    /// Every representation, in [`Repr::index`] order.
    pub const ALL: [Repr; 3] = [Repr::Json, Repr::Hex, Repr::Bin];

    /// The `Content-Type` it is served with.
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

    /// The representation a URL suffix (`json`, `hex`, `bin`) selects.
    pub fn from_suffix(s: &str) -> Option<Repr> {
        Repr::ALL.into_iter().find(|r| r.suffix() == s)
    }

    /// Its position in [`Repr::ALL`], to index per-representation tables.
    pub fn index(self) -> usize {
        self as usize
    }
}
