//! `Range` requests (RFC 9110 section 14) on an immutable body held whole: one range is
//! a `206` with `Content-Range`, several a `206` of `multipart/byteranges`, one that
//! starts past the body's end a `416` naming its length (with the JSON error body). A request without `Range`, with a
//! unit other than bytes, with an `If-Range` that is not the body's strong ETag, or
//! with more ranges than [`MAX_RANGES`] gets the `200` as it was (RFC 9110 lets a server
//! ignore `Range`). Served on the paged form (docs/PROTOCOL.md section 12), whose
//! readers fetch one page at a time through caches that do the same.

use super::error::ApiError;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use http_range_header::{parse_range_header, RangeUnsatisfiableError};
use std::ops::RangeInclusive;

/// Ranges one request may ask for before it is answered whole.
pub const MAX_RANGES: usize = 1024;

/// `response`, a `200` of `body` (whose `ETag` it carries), as the request's `Range`
/// asks. Sets `Accept-Ranges: bytes` either way.
pub fn serve(request: &HeaderMap, mut response: Response, body: &Bytes) -> Response {
    response
        .headers_mut()
        .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    let Some(asked) = request.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return response;
    };
    if !if_range_holds(request, response.headers()) {
        return response;
    }
    let len = body.len() as u64;
    // A range the body cannot satisfy (its first byte past the end) is 416; syntax this
    // server does not read, overlapping ranges, too many, or a suffix longer than the
    // body get the whole body, as RFC 9110 allows.
    let ranges = match parse_range_header(asked).map(|parsed| parsed.validate(len)) {
        Ok(Ok(ranges)) if ranges.len() <= MAX_RANGES => ranges,
        Ok(Err(RangeUnsatisfiableError::RangeReversed)) => {
            let asked = asked.to_owned();
            return ApiError::RangeNotSatisfiable { asked, len }.into_response();
        }
        _ => return response,
    };
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    *response.status_mut() = StatusCode::PARTIAL_CONTENT;
    let out = response.headers_mut();
    // The whole body's digest, which a part cannot be checked against.
    out.remove(crate::chain::HEADER_REPR_DIGEST);
    if let [range] = ranges.as_slice() {
        out.insert(header::CONTENT_RANGE, content_range(range, len));
        *response.body_mut() = Body::from(body.slice(slice(range)));
        return response;
    }
    // Several ranges: each part with its own type and range, in the order asked.
    let boundary = boundary(response.headers());
    let mut parts = BytesMut::new();
    for range in &ranges {
        parts.put_slice(format!("\r\n--{boundary}\r\n").as_bytes());
        if let Some(t) = &content_type {
            parts.put_slice(b"Content-Type: ");
            parts.put_slice(t.as_bytes());
            parts.put_slice(b"\r\n");
        }
        parts.put_slice(b"Content-Range: ");
        parts.put_slice(content_range(range, len).as_bytes());
        parts.put_slice(b"\r\n\r\n");
        parts.put_slice(&body[slice(range)]);
    }
    parts.put_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let multipart = format!("multipart/byteranges; boundary={boundary}");
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::try_from(multipart).expect("a token"),
    );
    *response.body_mut() = Body::from(parts.freeze());
    response
}

/// Whether `If-Range`, if sent, names the response's strong ETag (a date, or a weak
/// tag, never matches: RFC 9110 section 13.1.5).
fn if_range_holds(request: &HeaderMap, response: &HeaderMap) -> bool {
    match request.get(header::IF_RANGE) {
        None => true,
        Some(tag) => {
            let ours = response.get(header::ETAG);
            tag.as_bytes().starts_with(b"\"") && ours.is_some_and(|ours| ours == tag)
        }
    }
}

fn content_range(range: &RangeInclusive<u64>, len: u64) -> HeaderValue {
    let (start, end) = (range.start(), range.end());
    HeaderValue::try_from(format!("bytes {start}-{end}/{len}")).expect("digits")
}

fn slice(range: &RangeInclusive<u64>) -> std::ops::Range<usize> {
    *range.start() as usize..*range.end() as usize + 1
}

