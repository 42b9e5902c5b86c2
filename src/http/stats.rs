//! `GET /stats`: the figures the dashboard plots, as documented JSON (PROTOCOL.md,
//! "Operator figures") rather than scraped from the Prometheus text.

use super::error::{ApiError, Result};
use super::series::{Sample, SAMPLE_EVERY, WINDOW_SECONDS};
use super::AppState;
use crate::service::HourStats;
use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

/// Hours listed when the request does not say.
const DEFAULT_HOURS: u64 = 48;

pub async fn stats(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<impl IntoResponse> {
    let service = &state.service;
    let tuning = service.tuning();
    let hours = hours_param(query.as_deref())?.clamp(1, tuning.retention_hours);
    let per_hour = service.stats().hour_stats(hours as usize).await?;
    let now = service.current_hour();
    let reading = state.metrics.reading();
    let samples = state.metrics.series.with(reading);
    let websub = state.hub.stats().await;
    let body: Value = json!({
        "now": service.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "target_fpp": tuning.target_fpp,
        "capacity": tuning.capacity,
        "retention_hours": tuning.retention_hours,
        "current": { "hour": now.rfc3339(), "url": now.path() },
        "hours": per_hour.iter().map(hour_figures).collect::<Vec<_>>(),
        "rates": {
            "window_seconds": WINDOW_SECONDS,
            "sample_seconds": SAMPLE_EVERY.as_secs(),
            "points": rates(&samples),
        },
        "totals": reading.totals,
        "cache": service.stats().cache_stats(),
        "memory": memory(&state),
        "unions": service.stats().union_work(),
        "build_queue": service.stats().build_queue(),
        "warm": service.stats().warm_stats(),
        "events": {
            "subscribers": state.events.subscribers(),
            "max_subscribers": state.events.max_subscribers(),
        },
        "websub": websub,
    });
    Ok(([(header::CACHE_CONTROL, "no-store")], Json(body)))
}

/// What the server holds in memory, by name: bytes held now, and where they count.
pub(super) struct Part {
    pub name: &'static str,
    pub bytes: u64,
    pub share: Share,
    /// What it has reserved, at least what it holds (builds: at their peaks).
    pub reserved: Option<u64>,
}

/// Where a [`Part`]'s bytes count.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Share {
    /// A part of the one memory budget (`cache_bytes`), with its share of it.
    Budget(u64),
    /// A piece of the cache part, sharing its budget.
    Cache,
    /// Outside the budget: the open hours' keys (`max_hour_ids` bounds them), the
    /// store's client, what the C library's allocator keeps freed and the open
    /// connections (`max_connections` bounds them).
    Outside,
}

/// The parts of the one memory budget, the pieces of the one cache, and what is held
/// outside the budget, as held now; and the budget.
pub(super) fn memory_parts(state: &AppState) -> (u64, Vec<Part>) {
    let m = state.service.stats().memory_stats();
    let s = m.split;
    let part = |name, bytes, share| Part {
        name,
        bytes,
        share,
        reserved: None,
    };
    let parts = vec![
        Part {
            reserved: Some(m.build_reserved_bytes),
            ..part("builds", m.build_bytes, Share::Budget(s.builds))
        },
        part("deltas", m.delta_bytes, Share::Budget(s.deltas)),
        part(
            "followers",
            state.events.subscribers() as u64 * crate::service::FOLLOWER_BYTES,
            Share::Budget(s.followers),
        ),
        part("cache", m.kept_bytes, Share::Budget(s.kept)),
        part("cache_renderings", m.kept.renderings, Share::Cache),
        part("cache_open_unions", m.kept.open_unions, Share::Cache),
        part("cache_built_unions", m.kept.built_unions, Share::Cache),
        part("cache_history", m.kept.history, Share::Cache),
        part("cache_sealed_keys", m.kept.sealed_keys, Share::Cache),
        part("open_hour", m.open_hour_bytes, Share::Outside),
        part("store", m.store_bytes, Share::Outside),
        part(
            "allocator_free",
            crate::memory::c_heap_free(),
            Share::Outside,
        ),
        part(
            "connections",
            state.metrics.connections_open() * crate::server::CONNECTION_BYTES,
            Share::Outside,
        ),
    ];
    (s.total, parts)
}

