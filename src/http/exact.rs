//! The exact form of a sealed hour, a past day or a since-range's sealed hours:
//! `/YYYY/MM/DD/HH.exact`, `/YYYY/MM/DD.exact`, `/since/YYYY/MM/DD/HH.exact`, or the plain
//! path with `Accept: application/vnd.bloomcast.exact` (docs/PROTOCOL.md section 14).
//! Immutable (a since-range's until the open hour closes), with ETag and 304 like every
//! filter; never gzipped. The open hour and today are 406, a range starting before the
//! universe 404, `?fpp=` 400.

use super::compact::fpp_param;
use super::error::{ApiError, Result};
use super::filters::{not_modified, view_cache_control};
use super::negotiate::wants_exact;
use super::paths::{filter_path, last_segment_has_suffix};
use super::AppState;
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

/// The content type of the exact form.
pub const EXACT_TYPE: &str = "application/vnd.bloomcast.exact";
/// Its URL suffix, after the dot.
pub const SUFFIX: &str = "exact";

/// The exact response, when the request asks for it (by suffix, or by `Accept` on a
/// path without a suffix); `None` leaves the request to the other handlers.
pub async fn maybe_serve(state: &AppState, parts: &Parts) -> Option<Result<Response>> {
    let path = parts.uri.path();
    let plain = match path.strip_suffix(SUFFIX).and_then(|p| p.strip_suffix('.')) {
        Some(plain) => plain,
        None if !last_segment_has_suffix(path) && wants_exact(&parts.headers) => path,
        None => return None,
    };
    Some(serve(state, parts, plain).await)
}

async fn serve(state: &AppState, parts: &Parts, plain: &str) -> Result<Response> {
    let (target, suffix) = filter_path(plain)?;
    if suffix.is_some() {
        return Err(ApiError::NotFound("one suffix per URL".into()));
    }
    if let Some(asked) = fpp_param(parts.uri.query()) {
        return Err(ApiError::BadRequest(format!(
            "fpp={asked} does not apply to the exact form: it has no false positives to \
             choose (fpp applies to .ribbon and .ribbon.json)"
        )));
    }
    let view = state.service.forms().exact_view(target).await?;
    let rendered = &view.rendered;
    let head = rendered.head();
    let mut response = if not_modified(rendered, &parts.headers) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        // A 200's ETag comes with the rest of its head ([`crate::render::Head::sent`]).
        (response.headers_mut()).insert(header::ETAG, head.etag(false).clone());
        response
    } else {
        let mut response = Response::new(Body::from(rendered.identity.clone()));
        let out = response.headers_mut();
        *out = head.sent(false).clone();
        out.insert(header::CONTENT_TYPE, HeaderValue::from_static(EXACT_TYPE));
        response
    };
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, view_cache_control(state, &view));
    out.insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(response)
}
