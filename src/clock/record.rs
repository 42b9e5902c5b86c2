//! The clock record: what every heartbeat writes of the service's time, and the start
//! rule that checks a start's first clock reading against it.
//!
//! A wall clock read once at start cannot tell a jump from downtime. The record can,
//! as far as the machine's boot measures: a start on the same boot expects the recorded
//! time plus the time since boot passed since it was written; after a reboot (or where
//! the boot is unknown) the downtime is unknown and it expects the recorded time itself.
//! A first reading further past that than the jump tolerance is a jump from the start,
//! held as the running guard holds any jump ([`super::JumpGuard::anchor_at_start`]).
//!
//! Pure: the record is passed in and read out as values; the stores keep it as four
//! integer rows of their `meta` tables ([`ClockRecord::ROWS`]), written in one
//! transaction so that a reader never pairs one heartbeat's time with another's boot.

use super::BootReading;
use chrono::{DateTime, Duration, TimeZone, Utc};

/// What a heartbeat records of the service's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockRecord {
    /// The time the service ran on at the heartbeat (the guarded time, never a jump it
    /// held).
    pub time: DateTime<Utc>,
    /// The furthest time the service had trusted, carried on to the heartbeat: `time`,
    /// or later after the clock was stepped back (a start back on it is the step's
    /// correction, not a jump).
    pub trusted: DateTime<Utc>,
    /// The machine's boot at the heartbeat, where known.
    pub boot: Option<BootReading>,
}

/// What a start expects the time to be, from the last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// The recorded time plus the real time since it was written, where measured.
    pub time: DateTime<Utc>,
    /// The furthest trusted time, carried on alike.
    pub trusted: DateTime<Utc>,
    /// The real time since the record, when the same boot measured it.
    pub measured: Option<std::time::Duration>,
}

impl ClockRecord {
    /// The `meta` rows of a record, each an integer: the time and the trusted time (Unix
    /// milliseconds), the boot's id (0: unknown) and its time since boot (milliseconds).
    pub const ROWS: [&'static str; 4] = [
        "clock_time_ms",
        "clock_trusted_ms",
        "clock_boot",
        "clock_since_boot_ms",
    ];

    /// The values of [`ClockRecord::ROWS`], in order.
    pub fn to_rows(&self) -> [i64; 4] {
        let (boot, since) = self.boot.map_or((0, 0), |b| {
            (
                b.id,
                i64::try_from(b.since_boot.as_millis()).unwrap_or(i64::MAX),
            )
        });
        [
            self.time.timestamp_millis(),
            self.trusted.timestamp_millis(),
            boot,
            since,
        ]
    }

    /// The record of rows read back (`None` where a row is missing); no record without
    /// its time (a store no heartbeat has recorded the clock in).
    pub fn from_rows(rows: [Option<i64>; 4]) -> Option<ClockRecord> {
        let millis = |ms: i64| Utc.timestamp_millis_opt(ms).single();
        let time = millis(rows[0]?)?;
        let trusted = rows[1].and_then(millis).unwrap_or(time).max(time);
        let boot = match (rows[2], rows[3]) {
            (Some(id), Some(since)) if id != 0 && since >= 0 => Some(BootReading {
                id,
                since_boot: std::time::Duration::from_millis(since.unsigned_abs()),
            }),
            _ => None,
        };
        Some(ClockRecord {
            time,
            trusted,
            boot,
        })
    }

    /// The start rule's expectation for a start whose machine's boot reads `boot` now.
    pub fn expected_now(&self, boot: Option<BootReading>) -> Expected {
        let measured = match (self.boot, boot) {
            // The same boot, whose time since boot went on: the real time passed.
            (Some(then), Some(now)) if then.id == now.id && now.since_boot >= then.since_boot => {
                Some(now.since_boot - then.since_boot)
            }
            // Rebooted, or unknown: how long it was down is unknown.
            _ => None,
        };
        let passed = measured
            .and_then(|d| Duration::from_std(d).ok())
            .unwrap_or_else(Duration::zero);
        Expected {
            time: self.time + passed,
            trusted: self.trusted.max(self.time) + passed,
            measured,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration as Std;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn record(boot: Option<BootReading>) -> ClockRecord {
        ClockRecord {
            time: t("2008-09-03T13:10:00Z"),
            trusted: t("2008-09-03T15:10:00Z"),
            boot,
        }
    }

    fn boot(id: i64, secs: u64) -> Option<BootReading> {
        Some(BootReading {
            id,
            since_boot: Std::from_secs(secs),
        })
    }

    #[test]
    fn on_the_same_boot_a_start_expects_the_record_plus_the_time_since_boot_passed() {
        let expected = record(boot(7, 1_000)).expected_now(boot(7, 4_600));
        assert_eq!(expected.time, t("2008-09-03T14:10:00Z"));
        assert_eq!(expected.trusted, t("2008-09-03T16:10:00Z"));
        assert_eq!(expected.measured, Some(Std::from_secs(3_600)));
    }

    #[test]
    fn after_a_reboot_or_without_a_boot_a_start_expects_the_record_itself() {
        for now in [boot(8, 4_600), boot(7, 10), None] {
            let expected = record(boot(7, 1_000)).expected_now(now);
            assert_eq!(expected.time, t("2008-09-03T13:10:00Z"), "{now:?}");
            assert_eq!(expected.measured, None, "{now:?}");
        }
        let unknown = record(None).expected_now(boot(7, 4_600));
        assert_eq!(unknown.time, t("2008-09-03T13:10:00Z"));
    }

    #[test]
    fn a_record_reads_back_from_its_rows_whole_and_an_unknown_boot_stays_unknown() {
        for r in [record(boot(-42, 1_000)), record(None)] {
            assert_eq!(ClockRecord::from_rows(r.to_rows().map(Some)), Some(r));
        }
        assert_eq!(ClockRecord::from_rows([None; 4]), None, "no heartbeat yet");
        // A store that lost the trusted row still has a record, trusting its time.
        let mut rows = record(None).to_rows().map(Some);
        rows[1] = None;
        let read = ClockRecord::from_rows(rows).unwrap();
        assert_eq!(read.trusted, read.time);
    }
}
