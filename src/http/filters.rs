//! `GET /YYYY/MM/DD/HH`, `GET /YYYY/MM/DD` and `GET /since/YYYY/MM/DD/HH`: filters in
//! the negotiated representation and encoding, with validators and cache headers.

use super::error::{ApiError, Result};
use super::negotiate::{accepts_gzip, choose_repr};
use super::paths::{day_segments, hour_segments};
use super::AppState;
use crate::render::Repr;
use crate::service::{Target, View};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

type Segments4 = std::result::Result<Path<(String, String, String, String)>, PathRejection>;
type Segments3 = std::result::Result<Path<(String, String, String)>, PathRejection>;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

pub async fn get_hour(
    State(state): State<AppState>,
    path: Segments4,
    request: Request,
) -> Result<Response> {
    let Path((y, mo, d, h)) = path.map_err(|e| ApiError::InvalidHour(e.body_text()))?;
    let (hour, suffix) = hour_segments(&y, &mo, &d, &h)?;
    serve(&state, Target::Hour(hour), suffix, request.headers()).await
}

pub async fn get_day(
    State(state): State<AppState>,
    path: Segments3,
    request: Request,
) -> Result<Response> {
    let Path((y, mo, d)) = path.map_err(|e| ApiError::InvalidHour(e.body_text()))?;
    let (day, suffix) = day_segments(&y, &mo, &d)?;
    serve(&state, Target::Day(day), suffix, request.headers()).await
}

pub async fn get_since(
    State(state): State<AppState>,
    path: Segments4,
    request: Request,
) -> Result<Response> {
    let Path((y, mo, d, h)) = path.map_err(|e| ApiError::InvalidHour(e.body_text()))?;
    let (hour, suffix) = hour_segments(&y, &mo, &d, &h)?;
    serve(&state, Target::Since(hour), suffix, request.headers()).await
}

async fn serve(
    state: &AppState,
    target: Target,
    suffix: Option<Repr>,
    headers: &HeaderMap,
) -> Result<Response> {
    let repr = suffix.unwrap_or_else(|| choose_repr(headers));
    let view = state.service.view(target, repr).await?;
    Ok(respond(state, &view, suffix, headers))
}

fn respond(state: &AppState, view: &View, suffix: Option<Repr>, request: &HeaderMap) -> Response {
    let r = &view.rendered;
    let gzip = accepts_gzip(request);
    let cache_control = match view.open_until {
        None => HeaderValue::from_static(IMMUTABLE),
        Some(until) => {
            let left = (until - state.service.now()).num_seconds().max(0) as u64;
            let max_age = left.min(state.open_max_age);
            HeaderValue::from_str(&format!("public, max-age={max_age}")).expect("ascii")
        }
    };
    let etag = if gzip { &r.etag_gzip } else { &r.etag };
    let mut out = HeaderMap::with_capacity(12);
    out.insert(header::ETAG, HeaderValue::from_str(etag).expect("hex etag"));
    out.insert(header::CACHE_CONTROL, cache_control);
    out.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );

    let not_modified = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| r.matches(v));
    if not_modified {
        return (StatusCode::NOT_MODIFIED, out).into_response();
    }

    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(r.repr.content_type()),
    );
    for (name, value) in &r.bloom_headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            out.insert(HeaderName::from_static(name), value);
        }
    }
    if let Some(link) = link_header(view, suffix) {
        out.insert(header::LINK, link);
    }
    let body = if gzip {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r.gzip.clone()
    } else {
        r.identity.clone()
    };
    (StatusCode::OK, out, body).into_response()
}

fn link_header(view: &View, suffix: Option<Repr>) -> Option<HeaderValue> {
    let ext = suffix
        .map(|s| format!(".{}", s.suffix()))
        .unwrap_or_default();
    let links: Vec<String> = [(&view.prev, "prev"), (&view.next, "next")]
        .into_iter()
        .filter_map(|(path, rel)| path.as_ref().map(|p| format!("<{p}{ext}>; rel=\"{rel}\"")))
        .collect();
    (!links.is_empty()).then(|| HeaderValue::from_str(&links.join(", ")).expect("ascii links"))
}
