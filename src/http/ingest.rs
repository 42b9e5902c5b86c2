//! `POST /updates`: authenticated ingest of a batch of IDs into the current hour.

use super::coding::Sent;
use super::error::{ApiError, Result};
use super::timeouts::Deadline;
use super::AppState;
use crate::bloom::Key;
use crate::wire::check_id;
pub use crate::wire::MAX_ID_BYTES;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Bodies above this are hashed on the blocking pool rather than the async runtime.
const INLINE_HASH_LIMIT: usize = 256 * 1024;

#[derive(Debug, Serialize)]
pub struct IngestReply {
    pub hour: String,
    pub accepted: usize,
}

/// Checks everything a request's head can tell (token, content type, content coding,
/// declared length) before reading a byte of the body, so a rejected client costs no
/// more than its headers. The body limit applies to the body as sent and, for a
/// compressed body, to what it decodes to.
#[tracing::instrument(skip_all)]
pub async fn post_updates(
    State(state): State<AppState>,
    headers: HeaderMap,
    upload: Upload,
) -> Result<Response> {
    let (keys, _permit) = authenticated_keys(&state, &headers, upload).await?;
    let receipt = state.service.ingest().add(&keys).await?;
    state.metrics.ids_ingested(keys.len());
    // A receipt is for this publisher and this request: no cache may keep it.
    Ok((
        StatusCode::OK,
        [(header::CACHE_CONTROL, "private, no-store")],
        Json(IngestReply {
            hour: receipt.hour.rfc3339(),
            accepted: receipt.accepted,
        }),
    )
        .into_response())
}

/// The keys of an authenticated batch of IDs (`POST /updates`, `POST /universe`), with
/// the upload permit to hold until they are durable (it bounds the memory uploads can
/// hold). The token, the content type, the content coding and a declared length are
/// checked before a byte of the body is read.
///
/// # Errors
/// 401, 415, 413, 400 as docs/PROTOCOL.md gives them; 503 `busy` past
/// `ingest_concurrency` uploads at once.
pub async fn authenticated_keys(
    state: &AppState,
    headers: &HeaderMap,
    upload: Upload,
) -> Result<(Vec<Key>, tokio::sync::OwnedSemaphorePermit)> {
    state.auth.check(headers)?;
    let kind = BodyKind::of(headers)?;
    let permit = state
        .ingest_permits
        .clone()
        .try_acquire_owned()
        .map_err(|_| {
            ApiError::Busy(
                "too many uploads at once; retry shortly (setting ingest_concurrency)".into(),
            )
        })?;
    let limit = state.body_limit;
    let coding = upload.coding.as_deref();
    let body = Deadline::read(upload.deadline, read_body(upload.body, coding, limit)).await?;
    tracing::debug!(bytes = body.len(), coding, "ingest body read");
    let keys = if body.len() <= INLINE_HASH_LIMIT {
        decode_keys(kind, &body)?
    } else {
        tokio::task::spawn_blocking(move || decode_keys(kind, &body))
            .await
            .map_err(|e| ApiError::Internal(format!("decoding the body failed: {e}")))??
    };
    Ok((keys, permit))
}

/// A request's body, when it must have arrived by (408 past it), and the
/// `Content-Encoding` it was sent with (the decompression layer decodes it as it is read):
/// the extractor of the upload routes, taken from what the layers put on the request.
pub struct Upload {
    pub body: Body,
    pub deadline: Option<Deadline>,
    pub coding: Option<String>,
}

impl<S: Send + Sync> FromRequest<S> for Upload {
    type Rejection = std::convert::Infallible;

    async fn from_request(request: Request, _: &S) -> std::result::Result<Upload, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        Ok(Upload {
            body,
            deadline: parts.extensions.remove::<Deadline>(),
            coding: parts.extensions.remove::<Sent>().map(|Sent(c)| c),
        })
    }
}

/// Reads the body, decoded, at most `limit` bytes (the body limit layer has bounded the
/// bytes sent to the same limit).
///
/// # Errors
/// 413 past the limit, sent or decoded; 400 when the body breaks off or is not valid in
/// its coding (corrupt, truncated).
async fn read_body(body: Body, coding: Option<&str>, limit: usize) -> Result<Bytes> {
    let error = match Limited::new(body, limit).collect().await {
        Ok(collected) => return Ok(collected.to_bytes()),
        Err(e) => e,
    };
    let over_limit =
        std::iter::successors(Some(&*error as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        })
        .any(|e| e.is::<LengthLimitError>());
    Err(match (over_limit, coding) {
        (true, None) => ApiError::PayloadTooLarge(limit),
        (true, Some(_)) => ApiError::DecodedTooLarge(limit),
        (false, None) => ApiError::BadRequest(format!("cannot read the body: {error}")),
        (false, Some(coding)) => ApiError::BadRequest(format!(
            "body is not valid {coding} ({error}), as its Content-Encoding says it is"
        )),
    })
}

