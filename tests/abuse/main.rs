//! The bad-input corpus: a real server on a real socket, fed malformed paths, headers,
//! bodies and tokens, slow clients and floods of tiny requests over raw TCP. Every case
//! gets its documented status (with the JSON error body when the request reached the
//! API), and afterwards the server still serves the open hour correctly with every
//! acknowledged ID in it.

// Unix only: the slow-body test writes through a duplicated socket descriptor.
#![cfg(unix)]

mod codings;
mod connections;
mod headers;
mod helpers;
mod ingest;
mod paths;
mod raw;
mod wire;

#[path = "../common/wait.rs"]
mod wait;
