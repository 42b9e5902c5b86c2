//! `GET /` (the index), `GET /healthz`, `GET /metrics` and the JSON 404/405 fallbacks.

use super::error::{ApiError, Result};
use super::negotiate::accepts_gzip;
use super::AppState;
use crate::bloom::SHA1_KM32;
use crate::service::{HealthReason, HealthReport, HealthStatus, HourState, HourSummary};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::{json, Value};
use std::io::Write as _;

/// How many recent hours the index lists.
const INDEX_HOURS: usize = 24;

pub async fn index(State(state): State<AppState>, request: HeaderMap) -> Result<Response> {
    let service = &state.service;
    let now = service.current_hour();
    let hours = service.hours().recent(INDEX_HOURS).await?;
    let exact_since = service.forms().exact_since().await?;
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
            "compact": "/YYYY/MM/DD[/HH].ribbon[.json][?fpp=P] (closed hours and past days)",
            "compact_v2": "/YYYY/MM/DD[/HH].ribbon2[?fpp=P] (closed hours and past days, any precision)",
            "chain": "/chain/YYYY/MM/DD/HH",
            "checkpoint": "/checkpoint",
            "exact": "/YYYY/MM/DD/HH.exact (sealed hours from exact_since)",
            "exact_ranges": "/YYYY/MM/DD.exact, /since/YYYY/MM/DD/HH.exact (their sealed hours, from exact_since)",
            "history": "/history?id=ID[&id=ID...][&since=HOUR] (ingest token)",
            "universe": "POST /universe, GET /universe (ingest token)",
            "openapi": "/openapi.json",
            "events": "/events",
            "atom": "/hours.atom",
        },
        "exact_since": exact_since.map(|h| h.rfc3339()),
        "ribbon_versions": [1, 2],
        "ribbon_grades": service.forms().grades().published(),
        "hours": hours.iter().map(index_line).collect::<Vec<_>>(),
    });
    let body = serde_json::to_vec(&body).expect("a JSON value serializes");
    Ok(revalidated_json(body, &request))
}

/// One hour of the index, with its URL. A corrupt hour has no `count`: an older client
/// that reads a missing or zero count as "nothing changed" must not find one
/// (docs/PROTOCOL.md section 9).
fn index_line(summary: &HourSummary) -> Value {
    let hour = summary.hour;
    let mut line = match summary.state {
        HourState::Counted { count, complete } => json!({
            "hour": hour.rfc3339(),
            "url": hour.path(),
            "count": count,
            "complete": complete,
        }),
        HourState::Corrupt => json!({
            "hour": hour.rfc3339(),
            "url": hour.path(),
            "complete": false,
            "corrupt": true,
        }),
    };
    if let Some(bytes) = summary.exact_bytes {
        line["exact_bytes"] = json!(bytes);
    }
    line
}

/// A JSON body that changes often (the index: its counts move with every ingest), sent
/// as pollers need it: `no-cache` with a strong `ETag` and `304` on `If-None-Match`, and
/// gzip when the client takes it (an index of 24 hours is about 5 KB, 1 KB gzipped;
/// pollers fetch it on every call, so it weighs as much as a small hour's filter).
pub(super) fn revalidated_json(identity: Vec<u8>, request: &HeaderMap) -> Response {
    revalidated(identity, "application/json", "no-cache", request)
}

