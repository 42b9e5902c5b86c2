//! The HTTP layer's one error type: every failure a client can see, with its status
//! and a JSON body `{"error": ..., "message": ...}`. Server errors are logged in full
//! and reported to the client without internals.

use crate::hour::Hour;
use crate::service::{ServiceError, Target, Work, RECOVERY_HOLD};
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
    /// 416: a `Range` whose first byte is past the end of a body of `len` bytes.
    #[error("{asked}: the body has {len} bytes (bytes 0-{last})", last = len.saturating_sub(1))]
    RangeNotSatisfiable { asked: String, len: u64 },
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
pub const CODES: [&str; 20] = [
    "bad_request",
    "invalid_hour",
    "unauthorized",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "gone",
    "range_not_satisfiable",
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
            ApiError::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
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
            ApiError::RangeNotSatisfiable { .. } => "range_not_satisfiable",
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
            ServiceError::InFuture {
                asked: Target::Since(from),
                now,
            } => ApiError::InvalidHour(format!(
                "since {from} is in the future; the current hour is {now}"
            )),
            ServiceError::InFuture { asked, now } => ApiError::NotFound(format!(
                "{} is in the future; the current hour is {now}",
                named(asked)
            )),
            ServiceError::BeforeGenesis { hour, genesis } => ApiError::NotFound(format!(
                "{hour} is before this service's first hour {genesis}: nothing is known about it"
            )),
            ServiceError::PastRetention {
                hour,
                retention_hours,
            } => ApiError::Gone(format!(
                "{hour} is past the retention of {retention_hours} hours"
            )),
            ServiceError::OpenHasNoCompactForm { asked, open } => {
                ApiError::NotAcceptable(match asked {
                    Target::Hour(hour) => format!(
                        "{hour} is still open: its compact form exists once it closes; \
                         fetch it as {BLOOM_SUFFIXES} until then"
                    ),
                    Target::Day(day) => format!(
                        "{} includes the open hour {open}: its compact form exists once the \
                         day is over; fetch it as {BLOOM_SUFFIXES} until then",
                        day.path()
                    ),
                    Target::Since(from) if from == open => format!(
                        "a since-range from the open hour {open} holds no closed hour, so it \
                         has no compact form; fetch it as {BLOOM_SUFFIXES}"
                    ),
                    Target::Since(_) => format!(
                        "a since-range has no version 1 compact form: its version 2 form \
                         (.ribbon2) covers its closed hours, beside the open hour {open} \
                         fetched on its own; or fetch the range as {BLOOM_SUFFIXES}"
                    ),
                })
            }
            ServiceError::PagesAreHourly { asked } => ApiError::NotFound(format!(
                "{} has no paged form: an hour's pages are read by Range when its IDs are few \
                 beside its count; a day or a range is read whole, as .ribbon2 or {BLOOM_SUFFIXES}",
                named(asked)
            )),
            ServiceError::OpenHasNoExactForm { asked, open } => {
                ApiError::NotAcceptable(match asked {
                    Target::Hour(hour) => format!(
                        "{hour} is still open: its exact form is built when it is sealed; \
                         fetch it as {BLOOM_SUFFIXES} until then"
                    ),
                    Target::Day(day) => format!(
                        "{} includes the open hour {open}: its exact form exists once the day \
                         is over; fetch it as {BLOOM_SUFFIXES} until then",
                        day.path()
                    ),
                    Target::Since(_) => format!(
                        "a since-range from the open hour {open} holds no sealed hour, so it \
                         has no exact form; fetch it as {BLOOM_SUFFIXES}"
                    ),
                })
            }
            ServiceError::NoUniverse => ApiError::NotFound(
                "this service has no universe, so no exact hours: a publisher creates one \
                 with POST /universe"
                    .into(),
            ),
            ServiceError::BeforeUniverse { hour, since } => ApiError::NotFound(format!(
                "{hour} was sealed before the universe existed: exact hours start at {since}"
            )),
            ServiceError::TooLargeForBudget {
                work,
                needed,
                budget,
            } => too_large(work, mib(needed), mib(budget)),
            ServiceError::BudgetTaken { work, needed, left } => ApiError::Busy(format!(
                "{} needs about {} MiB of memory and other builds leave {} MiB of the \
                 budget; retry shortly (setting cache_bytes)",
                doing(work),
                mib(needed),
                mib(left)
            )),
            ServiceError::TooManyWaiting { waiting } => ApiError::Busy(format!(
                "this client has {waiting} builds waiting already; retry shortly"
            )),
            ServiceError::NoClockJumpHeld {
                node_offset_seconds,
            } => ApiError::NothingToConfirm(match node_offset_seconds {
                Some(off) => format!(
                    "no clock jump is held; this node's clock is {off} s off PostgreSQL's, \
                     which the cluster runs on and which cannot be confirmed from a node: \
                     fix this node's time synchronisation (NTP)"
                ),
                None => "no clock jump is held: the service follows its clock".to_owned(),
            }),
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
            ServiceError::Store(StoreError::Busy(m)) => ApiError::Busy(m),
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

/// The Bloom forms every hour, day and range has, which a client is sent to when the
/// form it asked for does not exist (yet) or does not fit the build budget.
const BLOOM_SUFFIXES: &str = ".bin, .hex or .json";

/// Bytes in MiB, rounded up.
fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// A target as a message names it: an hour by its time, a day by its path.
fn named(target: Target) -> String {
    match target {
        Target::Hour(hour) => hour.to_string(),
        Target::Day(day) => day.path(),
        Target::Since(from) => format!("since {from}"),
    }
}

/// What a compact build of `from..=to` is of: an hour's path, or the range's.
fn compact_of(from: Hour, to: Hour) -> String {
    if from == to {
        from.path()
    } else {
        format!("{}..{}", from.path(), to.path())
    }
}

/// Work refused its memory, as a message names it.
fn doing(work: Work) -> String {
    match work {
        Work::Union { from, to, .. } => format!("building the union of {from}..{to}"),
        Work::Compact { from, to } => {
            format!("building the compact form of {}", compact_of(from, to))
        }
        Work::Exact { from, to } => {
            format!("building the exact form of {}", compact_of(from, to))
        }
        Work::Render { hour } => format!("rendering {}", hour.path()),
        Work::Scrub { hour } => format!("scrubbing {hour}"),
    }
}

/// Work that alone needs more than the builds' budget (`needs` and `budget` in MiB): a
/// union is a range too large (naming the longest that fits), a compact or exact form
/// one the client fetches in a Bloom form instead.
fn too_large(work: Work, needs: u64, budget: u64) -> ApiError {
    match work {
        Work::Union { from, to, fits } => {
            let m = format!(
                "the union of {from}..{to} needs about {needs} MiB of memory to build, more \
                 than this server's build budget of {budget} MiB (a third of setting \
                 cache_bytes)"
            );
            ApiError::RangeTooLarge(match fits {
                Some(start) => format!(
                    "{m}; the longest range ending at {} this server builds starts at \
                     {start} (GET /since{} while that hour is open)",
                    to.rfc3339(),
                    start.path()
                ),
                None => m,
            })
        }
        Work::Compact { from, to } => ApiError::NotAcceptable(format!(
            "the compact form of {} needs about {needs} MiB of memory to build, more than \
             this server's build budget of {budget} MiB (setting cache_bytes); fetch it as \
             {BLOOM_SUFFIXES}",
            compact_of(from, to)
        )),
        Work::Exact { from, to } => ApiError::NotAcceptable(format!(
            "the exact form of {} needs about {needs} MiB of memory to build, more than this \
             server's build budget of {budget} MiB (setting cache_bytes); fetch it as .bin, \
             .hex, .json or .ribbon2",
            compact_of(from, to)
        )),
        // Reserved up to the whole budget at most: never too large, only busy.
        Work::Render { .. } | Work::Scrub { .. } => ApiError::Busy(doing(work)),
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
                // As long as a failed write keeps `/healthz` saying so.
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(RECOVERY_HOLD.as_secs()),
                );
            }
            ApiError::Busy(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            // RFC 9110 section 14.4: the length of the body the range missed.
            ApiError::RangeNotSatisfiable { len, .. } => {
                let range = HeaderValue::try_from(format!("bytes */{len}")).expect("digits");
                headers.insert(header::CONTENT_RANGE, range);
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
            ApiError::RangeNotSatisfiable {
                asked: String::new(),
                len: 0,
            },
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
                | ApiError::RangeNotSatisfiable { .. }
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

    /// Every service error keeps the status and `error` code clients saw before the
    /// service's errors were typed (contracts), and the Bloom forms' suffixes and paths
    /// are said here.
    #[test]
    fn service_errors_keep_their_status_and_code() {
        use crate::hour::Day;
        let hour = Hour::from_index(340_000);
        let day = Day::from_hour_index(hour.index());
        let union = |fits| Work::Union {
            from: hour,
            to: hour.next(),
            fits,
        };
        let cases: Vec<(ServiceError, u16, &str, &str)> = vec![
            (
                ServiceError::InFuture {
                    asked: Target::Hour(hour),
                    now: hour,
                },
                404,
                "not_found",
                "in the future",
            ),
            (
                ServiceError::InFuture {
                    asked: Target::Day(day),
                    now: hour,
                },
                404,
                "not_found",
                "/",
            ),
            (
                ServiceError::InFuture {
                    asked: Target::Since(hour),
                    now: hour,
                },
                400,
                "invalid_hour",
                "since",
            ),
            (
                ServiceError::BeforeGenesis {
                    hour,
                    genesis: hour.next(),
                },
                404,
                "not_found",
                "first hour",
            ),
            (
                ServiceError::PastRetention {
                    hour,
                    retention_hours: 3,
                },
                410,
                "gone",
                "retention of 3 hours",
            ),
            (
                ServiceError::OpenHasNoCompactForm {
                    asked: Target::Hour(hour),
                    open: hour,
                },
                406,
                "not_acceptable",
                ".bin, .hex or .json",
            ),
            (
                ServiceError::OpenHasNoCompactForm {
                    asked: Target::Day(day),
                    open: hour,
                },
                406,
                "not_acceptable",
                ".bin, .hex or .json",
            ),
            (
                ServiceError::OpenHasNoCompactForm {
                    asked: Target::Since(hour),
                    open: hour,
                },
                406,
                "not_acceptable",
                ".bin, .hex or .json",
            ),
            (
                ServiceError::OpenHasNoExactForm {
                    asked: Target::Hour(hour),
                    open: hour,
                },
                406,
                "not_acceptable",
                ".bin, .hex or .json",
            ),
            (ServiceError::NoUniverse, 404, "not_found", "POST /universe"),
            (
                ServiceError::BeforeUniverse {
                    hour,
                    since: hour.next(),
                },
                404,
                "not_found",
                "exact hours start",
            ),
            (
                ServiceError::TooLargeForBudget {
                    work: union(Some(hour.next())),
                    needed: 3 << 20,
                    budget: 1 << 20,
                },
                413,
                "range_too_large",
                "(GET /since/",
            ),
            (
                ServiceError::TooLargeForBudget {
                    work: union(None),
                    needed: 3 << 20,
                    budget: 1 << 20,
                },
                413,
                "range_too_large",
                "cache_bytes",
            ),
            (
                ServiceError::TooLargeForBudget {
                    work: Work::Compact {
                        from: hour,
                        to: hour,
                    },
                    needed: 3 << 20,
                    budget: 1 << 20,
                },
                406,
                "not_acceptable",
                "cache_bytes",
            ),
            (
                ServiceError::TooLargeForBudget {
                    work: Work::Exact {
                        from: hour,
                        to: hour,
                    },
                    needed: 3 << 20,
                    budget: 1 << 20,
                },
                406,
                "not_acceptable",
                ".ribbon",
            ),
            (
                ServiceError::TooLargeForBudget {
                    work: Work::Render { hour },
                    needed: 3 << 20,
                    budget: 1 << 20,
                },
                503,
                "busy",
                "rendering",
            ),
            (
                ServiceError::BudgetTaken {
                    work: Work::Scrub { hour },
                    needed: 3 << 20,
                    left: 1 << 20,
                },
                503,
                "busy",
                "retry shortly",
            ),
            (
                ServiceError::TooManyWaiting { waiting: 8 },
                503,
                "busy",
                "8 builds waiting",
            ),
            (
                ServiceError::NoClockJumpHeld {
                    node_offset_seconds: None,
                },
                409,
                "nothing_to_confirm",
                "follows its clock",
            ),
            (
                ServiceError::NoClockJumpHeld {
                    node_offset_seconds: Some(90),
                },
                409,
                "nothing_to_confirm",
                "90 s off",
            ),
            (
                ServiceError::HourFull {
                    hour,
                    count: 2,
                    max: 2,
                },
                507,
                "hour_full",
                "max_hour_ids",
            ),
            (
                ServiceError::UniverseFull { count: 2, max: 2 },
                507,
                "universe_full",
                "max_universe_ids",
            ),
        ];
        for (error, status, code, says) in cases {
            let what = format!("{error:?}");
            let api = ApiError::from(error);
            assert_eq!(api.status().as_u16(), status, "{what}");
            assert_eq!(api.code(), code, "{what}");
            assert!(api.to_string().contains(says), "{what}: {api}");
        }
    }
}
