//! UTC hours and days as values that cannot be invalid.
//!
//! An [`Hour`] is parsed once at the edge (from `/YYYY/MM/DD/HH` or `2008-09-03T13`)
//! and everything inside takes the type. Internally it is the number of whole hours
//! since the Unix epoch, which makes "the previous hour" and ranges trivial.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Timelike, Utc};
use std::fmt;
use thiserror::Error;

/// Why a path or timestamp is not an hour.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HourError {
    /// Not of the form `/YYYY/MM/DD/HH` (or `YYYY-MM-DDTHH`).
    #[error("expected /YYYY/MM/DD/HH with a four-digit year and two-digit month, day and hour, got {0:?}")]
    Malformed(String),
    /// A date that does not exist, such as February 30th.
    #[error("{0} is not a real date")]
    Impossible(String),
    /// An hour past 23.
    #[error("hour {0} is out of range 00-23")]
    BadHour(u32),
}

/// One UTC hour, `[start, start + 1h)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hour(i64);

impl Hour {
    /// The hour `n` hours after 1970-01-01T00Z (negative before it).
    pub fn from_index(n: i64) -> Hour {
        Hour(n)
    }

    /// Hours since the epoch.
    pub fn index(self) -> i64 {
        self.0
    }

    /// The hour containing the instant.
    pub fn containing(t: DateTime<Utc>) -> Hour {
        Hour(t.timestamp().div_euclid(3600))
    }

    /// Parses path segments `YYYY`, `MM`, `DD`, `HH`.
    ///
    /// # Errors
    /// [`HourError::Malformed`] for anything but digits of the right width,
    /// [`HourError::Impossible`] for dates like Feb 30, [`HourError::BadHour`] for 24+.
    pub fn from_parts(y: &str, mo: &str, d: &str, h: &str) -> Result<Hour, HourError> {
        let day = Day::from_parts(y, mo, d)?;
        let hour = digits(h, 2).ok_or_else(|| HourError::Malformed(format!("{y}/{mo}/{d}/{h}")))?;
        if hour > 23 {
            return Err(HourError::BadHour(hour));
        }
        Ok(Hour(day.first_hour().0 + i64::from(hour)))
    }

