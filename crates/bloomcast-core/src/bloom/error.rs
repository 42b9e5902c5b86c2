//! Everything that can be wrong with a filter or its encoding, each error naming
//! the problem precisely enough for a client author to fix their side.

use thiserror::Error;

/// Why a filter could not be built, decoded or combined.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FilterError {
    /// A size `m` outside `8..2^32` bits.
    #[error("m = {0} is out of range: 8 <= m < 2^32")]
    MOutOfRange(u64),
    /// A probe count `k` outside `1..=64`.
    #[error("k = {0} is out of range: 1 <= k <= 64")]
    KOutOfRange(u64),
    /// A false-positive probability outside `(0, 1)`.
    #[error("false-positive probability {0} is out of range: 0 < p < 1")]
    BadProbability(f64),
    /// A hash scheme other than `sha1-km32`.
    #[error("unknown hash scheme {0:?}: this version knows only \"sha1-km32\"")]
    UnknownHash(String),
    /// A character that is not a hex digit.
    #[error("bad hex at character {index}: expected 0-9 or a-f")]
    BadHex {
        /// The offset of the first character that is not a hex digit.
        index: usize,
    },
    /// Hex of an odd number of characters.
    #[error("bad hex: odd number of characters ({0})")]
    OddHexLength(usize),
    /// Bytes of another length than `m` bits need.
    #[error("wrong length for m = {m}: expected {expected} bytes, got {actual}")]
    WrongLength {
        /// The filter's size in bits.
        m: u32,
        /// `ceil(m / 8)`.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// Padding bits of the last byte that are set.
    #[error("bits past m = {m} are set: the last byte must be zero-padded")]
    BitsPastM {
        /// The filter's size in bits.
        m: u32,
    },
    /// Filters of different shapes, which cannot be combined.
    #[error("filters differ (m, k, hash) {left:?} vs {right:?}: only equal shapes combine")]
    Incompatible {
        /// `(m, k, hash)` of the left filter.
        left: (u32, u32, &'static str),
        /// `(m, k, hash)` of the right filter.
        right: (u32, u32, &'static str),
    },
    /// A partitioned filter with fewer bits than probes.
    #[error(
        "a partitioned filter needs m >= k (m = {m}, k = {k}): each of the k ranges needs a bit"
    )]
    PartitionTooSmall {
        /// The size asked for.
        m: u32,
        /// The probes asked for.
        k: u32,
    },
    /// A ribbon filter's fingerprint width outside `1..=32`.
    #[error("ribbon fingerprint bits r = {0} out of range: 1 <= r <= 32")]
    RibbonBits(u32),
    /// A ribbon body that does not decode.
    #[error("malformed ribbon body: {0}")]
    BadRibbon(String),
    /// An exact body that does not decode.
    #[error("malformed exact body: {0}")]
    BadExact(String),
    /// A JSON filter document that does not decode.
    #[error("malformed filter document: {0}")]
    BadDocument(String),
}
