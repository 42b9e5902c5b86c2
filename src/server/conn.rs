//! One connection, framed by one of two HTTP/1.1 writers, each handing every request
//! to the one application ([`App`]): the connection's own, for requests without a body,
//! and hyper, for everything else.
//!
//! Pollers send `GET`s without a body on kept-alive connections, and for those hyper's
//! connection state (its dispatcher, the head's encoding from a header map, a service
//! call through a boxed future) is most of what a poll of a prepared response costs. So
//! while a connection sends only such requests (`GET`, HTTP/1.1, no body and no
//! `Connection`, `Expect` or `Upgrade` header), they are parsed here with `httparse`
//! (the parser hyper uses, with hyper's limits), given to the application, and their
//! responses written as hyper writes them ([`h1::write_head`]; `tests/abuse/wire.rs`
//! compares the bytes). The first request of any other kind (another method, a body, a
//! head that does not parse or is too large) hands the connection, with every byte read
//! so far, to hyper for the rest of its life.
//!
//! The slow-client defences are the same as hyper's: a client has `header_read_timeout`
//! to send each request head, counted from when the connection starts waiting for it (so
//! it also bounds an idle keep-alive connection), and a head is at most
//! [`MAX_HEAD_BYTES`] (past it, hyper answers 431). Responses are written before more is
//! read, so a client that does not read its answers holds at most one batch of them, and
//! both writers write through [`Stall`]: a client that takes none of its answers for
//! `write_timeout` is disconnected.

use super::drain::Watch;
use super::h1::{self, with_date, Length};
use super::rewind::Rewind;
use super::stall::Stall;
use super::{ConnLimits, MAX_HEADERS, MAX_HEAD_BYTES};
use crate::http::App;
use axum::body::{Body, HttpBody as _};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// Answers requests until the connection closes (`None`) or a request needs hyper:
/// then returns the bytes read and not answered, that request's first.
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
            let request = match head(&mut buf) {
                Ok(request) => request,
                Err(NotOurs::Partial) => break,
                Err(NotOurs::Refused) => {
                    tracing::debug!("a request head http refuses after httparse took it; closing");
                    return Ok(None);
                }
                Err(NotOurs::Hyper) => {
                    stream.write_all(&out).await?;
                    return Ok(Some(buf));
                }
            };
            let Ok(response) = app.call(request).await;
            let body = write_response(response, &mut out).await?;
            app.metrics().count_wire();
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

/// Why the bytes read do not (yet) give a request this writer frames.
enum NotOurs {
    /// The head is not whole yet.
    Partial,
    /// A head httparse took whose URI or a header value `http` refuses: the
    /// connection is closed.
    Refused,
    /// Hand the connection to hyper.
    Hyper,
}

/// Headers a poll sends (`Host`, `Accept-Encoding`, `If-None-Match`, a few more) fit
/// without an allocation.
type Fields = smallvec::SmallVec<[((usize, usize), HeaderName); 12]>;

