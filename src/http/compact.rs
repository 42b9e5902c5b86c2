//! The compact representation of closed hours and past days: `.ribbon` (or
//! `.ribbon.json`, its JSON form) on the last segment of `/YYYY/MM/DD/HH`, `/YYYY/MM/DD`
//! or `/since/YYYY/MM/DD/HH`, or the plain path with `Accept:
//! application/vnd.bloomcast.ribbon` (`+json`), and `?fpp=` for a precision other than
//! the service's target. Immutable once
//! complete, with ETag and 304 like every filter. What includes the open hour (the
//! open hour, today, every `since`) is 406.

use super::error::{ApiError, Result};
use super::filters::{not_modified, not_modified_by_name, view_cache_control};
use super::negotiate::{accepts_gzip, wants_compact};
use super::paths::{filter_path, last_segment_has_suffix};
use super::AppState;
use crate::render::Compact;
use crate::service::grades::{self, canonical};
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

/// The content type of the compact (ribbon) representation; see docs/PROTOCOL.md.
pub const RIBBON_TYPE: &str = "application/vnd.bloomcast.ribbon";
/// The content type of its JSON form.
pub const RIBBON_JSON_TYPE: &str = "application/vnd.bloomcast.ribbon+json";
/// The content type of version 2 (`.ribbon2`).
pub const RIBBON2_TYPE: &str = "application/vnd.bloomcast.ribbon; v=2";
/// The content type of an hour's paged form (`.pages`).
pub const PAGES_TYPE: &str = "application/vnd.bloomcast.pages";

/// The content type of a compact form.
pub fn content_type(form: Compact) -> &'static str {
    match form {
        Compact::Ribbon => RIBBON_TYPE,
        Compact::RibbonJson => RIBBON_JSON_TYPE,
        Compact::Ribbon2 => RIBBON2_TYPE,
        Compact::Pages => PAGES_TYPE,
    }
}

/// The URL suffix that selects a compact form, after the dot.
pub(super) fn suffix(form: Compact) -> &'static str {
    match form {
        Compact::Ribbon => "ribbon",
        Compact::RibbonJson => "ribbon.json",
        Compact::Ribbon2 => "ribbon2",
        Compact::Pages => "pages",
    }
}

/// The compact response, when the request asks for one (by suffix, or by `Accept` on
/// a path without a suffix); `None` leaves the request to the v1 handler.
pub async fn maybe_serve(state: &AppState, parts: &Parts) -> Option<Result<Response>> {
    let path = parts.uri.path();
    let by_suffix = Compact::ALL.into_iter().find_map(|form| {
        let plain = path.strip_suffix(suffix(form))?.strip_suffix('.')?;
        Some((plain, form))
    });
    let (plain, form) = match by_suffix {
        Some(found) => found,
        None if !last_segment_has_suffix(path) => (path, wants_compact(&parts.headers)?),
        None => return None,
    };
    Some(serve(state, parts, plain, form).await)
}

/// The `fpp` parameter of a query string, if it has one.
pub fn fpp_param(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| pair.strip_prefix("fpp="))
}

async fn serve(state: &AppState, parts: &Parts, plain: &str, form: Compact) -> Result<Response> {
    let (target, suffix) = filter_path(plain)?;
    if suffix.is_some() {
        return Err(ApiError::NotFound("one suffix per URL".into()));
    }
    let asked = requested_fpp(parts.uri.query())?;
    // The member of the published set served (section 12, "The grade set").
    let (r, served) = (state.service.forms().grades()).served(form, asked.map(|(_, p)| p));
    // A spelling other than the member's canonical one names the canonical URL's bytes.
    let location = match asked {
        Some((spelled, _)) if spelled != canonical(served) => Some(
            HeaderValue::try_from(format!("{}?fpp={}", parts.uri.path(), canonical(served)))
                .map_err(|e| ApiError::BadRequest(format!("unusable path: {e}")))?,
        ),
        _ => None,
    };
    let vary = HeaderValue::from_static("Accept, Accept-Encoding");
    if parts.headers.contains_key(header::IF_NONE_MATCH) {
        // A closed hour or past day is revalidated from its hours' links, never built.
        let name = (state.service.forms())
            .known_compact_validator(target, r, form)
            .await?;
        let gzip = form == Compact::RibbonJson && accepts_gzip(&parts.headers);
        if let Some(mut response) = not_modified_by_name(name, &parts.headers, gzip, vary.clone()) {
            if let Some(location) = location {
                (response.headers_mut()).insert(header::CONTENT_LOCATION, location);
            }
            return Ok(response);
        }
    }
    let view = state.service.forms().compact_view(target, r, form).await?;
    let rendered = &view.rendered;
    let head = rendered.head();
    // Only the JSON form has a gzip encoding (the body is near-random bits).
    let gzip = !rendered.gzip.is_empty() && accepts_gzip(&parts.headers);
    let cache = view_cache_control(state, &view);
    let mut response = if not_modified(rendered, &parts.headers) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        // A 200's ETag comes with the rest of its head ([`crate::render::Head::sent`]).
        (response.headers_mut()).insert(header::ETAG, head.etag(gzip).clone());
        response
    } else {
        let body = if gzip {
            &rendered.gzip
        } else {
            &rendered.identity
        };
        let mut response = Response::new(Body::from(body.clone()));
        let out = response.headers_mut();
        *out = head.sent(gzip).clone();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(form)),
        );
        response
    };
    let out = response.headers_mut();
    out.insert(header::CACHE_CONTROL, cache);
    if form != Compact::Pages {
        // The one URL of the paged form is always the same bytes (no gzip, no `Accept`).
        out.insert(header::VARY, vary);
    }
    if let Some(location) = location {
        out.insert(header::CONTENT_LOCATION, location);
    }
    // Pages are read by the slot: a 200 is cut to the ranges asked.
    if form == Compact::Pages && response.status() == StatusCode::OK {
        response = super::ranges::serve(&parts.headers, response, &rendered.identity);
    }
    Ok(response)
}

/// The fpp a request asks for, as spelled and as parsed: `?fpp=` (2^-24 <= fpp < 1,
/// else 400), or `None` for the service's target.
fn requested_fpp(query: Option<&str>) -> Result<Option<(&str, f64)>> {
    let Some(asked) = fpp_param(query) else {
        return Ok(None);
    };
    let p: f64 = asked
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("fpp={asked} is not a number")))?;
    if !(p >= grades::finest() && p < 1.0) {
        return Err(ApiError::BadRequest(format!(
            "fpp={asked} is out of range: 2^-24 (5.96e-8) <= fpp < 1"
        )));
    }
    Ok(Some((asked, p)))
}

/// `?fpp=` on a v1 (Bloom) representation: refused, never ignored. A Bloom filter has
/// one precision (the service's `target_fpp`); answering it under a URL that asked for
/// another would let a client (and every cache keyed by that URL) believe it holds a
/// precision it does not.
pub fn refuse_fpp_on_v1(query: Option<&str>) -> Result<()> {
    match fpp_param(query) {
        None => Ok(()),
        Some(asked) => Err(ApiError::BadRequest(format!(
            "fpp={asked} applies to the compact form only (.ribbon, .ribbon.json, or \
             Accept: application/vnd.bloomcast.ribbon); the Bloom representations have \
             the service's one precision (target_fpp in GET /)"
        ))),
    }
}
