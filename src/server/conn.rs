//! One connection: polls answered on the socket, everything else by hyper.
//!
//! A poll (`GET /YYYY/MM/DD/HH[.ext]` of a ready rendering, HTTP/1.1, no body) is parsed
//! here with `httparse` (the parser hyper uses, with hyper's limits) and answered by
//! [`App::answer_wire`] with the very bytes hyper would send for the fast lane's
//! response, without what hyper's connection state costs per request (the request's
//! header map and URI, the service call, the head's encoding from a header map, the
//! dispatcher's polling). A poll of an hour the fast lane cannot answer right now (it
//! needs the store, a render or a refresh, or asks for a delta or another form) is
//! given to the router on this connection, and its response written as hyper would
//! write it ([`h1::write_head`]): an ingest or a refresh does not move the pollers
//! reading at that moment off this path. The first request of a connection that is not
//! a poll (any other route or method, a request with a body or `Connection`, `Expect`
//! or `Upgrade`, a query, a head that does not parse or is too large) hands the
//! connection, with every byte read so far, to hyper for the rest of its life: hyper
//! then answers that request and all after it exactly as before, as it does every
//! request while the access log is on.
//!
//! The slow-client defences are the same as hyper's: a client has `header_read_timeout`
//! to send each request head, counted from when the connection starts waiting for it (so
//! it also bounds an idle keep-alive connection), and a head is at most
//! [`MAX_HEAD_BYTES`] (past it, hyper answers 431). Responses are written before more is
//! read, so a client that does not read its answers holds at most one batch of them, and
//! both writers write through [`Stall`]: a client that takes none of its answers for
//! `write_timeout` is disconnected.

use super::drain::Watch;
use super::stall::Stall;
use super::{ConnLimits, MAX_HEADERS, MAX_HEAD_BYTES};
use crate::http::h1::{self, Length};
use crate::http::{App, Wire};
use axum::body::{Body, HttpBody as _};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Bytes read at a time.
const READ_CHUNK: usize = 8 * 1024;
/// Bodies up to this size are copied behind their head (one write); larger ones are
/// sent from the rendering with a vectored write.
const INLINE_BODY: usize = 16 * 1024;
/// Pipelined answers are written once they add up to this much.
const FLUSH_AT: usize = 64 * 1024;

/// Serves one accepted connection until it closes.
pub(super) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    app: App,
    builder: http1::Builder,
    limits: ConnLimits,
    watch: Watch,
) {
    // The peer's address, for the access log.
    let mut app = app.for_peer(peer);
    let mut stream = Stall::new(stream, limits.write_timeout, app.metrics().clone());
    let buffered = match polls(&mut stream, &mut app, limits.header_read_timeout, &watch).await {
        Ok(Some(buffered)) => buffered,
        Ok(None) => return,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
            return;
        }
    };
    let service = TowerToHyperService::new(app);
    let io = Rewind {
        read: buffered.freeze(),
        stream,
    };
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = watch.draining() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        // Timeouts, resets and malformed requests: the client's problem, not ours.
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// Answers polls until the connection closes (`None`) or a request needs hyper: then
/// returns the bytes read and not answered, that request's first.
async fn polls(
    stream: &mut Stall<TcpStream>,
    app: &mut App,
    timeout: Duration,
    watch: &Watch,
) -> io::Result<Option<BytesMut>> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Vec::with_capacity(READ_CHUNK);
    // The head's deadline moves with every request; the timer is reset only when it
    // fires early, so a request costs no timer update.
    let mut deadline = Instant::now() + timeout;
    let sleep = tokio::time::sleep_until(deadline);
    tokio::pin!(sleep);
    loop {
        // Answer every whole request read.
        while !buf.is_empty() {
            let (used, body) = match answer(&buf, app, &mut out)? {
                Parsed::Answered { used, body } => (used, body),
                Parsed::Route { used, request } => (used, routed(app, *request, &mut out).await?),
                Parsed::Partial => break,
                Parsed::Hyper => {
                    stream.write_all(&out).await?;
                    return Ok(Some(buf));
                }
            };
            buf.advance(used);
            deadline = Instant::now() + timeout;
            if let Some(body) = body {
                write_two(stream, &out, &body).await?;
                out.clear();
            } else if out.len() >= FLUSH_AT {
                stream.write_all(&out).await?;
                out.clear();
            }
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Ok(Some(buf)); // hyper answers 431
        }
        if buf.is_empty() && watch.is_draining() {
            return Ok(None);
        }
        buf.reserve(READ_CHUNK);
        loop {
            tokio::select! {
                biased;
                read = stream.read_buf(&mut buf) => {
                    if read? == 0 {
                        return Ok(None); // closed, mid-head or not: nothing to answer
                    }
                    break;
                }
                () = &mut sleep => {
                    if Instant::now() >= deadline {
                        tracing::debug!("request head not received in time; closing");
                        return Ok(None);
                    }
                    sleep.as_mut().reset(deadline);
                }
                () = watch.draining(), if buf.is_empty() => return Ok(None),
            }
        }
    }
}

enum Parsed {
    /// A poll answered in `out`, from the first `used` bytes; `body` is still to be sent
    /// after `out` when it was not copied there.
    Answered { used: usize, body: Option<Bytes> },
    /// A poll the router answers, from the first `used` bytes.
    Route {
        used: usize,
        request: Box<Request<Body>>,
    },
    /// The head is not whole yet.
    Partial,
    /// Hand the connection to hyper.
    Hyper,
}