/// As [`revalidated_json`], for a body of `content_type` kept for `cache_control`.
pub(super) fn revalidated(
    identity: Vec<u8>,
    content_type: &'static str,
    cache_control: &'static str,
    request: &HeaderMap,
) -> Response {
    let tag = crate::bloom::to_hex(&crate::dcz::sha256(&identity)[..10]);
    let gzip = accepts_gzip(request);
    let etag = if gzip {
        format!("\"{tag}-gz\"")
    } else {
        format!("\"{tag}\"")
    };
    let headers = [
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        ),
        (header::VARY, HeaderValue::from_static("Accept-Encoding")),
        (
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex etag"),
        ),
    ];
    let matches = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',').map(str::trim).any(|t| {
                let t = t.strip_prefix("W/").unwrap_or(t);
                t == "*" || t == etag
            })
        });
    if matches {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    let content_type = HeaderValue::from_static(content_type);
    if !gzip {
        return (headers, [(header::CONTENT_TYPE, content_type)], identity).into_response();
    }
    let mut enc = GzEncoder::new(Vec::with_capacity(identity.len() / 3), Compression::fast());
    enc.write_all(&identity)
        .expect("writing to a Vec cannot fail");
    let body = enc.finish().expect("writing to a Vec cannot fail");
    let encoding = HeaderValue::from_static("gzip");
    (
        headers,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_ENCODING, encoding),
        ],
        body,
    )
        .into_response()
}

/// 200 while this node serves (`ok`, or `degraded` when some hours failed
/// verification), 503 while the store takes no writes (`unavailable`) or the open hour
/// is still loading (`loading`), always with the JSON report.
pub async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    let report = state.service.health().report().await;
    let status = if report.is_serving() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let document = Healthz {
        status: report.status,
        reason: report.reason.as_ref().map(health_reason),
        report,
    };
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Json(document),
    )
}

/// The `/healthz` document: the status, why it is not `ok`, then the report's figures.
#[derive(serde::Serialize)]
struct Healthz {
    status: HealthStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(flatten)]
    report: HealthReport,
}

/// Why `/healthz` is not `ok`, in words for the operator.
fn health_reason(reason: &HealthReason) -> String {
    match reason {
        HealthReason::WriteFailed(why) => why.clone(),
        HealthReason::Loading => "loading the open hour from the store".to_owned(),
        HealthReason::Corrupt => {
            "some stored data failed verification and is not served".to_owned()
        }
        HealthReason::ClockJump { jump, reference } => {
            let clock = if *reference {
                "PostgreSQL's clock"
            } else {
                "the wall clock"
            };
            jump_reason(jump, clock)
        }
        HealthReason::NodeClockOff { offset_seconds } => format!(
            "this node's clock is {} s {} PostgreSQL's, which the cluster runs on: it \
             opens, seals and prunes nothing by its own clock; fix its time \
             synchronisation (NTP)",
            offset_seconds.abs(),
            if *offset_seconds > 0 {
                "ahead of"
            } else {
                "behind"
            }
        ),
    }
}

/// What `/healthz` says of a forward jump of `clock` held: by how much, since when, and
/// how it ends (corrected, confirmed by an operator, or held for the confirmation period).
fn jump_reason(jump: &crate::clock::JumpState, clock: &str) -> String {
    let what = if jump.at_start {
        format!(
            "{clock} at start read {} s past the time the last heartbeat recorded (plus the \
             time measured since, where this boot measured it)",
            jump.ahead_seconds
        )
    } else {
        format!("{clock} jumped {} s ahead", jump.ahead_seconds)
    };
    format!(
        "{what}; the service runs on the time measured since and opens and prunes nothing by \
         the clock: if the clock is right, confirm it with `bloomcast confirm-clock` (POST \
         /clock/confirm with the ingest token); otherwise correct it, and it is followed \
         again at once. It is followed by itself after it holds for {} s more",
        jump.confirm_in_seconds.unwrap_or(0)
    )
}

/// The Prometheus text exposition ([`super::metrics::exposition`]).
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    exposition(super::metrics::exposition(&state).await)
}

/// A Prometheus text exposition as a response.
pub fn exposition(text: String) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/plain; version=0.0.4"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
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

/// `/healthz` of a node in standby: `unavailable` and why (503, never cached).
pub fn standby_health(why: &str) -> axum::response::Response {
    let report = serde_json::json!({
        "status": "unavailable",
        "reason": format!("starting: cannot connect to PostgreSQL yet (retrying with backoff): {why}"),
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CACHE_CONTROL, "no-store")],
        Json(report),
    )
        .into_response()
}

/// Answers a request whose handler panicked.
pub fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned());
    ApiError::Internal(format!("a request handler panicked: {detail}")).into_response()
}
