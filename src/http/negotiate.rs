//! Content negotiation: which representation (`Accept`) and whether to gzip
//! (`Accept-Encoding`), honouring q-values.

use crate::render::{Compact, Repr};
use axum::http::{header, HeaderMap, HeaderName};

/// Splits `type;q=0.5` into the media range (as sent: compare it ignoring ASCII case)
/// and its quality.
fn ranges(value: &str) -> impl Iterator<Item = (&str, f32)> + '_ {
    versioned_ranges(value).map(|(range, q, _)| (range, q))
}

/// As [`ranges`], with each range's `v=` parameter (the compact form's version).
fn versioned_ranges(value: &str) -> impl Iterator<Item = (&str, f32, Option<&str>)> + '_ {
    value.split(',').filter_map(|part| {
        let mut pieces = part.split(';');
        let range = pieces.next()?.trim();
        if range.is_empty() {
            return None;
        }
        let (mut q, mut v) = (1.0, None);
        for piece in pieces {
            let piece = piece.trim();
            if let Some(value) = piece.strip_prefix("q=") {
                q = value.trim().parse::<f32>().unwrap_or(q);
            } else if let Some(value) = piece.strip_prefix("v=") {
                v = Some(value.trim().trim_matches('"'));
            }
        }
        Some((range, q, v))
    })
}

/// The representation the client prefers; JSON when it has no preference we serve.
pub fn choose_repr(headers: &HeaderMap) -> Repr {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Repr::Json;
    };
    let mut best: Option<(Repr, f32)> = None;
    for (range, q) in ranges(accept) {
        let is = |name: &str| range.eq_ignore_ascii_case(name);
        let repr = if is("application/json") || is("application/*") || is("*/*") {
            Repr::Json
        } else if is("text/plain") || is("text/*") {
            Repr::Hex
        } else if is("application/octet-stream") {
            Repr::Bin
        } else {
            continue;
        };
        // Exact types beat wildcards at equal quality.
        let q = if range.contains('*') { q - 0.0001 } else { q };
        if q > 0.0 && best.is_none_or(|(_, bq)| q > bq) {
            best = Some((repr, q));
        }
    }
    best.map_or(Repr::Json, |(r, _)| r)
}

/// Whether `Accept` lists the exact form (`application/vnd.bloomcast.exact`, section 14)
/// with a positive quality at least that of every other type it lists.
pub fn wants_exact(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    if !accept.contains("vnd.bloomcast.exact") {
        return false;
    }
    let (mut exact, mut other) = (0.0f32, 0.0f32);
    for (range, q) in ranges(accept) {
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
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    if !accept.contains("vnd.bloomcast.ribbon") {
        return None;
    }
    let (mut ribbon, mut json, mut other, mut v2) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
    for (range, q, version) in versioned_ranges(accept) {
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

fn gzip_in<'v>(values: impl Iterator<Item = &'v axum::http::HeaderValue>) -> bool {
    values
        .filter_map(|v| v.to_str().ok())
        .flat_map(ranges)
        .any(|(coding, q)| {
            q > 0.0
                && (coding.eq_ignore_ascii_case("gzip")
                    || coding.eq_ignore_ascii_case("x-gzip")
                    || coding == "*")
        })
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

    #[test]
    fn accept_picks_the_highest_quality_representation() {
        assert_eq!(choose_repr(&HeaderMap::new()), Repr::Json);
        assert_eq!(
            choose_repr(&headers(header::ACCEPT, "text/plain")),
            Repr::Hex
        );
        assert_eq!(
            choose_repr(&headers(header::ACCEPT, "application/octet-stream")),
            Repr::Bin
        );
        assert_eq!(
            choose_repr(&headers(
                header::ACCEPT,
                "application/json;q=0.5, text/plain"
            )),
            Repr::Hex
        );
        assert_eq!(
            choose_repr(&headers(header::ACCEPT, "*/*, application/octet-stream")),
            Repr::Bin
        );
        assert_eq!(
            choose_repr(&headers(header::ACCEPT, "image/png")),
            Repr::Json
        );
        assert_eq!(
            choose_repr(&headers(header::ACCEPT, "text/plain;q=0")),
            Repr::Json
        );
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