/// The accepted body formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/json`: `{"ids": ["a", "b"]}`.
    Json,
    /// `text/plain`: one ID per line, LF or CRLF, blank lines ignored.
    Lines,
}

impl BodyKind {
    /// # Errors
    /// 415 for a missing or other content type.
    pub fn of(headers: &HeaderMap) -> Result<BodyKind> {
        let raw = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = raw
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" => Ok(BodyKind::Json),
            "text/plain" => Ok(BodyKind::Lines),
            _ => Err(ApiError::UnsupportedMediaType(format!(
                "content type {raw:?} is not accepted: send application/json {{\"ids\": [...]}} \
                 or text/plain with one ID per line"
            ))),
        }
    }
}

#[derive(Deserialize)]
struct IdsBody<'a> {
    #[serde(borrow)]
    ids: Vec<Cow<'a, str>>,
}

/// Parses and validates a whole body into keys: all or nothing.
///
/// # Errors
/// 400 naming the first problem: invalid UTF-8, malformed JSON, a non-string, empty or
/// over-long ID.
pub fn decode_keys(kind: BodyKind, body: &[u8]) -> Result<Vec<Key>> {
    let text = std::str::from_utf8(body).map_err(|e| {
        ApiError::BadRequest(format!(
            "body is not valid UTF-8 (at byte {})",
            e.valid_up_to()
        ))
    })?;
    match kind {
        BodyKind::Json => {
            let parsed: IdsBody = serde_json::from_str(text).map_err(|e| {
                ApiError::BadRequest(format!(
                    "malformed JSON body, expected {{\"ids\": [\"...\"]}}: {e}"
                ))
            })?;
            parsed
                .ids
                .iter()
                .enumerate()
                .map(|(i, id)| checked_key(id, || format!("ids[{i}]")))
                .collect()
        }
        BodyKind::Lines => text
            .split('\n')
            .enumerate()
            .map(|(i, line)| (i, line.strip_suffix('\r').unwrap_or(line)))
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(i, id)| checked_key(id, || format!("line {}", i + 1)))
            .collect(),
    }
}

fn checked_key(id: &str, place: impl Fn() -> String) -> Result<Key> {
    check_id(id).map_err(|e| ApiError::BadRequest(format!("{} {e}", place())))?;
    Ok(Key::of(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ids: &[&str]) -> Vec<Key> {
        ids.iter().map(|id| Key::of(id)).collect()
    }

    #[test]
    fn json_bodies_decode_with_escapes() {
        let got = decode_keys(BodyKind::Json, br#"{"ids": ["a", "caf\u00e9", "x\ny"]}"#).unwrap();
        assert_eq!(got, keys(&["a", "café", "x\ny"]));
    }

    #[test]
    fn lines_accept_lf_crlf_and_skip_blank_lines() {
        let got = decode_keys(BodyKind::Lines, b"a\r\nb\n\n  \nc d\n").unwrap();
        assert_eq!(got, keys(&["a", "b", "c d"]));
    }

    #[test]
    fn bad_bodies_name_the_problem() {
        let cases: &[(BodyKind, &[u8], &str)] = &[
            (BodyKind::Json, b"{\"ids\": [1]}", "malformed JSON"),
            (
                BodyKind::Json,
                b"{\"ids\": [\"\"]}",
                "ids[0] is an empty ID",
            ),
            (BodyKind::Json, b"[\"a\"]", "malformed JSON"),
            (BodyKind::Json, b"{\"ids\": [\"a\"", "malformed JSON"),
            (BodyKind::Lines, b"ok\n\xff\xfe\n", "not valid UTF-8"),
        ];
        for (kind, body, expected) in cases {
            let err = decode_keys(*kind, body).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{err:?} should contain {expected:?}"
            );
        }
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let err = decode_keys(BodyKind::Lines, long.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1 is 1025 bytes"), "{err}");
        assert!(decode_keys(BodyKind::Lines, "x".repeat(MAX_ID_BYTES).as_bytes()).is_ok());
    }
}
