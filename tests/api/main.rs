//! API tests: the real router and store, driven in-process.

mod budget;
mod caching;
mod chain;
mod clock_jumps;
mod compact;
mod compact_unions;
mod compact_v2;
mod corruption;
mod dashboard;
mod deltas;
mod dictionaries;
mod errors;
mod exact;
mod fast_lane;
mod faults;
mod health;
mod helpers;
mod history;
mod ingest;
mod publication;
mod rollover;
mod signing;
mod store_integrity;
mod timeouts;
mod unions;
mod wrapped;
