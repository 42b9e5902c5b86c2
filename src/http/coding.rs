//! `Content-Encoding` of uploads: tower-http's `RequestDecompressionLayer` decodes gzip
//! and zstd bodies as they are read, its `RequestBodyLimitLayer` bounds the bytes sent,
//! and the handler bounds what they decode to (`ingest::read_body`), so a small body
//! that decodes to gigabytes (a "zip bomb") is refused once it passes the limit.
//!
//! Here only what those layers leave to us: the coding the client sent, kept for the
//! messages (the decompression layer takes the header off), and their bare 413 and 415
//! answers given the JSON error body every error has.

use super::error::ApiError;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The codings a body may arrive in, as `Accept-Encoding` names them on a 415.
pub const ACCEPTED: &str = "gzip, zstd";

/// The `Content-Encoding` a body was sent with (lowercase), when it has one.
#[derive(Debug, Clone)]
pub struct Sent(pub String);

/// Middleware just outside the decompression layer: notes the coding sent.
pub async fn note(mut request: Request, next: Next) -> Response {
    let sent = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty() && v != "identity");
    if let Some(sent) = sent {
        request.extensions_mut().insert(Sent(sent));
    }
    next.run(request).await
}

/// The layers' own answers (not JSON, as every handler's error is) as the errors they
/// are: 415 `unsupported_encoding`, 413 `payload_too_large` for a body over `limit`
/// bytes.
pub fn explained(limit: usize, response: Response) -> Response {
    if super::error::is_json(&response) {
        return response;
    }
    match response.status() {
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedEncoding(format!(
            "this Content-Encoding is not accepted: send the body as is, or compressed \
             once with one of: {ACCEPTED}"
        ))
        .into_response(),
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(limit).into_response(),
        _ => response,
    }
}
