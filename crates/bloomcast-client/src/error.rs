//! The SDK's one error type.

use crate::bloom::FilterError;
use crate::hour::Hour;
use std::time::Duration;

/// What can go wrong talking to a bloomcast server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error status and (usually) a JSON error body.
    #[error("{status} {code}: {message}")]
    Status {
        status: u16,
        /// The body's machine-readable `error` code (`not_found`, `gone`, ...), or the
        /// status's reason phrase when the body was not a bloomcast error.
        code: String,
        message: String,
        /// The server's `Retry-After`, when it sent one (503: the store is down, the
        /// server is busy, or its work on the request outlived the request timeout).
        retry_after: Option<Duration>,
    },
    /// The request never got an answer: connection refused, reset, timed out.
    #[error("{}", transport_message(.0))]
    Transport(#[from] reqwest::Error),
    /// The answer came but is not a filter this client can read.
    #[error("unreadable filter: {0}")]
    Decode(#[from] FilterError),
    /// A closed hour failed verification against the publisher's key: its bytes, its
    /// chain link or its signature. The message names the hour; nothing of it is used.
    #[error("refusing a filter that does not verify: {0}")]
    Unverified(#[from] crate::chain::ChainError),
    /// The server could not verify its stored data of these hours (oldest first): its
    /// index lists them `corrupt`, or one answered `500 corrupt`. Whether any ID changed
    /// in them is unknown, so no answer covering them is given: they are never read as
    /// "no change". Transient: the same call may succeed once the operator repairs the
    /// store; a caller never skips the hours.
    #[error("{}", corrupt_message(.hours))]
    Corrupt { hours: Vec<Hour> },
    /// A derived form of a sealed hour (a ribbon, an exact body) came without a signature
    /// (no `Bloom-Signature`, no `.sig` sidecar) to a client with a key: it is not used.
    /// [`Client::changed_since`](crate::Client::changed_since) reads the hour's v1 filter
    /// instead.
    #[error("hour {}: {form} carries no signature (no Bloom-Signature, no .sig sidecar): not used", .hour.rfc3339())]
    Unsigned { hour: Hour, form: &'static str },
    /// An answer whose source is not shown current (PROTOCOL.md section 11): its
    /// [`Coverage::stale`](crate::Coverage) says why, one line per reason naming the hour.
    /// The answer holds for the hours it covers and says nothing of those after them.
    /// Returned unless the client accepts such answers
    /// ([`ClientBuilder::accept_stale`](crate::ClientBuilder::accept_stale)).
    #[error("{}", .0.coverage.stale.join("; "))]
    Stale(Box<crate::Answer>),
    /// The answer came but does not follow the protocol.
    #[error("unexpected response: {0}")]
    Protocol(String),
    /// The caller asked for something no server can answer (a `since` in the future).
    #[error("{0}")]
    Argument(String),
    /// The base URL or a path cannot form a request URL.
    #[error("bad server URL {0:?}: expected http://HOST:PORT, https://HOST:PORT or HOST:PORT")]
    Url(String),
}

/// One line naming the hours a [`ClientError::Corrupt`] could not read.
fn corrupt_message(hours: &[Hour]) -> String {
    let named: Vec<String> = hours.iter().map(|h| h.rfc3339()).collect();
    format!(
        "the server could not verify its stored data of {} (corrupt): whether IDs changed \
         then is unknown, so it is not read as no change",
        named.join(", ")
    )
}

/// One line naming the server and why it did not answer; a refused connection says so
/// plainly rather than through reqwest's chain of wrappers.
fn transport_message(e: &reqwest::Error) -> String {
    let server = e.url().map_or_else(
        || "the server".to_owned(),
        |u| u.origin().ascii_serialization(),
    );
    let mut root: &dyn std::error::Error = e;
    while let Some(cause) = root.source() {
        root = cause;
    }
    if e.is_timeout() {
        format!("no answer from {server} in time: {root}")
    } else if e.is_connect() {
        format!("cannot connect to {server}: {root} (is the server running there?)")
    } else {
        format!("cannot reach {server}: {}", with_causes(e))
    }
}

/// reqwest's message alone ("error sending request") hides why; add the causes.
fn with_causes(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

impl ClientError {
    /// The HTTP status, when the server answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether repeating the same request later may succeed: transport failures,
    /// timeouts, throttling, 5xx and hours the server could not verify. A 4xx is the request's fault and will fail again.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport(_) | ClientError::Corrupt { .. } => true,
            ClientError::Status { status, .. } => {
                matches!(status, 408 | 429) || (500..600).contains(status)
            }
            _ => false,
        }
    }

    /// Whether no connection could be made at all (nothing listening, unknown host), as
    /// opposed to one that timed out or broke: usually a wrong address or a stopped
    /// server, so [`Client::publish`](super::Client::publish) does not wait for it unless
    /// told to ([`PublishOptions::retry_refused`](super::PublishOptions::retry_refused)).
    pub fn is_refused(&self) -> bool {
        matches!(self, ClientError::Transport(e) if e.is_connect() && !e.is_timeout())
    }

    /// This error of a request for `hour`, with a `500 corrupt` said as
    /// [`ClientError::Corrupt`] naming the hour (its message names none); any other as it
    /// is.
    #[must_use]
    pub fn of_hour(self, hour: Hour) -> ClientError {
        match self {
            ClientError::Status {
                status: 500, code, ..
            } if code == "corrupt" => ClientError::Corrupt { hours: vec![hour] },
            other => other,
        }
    }

    /// How long the server asked us to wait before retrying, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> ClientError {
        ClientError::Status {
            status,
            code: "x".into(),
            message: "y".into(),
            retry_after: None,
        }
    }

    #[test]
    fn server_faults_and_throttling_are_transient_client_faults_are_not() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(status(s).is_transient(), "{s}");
        }
        for s in [400, 401, 404, 410, 413, 415] {
            assert!(!status(s).is_transient(), "{s}");
        }
        assert!(!ClientError::Protocol("x".into()).is_transient());
    }

    #[test]
    fn a_corrupt_hour_is_named_and_retried_never_skipped() {
        let hour = Hour::parse_flexible("2008-09-03T05").unwrap();
        let corrupt = ClientError::Status {
            status: 500,
            code: "corrupt".into(),
            message: "this filter's stored data failed verification".into(),
            retry_after: None,
        }
        .of_hour(hour);
        assert!(
            matches!(&corrupt, ClientError::Corrupt { hours } if hours == &[hour]),
            "{corrupt:?}"
        );
        assert!(
            corrupt.to_string().contains("2008-09-03T05:00:00Z"),
            "{corrupt}"
        );
        assert!(corrupt.is_transient());
        let internal = ClientError::Status {
            status: 500,
            code: "internal".into(),
            message: String::new(),
            retry_after: None,
        };
        assert!(matches!(internal.of_hour(hour), ClientError::Status { .. }));
    }
}
