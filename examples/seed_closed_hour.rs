//! Writes N IDs into a past hour of an embedded store, before a server is started on it,
//! so that the server has a closed hour to serve without waiting an hour.
//!
//! ```text
//! cargo run --release --example seed_closed_hour -- <data-dir> <n> [hours-ago]
//! ```
//!
//! It goes through the library's store API only: the store is opened as if it were
//! `hours-ago` hours ago (default 2), which makes that hour the store's first one, and
//! the IDs `closed:0` .. `closed:<n-1>` are appended to it durably, as an ingest would.
//! When `bloomcast serve` then starts on the directory with the real clock, its startup
//! housekeeping closes and seals that hour (and the empty ones after it) exactly as it
//! would after a restart. Prints the hour's path, e.g. `/2026/11/22/05`.

use bloomcast::bloom::Key;
use bloomcast::clock::{Clock, SystemClock};
use bloomcast::hour::Hour;
use bloomcast::store::{SqliteStore, Store};
use std::path::PathBuf;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: seed_closed_hour <data-dir> <n> [hours-ago]";
    let dir = PathBuf::from(argv.first().expect(usage));
    let n: u64 = argv.get(1).and_then(|s| s.parse().ok()).expect(usage);
    let ago: i64 = argv.get(2).map_or(2, |s| s.parse().expect(usage));
    assert!(ago >= 1, "the hour must be in the past: hours-ago >= 1");
    let hour = Hour::from_index(SystemClock.current_hour().index() - ago);
    let store = SqliteStore::open(&dir, hour).expect("the store opens");
    let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("closed:{i}"))).collect();
    let landed = store
        .append(hour, &keys)
        .await
        .expect("the append is durable");
    assert_eq!(landed, hour, "the store had already closed {hour}");
    println!("{}", hour.path());
}