/// `/stats`' `memory`: the budget, what is held in all within and outside it, each
/// part, and what the process holds (where the system says).
fn memory(state: &AppState) -> Value {
    let (total, parts) = memory_parts(state);
    let sum = |counted: fn(Share) -> bool| -> u64 {
        parts
            .iter()
            .filter(|p| counted(p.share))
            .map(|p| p.bytes)
            .sum()
    };
    let mut by_name = serde_json::Map::new();
    for p in &parts {
        let mut v = json!({ "bytes": p.bytes });
        if let Share::Budget(budget) = p.share {
            v["budget_bytes"] = json!(budget);
        }
        if let Some(reserved) = p.reserved {
            v["reserved_bytes"] = json!(reserved);
        }
        by_name.insert(p.name.to_owned(), v);
    }
    let mut memory = json!({
        "budget_bytes": total,
        "bytes": sum(|s| matches!(s, Share::Budget(_))),
        "outside_budget_bytes": sum(|s| s == Share::Outside),
        "parts": by_name,
    });
    if let Some(resident) = crate::memory::resident() {
        memory["process"] = json!({
            "resident_bytes": resident.bytes,
            "anonymous_bytes": resident.anonymous,
        });
    }
    memory
}

/// One hour's figures, with its URL.
fn hour_figures(s: &HourStats) -> Value {
    json!({
        "hour": s.hour.rfc3339(),
        "url": s.hour.path(),
        "count": s.count,
        "m": s.m,
        "k": s.k,
        "ones": s.ones,
        "fill": s.fill,
        "fpp": s.fpp,
        "complete": s.complete,
    })
}

/// `hours=N` from the query string; other parameters are ignored.
fn hours_param(query: Option<&str>) -> Result<u64> {
    let Some(value) = query
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("hours="))
    else {
        return Ok(DEFAULT_HOURS);
    };
    match value.parse() {
        // 0 is no positive integer: refused as documented, not clamped to 1.
        Ok(hours) if hours > 0 => Ok(hours),
        _ => Err(ApiError::BadRequest(format!(
            "hours must be a positive integer, not {value:?}"
        ))),
    }
}

/// One rate point per pair of neighbouring samples, stamped with the later one.
fn rates(samples: &[Sample]) -> Vec<Value> {
    samples
        .windows(2)
        .filter(|w| w[1].at > w[0].at)
        .map(|w| {
            let (a, b) = (w[0].totals, w[1].totals);
            let secs = (w[1].at - w[0].at) as f64;
            let per_sec = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs;
            let reads = b.reads.saturating_sub(a.reads);
            let not_modified = b.not_modified.saturating_sub(a.not_modified);
            json!({
                "at": chrono::DateTime::from_timestamp(w[1].at, 0)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                "seconds": w[1].at - w[0].at,
                "ids_per_second": per_sec(a.ids_ingested, b.ids_ingested),
                "requests_per_second": per_sec(a.requests, b.requests),
                "reads_per_second": per_sec(a.reads, b.reads),
                "bytes_per_second": per_sec(a.bytes_served, b.bytes_served),
                "not_modified_share": if reads == 0 { 0.0 } else { (not_modified.min(reads)) as f64 / reads as f64 },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::metrics::Totals;

    #[test]
    fn hours_parameter_defaults_and_rejects_garbage() {
        assert_eq!(hours_param(None).unwrap(), DEFAULT_HOURS);
        assert_eq!(hours_param(Some("x=1&hours=5")).unwrap(), 5);
        for garbage in [
            "hours=-1",
            "hours=0",
            "hours=x",
            "hours=18446744073709551616",
        ] {
            assert!(
                matches!(hours_param(Some(garbage)), Err(ApiError::BadRequest(_))),
                "{garbage}"
            );
        }
    }

    #[test]
    fn rates_are_differences_over_time() {
        let sample = |at, reads, not_modified, bytes| Sample {
            at,
            totals: Totals {
                reads,
                requests: reads,
                not_modified,
                bytes_served: bytes,
                ids_ingested: 0,
            },
        };
        let points = rates(&[
            sample(0, 0, 0, 0),
            sample(10, 100, 25, 5000),
            sample(10, 100, 25, 5000),
        ]);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0]["reads_per_second"], 10.0);
        assert_eq!(points[0]["bytes_per_second"], 500.0);
        assert_eq!(points[0]["not_modified_share"], 0.25);
    }
}
