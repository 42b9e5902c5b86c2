//! bloomcast: hourly Bloom filters of what changed, published over HTTP, so clients
//! stop polling thousands of resources one by one.
//!
//! - [`bloom`], [`chain`], [`wire`], [`hour`], [`dcz`]: the pure core (the
//!   filter math, verifiable history, the wire formats, hours, the delta framing), from
//!   the `bloomcast-core` crate, re-exported here under their own names.
//! - [`store`]: storage behind one trait; the embedded SQLite store.
//! - [`service`]: ingest, publication, sealing and pruning, independent of HTTP.
//! - [`client`]: the Rust SDK (the `bloomcast-client` crate): fetch filters, ask what
//!   changed, publish.
//! - [`render`]: the bodies of a filter's representations (JSON, hex, binary, gzip).
//! - [`http`]: the one application stack every request goes through, and thin handlers;
//!   [`server`]: the accept loop and the connections' HTTP/1.1 framing, with their
//!   timeouts; [`startup`]: building and running it.
//! - [`mirror`]: a static copy of the sealed hours for any file server or CDN.

pub mod cli;
pub mod clock;
pub mod config;
pub mod http;
pub mod memory;
pub mod mirror;
pub mod render;
pub mod server;
pub mod service;
pub mod startup;
pub mod store;

pub mod telemetry;

pub use bloomcast_client as client;
mod sync;
pub use bloomcast_core::{bloom, chain, dcz, exact, hour, wire};
