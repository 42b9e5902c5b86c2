//! Filter paths, parsed purely: `/YYYY/MM/DD/HH`, `/YYYY/MM/DD` and
//! `/since/YYYY/MM/DD/HH`, each with an optional `.json`, `.hex` or `.bin` suffix on the
//! last segment. The handlers parse the segments the router matched through these
//! functions; [`parse_filter_path`] does the router's part too, for fuzzing and tests.

use super::error::{ApiError, Result};
use crate::hour::{Day, Hour};
use crate::render::Repr;
use crate::service::Target;

/// What a filter path asks for: the covered time and the representation, if the path
/// chose one by its suffix.
pub type FilterPath = (Target, Option<Repr>);

/// Parses the segments of `/YYYY/MM/DD/HH[.ext]`.
///
/// # Errors
/// 400 `invalid_hour` for a malformed or impossible hour, 404 for an unknown suffix.
pub fn hour_segments(y: &str, mo: &str, d: &str, h: &str) -> Result<(Hour, Option<Repr>)> {
    let (h, suffix) = split_suffix(h)?;
    Ok((Hour::from_parts(y, mo, d, h)?, suffix))
}

/// Parses the segments of `/YYYY/MM/DD[.ext]`.
///
/// # Errors
/// As [`hour_segments`].
pub fn day_segments(y: &str, mo: &str, d: &str) -> Result<(Day, Option<Repr>)> {
    let (d, suffix) = split_suffix(d)?;
    Ok((Day::from_parts(y, mo, d)?, suffix))
}

/// Parses a whole (percent-decoded) path as the router and handlers would.
///
/// # Errors
/// 404 for a path that is not a filter path (wrong number of segments, empty segments),
/// else as [`hour_segments`].
pub fn parse_filter_path(path: &str) -> Result<FilterPath> {
    let not_found = || ApiError::NotFound(format!("no filter at {path:?}"));
    let rest = path.strip_prefix('/').ok_or_else(not_found)?;
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(not_found());
    }
    match segments.as_slice() {
        ["since", y, mo, d, h] => {
            hour_segments(y, mo, d, h).map(|(hour, r)| (Target::Since(hour), r))
        }
        [y, mo, d, h] => hour_segments(y, mo, d, h).map(|(hour, r)| (Target::Hour(hour), r)),
        [y, mo, d] => day_segments(y, mo, d).map(|(day, r)| (Target::Day(day), r)),
        _ => Err(not_found()),
    }
}

/// The canonical path of a parsed filter path (what [`parse_filter_path`] accepts back).
pub fn canonical_path((target, suffix): FilterPath) -> String {
    let path = match target {
        Target::Hour(hour) => hour.path(),
        Target::Day(day) => day.path(),
        Target::Since(hour) => format!("/since{}", hour.path()),
    };
    match suffix {
        Some(repr) => format!("{path}.{}", repr.suffix()),
        None => path,
    }
}

/// An hour path in its plain form, `/YYYY/MM/DD/HH[.ext]`, read byte by byte for the
/// read path's fast lane; anything else (percent-encoding, a malformed or impossible
/// hour, an unknown suffix) is `None`, left to the router for its error.
pub fn plain_hour_path(path: &str) -> Option<(Hour, Option<Repr>)> {
    let b = path.as_bytes();
    let shape = b.len() >= 14
        && b[0] == b'/'
        && b[5] == b'/'
        && b[8] == b'/'
        && b[11] == b'/'
        && [1..5, 6..8, 9..11, 12..14]
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_digit));
    if !shape {
        return None;
    }
    let suffix = match &path[14..] {
        "" => None,
        ext => Some(Repr::from_suffix(ext.strip_prefix('.')?)?),
    };
    let hour = Hour::from_parts(&path[1..5], &path[6..8], &path[9..11], &path[12..14]).ok()?;
    Some((hour, suffix))
}

/// `13.hex` → (`13`, Some(Hex)). An unknown suffix is a resource that does not exist.
fn split_suffix(segment: &str) -> Result<(&str, Option<Repr>)> {
    match segment.split_once('.') {
        None => Ok((segment, None)),
        Some((head, ext)) => match Repr::from_suffix(ext) {
            Some(repr) => Ok((head, Some(repr))),
            None => Err(ApiError::NotFound(format!(
                "unknown representation .{ext}: use .json, .hex or .bin"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hour::hour_of;

    #[test]
    fn the_three_shapes_parse_with_and_without_suffix() {
        let h = hour_of(2008, 9, 3, 13).unwrap();
        assert_eq!(
            parse_filter_path("/2008/09/03/13").unwrap(),
            (Target::Hour(h), None)
        );
        assert_eq!(
            parse_filter_path("/2008/09/03.bin").unwrap(),
            (Target::Day(h.day()), Some(Repr::Bin))
        );
        assert_eq!(
            parse_filter_path("/since/2008/09/03/13.hex").unwrap(),
            (Target::Since(h), Some(Repr::Hex))
        );
    }

    #[test]
    fn bad_paths_get_the_documented_status() {
        for (path, status) in [
            ("/2008/09/03/24", 400),
            ("/2008/02/30/00", 400),
            ("/2008/09/03/13x", 400),
            ("/2008/09/03/13.xml", 404),
            ("/2008/09/03/13.hex.gz", 404),
            ("/2008//09/03/13", 404),
            ("/2008/09/03/13/", 404),
            ("2008/09/03/13", 404),
            ("/", 404),
            // Four segments: the hour route, with "since" as a malformed year.
            ("/since/2008/09/03", 400),
        ] {
            let err = parse_filter_path(path).unwrap_err();
            assert_eq!(err.status().as_u16(), status, "{path}: {err}");
        }
    }

    #[test]
    fn the_plain_hour_path_agrees_with_the_full_parser() {
        for path in [
            "/2008/09/03/13",
            "/2008/09/03/13.json",
            "/2008/09/03/13.bin",
            "/2008/09/03/13.hex",
            "/2008/09/03/24",
            "/2008/02/30/00",
            "/2008/09/03/13.xml",
            "/2008/09/03/13.",
            "/2008/09/03/13x",
            "/2008/09/03/1",
            "/since/2008/09/03",
            "/2008/09/03",
            "/2008/09/0%33/13",
            "/2008/09/03/13/",
        ] {
            let full = match parse_filter_path(path) {
                Ok((Target::Hour(hour), suffix)) => Some((hour, suffix)),
                _ => None,
            };
            assert_eq!(plain_hour_path(path), full, "{path}");
        }
    }

    #[test]
    fn canonical_paths_parse_back_to_the_same_target() {
        for path in ["/2008/09/03/13.json", "/2008/09/03", "/since/1969/12/31/23"] {
            let parsed = parse_filter_path(path).unwrap();
            assert_eq!(canonical_path(parsed), path);
        }
    }
}
