//! `GET /` (the index), `GET /healthz`, `GET /metrics` and the JSON 404/405 fallbacks.

use super::error::{ApiError, Result};
use super::AppState;
use crate::bloom::SHA1_KM32;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

/// How many recent hours the index lists.
const INDEX_HOURS: usize = 24;

pub async fn index(State(state): State<AppState>) -> Result<impl IntoResponse> {
    let service = &state.service;
    let now = service.current_hour();
    let hours = service.recent(INDEX_HOURS).await?;
    let tuning = service.tuning();
    let body: Value = json!({
        "service": "bloomcast",
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": 1,
        "hash": SHA1_KM32,
        "target_fpp": tuning.target_fpp,
        "capacity": tuning.capacity,
        "retention_hours": tuning.retention_hours,
        "genesis": service.genesis().rfc3339(),
        "current": { "hour": now.rfc3339(), "url": now.path() },
        "urls": {
            "hour": "/YYYY/MM/DD/HH[.json|.hex|.bin]",
            "day": "/YYYY/MM/DD[.json|.hex|.bin]",
            "since": "/since/YYYY/MM/DD/HH[.json|.hex|.bin]",
            "ingest": "POST /updates",
            "dashboard": "/dashboard",
            "stats": "/stats",
        },
        "hours": hours,
    });
    Ok(([(header::CACHE_CONTROL, "no-cache")], Json(body)))
}

pub async fn healthz(State(state): State<AppState>) -> Result<impl IntoResponse> {
    state.service.health().await.map_err(|e| {
        tracing::warn!(error = %e, "health check failed");
        ApiError::Unavailable
    })?;
    Ok((StatusCode::OK, Json(json!({ "status": "ok" }))))
}

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let text = state.metrics.render(state.service.current_count());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound(
        "no such resource: filters live at /YYYY/MM/DD/HH, /YYYY/MM/DD and /since/YYYY/MM/DD/HH"
            .into(),
    )
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// Answers a request that overran the request timeout (a slow or stalled client).
pub async fn timed_out(err: tower::BoxError) -> ApiError {
    if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::Timeout
    } else {
        ApiError::Internal(err.to_string())
    }
}
