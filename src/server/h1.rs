//! HTTP/1.1 response heads written as hyper 1 writes them, for the connection's own
//! writer ([`super::conn`]): the same status line, the headers in the map's order with
//! names in lower case, hyper's `Content-Length` rules, and `date` last. Only what a
//! response to a `GET` without a body on a kept-alive connection needs; the bytes are
//! checked against hyper's own by `tests/abuse/wire.rs`.

use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// How the body follows the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// A body of this many bytes (`Content-Length`).
    Known(usize),
    /// A body whose size was not known before it was made: chunked, as hyper sends it.
    Chunked,
}

/// Appends the head of a response with `status`, `headers` and a body of `length` to
/// `out`, then `date`. Returns whether
/// the body is to be sent (never for 204 and 304).
pub fn write_head(
    out: &mut Vec<u8>,
    status: StatusCode,
    headers: &HeaderMap,
    length: Length,
    date: &[u8],
) -> bool {
    match status {
        StatusCode::OK => out.extend_from_slice(b"HTTP/1.1 200 OK\r\n"),
        StatusCode::NOT_MODIFIED => out.extend_from_slice(b"HTTP/1.1 304 Not Modified\r\n"),
        status => {
            let reason = status.canonical_reason().unwrap_or("<none>");
            for part in ["HTTP/1.1 ", status.as_str(), " ", reason, "\r\n"] {
                out.extend_from_slice(part.as_bytes());
            }
        }
    }
    let empty = length == Length::Known(0);
    let mut wrote_length = false;
    let mut wrote_date = false;
    let mut last: Option<&HeaderName> = None;
    for (name, value) in headers {
        let repeated = last == Some(name);
        last = Some(name);
        match *name {
            // hyper writes a length header's first value only, and none for an empty
            // body (it adds `content-length: 0` below where one is allowed).
            header::CONTENT_LENGTH => {
                if empty || repeated || length == Length::Chunked {
                    continue;
                }
                wrote_length = true;
            }
            header::DATE => wrote_date = true,
            _ => {}
        }
        line(out, name.as_str().as_bytes(), value.as_bytes());
    }
    let body = !matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED)
        && !status.is_informational();
    if !wrote_length && body {
        match length {
            Length::Known(n) => {
                let mut digits = itoa::Buffer::new();
                line(out, b"content-length", digits.format(n).as_bytes());
            }
            Length::Chunked => line(out, b"transfer-encoding", b"chunked"),
        }
    }
    if !wrote_date {
        line(out, b"date", date);
    }
    out.extend_from_slice(b"\r\n");
    body
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// The `Date` value, formatted once a second per thread (as hyper does).
struct CachedDate {
    second: u64,
    text: [u8; 29],
}

impl CachedDate {
    fn now(&mut self) -> &[u8] {
        let now = SystemTime::now();
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if second != self.second {
            self.second = second;
            let text = httpdate::fmt_http_date(now);
            if text.len() == self.text.len() {
                self.text.copy_from_slice(text.as_bytes());
            }
        }
        &self.text
    }
}

/// Calls `f` with this second's `Date` value.
pub fn with_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    DATE.with(|date| f(date.borrow_mut().now()))
}

thread_local! {
    static DATE: RefCell<CachedDate> = const {
        RefCell::new(CachedDate { second: u64::MAX, text: [b' '; 29] })
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::time::Duration;

    fn head(status: StatusCode, headers: &HeaderMap, length: Length) -> (String, bool) {
        let mut out = Vec::new();
        let body = write_head(&mut out, status, headers, length, b"DATE");
        (String::from_utf8(out).unwrap(), body)
    }

    #[test]
    fn lengths_follow_hypers_rules() {
        let mut h = HeaderMap::new();
        h.insert(header::ETAG, HeaderValue::from_static("\"x\""));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("5"));
        assert_eq!(
            head(StatusCode::OK, &h, Length::Known(5)),
            (
                "HTTP/1.1 200 OK\r\netag: \"x\"\r\ncontent-length: 5\r\ndate: DATE\r\n\r\n".into(),
                true
            )
        );
        // An empty 304 drops the length; an empty 200 says 0, after the other headers.
        let mut empty = h.clone();
        empty.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        assert_eq!(
            head(StatusCode::NOT_MODIFIED, &empty, Length::Known(0)),
            (
                "HTTP/1.1 304 Not Modified\r\netag: \"x\"\r\ndate: DATE\r\n\r\n".into(),
                false
            )
        );
        assert_eq!(
            head(StatusCode::OK, &empty, Length::Known(0)).0,
            "HTTP/1.1 200 OK\r\netag: \"x\"\r\ncontent-length: 0\r\ndate: DATE\r\n\r\n"
        );
        // No length header: hyper adds one at the end.
        let mut bare = HeaderMap::new();
        bare.insert(header::VARY, HeaderValue::from_static("accept"));
        bare.append(header::VARY, HeaderValue::from_static("origin"));
        assert_eq!(
            head(StatusCode::SERVICE_UNAVAILABLE, &bare, Length::Known(12)).0,
            "HTTP/1.1 503 Service Unavailable\r\nvary: accept\r\nvary: origin\r\ncontent-length: 12\r\ndate: DATE\r\n\r\n"
        );
        assert_eq!(
            head(StatusCode::OK, &bare, Length::Chunked).0,
            "HTTP/1.1 200 OK\r\nvary: accept\r\nvary: origin\r\ntransfer-encoding: chunked\r\ndate: DATE\r\n\r\n"
        );
    }

    #[test]
    fn the_date_is_an_http_date_and_follows_the_clock() {
        let mut date = CachedDate {
            second: u64::MAX,
            text: [b' '; 29],
        };
        let text = String::from_utf8(date.now().to_vec()).unwrap();
        let parsed = httpdate::parse_http_date(&text).unwrap();
        let off = SystemTime::now().duration_since(parsed).unwrap_or_default();
        assert!(off < Duration::from_secs(3), "{text}");
    }
}
