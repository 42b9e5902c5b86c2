//! bloomcast: hourly Bloom filters of what changed, published over HTTP, so clients
//! stop polling thousands of resources one by one.
//!
//! - [`bloom`]: the filter math (pure): hashing, sizing, the filter, encodings.
//! - [`chain`]: verifiable history (pure): digests, the hour chain, signatures.
//! - [`wire`]: wire format v1: the JSON document and raw headers (pure).
//! - [`hour`]: UTC hours and days as validated values.
//! - [`store`]: storage behind one trait; the embedded SQLite store.
//! - [`service`]: ingest, publication, sealing and pruning, independent of HTTP.
//! - [`client`]: the Rust SDK: fetch filters, ask what changed, publish.
//! - [`http`]: the router and thin handlers; [`server`]: the accept loop with its
//!   connection timeouts; [`startup`]: building and running it.

pub mod bloom;
pub mod chain;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod dcz;
pub mod hour;
pub mod http;
pub mod memory;
pub mod render;
pub mod server;
pub mod service;
pub mod sha256;
pub mod startup;
pub mod store;
mod sync;
pub mod telemetry;
pub mod wire;