/// A boundary for a body's parts: from its ETag (a digest, so not found in the body
/// but by a chance of 2^-64), else a fixed token.
fn boundary(headers: &HeaderMap) -> String {
    let tag = headers
        .get(header::ETAG)
        .map(|t| t.as_bytes())
        .unwrap_or(b"");
    let tag: String = tag
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .take(16)
        .map(|&b| b as char)
        .collect();
    format!("bloomcast-{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn whole(body: &Bytes) -> Response {
        let mut response = Response::new(Body::from(body.clone()));
        let out = response.headers_mut();
        out.insert(header::ETAG, HeaderValue::from_static("\"abc\""));
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/vnd.bloomcast.pages"),
        );
        response
    }

    fn asking(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(name.clone(), HeaderValue::from_static(value));
        }
        headers
    }

    async fn read(response: Response) -> Vec<u8> {
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    #[tokio::test]
    async fn one_range_is_its_bytes_with_content_range() {
        let body = Bytes::from_static(b"0123456789");
        let response = serve(
            &asking(&[(header::RANGE, "bytes=2-4")]),
            whole(&body),
            &body,
        );
        assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(response.headers()[header::CONTENT_RANGE], "bytes 2-4/10");
        assert_eq!(response.headers()[header::ACCEPT_RANGES], "bytes");
        assert_eq!(read(response).await, b"234");
        let suffix = serve(&asking(&[(header::RANGE, "bytes=-3")]), whole(&body), &body);
        assert_eq!(read(suffix).await, b"789");
    }

    #[tokio::test]
    async fn several_ranges_are_multipart_in_the_order_asked() {
        let body = Bytes::from_static(b"0123456789");
        let response = serve(
            &asking(&[(header::RANGE, "bytes=7-8, 0-1")]),
            whole(&body),
            &body,
        );
        assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
        let kind = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
        let boundary = kind
            .strip_prefix("multipart/byteranges; boundary=")
            .unwrap()
            .to_owned();
        let text = String::from_utf8(read(response).await).unwrap();
        let expected = format!(
            "\r\n--{boundary}\r\nContent-Type: application/vnd.bloomcast.pages\r\n\
             Content-Range: bytes 7-8/10\r\n\r\n78\
             \r\n--{boundary}\r\nContent-Type: application/vnd.bloomcast.pages\r\n\
             Content-Range: bytes 0-1/10\r\n\r\n01\r\n--{boundary}--\r\n"
        );
        assert_eq!(text, expected);
    }

    #[tokio::test]
    async fn a_range_past_the_end_is_416_naming_the_length() {
        let body = Bytes::from_static(b"0123456789");
        let response = serve(
            &asking(&[(header::RANGE, "bytes=10-20")]),
            whole(&body),
            &body,
        );
        assert_eq!(response.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(response.headers()[header::CONTENT_RANGE], "bytes */10");
        let body: serde_json::Value = serde_json::from_slice(&read(response).await).unwrap();
        assert_eq!(body["error"], "range_not_satisfiable");
        assert!(body["message"].as_str().unwrap().contains("10 bytes"));
    }

    #[tokio::test]
    async fn other_validators_and_units_get_the_whole_body() {
        let body = Bytes::from_static(b"0123456789");
        for asked in [
            asking(&[
                (header::RANGE, "bytes=1-2"),
                (header::IF_RANGE, "\"other\""),
            ]),
            asking(&[
                (header::RANGE, "bytes=1-2"),
                (header::IF_RANGE, "W/\"abc\""),
            ]),
            asking(&[(header::RANGE, "items=1-2")]),
            asking(&[]),
        ] {
            let response = serve(&asked, whole(&body), &body);
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(read(response).await, b"0123456789");
        }
        let held = serve(
            &asking(&[(header::RANGE, "bytes=1-2"), (header::IF_RANGE, "\"abc\"")]),
            whole(&body),
            &body,
        );
        assert_eq!(read(held).await, b"12");
    }
}
