//! `GET /chain/YYYY/MM/DD/HH[?limit=N]`: the hour chain from that hour on, one page
//! (a JSON list; `Link: rel="next"` to the next page when this one is full), and
//! `GET /.well-known/bloomcast.json`: the public key, genesis and parameters a client
//! verifies with.

use super::error::{ApiError, Result};
use super::paths::filter_path;
use super::AppState;
use crate::bloom::SHA1_KM32;
use crate::chain;
use crate::service::{Target, MAX_CHAIN_PAGE};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::Uri;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

/// Links per page when the request does not say (a week of hours).
pub const DEFAULT_CHAIN_PAGE: usize = 168;

const IMMUTABLE: &str = "max-age=31536000, immutable";

#[derive(Deserialize)]
pub struct ChainQuery {
    limit: Option<String>,
}

#[tracing::instrument(skip_all)]
pub async fn get_chain(
    State(state): State<AppState>,
    uri: Uri,
    query: std::result::Result<Query<ChainQuery>, QueryRejection>,
) -> Result<Response> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    // The router matched `/chain` and four segments: the rest is an hour path.
    let rest = uri.path().strip_prefix("/chain").unwrap_or_default();
    let (Target::Hour(from), suffix) = filter_path(rest)? else {
        return Err(ApiError::NotFound(format!("no hour at {rest:?}")));
    };
    if suffix.is_some_and(|r| r != crate::render::Repr::Json) {
        return Err(ApiError::NotFound(
            "the chain is published as JSON only".into(),
        ));
    }
    let limit = match query.limit.as_deref() {
        None => DEFAULT_CHAIN_PAGE,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_CHAIN_PAGE).contains(&n) => n,
            _ => {
                return Err(ApiError::BadRequest(format!(
                    "limit {text:?} must be a whole number from 1 to {MAX_CHAIN_PAGE}"
                )))
            }
        },
    };
    let page = state.service.signing().chain(from, limit).await?;
    let body: Vec<_> = page
        .links
        .iter()
        .map(|s| {
            json!({
                "hour": s.link.hour.rfc3339(),
                "digest": chain::hex(&s.link.digest),
                "prev": chain::hex(&s.link.prev),
                "header": chain::hex(&s.link.header),
                "signature": s.signature.map(|f| chain::hex(&f.signature)),
                "key_id": s.signature.and_then(|f| f.key_id).map(|id| id.to_string()),
            })
        })
        .collect();
    let mut response = Json(body).into_response();
    let out = response.headers_mut();
    match page.next {
        // A full page: every link in it is sealed and never changes.
        Some(next) => {
            out.insert(header::CACHE_CONTROL, HeaderValue::from_static(IMMUTABLE));
            let link = format!("</chain{}?limit={limit}>; rel=\"next\"", next.path());
            out.insert(
                header::LINK,
                HeaderValue::try_from(link).expect("ascii link"),
            );
        }
        // Ends at the newest sealed hour: grows when the next hour is sealed.
        None => {
            out.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("max-age=60"),
            );
        }
    }
    Ok(response)
}

/// The document a client verifies with. `public_key` is the current key (this node's
/// when nothing is registered); `keys` every key the service has signed with.
///
/// # Errors
/// Store failures reading the key registry.
pub async fn well_known(State(state): State<AppState>) -> Result<Response> {
    let service = &state.service;
    let tuning = service.tuning();
    let list = service.signing().key_list().await?;
    let current = list
        .keys()
        .last()
        .filter(|k| k.last_hour.is_none())
        .map(|k| k.public_key)
        .or(service.signing().public_key());
    let keys = crate::client::key_list_json(&list);
    let body = json!({
        "service": "bloomcast",
        "protocol": 1,
        "public_key": current.map(|k| k.to_string()),
        "keys": keys,
        "signature": "ed25519",
        "signing_domain": String::from_utf8_lossy(chain::SIGNING_DOMAIN),
        "digest": "sha-256",
        "chain_genesis": chain::hex(&chain::GENESIS),
        "genesis": service.genesis().rfc3339(),
        "hash": SHA1_KM32,
        "target_fpp": tuning.target_fpp,
        "capacity": tuning.capacity,
        "retention_hours": tuning.retention_hours,
        "urls": { "chain": "/chain/YYYY/MM/DD/HH?limit=N", "checkpoint": "/checkpoint" },
    });
    Ok(([(header::CACHE_CONTROL, "max-age=60")], Json(body)).into_response())
}

/// `GET /checkpoint`: the latest signed statement of the service's newest sealed hour
/// (docs/PROTOCOL.md section 11, "Trust"), made at least every minute. Cached for a
/// minute, so a mirror that copies it keeps it at most that much older than the origin.
///
/// # Errors
/// 404 when the service signs nothing, has linked no hour yet, or this node holds no key
/// listed for its newest hour.
pub async fn checkpoint(State(state): State<AppState>) -> Result<Response> {
    let Some((checkpoint, key_id)) = state.service.signing().checkpoint() else {
        return Err(ApiError::NotFound(
            "no checkpoint: this service signs nothing, has sealed no hour yet, or this node \
             holds no key listed for its newest hour"
                .into(),
        ));
    };
    let body = json!({
        "hour": checkpoint.hour.rfc3339(),
        "header": chain::hex(&checkpoint.header),
        "made": checkpoint.made,
        "signature": chain::hex(&checkpoint.signature),
        "key_id": key_id.to_string(),
    });
    Ok(([(header::CACHE_CONTROL, "max-age=60")], Json(body)).into_response())
}
