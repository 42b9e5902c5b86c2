//! The filter math, in one place and pure: hashing, sizing, the filter and its
//! encodings. No I/O, no clock, no globals; the server, the client SDK and the CLI
//! all build on it.

pub(crate) mod bits;
mod build;
mod distinct;
mod encode;
mod error;
mod estimate;
mod filter;
mod hash;
pub mod pages;
#[cfg(feature = "partitioned")]
mod partitioned;
pub mod probes;
mod ribbon;
pub mod ribbon2;
mod rule;
mod sizing;
mod union;

pub use distinct::distinct_keys;
pub use encode::hex_into;
pub use encode::{from_hex, to_hex};
pub use error::FilterError;
pub use estimate::Overlap;
pub use filter::Filter;
pub use hash::{HashScheme, Key, Positions, SHA1_KM32};
pub use pages::{Page, Pages, PagesHeader};
#[cfg(feature = "partitioned")]
pub use partitioned::PartitionedFilter;
pub use ribbon::{bits_for_fpp, Ribbon};
pub(crate) use ribbon::{mix64, WIDTH};
pub use ribbon2::{Grade, Ribbon2};
pub use rule::Sizing;
pub use sizing::{fpp_at_fill, Params, MAX_K, MIN_M};
pub use union::{
    distinct_count, union_by, union_in_parts, union_of, union_with_room, KeyParts, PartsError,
};
