//! The core of [bloomcast](https://crates.io/crates/bloomcast): hourly filters of "what
//! changed", as values. Everything here is pure: no I/O, no clock, no async runtime, so a
//! program that only reads or builds filters embeds this crate alone. It is safe Rust
//! throughout (`forbid(unsafe_code)`).
//!
//! - [`bloom`]: the filter math: the `sha1-km32` hash scheme, sizing, the Bloom filter,
//!   its hex and byte encodings, unions, estimates, and the compact ribbon filter (and,
//!   with feature `partitioned`, the partitioned filter).
//! - [`wire`]: wire format v1: the self-describing JSON document and the raw
//!   representations' headers, and their strict decoding.
//! - `chain` (feature `chain`): verifiable history: an hour's digest, the hour chain's
//!   headers, the signed message, Ed25519 verification, and keys that rotate (key ids,
//!   the `Bloom-Signature` field, the list of keys with the hours each signs).
//! - [`hour`]: UTC hours and days as validated values, parsed once from
//!   `/YYYY/MM/DD/HH`.
//! - [`exact`]: exact hours over a known universe: which of its IDs changed, with no
//!   false positive, near the information-theoretic floor.
//! - `dcz` (feature `dcz`): the RFC 9842 dictionary-compressed (`dcz`) framing of
//!   open-hour deltas.
//!
//! The byte layouts are specified in the project's `docs/PROTOCOL.md`.
//!
//! # Features
//!
//! None is on by default: the default build is the filter math and wire formats, pure
//! Rust with no C build and no elliptic curves. The README below has the table of
//! features (`chain`, `dcz`, `partitioned`) and what each brings in.
//!
//! The crate's README, whose examples run as doctests:
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bloom;
#[cfg(feature = "chain")]
pub mod chain;
#[cfg(feature = "dcz")]
pub mod dcz;
pub mod exact;
pub mod hour;
pub mod wire;
