//! API tests: the real router and store, driven in-process.

mod caching;
mod chain;
mod compact;
mod corruption;
mod dashboard;
mod errors;
mod fast_lane;
mod faults;
mod helpers;
mod history;
mod ingest;
mod publication;
mod rollover;
mod store_integrity;
mod wrapped;
