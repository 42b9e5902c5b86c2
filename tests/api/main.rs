//! API tests: the real router and store, driven in-process.

mod caching;
mod corruption;
mod errors;
mod helpers;
mod ingest;
mod publication;
mod rollover;
mod store_integrity;
