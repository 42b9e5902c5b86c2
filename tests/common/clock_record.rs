//! The clock record every store backend must keep alike, run against SQLite and
//! PostgreSQL: what a heartbeat records reads back whole, the next replaces it whole.

use bloomcast::clock::{BootReading, ClockRecord};
use bloomcast::store::Store;
use chrono::{Duration, TimeZone, Utc};

/// A store no heartbeat has recorded the clock in has no record; each heartbeat's reads
/// back exactly, the next one's replaces it whole (an unknown boot is never paired with
/// an earlier heartbeat's), and a plain ping leaves it.
pub async fn a_heartbeats_clock_record_reads_back_whole_and_the_next_replaces_it<S>(store: &S)
where
    S: Store + ?Sized,
{
    assert_eq!(store.clock_record().await.unwrap(), None);
    let time = Utc.timestamp_millis_opt(1_220_447_400_123).unwrap();
    let first = ClockRecord {
        time,
        trusted: time + Duration::hours(2),
        boot: Some(BootReading {
            id: -7_086_219_481_205_324_613,
            since_boot: std::time::Duration::from_millis(86_400_007),
        }),
    };
    store.heartbeat(&first).await.unwrap();
    assert_eq!(store.clock_record().await.unwrap(), Some(first));

    let second = ClockRecord {
        time: time + Duration::seconds(10),
        trusted: time + Duration::seconds(10),
        boot: None,
    };
    store.heartbeat(&second).await.unwrap();
    store.ping().await.unwrap();
    assert_eq!(store.clock_record().await.unwrap(), Some(second));
}
