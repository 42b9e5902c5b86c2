//! Writes N IDs into a past hour of an embedded store, before a server is started on it,
//! so that the server has a closed hour to serve without waiting an hour.
//!
//! ```text
//! cargo run --release --example seed_closed_hour -- <data-dir> <n> [hours-ago] [prefix]
//! ```
//!
//! It goes through the library's store API only: the store is opened as if it were
//! `hours-ago` hours ago (default 2), which makes that hour the store's first one, and
//! the IDs `closed:0` .. `closed:<n-1>` are appended to it durably, as an ingest would
//! (`<prefix>:0` .. with a prefix: hours seeded with different prefixes share no ID).
//! When `bloomcast serve` then starts on the directory with the real clock, its startup
//! housekeeping closes and seals that hour (and the empty ones after it) exactly as it
//! would after a restart. Prints the hour's path, e.g. `/2026/11/22/05`.
//!
//! `hours-ago` 0 seeds the current hour instead: the server then loads it as its open
//! hour at start (`benches/harness/bighour.sh` measures that load). IDs are appended in
//! batches of 10,000, as a publisher's batches would be stored.
//!
//! With `SEED_UNIVERSE=1`, a store with no universe yet gets one, created in the hour
//! seeded with its IDs (`POST /universe` during that hour, in effect): that hour and every
//! later one then have exact bodies, each hour's IDs joining the universe as it is sealed
//! (`benches/harness/catchup.sh` with `EXACT=1`).
//!
//! A `postgres://` URL in place of the data directory seeds a cluster database instead,
//! in the schema `BLOOMCAST_DATABASE_SCHEMA` names (default `bloomcast`), as the server's
//! own settings would.

use bloomcast::bloom::Key;
use bloomcast::clock::{Clock, SystemClock};
use bloomcast::hour::Hour;
use bloomcast::store::{PgLink, PgStore, SqliteStore, Store};
use std::path::{Path, PathBuf};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: seed_closed_hour <data-dir | postgres://...> <n> [hours-ago] [prefix]";
    let place = argv.first().expect(usage);
    let n: u64 = argv.get(1).and_then(|s| s.parse().ok()).expect(usage);
    let ago: i64 = argv.get(2).map_or(2, |s| s.parse().expect(usage));
    assert!(ago >= 0, "hours-ago must not be negative");
    let prefix = argv.get(3).map_or("closed", String::as_str);
    let hour = Hour::from_index(SystemClock.current_hour().index() - ago);
    if place.starts_with("postgres://") || place.starts_with("postgresql://") {
        let schema =
            std::env::var("BLOOMCAST_DATABASE_SCHEMA").unwrap_or_else(|_| "bloomcast".into());
        let link = PgLink::new(place, Path::new("")).expect("the database URL is valid");
        let store = PgStore::connect(link, &schema, hour)
            .await
            .expect("the database opens");
        seed(&store, hour, n, prefix).await;
    } else {
        let store = SqliteStore::open(&PathBuf::from(place), hour).expect("the store opens");
        seed(&store, hour, n, prefix).await;
    }
    println!("{}", hour.path());
}

async fn seed(store: &impl Store, hour: Hour, n: u64, prefix: &str) {
    let mut next = 0;
    while next < n {
        let end = (next + 10_000).min(n);
        let keys: Vec<Key> = (next..end)
            .map(|i| Key::of(&format!("{prefix}:{i}")))
            .collect();
        let landed = store
            .append(hour, &keys)
            .await
            .expect("the append is durable");
        assert_eq!(landed, hour, "the store had already closed {hour}");
        if std::env::var("SEED_UNIVERSE").is_ok_and(|v| v == "1")
            && store
                .universe()
                .await
                .expect("the universe reads")
                .is_none()
        {
            store
                .add_to_universe(&keys, hour, u64::MAX)
                .await
                .expect("the universe is durable");
        }
        next = end;
    }
}