/// Reads the first request in `buf`; a request this writer frames is split off it.
fn head(buf: &mut BytesMut) -> Result<Request<Body>, NotOurs> {
    // Left uninitialised, as hyper leaves them: httparse writes only the headers it reads.
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    let used = match parsed.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(used)) if used <= MAX_HEAD_BYTES => used,
        Ok(httparse::Status::Partial) => return Err(NotOurs::Partial),
        // Malformed, too many headers, too large: hyper gives its answer.
        _ => return Err(NotOurs::Hyper),
    };
    if parsed.method != Some("GET") || parsed.version != Some(1) {
        return Err(NotOurs::Hyper);
    }
    let Some(path) = parsed.path.filter(|p| p.starts_with('/')) else {
        return Err(NotOurs::Hyper);
    };
    // Where each part lies in the head, so that the request's URI and header values
    // share the head's bytes (as hyper's do) rather than each being copied.
    let start = buf.as_ptr() as usize;
    let at = |part: &[u8]| (part.as_ptr() as usize - start, part.len());
    let path = at(path.as_bytes());
    let mut fields = Fields::new();
    for h in parsed.headers.iter() {
        let Ok(name) = HeaderName::from_bytes(h.name.as_bytes()) else {
            return Err(NotOurs::Hyper);
        };
        // A body, or something of the connection: hyper's framing.
        if matches!(
            name,
            header::CONTENT_LENGTH
                | header::TRANSFER_ENCODING
                | header::CONNECTION
                | header::EXPECT
                | header::UPGRADE
        ) {
            return Err(NotOurs::Hyper);
        }
        fields.push((at(h.value), name));
    }
    let head = buf.split_to(used).freeze();
    let part = |(from, len): (usize, usize)| head.slice(from..from + len);
    let mut request = Request::new(Body::empty());
    // httparse has checked the path's and the values' bytes as these do: a refusal
    // here cannot happen, and would close the connection (its head is taken).
    let Ok(uri) = axum::http::Uri::from_maybe_shared(part(path)) else {
        return Err(NotOurs::Refused);
    };
    *request.uri_mut() = uri;
    let mut map = HeaderMap::with_capacity(fields.len());
    for (value, name) in fields {
        let Ok(value) = HeaderValue::from_maybe_shared(part(value)) else {
            return Err(NotOurs::Refused);
        };
        map.append(name, value);
    }
    *request.headers_mut() = map;
    Ok(request)
}

/// Appends `response` to `out` as hyper would write it; returns a body too large to
/// copy, to be sent after `out`.
async fn write_response(response: Response, out: &mut Vec<u8>) -> io::Result<Option<Bytes>> {
    let (parts, body) = response.into_parts();
    // hyper sends a body of unknown size chunked, unless the headers give its length.
    let known =
        body.size_hint().exact().is_some() || parts.headers.contains_key(header::CONTENT_LENGTH);
    let body = whole(body).await?;
    let length = if known {
        Length::Known(body.len())
    } else {
        Length::Chunked
    };
    let send = with_date(|date| h1::write_head(out, parts.status, &parts.headers, length, date));
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

/// A body's bytes; a body of one piece (every prepared response's) is not copied.
async fn whole(body: Body) -> io::Result<Bytes> {
    let mut body = std::pin::pin!(body);
    let mut first = Bytes::new();
    let mut rest: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(io::Error::other)?.into_data() else {
            continue; // trailers: hyper does not send them on HTTP/1.1 either
        };
        match &mut rest {
            Some(rest) => rest.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut joined = BytesMut::from(&first[..]);
                joined.extend_from_slice(&data);
                rest = Some(joined);
            }
        }
    }
    Ok(rest.map_or(first, BytesMut::freeze))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(raw: &str) -> &'static str {
        let mut buf = BytesMut::from(raw.as_bytes());
        match head(&mut buf) {
            Ok(request) => {
                assert!(buf.is_empty(), "the head is taken");
                assert_eq!(request.headers().len(), raw.matches("\r\n").count() - 2);
                "ours"
            }
            Err(NotOurs::Partial) => "partial",
            Err(NotOurs::Refused) => "refused",
            Err(NotOurs::Hyper) => "hyper",
        }
    }

    #[test]
    fn bodiless_gets_are_ours_and_everything_else_is_hypers() {
        let get = "GET /2008/09/03/13 HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n";
        assert_eq!(kind(get), "ours");
        assert_eq!(kind("GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"), "ours");
        assert_eq!(kind(&get[..get.len() - 2]), "partial");
        for other in [
            "HEAD / HTTP/1.1\r\n\r\n",
            "POST /updates HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET / HTTP/1.0\r\n\r\n",
            "GET * HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nbad header\r\n\r\n",
        ] {
            assert_eq!(kind(other), "hyper", "{other:?}");
        }
        for hyper_only in [
            "Content-Length",
            "transfer-encoding",
            "Connection",
            "Expect",
            "Upgrade",
        ] {
            let raw = format!("GET / HTTP/1.1\r\n{hyper_only}: 0\r\n\r\n");
            assert_eq!(kind(&raw), "hyper", "{hyper_only}");
        }
    }
}
