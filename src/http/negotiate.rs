//! Content negotiation: which representation (`Accept`) and whether to gzip
//! (`Accept-Encoding`), honouring q-values as RFC 9110 §12.4.2 and §12.5 read them:
//! `q=0` means "not acceptable", and a type's quality is that of the most specific
//! range naming it (`text/plain;q=0, */*` refuses hex and takes the rest). Every
//! `Accept` or `Accept-Encoding` line of a request counts, as if joined by commas.

use crate::render::{Compact, Repr};
use axum::http::{header, HeaderMap, HeaderName};

/// Splits `type;q=0.5` into the media range (as sent: compare it ignoring ASCII case)
/// and its quality.
fn ranges(value: &str) -> impl Iterator<Item = (&str, f32)> + '_ {
    versioned_ranges(value).map(|(range, q, _)| (range, q))
}

/// As [`ranges`], with each range's `v=` parameter (the compact form's version).
/// Parameter names are case-insensitive; a quality that is no number in 0..=1 (RFC 9110's
/// qvalue) is no quality at all: the range keeps 1, so a malformed weight never turns a
/// request away.
fn versioned_ranges(value: &str) -> impl Iterator<Item = (&str, f32, Option<&str>)> + '_ {
    value.split(',').filter_map(|part| {
        let mut pieces = part.split(';');
        let range = pieces.next()?.trim();
        if range.is_empty() {
            return None;
        }
        let (mut q, mut v) = (1.0, None);
        for piece in pieces {
            let Some((name, value)) = piece.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("q") {
                q = value
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .unwrap_or(q);
            } else if name.eq_ignore_ascii_case("v") {
                v = Some(value.trim_matches('"'));
            }
        }
        Some((range, q, v))
    })
}

/// Every range of every `Accept` line, with its quality and `v=` parameter.
fn accept_ranges(headers: &HeaderMap) -> impl Iterator<Item = (&str, f32, Option<&str>)> + '_ {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(versioned_ranges)
}

/// Whether some `Accept` line mentions `needle` (a cheap look before parsing).
fn accept_mentions(headers: &HeaderMap, needle: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.contains(needle)))
}

/// The media types of a filter's representations, in the order a wildcard that names
/// several picks them (`*/*` and `application/*`: JSON).
const SERVED: [(Repr, &str); 3] = [
    (Repr::Json, "application/json"),
    (Repr::Bin, "application/octet-stream"),
    (Repr::Hex, "text/plain"),
];

/// How specifically `range` names `media_type`: 2 by its exact type, 1 by its type's
/// wildcard (`text/*`), 0 by `*/*`; `None` when it does not name it.
fn specificity(range: &str, media_type: &str) -> Option<u8> {
    if range.eq_ignore_ascii_case(media_type) {
        return Some(2);
    }
    let (kind, _) = media_type.split_once('/')?;
    match range.split_once('/')? {
        ("*", "*") => Some(0),
        (k, "*") if k.eq_ignore_ascii_case(kind) => Some(1),
        _ => None,
    }
}

/// What `Accept` says of one representation: the quality of the most specific range
/// naming it, that range's specificity and its place in the header.
#[derive(Debug, Clone, Copy)]
struct Quality {
    q: f32,
    specificity: u8,
    position: usize,
}

impl Quality {
    /// Whether a client is better served by this than by `other`: a higher quality;
    /// at equal quality an exact type beats a wildcard, then the range listed first.
    fn beats(&self, other: &Quality) -> bool {
        let exact = |q: &Quality| q.specificity == 2;
        (self.q, exact(self), std::cmp::Reverse(self.position))
            .partial_cmp(&(other.q, exact(other), std::cmp::Reverse(other.position)))
            .is_some_and(std::cmp::Ordering::is_gt)
    }
}

/// The representation the client prefers; JSON when it names none we serve (as
/// `image/png`, or `text/plain;q=0` alone: the RFC lets a server disregard `Accept`
/// rather than refuse). `None` when it refuses JSON and accepts nothing else we serve
/// (`*/*;q=0`, or each of the three types at `q=0`): a 406.
pub fn choose_repr(headers: &HeaderMap) -> Option<Repr> {
    let mut named: [Option<Quality>; 3] = [None; 3];
    for (position, (range, q, _)) in accept_ranges(headers).enumerate() {
        for (slot, (_, media_type)) in named.iter_mut().zip(SERVED) {
            let Some(specificity) = specificity(range, media_type) else {
                continue;
            };
            let closer = slot.is_none_or(|held| {
                specificity > held.specificity || (specificity == held.specificity && q > held.q)
            });
            if closer {
                *slot = Some(Quality {
                    q,
                    specificity,
                    position,
                });
            }
        }
    }
    let mut best: Option<(Repr, Quality)> = None;
    for ((repr, _), quality) in SERVED.iter().zip(named) {
        let Some(quality) = quality.filter(|q| q.q > 0.0) else {
            continue;
        };
        if best.is_none_or(|(_, held)| quality.beats(&held)) {
            best = Some((*repr, quality));
        }
    }
    match (best, named[0]) {
        (Some((repr, _)), _) => Some(repr),
        (None, Some(json)) if json.q == 0.0 => None,
        (None, _) => Some(Repr::Json),
    }
}

