//! Everything that can be wrong with a filter or its encoding, each error naming
//! the problem precisely enough for a client author to fix their side.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum FilterError {
    #[error("m = {0} is out of range: 8 <= m < 2^32")]
    MOutOfRange(u64),
    #[error("k = {0} is out of range: 1 <= k <= 64")]
    KOutOfRange(u64),
    #[error("false-positive probability {0} is out of range: 0 < p < 1")]
    BadProbability(f64),
    #[error("unknown hash scheme {0:?}: this version knows only \"sha1-km32\"")]
    UnknownHash(String),
    #[error("bad hex at character {index}: expected 0-9 or a-f")]
    BadHex { index: usize },
    #[error("bad hex: odd number of characters ({0})")]
    OddHexLength(usize),
    #[error("wrong length for m = {m}: expected {expected} bytes, got {actual}")]
    WrongLength {
        m: u32,
        expected: usize,
        actual: usize,
    },
    #[error("bits past m = {m} are set: the last byte must be zero-padded")]
    BitsPastM { m: u32 },
    #[error("filters differ (m, k, hash) {left:?} vs {right:?}: only equal shapes combine")]
    Incompatible {
        left: (u32, u32, &'static str),
        right: (u32, u32, &'static str),
    },
    #[error(
        "a partitioned filter needs m >= k (m = {m}, k = {k}): each of the k ranges needs a bit"
    )]
    PartitionTooSmall { m: u32, k: u32 },
    #[error("ribbon fingerprint bits r = {0} out of range: 1 <= r <= 32")]
    RibbonBits(u32),
    #[error("malformed ribbon body: {0}")]
    BadRibbon(String),
    #[error("malformed exact body: {0}")]
    BadExact(String),
    #[error("malformed filter document: {0}")]
    BadDocument(String),
}