    /// Parses `YYYY/MM/DD/HH` (leading slash optional).
    ///
    /// # Errors
    /// As [`Hour::from_parts`].
    pub fn parse_path(path: &str) -> Result<Hour, HourError> {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            [y, mo, d, h] => Hour::from_parts(y, mo, d, h),
            _ => Err(HourError::Malformed(path.to_owned())),
        }
    }

    /// Parses the CLI form `2008-09-03T05` (also `2008-09-03T05:00:00Z` and `2008/09/03/05`).
    ///
    /// # Errors
    /// As [`Hour::from_parts`].
    pub fn parse_flexible(s: &str) -> Result<Hour, HourError> {
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Ok(Hour::containing(t.with_timezone(&Utc)));
        }
        let normal = s.trim_start_matches('/').replace(['-', 'T', 't', ' '], "/");
        Hour::parse_path(&normal)
    }

    /// The first instant of the hour.
    pub fn start(self) -> DateTime<Utc> {
        Utc.timestamp_opt(self.0 * 3600, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// The first instant of the next hour.
    pub fn end(self) -> DateTime<Utc> {
        self.next().start()
    }

    /// The hour after this one.
    pub fn next(self) -> Hour {
        Hour(self.0 + 1)
    }

    /// The hour before this one.
    pub fn prev(self) -> Hour {
        Hour(self.0 - 1)
    }

    /// The day this hour belongs to.
    pub fn day(self) -> Day {
        Day(self.0.div_euclid(24))
    }

    /// RFC 3339 start of the hour, e.g. `2008-09-03T13:00:00Z`.
    pub fn rfc3339(self) -> String {
        let t = self.start();
        let (y, mo, d, h) = (t.year(), t.month(), t.day(), t.hour());
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:00:00Z")
    }

    /// The hour's URL path, e.g. `/2008/09/03/13`. Written digit by digit: every served
    /// filter's `Link` header names two of these.
    pub fn path(self) -> String {
        let t = self.start();
        let (y, mo, d, h) = (t.year(), t.month(), t.day(), t.hour());
        let Ok(year) = u32::try_from(y) else {
            return format!("/{y:04}/{mo:02}/{d:02}/{h:02}");
        };
        if year > 9999 {
            return format!("/{y:04}/{mo:02}/{d:02}/{h:02}");
        }
        let mut path = String::with_capacity(14);
        for (value, width) in [(year, 4), (mo, 2), (d, 2), (h, 2)] {
            path.push('/');
            push_digits(&mut path, value, width);
        }
        path
    }
}

impl fmt::Display for Hour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// One UTC day: 24 [`Hour`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(i64);

impl Day {
    /// Parses path segments `YYYY`, `MM`, `DD`.
    ///
    /// # Errors
    /// [`HourError::Malformed`] or [`HourError::Impossible`].
    pub fn from_parts(y: &str, mo: &str, d: &str) -> Result<Day, HourError> {
        let malformed = || HourError::Malformed(format!("{y}/{mo}/{d}"));
        let year = digits(y, 4).ok_or_else(malformed)?;
        let month = digits(mo, 2).ok_or_else(malformed)?;
        let day = digits(d, 2).ok_or_else(malformed)?;
        let date = NaiveDate::from_ymd_opt(year as i32, month, day)
            .ok_or_else(|| HourError::Impossible(format!("{y}-{mo}-{d}")))?;
        Ok(Day(i64::from(date.to_epoch_days())))
    }

    /// The day containing the hour with this index.
    pub fn from_hour_index(hour: i64) -> Day {
        Day(hour.div_euclid(24))
    }

    /// The day's hour 00.
    pub fn first_hour(self) -> Hour {
        Hour(self.0 * 24)
    }

    /// The day's hour 23.
    pub fn last_hour(self) -> Hour {
        Hour(self.0 * 24 + 23)
    }

    /// The day's URL path, e.g. `/2008/09/03`.
    pub fn path(self) -> String {
        let t = self.first_hour().start();
        format!("/{:04}/{:02}/{:02}", t.year(), t.month(), t.day())
    }
}

/// Parses exactly `width` ASCII digits.
fn digits(s: &str, width: usize) -> Option<u32> {
    (s.len() == width && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Appends `value` as exactly `width` decimal digits (it has at most that many).
fn push_digits(out: &mut String, value: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = (value / 10u32.pow(place)) % 10;
        out.push(char::from(b'0' + digit as u8));
    }
}

/// Convenience for tests and tools: the hour of a calendar date and hour of day.
pub fn hour_of(year: i32, month: u32, day: u32, hour: u32) -> Option<Hour> {
    let t = Utc
        .with_ymd_and_hms(year, month, day, hour, 0, 0)
        .single()?;
    debug_assert_eq!((t.year(), t.hour()), (year, hour));
    Some(Hour::containing(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_example_path() {
        let h = Hour::parse_path("/2008/09/03/13").unwrap();
        assert_eq!(h.rfc3339(), "2008-09-03T13:00:00Z");
        assert_eq!(h.path(), "/2008/09/03/13");
        assert_eq!(h, hour_of(2008, 9, 3, 13).unwrap());
    }

    #[test]
    fn paths_are_zero_padded_at_every_width() {
        assert_eq!(Hour::from_index(0).path(), "/1970/01/01/00");
        assert_eq!(Hour::from_index(-1).path(), "/1969/12/31/23");
        assert_eq!(hour_of(999, 1, 2, 3).unwrap().path(), "/0999/01/02/03");
        assert_eq!(hour_of(9999, 12, 31, 23).unwrap().path(), "/9999/12/31/23");
        // Outside four digits, the same text `format!` gives.
        assert_eq!(hour_of(10000, 1, 1, 0).unwrap().path(), "/10000/01/01/00");
        assert_eq!(hour_of(-1, 1, 1, 0).unwrap().path(), "/-001/01/01/00");
    }

    #[test]
    fn rejects_impossible_dates_and_hours() {
        assert!(matches!(
            Hour::parse_path("/2008/13/01/00"),
            Err(HourError::Impossible(_))
        ));
        assert!(matches!(
            Hour::parse_path("/2009/02/29/00"),
            Err(HourError::Impossible(_))
        ));
        assert!(matches!(
            Hour::parse_path("/2008/02/30/00"),
            Err(HourError::Impossible(_))
        ));
        assert!(matches!(
            Hour::parse_path("/2008/09/03/24"),
            Err(HourError::BadHour(24))
        ));
        assert!(Hour::parse_path("/2008/02/29/23").is_ok());
    }

    #[test]
    fn rejects_malformed_segments() {
        for p in [
            "/2008/9/03/13",
            "/08/09/03/13",
            "/2008/09/03",
            "/2008/09/03/13/00",
            "/2008/09/03/+1",
            "/２００８/09/03/13",
        ] {
            assert!(
                matches!(Hour::parse_path(p), Err(HourError::Malformed(_))),
                "{p}"
            );
        }
    }

    #[test]
    fn hours_step_across_days_and_years() {
        let h = hour_of(2008, 12, 31, 23).unwrap();
        assert_eq!(h.next().rfc3339(), "2009-01-01T00:00:00Z");
        assert_eq!(h.next().prev(), h);
        assert_eq!(h.day().path(), "/2008/12/31");
        assert_eq!(h.day().last_hour(), h);
        assert_eq!(h.end(), h.next().start());
    }

    #[test]
    fn flexible_forms_agree() {
        let h = hour_of(2008, 9, 3, 5).unwrap();
        assert_eq!(Hour::parse_flexible("2008-09-03T05").unwrap(), h);
        assert_eq!(Hour::parse_flexible("2008-09-03T05:30:00Z").unwrap(), h);
        assert_eq!(Hour::parse_flexible("2008/09/03/05").unwrap(), h);
    }

    #[test]
    fn hours_before_the_epoch_work() {
        let h = hour_of(1969, 12, 31, 23).unwrap();
        assert_eq!(h.index(), -1);
        assert_eq!(h.rfc3339(), "1969-12-31T23:00:00Z");
    }
}
