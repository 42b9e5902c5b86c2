//! API tests: the real router and store, driven in-process.

mod atom;
mod budget;
mod caching;
mod chain;
mod clock_jumps;
mod clock_start;
mod compact;
mod compact_unions;
mod compact_v2;
mod corruption;
mod damage;
mod dashboard;
mod deltas;
mod dictionaries;
mod errors;
mod events;
mod exact;
mod faults;
mod health;
mod helpers;
mod history;
mod index_damage;
mod ingest;
mod negotiation;
mod openapi;
mod publication;
mod quiet_hours;
mod rollover;
mod scrub;
mod signing;
mod store_integrity;
mod timeouts;
mod unions;
mod upgrade;
mod wrapped;

#[path = "../common/wait.rs"]
mod wait;
