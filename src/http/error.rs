//! The HTTP layer's one error type: every failure a client can see, with its status
//! and a JSON body `{"error": ..., "message": ...}`. Server errors are logged in full
//! and reported to the client without internals.

use crate::service::ServiceError;
use crate::store::{full_message, StoreError};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    InvalidHour(String),
    #[error("missing or invalid bearer token")]
    Unauthorized,
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed on this resource")]
    MethodNotAllowed,
    /// 406: the resource has no representation the request accepts.
    #[error("{0}")]
    NotAcceptable(String),
    #[error("{0}")]
    Gone(String),
    /// 409: an operator confirmed the clock and no jump is held.
    #[error("{0}")]
    NothingToConfirm(String),
    #[error("body is larger than the limit of {0} bytes")]
    PayloadTooLarge(usize),
    /// The body was within the limit as sent, but its `Content-Encoding` decodes past it.
    #[error("body decodes to more than the limit of {0} bytes (the limit applies to the body as sent and as decoded)")]
    DecodedTooLarge(usize),
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 415 for a `Content-Encoding` other than those in `http::coding::ACCEPTED`.
    #[error("{0}")]
    UnsupportedEncoding(String),
    /// 408: the client was still sending its request when the request timeout ran out.
    #[error("the request took too long; send it faster or in smaller parts")]
    Timeout,
    /// 503: the request was received whole, and the server's work on it outlived the
    /// request timeout (a build too slow, a store that does not answer).
    #[error("the server took too long to answer; retry later")]
    ServerTimeout,
    /// The store cannot write (disk full, I/O error, read-only, locked) or be reached.
    #[error("the store cannot take writes right now; nothing was recorded; retry later")]
    Unavailable,
    /// A queue or pool is full: retry shortly.
    #[error("{0}")]
    Busy(String),
    /// 413: a union too large to build within the server's memory budget.
    #[error("{0}")]
    RangeTooLarge(String),
    /// The hour holds `max_hour_ids` distinct IDs; nothing of the batch was recorded.
    #[error("{0}")]
    HourFull(String),
    /// The universe holds `max_universe_ids` distinct IDs; nothing of the batch was
    /// recorded.
    #[error("{0}")]
    UniverseFull(String),
    /// Stored data failed verification and cannot be rebuilt: never served as a filter.
    #[error("{0}")]
    Corrupt(String),
    #[error("internal error")]
    Internal(String),
}

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Every `error` code an [`ApiError`] answers with ([`ApiError::code`]): the slots of
/// `bloomcast_http_errors_total` in `/metrics`, counted from [`ErrorCode`].
pub const CODES: [&str; 19] = [
    "bad_request",
    "invalid_hour",
    "unauthorized",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "gone",
    "nothing_to_confirm",
    "payload_too_large",
    "unsupported_media_type",
    "unsupported_encoding",
    "timeout",
    "store_unavailable",
    "busy",
    "range_too_large",
    "hour_full",
    "universe_full",
    "corrupt",
    "internal",
];

/// The `error` code of an error response, carried on it for the metrics layer (which
/// sees responses, not errors): 503 `busy` and 503 `store_unavailable` share a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub &'static str);

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) | ApiError::InvalidHour(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::NothingToConfirm(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_)
            | ApiError::DecodedTooLarge(_)
            | ApiError::RangeTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) | ApiError::UnsupportedEncoding(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            ApiError::Timeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::Unavailable | ApiError::Busy(_) | ApiError::ServerTimeout => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::HourFull(_) | ApiError::UniverseFull(_) => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::Corrupt(_) | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable `error` field.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::InvalidHour(_) => "invalid_hour",
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::NotAcceptable(_) => "not_acceptable",
            ApiError::Gone(_) => "gone",
            ApiError::NothingToConfirm(_) => "nothing_to_confirm",
            ApiError::PayloadTooLarge(_) | ApiError::DecodedTooLarge(_) => "payload_too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::UnsupportedEncoding(_) => "unsupported_encoding",
            // One code for both: the status says whose side was slow.
            ApiError::Timeout | ApiError::ServerTimeout => "timeout",
            ApiError::Unavailable => "store_unavailable",
            ApiError::Busy(_) => "busy",
            ApiError::RangeTooLarge(_) => "range_too_large",
            ApiError::HourFull(_) => "hour_full",
            ApiError::UniverseFull(_) => "universe_full",
            ApiError::Corrupt(_) => "corrupt",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::NotFound(m) => ApiError::NotFound(m),
            ServiceError::Gone(m) => ApiError::Gone(m),
            ServiceError::NothingToConfirm(m) => ApiError::NothingToConfirm(m),
            ServiceError::NotAcceptable(m) => ApiError::NotAcceptable(m),
            ServiceError::RangeTooLarge(m) => ApiError::RangeTooLarge(m),
            ServiceError::BadRange(m) => ApiError::InvalidHour(m),
            full @ ServiceError::HourFull { .. } => ApiError::HourFull(format!(
                "{full}; nothing of this batch was recorded (setting max_hour_ids)"
            )),
            full @ ServiceError::UniverseFull { .. } => ApiError::UniverseFull(format!(
                "{full}; nothing of this batch was recorded (setting max_universe_ids)"
            )),
            ServiceError::Store(e @ StoreError::Unavailable { .. }) => {
                tracing::warn!(error = %full_message(&e), "store unavailable");
                ApiError::Unavailable
            }
            ServiceError::Store(StoreError::Busy(m)) | ServiceError::Busy(m) => ApiError::Busy(m),
            ServiceError::Corrupt {
                hour,
                keys_only,
                source,
            } => {
                tracing::error!(%hour, error = %source, "stored data failed verification");
                ApiError::Corrupt(if keys_only {
                    format!(
                        "the stored keys of hour {} failed verification: its own sealed filter \
                         is served ({}), but nothing built from its keys (its compact and exact \
                         forms, and any union that includes it); the operator has been alerted",
                        hour.rfc3339(),
                        hour.path()
                    )
                } else {
                    format!(
                        "the stored data of hour {} failed verification: it is not served, in \
                         any form nor in any union that includes it; the operator has been \
                         alerted",
                        hour.rfc3339()
                    )
                })
            }
            ServiceError::Store(e @ StoreError::Corrupt(_)) => {
                tracing::error!(error = %e, "stored data failed verification");
                ApiError::Corrupt(
                    "this filter's stored data failed verification and is not served; \
                     the operator has been alerted"
                        .into(),
                )
            }
            other => ApiError::Internal(full_message(&other)),
        }
    }
}