/// Whether `Accept` lists the exact form (`application/vnd.bloomcast.exact`, section 14)
/// with a positive quality at least that of every other type it lists.
pub fn wants_exact(headers: &HeaderMap) -> bool {
    if !accept_mentions(headers, "vnd.bloomcast.exact") {
        return false;
    }
    let (mut exact, mut other) = (0.0f32, 0.0f32);
    for (range, q, _) in accept_ranges(headers) {
        if range.eq_ignore_ascii_case(super::exact::EXACT_TYPE) {
            exact = exact.max(q);
        } else if !range.contains('*') {
            other = other.max(q);
        }
    }
    exact > 0.0 && exact >= other
}

/// The compact form `Accept` prefers, if any: `application/vnd.bloomcast.ribbon` (with
/// `v=2`, version 2) or its `+json` form listed with a positive quality at least that
/// of every v1 type it lists (on a tie: version 2, then the binary form).
pub fn wants_compact(headers: &HeaderMap) -> Option<Compact> {
    if !accept_mentions(headers, "vnd.bloomcast.ribbon") {
        return None;
    }
    let (mut ribbon, mut json, mut other, mut v2) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
    for (range, q, version) in accept_ranges(headers) {
        if range.eq_ignore_ascii_case(super::compact::RIBBON_TYPE) && version == Some("2") {
            v2 = v2.max(q);
        } else if range.eq_ignore_ascii_case(super::compact::RIBBON_TYPE) {
            ribbon = ribbon.max(q);
        } else if range.eq_ignore_ascii_case(super::compact::RIBBON_JSON_TYPE) {
            json = json.max(q);
        } else if !range.contains('*') {
            other = other.max(q);
        }
    }
    let (form, q) = if v2 >= ribbon.max(json) && v2 > 0.0 {
        (Compact::Ribbon2, v2)
    } else if json > ribbon {
        (Compact::RibbonJson, json)
    } else {
        (Compact::Ribbon, ribbon)
    };
    (q > 0.0 && q >= other).then_some(form)
}

/// Whether the client takes gzip.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT_ENCODING).iter();
    match (values.next(), values.next()) {
        (None, _) => false,
        // One value, as clients send it: a client repeats the same value on every
        // request, so this thread remembers the last answer instead of parsing again.
        (Some(value), None) => LAST_ACCEPT_ENCODING.with(|last| {
            let mut last = last.borrow_mut();
            if last.0 != value.as_bytes() {
                last.0.clear();
                last.0.extend_from_slice(value.as_bytes());
                last.1 = gzip_in([value].into_iter());
            }
            last.1
        }),
        _ => gzip_in(headers.get_all(header::ACCEPT_ENCODING).iter()),
    }
}

thread_local! {
    /// The last single `Accept-Encoding` value this thread read, and its answer.
    static LAST_ACCEPT_ENCODING: std::cell::RefCell<(Vec<u8>, bool)> =
        const { std::cell::RefCell::new((Vec::new(), false)) };
}

