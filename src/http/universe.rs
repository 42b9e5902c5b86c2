//! `POST /universe` and `GET /universe`: the publisher's universe of IDs, from which
//! exact hours are built (docs/PROTOCOL.md section 14). Both need the ingest token; the
//! universe itself is never published.

use super::error::Result;
use super::ingest::{authenticated_keys, Upload};
use super::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Adds a batch of IDs to the universe, durably before the reply.
#[tracing::instrument(skip_all)]
pub async fn post_universe(
    State(state): State<AppState>,
    headers: HeaderMap,
    upload: Upload,
) -> Result<Response> {
    let (keys, _permit) = authenticated_keys(&state, &headers, upload).await?;
    let count = state.service.ingest().add_to_universe(&keys).await?;
    Ok(private(json!({"accepted": keys.len(), "count": count})))
}

/// The universe's size and first hour (`since`: null before one exists).
pub async fn get_universe(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    state.auth.check(&headers)?;
    let info = state.service.ingest().universe().await?;
    Ok(private(json!({
        "count": info.map_or(0, |u| u.count),
        "since": info.map(|u| u.since.rfc3339()),
    })))
}

/// A publisher's answer: no cache may keep it.
fn private(body: serde_json::Value) -> Response {
    (
        StatusCode::OK,
        [(header::CACHE_CONTROL, "private, no-store")],
        Json(body),
    )
        .into_response()
}