impl From<crate::hour::HourError> for ApiError {
    fn from(e: crate::hour::HourError) -> Self {
        ApiError::InvalidHour(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(detail) = &self {
            tracing::error!(%detail, "request failed");
        }
        let status = self.status();
        let code = self.code();
        let body = Json(json!({ "error": code, "message": self.to_string() }));
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        match self {
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::Unavailable | ApiError::ServerTimeout => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            ApiError::Busy(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            // RFC 9110 §15.5.16: say which codings would have been accepted.
            ApiError::UnsupportedEncoding(_) => {
                headers.insert(
                    header::ACCEPT_ENCODING,
                    HeaderValue::from_static(super::coding::ACCEPTED),
                );
            }
            _ => {}
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response.extensions_mut().insert(ErrorCode(code));
        response
    }
}

/// Whether `response` has a JSON body, as every error this layer makes has (a stock
/// layer's own refusal has none, or plain text).
pub fn is_json(response: &axum::response::Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every kind; the match has no wildcard, so a new variant fails to
    /// compile here until it is listed (and its code checked against [`CODES`]).
    fn every_kind() -> Vec<ApiError> {
        let all = vec![
            ApiError::BadRequest(String::new()),
            ApiError::InvalidHour(String::new()),
            ApiError::Unauthorized,
            ApiError::NotFound(String::new()),
            ApiError::MethodNotAllowed,
            ApiError::NotAcceptable(String::new()),
            ApiError::Gone(String::new()),
            ApiError::NothingToConfirm(String::new()),
            ApiError::PayloadTooLarge(1),
            ApiError::DecodedTooLarge(1),
            ApiError::UnsupportedMediaType(String::new()),
            ApiError::UnsupportedEncoding(String::new()),
            ApiError::Timeout,
            ApiError::ServerTimeout,
            ApiError::Unavailable,
            ApiError::Busy(String::new()),
            ApiError::RangeTooLarge(String::new()),
            ApiError::HourFull(String::new()),
            ApiError::UniverseFull(String::new()),
            ApiError::Corrupt(String::new()),
            ApiError::Internal(String::new()),
        ];
        for e in &all {
            match e {
                ApiError::BadRequest(_)
                | ApiError::InvalidHour(_)
                | ApiError::Unauthorized
                | ApiError::NotFound(_)
                | ApiError::MethodNotAllowed
                | ApiError::NotAcceptable(_)
                | ApiError::Gone(_)
                | ApiError::NothingToConfirm(_)
                | ApiError::PayloadTooLarge(_)
                | ApiError::DecodedTooLarge(_)
                | ApiError::UnsupportedMediaType(_)
                | ApiError::UnsupportedEncoding(_)
                | ApiError::Timeout
                | ApiError::ServerTimeout
                | ApiError::Unavailable
                | ApiError::Busy(_)
                | ApiError::RangeTooLarge(_)
                | ApiError::HourFull(_)
                | ApiError::UniverseFull(_)
                | ApiError::Corrupt(_)
                | ApiError::Internal(_) => {}
            }
        }
        all
    }

    #[test]
    fn every_error_code_has_a_metrics_slot_and_every_slot_a_code() {
        let codes: Vec<&str> = every_kind().iter().map(ApiError::code).collect();
        for code in &codes {
            assert!(CODES.contains(code), "{code} has no slot in CODES");
        }
        for slot in CODES {
            assert!(codes.contains(&slot), "no error answers {slot}");
        }
    }

    #[test]
    fn an_error_response_carries_its_code_for_the_metrics_layer() {
        let response = ApiError::Busy("the pool is full".into()).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.extensions().get::<ErrorCode>(),
            Some(&ErrorCode("busy"))
        );
    }
}
