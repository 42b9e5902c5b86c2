//! `POST /clock/confirm`: an operator confirms the server's clock, so a held forward
//! jump (while running, or a start far past the last heartbeat) is followed at once
//! rather than after `clock_jump_confirm_seconds`. Needs the ingest token, as
//! `POST /updates`: it moves the hours the server opens and prunes.

use super::error::Result;
use super::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// `200` with the clock's state once the jump is followed; `409` `nothing_to_confirm`
/// when no jump is held; `401` without a valid token.
pub async fn confirm(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    state.auth.check(&headers)?;
    let report = state.service.health().confirm_clock().await?;
    Ok((
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Json(report),
    )
        .into_response())
}
