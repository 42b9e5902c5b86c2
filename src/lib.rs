//! bloomcast: hourly Bloom filters of what changed, published over HTTP.
//!
//! - [`bloom`]: the filter math (pure).
//! - [`wire`]: wire format v1 (JSON document, raw headers).
//! - [`hour`]: UTC hours and days as validated values.

pub mod bloom;
pub mod hour;
pub mod wire;
