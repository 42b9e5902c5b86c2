//! Slow clients, idle connections, floods of tiny requests and shutdown with a request
//! in flight. The test server's header and request timeouts are 1 s.

use crate::helpers::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Writes `bytes` one at a time, `gap` apart, until done or the server hangs up.
async fn trickle(stream: &mut tokio::net::TcpStream, bytes: &[u8], gap: Duration) -> bool {
    for b in bytes {
        if stream.write_all(&[*b]).await.is_err() {
            return false;
        }
        tokio::time::sleep(gap).await;
    }
    true
}

#[tokio::test]
async fn headers_sent_byte_by_byte_are_cut_off_by_the_header_timeout() {
    let server = spawn().await;
    let mut stream = connect(server.addr).await;
    let started = Instant::now();
    let head = get_request(HOUR, "X-Slow: 1\r\n");
    // 100 ms a byte: the head would take seconds; the server allows 1 s.
    let finished = trickle(&mut stream, &head, Duration::from_millis(100)).await;
    let reply = read_reply(&mut stream).await;
    assert!(
        reply.is_none() || reply.as_ref().is_some_and(|r| r.status == 408),
        "a slow head must be closed or 408: {reply:?}"
    );
    assert!(
        !finished || started.elapsed() < Duration::from_secs(3),
        "the trickle was never cut off"
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_header_timeout() {
    let server = spawn().await;
    let mut stream = connect(server.addr).await;
    assert_closed_by_header_timeout(&mut stream).await;
}

#[tokio::test]
async fn a_trickled_body_is_answered_408_and_recorded_nowhere() {
    let server = spawn().await;
    let body = b"slow-1\nslow-2\nslow-3\n";
    let mut raw = post_request("text/plain", &bearer(), body);
    let body_start = raw.len() - body.len();
    let mut stream = connect(server.addr).await;
    stream.write_all(&raw[..body_start]).await.unwrap();
    let started = Instant::now();
    let tail = raw.split_off(body_start);
    let mut writer = clone_writer(&stream);
    let (_, reply) = tokio::join!(
        trickle(&mut writer, &tail, Duration::from_millis(150)),
        read_reply(&mut stream),
    );
    let reply = reply.expect("a 408 reply");
    reply.assert_error(408, "timeout");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_healthy(server.addr, &[]).await;
}

/// A second handle on the same socket, for writing while the other one reads.
fn clone_writer(stream: &tokio::net::TcpStream) -> tokio::net::TcpStream {
    let std = dup(stream);
    tokio::net::TcpStream::from_std(std).unwrap()
}

fn dup(stream: &tokio::net::TcpStream) -> std::net::TcpStream {
    #[cfg(unix)]
    {
        use std::os::fd::{AsFd, OwnedFd};
        let fd: OwnedFd = stream.as_fd().try_clone_to_owned().unwrap();
        let std = std::net::TcpStream::from(fd);
        std.set_nonblocking(true).unwrap();
        std
    }
}

#[tokio::test]
async fn two_thousand_tiny_requests_on_one_keep_alive_connection() {
    let server = spawn().await;
    let mut stream = connect(server.addr).await;
    let mut acked = Vec::new();
    for i in 0..2000 {
        let raw = if i % 10 == 0 {
            let id = format!("ka-{i}");
            let body = format!("{id}\n");
            acked.push(id);
            let mut raw = format!(
                "POST /updates HTTP/1.1\r\nHost: t\r\n{}Content-Type: text/plain\r\n\
                 Content-Length: {}\r\n\r\n",
                bearer(),
                body.len()
            )
            .into_bytes();
            raw.extend_from_slice(body.as_bytes());
            raw
        } else if i % 10 == 5 {
            b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n".to_vec()
        } else {
            format!("GET {HOUR}.bin HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
        };
        stream.write_all(&raw).await.unwrap();
        let reply = read_reply(&mut stream)
            .await
            .unwrap_or_else(|| panic!("connection closed at request {i}"));
        let expected = if i % 10 == 5 { 404 } else { 200 };
        assert_eq!(reply.status, expected, "request {i}: {}", reply.head);
    }
    assert_healthy(server.addr, &acked).await;
    // Once the hour is over, its sealed filter still has every acknowledged ID.
    server.clock.advance(chrono::Duration::hours(1));
    // Sealed by housekeeping, as its timer would, not within the 1 s request timeout of
    // the read (sealing fsyncs the seal and its chain link: a loaded CI machine took longer).
    server.service.tick().await.unwrap();
    let closed = get(server.addr, HOUR).await;
    assert_eq!(closed.status, 200, "{}", closed.head);
    let (meta, filter) = bloomcast::wire::Document::parse(&closed.body).unwrap();
    assert!(meta.complete);
    assert_eq!(meta.count, acked.len() as u64);
    assert!(acked.iter().all(|id| filter.contains(id)));
}

#[tokio::test]
async fn a_hundred_pipelined_requests_get_a_hundred_replies_in_order() {
    let server = spawn().await;
    let mut stream = connect(server.addr).await;
    let mut raw = Vec::new();
    for i in 0..100 {
        let path = if i % 2 == 0 {
            HOUR.to_owned()
        } else {
            format!("/{i}")
        };
        raw.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    stream.write_all(&raw).await.unwrap();
    for i in 0..100 {
        let reply = read_reply(&mut stream).await.expect("a reply");
        assert_eq!(reply.status, if i % 2 == 0 { 200 } else { 404 }, "{i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_tiny_requests_on_fresh_connections() {
    let server = spawn().await;
    let addr = server.addr;
    let mut tasks = Vec::new();
    for worker in 0..8 {
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..250 {
                if i % 25 == 0 {
                    let id = vec![format!("fresh-{worker}-{i}")];
                    ingest(addr, &id).await;
                    acked.extend(id);
                } else {
                    let reply = get(addr, "/healthz").await;
                    assert_eq!(reply.status, 200, "{}", reply.head);
                }
            }
            acked
        }));
    }
    let mut acked = Vec::new();
    for task in tasks {
        acked.extend(task.await.unwrap());
    }
    assert_eq!(acked.len(), 80);
    assert_healthy(addr, &acked).await;
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish_and_closes_idle_connections() {
    let server = spawn_with(|s| {
        s.request_timeout_seconds = 10;
        s.header_read_timeout_seconds = 10;
        s.shutdown_timeout = 5;
    })
    .await;
    let body = b"drained\n";
    let raw = post_request("text/plain", &bearer(), body);
    let mut in_flight = connect(server.addr).await;
    // Everything but the last byte of the body: the handler is waiting for it.
    in_flight.write_all(&raw[..raw.len() - 1]).await.unwrap();
    let mut idle = connect(server.addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let addr = server.addr;
    let stopping = tokio::spawn(server.shut_down(Duration::from_secs(4)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    // No new connections once shutdown began.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    let mut buf = [0u8; 8];
    let idle_read = tokio::time::timeout(Duration::from_secs(2), idle.read(&mut buf)).await;
    assert!(
        matches!(idle_read, Ok(Ok(0) | Err(_))),
        "idle: {idle_read:?}"
    );
    in_flight.write_all(&raw[raw.len() - 1..]).await.unwrap();
    let reply = read_reply(&mut in_flight)
        .await
        .expect("the in-flight reply");
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["accepted"], 1);
    stopping.await.unwrap();
}

/// A connection with a small receive buffer (so the server's writes block sooner) that
/// sends `requests` pipelined GETs of `path` and then reads nothing.
async fn never_reads(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
    requests: usize,
) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let one = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n");
    stream
        .write_all(one.repeat(requests).as_bytes())
        .await
        .unwrap();
    stream
}

/// The value of the dropped-connections counter in `/metrics`.
async fn dropped_for_write_timeout(addr: std::net::SocketAddr) -> u64 {
    let metrics = get(addr, "/metrics").await;
    let text = String::from_utf8(metrics.body).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("bloomcast_connections_dropped_total{reason=\"write_timeout\"}"))
        .unwrap_or_else(|| panic!("no dropped-connections counter in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn clients_that_never_read_their_answers_are_dropped_after_the_write_timeout() {
    let server = spawn_with(|s| {
        s.max_connections = 4;
        s.write_timeout_seconds = 1;
        // An empty open hour's filter of 240 KB: 64 answers on one connection are 15 MB,
        // far more than the kernel buffers between the server and a client that does
        // not read, so the server is certainly blocked writing to each.
        s.capacity = 200_000;
    })
    .await;
    let bin = format!("{HOUR}.bin");
    let mut stalled = Vec::new();
    for _ in 0..4 {
        stalled.push(never_reads(server.addr, &bin, "", 64).await);
    }
    let started = Instant::now();

    // Every slot is taken by a client that does not read: this connection waits in the
    // listen backlog until one of them is dropped (`get` gives up after 5 s).
    let health = get(server.addr, "/healthz").await;

    assert_eq!(health.status, 200, "{}", health.head);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    let mut dropped = dropped_for_write_timeout(server.addr).await;
    while dropped < 4 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        dropped = dropped_for_write_timeout(server.addr).await;
    }
    assert_eq!(
        dropped, 4,
        "each stalled connection is dropped and counted once"
    );
    // The server hung up on them: a read ends (reset or end of stream) instead of waiting.
    for mut stream in stalled {
        let mut sink = vec![0u8; 64 * 1024];
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Ok(n) = stream.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
        assert!(ended.is_ok(), "a stalled connection was left open");
    }
    assert_healthy(server.addr, &[]).await;
}
