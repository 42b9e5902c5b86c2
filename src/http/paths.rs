//! Filter paths, parsed purely and in one place: `/YYYY/MM/DD/HH`, `/YYYY/MM/DD` and
//! `/since/YYYY/MM/DD/HH`, each with an optional `.json`, `.hex` or `.bin` suffix on the
//! last segment (`.ribbon`, `.ribbon.json` and `.ribbon2` are taken off first by
//! `compact.rs`). The loading gate, the filter and compact handlers and the chain route
//! all read a path through [`filter_path`].

use super::error::{ApiError, Result};
use crate::hour::{Day, Hour};
use crate::render::{Compact, Repr};
use crate::service::Target;
use percent_encoding::percent_decode_str;
use std::borrow::Cow;

/// What a filter path asks for: the covered time and the representation, if the path
/// chose one by its suffix.
pub type FilterPath = (Target, Option<Repr>);

/// Segments a filter path has at most (`since` and four).
const MAX_SEGMENTS: usize = 5;

/// Parses a request's path (as sent: each segment is percent-decoded on its own, as
/// the router's `Path` extractor decodes its parameters).
///
/// # Errors
/// 404 for a path that is not a filter path (wrong number of segments, empty segments,
/// an unknown suffix), 400 `invalid_hour` for a malformed or impossible hour.
pub fn filter_path(path: &str) -> Result<FilterPath> {
    if let Some(parsed) = plain_hour(path) {
        return Ok(parsed);
    }
    let not_found = || ApiError::NotFound(format!("no filter at {path:?}"));
    let rest = path.strip_prefix('/').ok_or_else(not_found)?;
    if !rest.contains('%') {
        // The common case, without a copy or a decode.
        let mut segments = [""; MAX_SEGMENTS];
        let n = split_into(rest, &mut segments, Ok).ok_or_else(not_found)??;
        return of_segments(&segments[..n]).ok_or_else(not_found)?;
    }
    let mut segments: [Cow<'_, str>; MAX_SEGMENTS] = Default::default();
    let n = split_into(rest, &mut segments, decode).ok_or_else(not_found)??;
    of_segments(&segments[..n]).ok_or_else(not_found)?
}

/// The hour of a path in the shape pollers send, `/YYYY/MM/DD/HH[.ext]` with every
/// segment plain digits, read byte by byte; `None` for anything else (which the general
/// parse below answers, errors included).
fn plain_hour(path: &str) -> Option<FilterPath> {
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
    Some((Target::Hour(hour), suffix))
}

/// Fills `out` with the segments of `rest`, each through `f`; how many, or `None` for
/// more than fit or an empty one.
fn split_into<'a, T: AsRef<str>>(
    rest: &'a str,
    out: &mut [T],
    f: impl Fn(&'a str) -> Result<T>,
) -> Option<Result<usize>> {
    let mut n = 0;
    for raw in rest.split('/') {
        let slot = out.get_mut(n)?;
        *slot = match f(raw) {
            Ok(segment) => segment,
            Err(e) => return Some(Err(e)),
        };
        if slot.as_ref().is_empty() {
            return None;
        }
        n += 1;
    }
    Some(Ok(n))
}

/// The filter path of its segments; `None` for a shape that is not one.
fn of_segments<T: AsRef<str>>(segments: &[T]) -> Option<Result<FilterPath>> {
    let s: [&str; MAX_SEGMENTS] =
        std::array::from_fn(|i| segments.get(i).map_or("", AsRef::as_ref));
    Some(match segments.len() {
        5 if s[0] == "since" => {
            parse_hour(s[1], s[2], s[3], s[4]).map(|(h, r)| (Target::Since(h), r))
        }
        4 => parse_hour(s[0], s[1], s[2], s[3]).map(|(h, r)| (Target::Hour(h), r)),
        3 => split_suffix(s[2])
            .and_then(|(d, suffix)| Ok((Target::Day(Day::from_parts(s[0], s[1], d)?), suffix))),
        _ => return None,
    })
}

/// The canonical path of a parsed filter path (what [`filter_path`] accepts back).
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

/// The segments `YYYY`, `MM`, `DD`, `HH[.ext]`.
fn parse_hour(y: &str, mo: &str, d: &str, h: &str) -> Result<(Hour, Option<Repr>)> {
    let (h, suffix) = split_suffix(h)?;
    Ok((Hour::from_parts(y, mo, d, h)?, suffix))
}

/// One segment, percent-decoded (borrowed when it has no `%`).
fn decode(segment: &str) -> Result<Cow<'_, str>> {
    percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| ApiError::InvalidHour(format!("{segment:?} is not UTF-8 once decoded")))
}

