//! `GET /dictionaries/YYYY/MM/DD/HH[.ext]/<id>`: a version of the open hour the service
//! keeps as a compression dictionary (RFC 9842), at a URL of its own with a lifetime of
//! its own, linked from the open hour's responses (`Link: <...>;
//! rel="compression-dictionary"`). A poll response's own `Use-As-Dictionary` lasts as
//! long as its `max-age` (at most `open_max_age`); this one lasts as long as the service
//! promises to keep the version (`dictionary_max_age`, never past the end of the hour),
//! so a client polling less often still holds a dictionary. What is kept, and for how
//! long, is the service's (`service/open_hours/deltas.rs`).

use super::error::{ApiError, Result};
use super::paths::{canonical_path, filter_path};
use super::AppState;
use crate::service::{Target, DICTIONARY_ID_BYTES};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

/// Where the dictionaries live: the prefix before a filter path.
const PREFIX: &str = "/dictionaries";

/// The URL of the kept version whose SHA-256 is `sha256`, as a dictionary for requests
/// of the filter `path` (an hour's canonical path, with its suffix if it has one).
pub(super) fn url(path: &str, sha256: &[u8; 32]) -> String {
    format!("{PREFIX}{path}/{}", id(sha256))
}

/// A dictionary's id: the first 80 bits of its SHA-256 in lowercase hex (the tag of its
/// identity ETag, and `Use-As-Dictionary`'s `id` on the response that offered it).
fn id(sha256: &[u8; 32]) -> String {
    crate::bloom::to_hex(&sha256[..DICTIONARY_ID_BYTES])
}

/// `GET` of a dictionary URL: its identity bytes, or 404 `not_found` once the service no
/// longer keeps that version (expired, unknown, or its hour closed).
pub async fn get_dictionary(State(state): State<AppState>, request: Request) -> Result<Response> {
    let (parts, _) = request.into_parts();
    let path = parts.uri.path();
    let not_found = || {
        ApiError::NotFound(format!(
            "no dictionary at {path:?}: unknown, expired, or its hour is closed"
        ))
    };
    let rest = path.strip_prefix(PREFIX).ok_or_else(not_found)?;
    let (filter, id_hex) = rest.rsplit_once('/').ok_or_else(not_found)?;
    let (target, suffix) = filter_path(filter)?;
    let Target::Hour(hour) = target else {
        return Err(not_found());
    };
    let wanted: [u8; DICTIONARY_ID_BYTES] = (id_hex.len() == 2 * DICTIONARY_ID_BYTES)
        .then(|| crate::chain::parse_hex(id_hex))
        .flatten()
        .ok_or_else(not_found)?;
    let linked = state
        .service
        .hours()
        .dictionary(hour, &wanted)
        .filter(|l| suffix.is_none_or(|s| s == l.repr))
        .ok_or_else(not_found)?;

    let id = id(&linked.sha256);
    let etag = HeaderValue::try_from(format!("\"{id}\"")).expect("hex");
    let cache_control =
        HeaderValue::try_from(format!("max-age={}", linked.max_age)).expect("ascii");
    // `match-dest=("")`: for the requests scripts make (`fetch`), which poll. A browser
    // keeps one dictionary per `match` and `match-dest`: without it, the next poll
    // response's own `Use-As-Dictionary` (same `match`, lasting only its `max-age`) would
    // replace this one.
    let match_path = canonical_path((Target::Hour(hour), suffix));
    let dictionary = HeaderValue::try_from(format!(
        "match=\"{match_path}\", match-dest=(\"\"), id=\"{id}\""
    ))
    .expect("ascii");
    let not_modified = parts
        .headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));

    let mut response = if not_modified {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Body::from(linked.identity.clone()));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(linked.repr.content_type()),
        );
        response
    };
    let out = response.headers_mut();
    out.insert(header::ETAG, etag);
    out.insert(header::CACHE_CONTROL, cache_control);
    out.insert(HeaderName::from_static("use-as-dictionary"), dictionary);
    if !not_modified {
        let digest = crate::chain::repr_digest_of(&linked.sha256);
        out.insert(
            HeaderName::from_static(crate::chain::HEADER_REPR_DIGEST),
            HeaderValue::try_from(digest).expect("base64"),
        );
    }
    Ok(response)
}
