//! Unions that end in the open hour (`since`, today): each kept with the open hour's
//! version it was built from, so pollers asking for the same range between two ingests
//! share one build; and beside each, what its rendering left for rendering the next
//! version (the coding of a gzip JSON or hex body, see `render::gz`), which the next
//! renderer takes. Kept in the one cache ([`crate::service::kept`]), the codings
//! counted; unions of an earlier open hour go as soon as a union of a later one is kept
//! (nobody can ask for them again).

use crate::render::{Encodings, Repr};

/// `(first hour index, last hour index, representation)`.
pub(in crate::service) type UnionKey = (i64, i64, Repr);
/// An open union's rendering: its union and the encoding it holds (each version of an
/// open union is rendered in the encodings its pollers ask for, each on its own).
pub(in crate::service) type OpenKey = (UnionKey, Encodings);
/// The open hour (index) and its content version.
pub(in crate::service) type OpenStamp = (i64, u64);