/// Whether `gzip` (or its alias `x-gzip`) is acceptable: by its own entry when it has
/// one, else by `*` (`gzip;q=0, *` refuses it; `*;q=0, gzip` takes it). When it is not,
/// the body goes without a coding even if `identity;q=0` or `*;q=0` refuse that too: RFC
/// 9110 §12.5.3 says to respond without one when no coding we have is acceptable.
fn gzip_in<'v>(values: impl Iterator<Item = &'v axum::http::HeaderValue>) -> bool {
    let (mut gzip, mut any) = (None::<f32>, None::<f32>);
    for (coding, q) in values.filter_map(|v| v.to_str().ok()).flat_map(ranges) {
        let slot = if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            &mut gzip
        } else if coding == "*" {
            &mut any
        } else {
            continue;
        };
        *slot = Some(slot.map_or(q, |held| held.max(q)));
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// The dictionary a client offers for a delta (RFC 9842): the SHA-256 in its
/// `Available-Dictionary` (a structured-field byte sequence, `:BASE64:`), when its
/// `Accept-Encoding` lists `dcz`. Anything malformed is no offer.
pub fn dcz_dictionary(headers: &HeaderMap) -> Option<[u8; 32]> {
    use base64::Engine as _;
    let value = headers.get(AVAILABLE_DICTIONARY)?.to_str().ok()?.trim();
    let dcz = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(ranges)
        .any(|(coding, q)| q > 0.0 && coding.eq_ignore_ascii_case("dcz"));
    if !dcz {
        return None;
    }
    let b64 = value.strip_prefix(':')?.strip_suffix(':')?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    bytes.try_into().ok()
}

/// The request header naming a client's dictionary (RFC 9842).
pub const AVAILABLE_DICTIONARY: HeaderName = HeaderName::from_static("available-dictionary");

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    fn repr(accept: &str) -> Option<Repr> {
        choose_repr(&headers(header::ACCEPT, accept))
    }

    #[test]
    fn accept_picks_the_highest_quality_representation() {
        assert_eq!(choose_repr(&HeaderMap::new()), Some(Repr::Json));
        assert_eq!(repr("text/plain"), Some(Repr::Hex));
        assert_eq!(repr("application/octet-stream"), Some(Repr::Bin));
        assert_eq!(repr("application/json;q=0.5, text/plain"), Some(Repr::Hex));
        assert_eq!(repr("*/*, application/octet-stream"), Some(Repr::Bin));
        assert_eq!(
            repr("text/*, application/*"),
            Some(Repr::Hex),
            "the first listed"
        );
        assert_eq!(
            repr("image/png"),
            Some(Repr::Json),
            "no type we serve: JSON"
        );
        assert_eq!(repr("text/plain;q=0"), Some(Repr::Json), "JSON not refused");
    }

    #[test]
    fn q_0_refuses_a_type_even_when_a_wildcard_accepts_the_rest() {
        assert_eq!(repr("text/plain;q=0, */*"), Some(Repr::Json));
        assert_eq!(
            repr("text/plain;q=0, text/*"),
            Some(Repr::Json),
            "hex refused"
        );
        assert_eq!(repr("application/json;q=0, */*"), Some(Repr::Bin));
        assert_eq!(repr("application/json;q=0, application/*"), Some(Repr::Bin));
        assert_eq!(
            repr("application/json;q=0, application/octet-stream;q=0, */*;q=0.1"),
            Some(Repr::Hex)
        );
        assert_eq!(repr("*/*;q=0, text/plain"), Some(Repr::Hex));
        assert_eq!(
            repr("*/*;q=0.9, application/*;q=0, text/plain;q=0.5"),
            Some(Repr::Hex),
            "application/* is more specific than */* for JSON and binary"
        );
    }

    #[test]
    fn every_type_refused_chooses_none_so_the_request_gets_406() {
        for accept in [
            "*/*;q=0",
            "application/json;q=0, text/plain;q=0, application/octet-stream;q=0",
            "application/json;q=0",
            "application/json;q=0, image/png",
            "application/*;q=0, text/*;q=0",
            "*/*;q=0.0, application/json;q=0.000",
            "*/*;Q=0",
            "*/*; q = 0",
        ] {
            assert_eq!(repr(accept), None, "{accept}");
        }
        // A weight that is no qvalue is no weight: the range is not refused.
        for malformed in ["application/json;q=-1", "*/*;q=nan", "*/*;q=2"] {
            assert_eq!(repr(malformed), Some(Repr::Json), "{malformed}");
        }
        let mut lines = headers(header::ACCEPT, "application/json;q=0");
        lines.append(header::ACCEPT, "text/*;q=0".parse().unwrap());
        lines.append(
            header::ACCEPT,
            "application/octet-stream;q=0".parse().unwrap(),
        );
        assert_eq!(choose_repr(&lines), None, "every Accept line counts");
        lines.append(header::ACCEPT, "text/plain;q=0.5".parse().unwrap());
        assert_eq!(choose_repr(&lines), Some(Repr::Hex));
    }

    #[test]
    fn ribbon_is_chosen_only_when_preferred() {
        let t = crate::http::compact::RIBBON_TYPE;
        let wants = |accept: &str| wants_compact(&headers(header::ACCEPT, accept));
        assert_eq!(wants(t), Some(Compact::Ribbon));
        assert_eq!(
            wants(&format!("{t}, application/octet-stream;q=0.5, */*;q=0.1")),
            Some(Compact::Ribbon)
        );
        assert_eq!(wants(&format!("{t};q=0.5, application/octet-stream")), None);
        assert_eq!(wants(&format!("{t};q=0")), None);
        assert_eq!(wants("*/*"), None);
        assert_eq!(wants_compact(&HeaderMap::new()), None);
    }

    #[test]
    fn version_2_is_chosen_by_its_parameter() {
        let wants = |accept: &str| wants_compact(&headers(header::ACCEPT, accept));
        let v2 = crate::http::compact::RIBBON2_TYPE;
        assert_eq!(wants(v2), Some(Compact::Ribbon2));
        assert_eq!(
            wants("application/vnd.bloomcast.ribbon;v=2;q=0.9, application/vnd.bloomcast.ribbon;q=0.8"),
            Some(Compact::Ribbon2)
        );
        assert_eq!(
            wants("application/vnd.bloomcast.ribbon; v=\"2\", application/vnd.bloomcast.ribbon"),
            Some(Compact::Ribbon2),
            "a tie goes to version 2"
        );
        assert_eq!(
            wants("application/vnd.bloomcast.ribbon; v=2; q=0.5, application/vnd.bloomcast.ribbon"),
            Some(Compact::Ribbon)
        );
        assert_eq!(
            wants("application/vnd.bloomcast.ribbon; v=1"),
            Some(Compact::Ribbon),
            "any other version is version 1"
        );
        assert_eq!(
            wants(&format!("{v2};q=0.5, application/octet-stream")),
            None
        );
    }

    #[test]
    fn the_json_form_is_chosen_by_its_own_type() {
        let t = crate::http::compact::RIBBON_JSON_TYPE;
        let wants = |accept: &str| wants_compact(&headers(header::ACCEPT, accept));
        assert_eq!(wants(t), Some(Compact::RibbonJson));
        assert_eq!(
            wants(&format!("{t}, application/json;q=0.9")),
            Some(Compact::RibbonJson)
        );
        assert_eq!(
            wants(&format!("{t};q=0.5, application/vnd.bloomcast.ribbon")),
            Some(Compact::Ribbon)
        );
        assert_eq!(
            wants(&format!("{t}, application/vnd.bloomcast.ribbon")),
            Some(Compact::Ribbon),
            "a tie goes to the binary form"
        );
        assert_eq!(wants(&format!("{t};q=0.5, application/json")), None);
    }

    #[test]
    fn gzip_needs_a_positive_quality() {
        assert!(accepts_gzip(&headers(
            header::ACCEPT_ENCODING,
            "gzip, deflate, br"
        )));
        assert!(accepts_gzip(&headers(
            header::ACCEPT_ENCODING,
            "br;q=1, GZIP;q=0.5"
        )));
        assert!(!accepts_gzip(&headers(header::ACCEPT_ENCODING, "gzip;q=0")));
        assert!(!accepts_gzip(&headers(header::ACCEPT_ENCODING, "identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn gzip_is_judged_by_its_own_entry_before_the_wildcard() {
        let gzip = |value: &str| accepts_gzip(&headers(header::ACCEPT_ENCODING, value));
        assert!(gzip("*"));
        assert!(!gzip("gzip;q=0, *"), "refused by name");
        assert!(!gzip("*, x-gzip;q=0"), "refused by its alias");
        assert!(gzip("*;q=0, gzip"));
        assert!(gzip("identity;q=0, *"));
        assert!(gzip("identity;q=0, gzip"));
        // Nothing acceptable: sent without a coding (RFC 9110 §12.5.3), as before.
        assert!(!gzip("identity;q=0"));
        assert!(!gzip("*;q=0"));
        assert!(!gzip("GZIP;Q=0"), "names and parameters in any case");
    }

    #[test]
    fn a_dictionary_is_offered_with_dcz_and_a_32_byte_sequence() {
        let sha = ":".to_owned() + &"A".repeat(43) + "=:";
        let mut h = headers(header::ACCEPT_ENCODING, "dcz, gzip");
        h.insert(AVAILABLE_DICTIONARY, HeaderValue::from_str(&sha).unwrap());
        assert_eq!(dcz_dictionary(&h), Some([0; 32]));
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, dcz;q=0"),
        );
        assert_eq!(dcz_dictionary(&h), None, "dcz refused");
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, dcz"),
        );
        for bad in ["AAAA", ":AAAA:", ":!!:", "::"] {
            h.insert(AVAILABLE_DICTIONARY, HeaderValue::from_static(bad));
            assert_eq!(dcz_dictionary(&h), None, "{bad}");
        }
    }

    #[test]
    fn the_remembered_answer_follows_the_value() {
        // One thread, values alternating: each answer is the value's own.
        for _ in 0..2 {
            for (value, gzip) in [
                ("gzip", true),
                ("gzip;q=0", false),
                ("gzip", true),
                ("br", false),
            ] {
                assert_eq!(
                    accepts_gzip(&headers(header::ACCEPT_ENCODING, value)),
                    gzip,
                    "{value}"
                );
            }
        }
        let mut two = headers(header::ACCEPT_ENCODING, "br");
        two.append(header::ACCEPT_ENCODING, "gzip".parse().unwrap());
        assert!(accepts_gzip(&two));
    }
}
