//! The compact representation of closed hours: `GET /YYYY/MM/DD/HH.ribbon`, or the hour's
//! plain path with `Accept: application/vnd.bloomcast.ribbon`, and `?fpp=` for a
//! precision other than the service's target. Served by the router (never by the fast
//! lane); immutable once complete, with ETag and 304 like every filter.

use super::error::{ApiError, Result};
use super::filters::{cache_control, not_modified};
use super::negotiate::wants_ribbon;
use super::paths::hour_segments;
use super::AppState;
use crate::bloom::bits_for_fpp;
use crate::render::RIBBON_TYPE;
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

/// The URL suffix of the compact representation.
pub const SUFFIX: &str = ".ribbon";
/// Fingerprint bits a client may ask for: `fpp` from 2^-4 to 2^-24.
pub const MIN_BITS: u32 = 4;
pub const MAX_BITS: u32 = 24;

/// The compact response, when the request asks for one (by suffix, or by `Accept` on
/// the plain hour path); `None` leaves the request to the v1 handler.
pub async fn maybe_serve(state: &AppState, parts: &Parts) -> Option<Result<Response>> {
    let path = parts.uri.path();
    let plain = match path.strip_suffix(SUFFIX) {
        Some(plain) => plain,
        None if wants_ribbon(&parts.headers) && !last_segment_has_suffix(path) => path,
        None => return None,
    };
    Some(serve(state, parts, plain).await)
}

fn last_segment_has_suffix(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|s| s.contains('.'))
}

async fn serve(state: &AppState, parts: &Parts, plain: &str) -> Result<Response> {
    let segments: Vec<&str> = plain.trim_start_matches('/').split('/').collect();
    let [y, mo, d, h] = segments[..] else {
        return Err(ApiError::NotFound(format!(
            "{} is not an hour: the compact form is served for /YYYY/MM/DD/HH",
            parts.uri.path()
        )));
    };
    let (hour, suffix) = hour_segments(y, mo, d, h)?;
    if suffix.is_some() {
        return Err(ApiError::NotFound("one suffix per URL".into()));
    }
    let r = bits(state, parts.uri.query())?;
    let view = state.service.compact_view(hour, r).await?;
    let rendered = &view.rendered;
    let etag = HeaderValue::from_str(&rendered.etag).expect("hex etag");
    let cache = cache_control(state, view.open_until);
    let vary = HeaderValue::from_static("Accept, Accept-Encoding");
    let mut response = if not_modified(rendered, &parts.headers) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Body::from(rendered.identity.clone()));
        let out = response.headers_mut();
        out.insert(header::CONTENT_TYPE, HeaderValue::from_static(RIBBON_TYPE));
        for (name, value) in &rendered.bloom_headers {
            if let Ok(value) = HeaderValue::from_str(value) {
                out.insert(HeaderName::from_static(name), value);
            }
        }
        if let Ok(value) = HeaderValue::from_str(&rendered.repr_digest) {
            out.insert(
                HeaderName::from_static(crate::chain::HEADER_REPR_DIGEST),
                value,
            );
        }
        response
    };
    let out = response.headers_mut();
    out.insert(header::ETAG, etag);
    out.insert(header::CACHE_CONTROL, cache);
    out.insert(header::VARY, vary);
    Ok(response)
}

/// Fingerprint bits for the request: `fpp` from the query rounded down to a power of
/// two (at most 2^-4, at least 2^-24), else the service's target.
fn bits(state: &AppState, query: Option<&str>) -> Result<u32> {
    let asked = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("fpp="));
    let Some(asked) = asked else {
        let target = state.service.tuning().target_fpp;
        return Ok(bits_for_fpp(target)
            .unwrap_or(MAX_BITS)
            .clamp(MIN_BITS, MAX_BITS));
    };
    let p: f64 = asked
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("fpp={asked} is not a number")))?;
    match bits_for_fpp(p) {
        Some(r) if r <= MAX_BITS => Ok(r.max(MIN_BITS)),
        _ => Err(ApiError::BadRequest(format!(
            "fpp={asked} is out of range: 2^-24 (5.96e-8) <= fpp < 1"
        ))),
    }
}
