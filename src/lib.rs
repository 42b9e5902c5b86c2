//! bloomcast: hourly Bloom filters of what changed, published over HTTP, so clients
//! stop polling thousands of resources one by one.
//!
//! - [`bloom`], [`chain`], [`wire`], [`hour`], [`dcz`], [`sha256`]: the pure core (the
//!   filter math, verifiable history, the wire formats, hours, the delta framing), from
//!   the `bloomcast-core` crate, re-exported here under their own names.
//! - [`store`]: storage behind one trait; the embedded SQLite store.
//! - [`service`]: ingest, publication, sealing and pruning, independent of HTTP.
//! - [`client`]: the Rust SDK (the `bloomcast-client` crate): fetch filters, ask what
//!   changed, publish.
//! - [`http`]: the router and thin handlers; [`server`]: the accept loop with its
//!   connection timeouts; [`startup`]: building and running it.

pub mod cli;
pub mod clock;
pub mod config;
pub mod http;
pub mod memory;
pub mod render;
pub mod server;
pub mod service;
pub mod startup;
pub mod store;

pub mod telemetry;

pub use bloomcast_client as client;
use bloomcast_core::sync;
pub use bloomcast_core::{bloom, chain, dcz, hour, wire};
