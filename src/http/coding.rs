//! `Content-Encoding` of uploads: tower-http's `RequestDecompressionLayer` decodes gzip
//! and zstd bodies as they are read, its `RequestBodyLimitLayer` bounds the bytes sent,
//! and the handler bounds what they decode to (`ingest::read_body`), so a small body
//! that decodes to gigabytes (a "zip bomb") is refused once it passes the limit.
//!
//! Here only what those layers leave to us ([`note`]): the coding the client sent, kept
//! for the messages (the decompression layer takes the header off), and their bare 413
//! and 415 answers given the JSON error body every error has.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The codings a body may arrive in, as `Accept-Encoding` names them on a 415.
pub const ACCEPTED: &str = "gzip, zstd";

/// The `Content-Encoding` a body was sent with (lowercase), when it has one.
#[derive(Debug, Clone)]
pub struct Sent(pub String);

/// Middleware outside the upload layers: notes the coding sent, for the handler's
/// messages, and gives the layers' own answers (not JSON, as every handler's error is)
/// as the errors they are: 415 `unsupported_encoding` naming the coding refused, 413
/// `payload_too_large` for a body over `limit` bytes.
pub async fn note(State(limit): State<usize>, mut request: Request, next: Next) -> Response {
    let sent = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|v| !v.is_empty() && v != "identity");
    if let Some(sent) = &sent {
        request.extensions_mut().insert(Sent(sent.clone()));
    }
    let response = next.run(request).await;
    if super::error::is_json(&response) {
        return response;
    }
    match response.status() {
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedEncoding(format!(
            "Content-Encoding {:?} is not accepted: send the body as is, or compressed \
             once with one of: {ACCEPTED}",
            sent.unwrap_or_default()
        ))
        .into_response(),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(limit).into_response(),
        _ => response,
    }
}