/// `13.hex` → (`13`, Some(Hex)). An unknown suffix is a resource that does not exist.
fn split_suffix(segment: &str) -> Result<(&str, Option<Repr>)> {
    match segment.split_once('.') {
        None => Ok((segment, None)),
        Some((head, ext)) => match Repr::from_suffix(ext) {
            Some(repr) => Ok((head, Some(repr))),
            None => Err(ApiError::NotFound(format!(
                "unknown representation .{ext}: use {}",
                known_suffixes()
            ))),
        },
    }
}

/// Whether a path's last segment has a suffix (`.json`, `.ribbon`, ...): then it, not
/// `Accept`, chooses the representation.
pub(super) fn last_segment_has_suffix(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|s| s.contains('.'))
}

/// Every suffix a filter path may end in, as a sentence: the v1 representations and the
/// compact forms (`.ribbon`, `.ribbon.json`, `.ribbon2`, served by `compact.rs`) and the exact form
/// (`.exact`, served by `exact.rs`).
fn known_suffixes() -> String {
    let all: Vec<String> = Repr::ALL
        .into_iter()
        .map(Repr::suffix)
        .chain(Compact::ALL.into_iter().map(super::compact::suffix))
        .chain([super::exact::SUFFIX])
        .map(|s| format!(".{s}"))
        .collect();
    match all.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
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
            filter_path("/2008/09/03/13").unwrap(),
            (Target::Hour(h), None)
        );
        assert_eq!(
            filter_path("/2008/09/03.bin").unwrap(),
            (Target::Day(h.day()), Some(Repr::Bin))
        );
        assert_eq!(
            filter_path("/since/2008/09/03/13.hex").unwrap(),
            (Target::Since(h), Some(Repr::Hex))
        );
    }

    #[test]
    fn an_unknown_suffix_is_answered_with_every_suffix_served() {
        let err = filter_path("/2008/09/03/13.xml").unwrap_err().to_string();

        assert_eq!(
            err,
            "unknown representation .xml: use .json, .hex, .bin, .ribbon, .ribbon.json, .ribbon2, .pages or .exact"
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
            let err = filter_path(path).unwrap_err();
            assert_eq!(err.status().as_u16(), status, "{path}: {err}");
        }
    }

    #[test]
    fn the_plain_hour_shape_agrees_with_the_general_parse() {
        for path in [
            "/2008/09/03/13",
            "/2008/09/03/13.json",
            "/2008/09/03/13.bin",
            "/2008/09/03/24",
            "/2008/02/30/00",
            "/2008/09/03/13.xml",
            "/2008/09/03/13.",
            "/2008/09/03/13x",
            "/2008/09/03/13/",
        ] {
            let rest = path.strip_prefix('/').unwrap();
            let mut segments = [""; MAX_SEGMENTS];
            let general = split_into(rest, &mut segments, Ok)
                .and_then(|n| of_segments(&segments[..n.ok()?]))
                .and_then(Result::ok);
            assert_eq!(plain_hour(path), general, "{path}");
        }
    }

    #[test]
    fn segments_are_percent_decoded_one_by_one() {
        let h = hour_of(2008, 9, 3, 13).unwrap();
        assert_eq!(
            filter_path("/2008/09/0%33/13").unwrap(),
            (Target::Hour(h), None)
        );
        // An encoded slash stays inside its segment, as the router matched it.
        assert_eq!(
            filter_path("/2008/09/03/1%2F3")
                .unwrap_err()
                .status()
                .as_u16(),
            400
        );
        assert_eq!(
            filter_path("/2008/09/03/%FF")
                .unwrap_err()
                .status()
                .as_u16(),
            400
        );
        assert_eq!(
            filter_path("/2008/09/03/13/14/15")
                .unwrap_err()
                .status()
                .as_u16(),
            404
        );
    }

    #[test]
    fn canonical_paths_parse_back_to_the_same_target() {
        for path in ["/2008/09/03/13.json", "/2008/09/03", "/since/1969/12/31/23"] {
            let parsed = filter_path(path).unwrap();
            assert_eq!(canonical_path(parsed), path);
        }
    }
}