/// Reads the first request in `buf` and answers it in `out` if it is a poll.
fn answer(buf: &[u8], app: &App, out: &mut Vec<u8>) -> io::Result<Parsed> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let used = match request.parse(buf) {
        Ok(httparse::Status::Complete(used)) if used <= MAX_HEAD_BYTES => used,
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        // Malformed, too many headers, too large: hyper gives its answer.
        _ => return Ok(Parsed::Hyper),
    };
    if request.method != Some("GET") || request.version != Some(1) {
        return Ok(Parsed::Hyper);
    }
    let Some(path) = request
        .path
        .filter(|p| p.starts_with('/') && !p.contains('?'))
    else {
        return Ok(Parsed::Hyper);
    };
    let Some(wanted) = negotiation_headers(request.headers) else {
        return Ok(Parsed::Hyper);
    };
    let wire = with_date(|date| app.answer_wire(path, &wanted, date, out, INLINE_BODY));
    Ok(match wire {
        Wire::Answered(body) => Parsed::Answered { used, body },
        Wire::Hyper => Parsed::Hyper,
        Wire::Route => match to_request(path, request.headers) {
            Some(request) => Parsed::Route {
                used,
                request: Box::new(request),
            },
            None => Parsed::Hyper,
        },
    })
}

/// The request as hyper would give it to the service: `GET`, HTTP/1.1, every header.
fn to_request(path: &str, headers: &[httparse::Header<'_>]) -> Option<Request<Body>> {
    let mut request = Request::new(Body::empty());
    *request.uri_mut() = path.parse().ok()?;
    let map = request.headers_mut();
    map.reserve(headers.len());
    for h in headers {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        map.append(name, HeaderValue::from_bytes(h.value).ok()?);
    }
    Some(request)
}

/// Calls the router with `request` and appends its response to `out` as hyper would
/// write it; returns a body too large to copy, to be sent after `out`.
async fn routed(
    app: &mut App,
    request: Request<Body>,
    out: &mut Vec<u8>,
) -> io::Result<Option<Bytes>> {
    let Ok(response) = app.route(request).await;
    let (parts, body) = response.into_parts();
    // hyper sends a body of unknown size chunked, unless the headers give its length.
    let known =
        body.size_hint().exact().is_some() || parts.headers.contains_key(header::CONTENT_LENGTH);
    let body = body.collect().await.map_err(io::Error::other)?.to_bytes();
    let length = if known {
        Length::Known(body.len())
    } else {
        Length::Chunked
    };
    let send =
        with_date(|date| h1::write_head(out, parts.status, &parts.headers, None, length, date));
    if !send {
        return Ok(None);
    }
    if length == Length::Chunked {
        if !body.is_empty() {
            out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        return Ok(None);
    }
    if body.len() > INLINE_BODY {
        return Ok(Some(body));
    }
    out.extend_from_slice(&body);
    Ok(None)
}

/// The request headers a poll's answer depends on, as a header map; `None` for a
/// request hyper must see (one with a body, or one that asks something of the
/// connection).
fn negotiation_headers(headers: &[httparse::Header<'_>]) -> Option<HeaderMap> {
    const TAKEN: [HeaderName; 4] = [
        header::ACCEPT,
        header::ACCEPT_ENCODING,
        header::IF_NONE_MATCH,
        HeaderName::from_static(crate::http::AVAILABLE_DICTIONARY),
    ];
    const HYPERS: [&str; 5] = [
        "content-length",
        "transfer-encoding",
        "connection",
        "expect",
        "upgrade",
    ];
    let mut map = HeaderMap::new();
    for h in headers {
        if HYPERS.iter().any(|n| h.name.eq_ignore_ascii_case(n)) {
            return None;
        }
        if let Some(name) = TAKEN
            .iter()
            .find(|n| h.name.eq_ignore_ascii_case(n.as_str()))
        {
            map.append(name.clone(), HeaderValue::from_bytes(h.value).ok()?);
        }
    }
    Some(map)
}

/// `head` then `body`, with as few writes as the socket takes.
async fn write_two(stream: &mut Stall<TcpStream>, head: &[u8], body: &[u8]) -> io::Result<()> {
    let (mut head, mut body) = (head, body);
    while !head.is_empty() {
        let n = stream
            .write_vectored(&[IoSlice::new(head), IoSlice::new(body)])
            .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let from_head = n.min(head.len());
        head = &head[from_head..];
        body = &body[n - from_head..];
    }
    stream.write_all(body).await
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
fn with_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    DATE.with(|date| f(date.borrow_mut().now()))
}

thread_local! {
    static DATE: RefCell<CachedDate> = const {
        RefCell::new(CachedDate { second: u64::MAX, text: [b' '; 29] })
    };
}

/// The connection as hyper reads it: the bytes already read, then the socket.
struct Rewind {
    read: Bytes,
    stream: Stall<TcpStream>,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.read.is_empty() {
            let n = self.read.len().min(out.remaining());
            out.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, out)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(raw: &[(&'static str, &'static [u8])]) -> Vec<httparse::Header<'static>> {
        raw.iter()
            .map(|(name, value)| httparse::Header { name, value })
            .collect()
    }

    #[test]
    fn negotiation_keeps_what_the_answer_depends_on_and_refuses_bodies() {
        let map = negotiation_headers(&headers(&[
            ("Host", b"x"),
            ("Accept-Encoding", b"gzip"),
            ("accept-encoding", b"br"),
            ("If-None-Match", b"\"abc\""),
            ("Origin", b"https://a.example"),
        ]))
        .unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(map.get_all(header::ACCEPT_ENCODING).iter().count(), 2);
        assert!(map.get(header::HOST).is_none());
        for hyper_only in [
            "Content-Length",
            "transfer-encoding",
            "Connection",
            "Expect",
            "Upgrade",
        ] {
            let with = [httparse::Header {
                name: hyper_only,
                value: b"0",
            }];
            assert!(negotiation_headers(&with).is_none(), "{hyper_only}");
        }
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
