//! Keep-alive polls on the wire, as pollers send them: pipelined requests answered in
//! order, heads split across writes, odd requests given HTTP's answers, and the
//! slow-client defences after a poll.

use crate::helpers::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A keep-alive poll (no `Connection: close`), as pollers send it.
fn poll(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n").into_bytes()
}

async fn send(conn: &mut Conn, raw: &[u8]) -> Reply {
    conn.write_all(raw).await.unwrap();
    read_reply(conn).await.expect("a reply")
}

/// A server with a closed hour (13) and an open hour (14), both with IDs.
async fn two_hours() -> (Server, [String; 2]) {
    let server = spawn_with(|s| s.refresh_ms = 3_600_000).await;
    ingest(server.addr, &ids("closed", 50)).await;
    server.clock.advance(chrono::Duration::hours(1));
    ingest(server.addr, &ids("open", 30)).await;
    let hours = ["/2008/09/03/13".to_owned(), "/2008/09/03/14".to_owned()];
    (server, hours)
}

#[tokio::test]
async fn pipelined_polls_are_answered_in_order() {
    let (server, hours) = two_hours().await;
    let closed = &hours[0];
    let expected = get(server.addr, closed).await;
    let etag = expected.header("etag").unwrap().to_owned();
    let mut conn = connect(server.addr).await;
    let mut batch = poll(closed, "");
    batch.extend(poll(closed, &format!("If-None-Match: {etag}\r\n")));
    batch.extend(poll("/healthz", "Connection: keep-alive\r\n"));
    batch.extend(poll(closed, ""));
    conn.write_all(&batch).await.unwrap();
    let replies: Vec<Reply> = {
        let mut out = Vec::new();
        for _ in 0..4 {
            out.push(read_reply(&mut conn).await.expect("a reply"));
        }
        out
    };
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 304, 200, 200]);
    assert_eq!(replies[0].body, expected.body);
    assert_eq!(replies[3].body, expected.body);
    assert!(replies[2].json().is_object(), "healthz answers JSON");
    assert_eq!(send(&mut conn, &poll(closed, "")).await.body, expected.body);
}

#[tokio::test]
async fn a_head_split_across_writes_is_answered_and_odd_requests_get_https_answers() {
    let (server, hours) = two_hours().await;
    let closed = &hours[0];
    let expected = get(server.addr, closed).await;

    let mut conn = connect(server.addr).await;
    let request = poll(closed, "Accept-Encoding: identity\r\n");
    for part in request.chunks(9) {
        conn.write_all(part).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reply = read_reply(&mut conn).await.expect("a reply");
    assert_eq!(reply.body, expected.body);

    // A body on a GET is read, and the connection goes on.
    let mut with_body = poll(closed, "Content-Length: 3\r\n");
    with_body.extend_from_slice(b"abc");
    assert_eq!(send(&mut conn, &with_body).await.body, expected.body);
    assert_eq!(send(&mut conn, &poll(closed, "")).await.body, expected.body);

    // A head past 64 KiB: 431.
    let mut big = connect(server.addr).await;
    let huge = format!("X-Big: {}\r\n", "a".repeat(70 * 1024));
    big.write_all(&poll(closed, &huge)).await.unwrap();
    let reply = read_reply(&mut big).await.expect("a reply");
    assert_eq!(reply.status, 431);

    // A malformed header line: 400.
    let mut bad = connect(server.addr).await;
    let reply = send(
        &mut bad,
        b"GET /2008/09/03/13 HTTP/1.1\r\nHost: test\r\nNo colon here\r\n\r\n",
    )
    .await;
    assert_eq!(reply.status, 400);

    // HTTP/1.0, and a query: the answers are what they should be.
    let mut old = connect(server.addr).await;
    let reply = send(
        &mut old,
        format!("GET {closed} HTTP/1.0\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(reply.body, expected.body);
    let mut query = connect(server.addr).await;
    let reply = send(&mut query, &poll(&format!("{closed}?fpp=8"), "")).await;
    reply.assert_error(400, "bad_request");
}

#[tokio::test]
async fn after_a_poll_an_idle_or_trickling_connection_is_cut_off_by_the_header_timeout() {
    let (server, hours) = two_hours().await;
    let closed = &hours[0];
    get(server.addr, closed).await;

    let mut idle = connect(server.addr).await;
    assert_eq!(send(&mut idle, &poll(closed, "")).await.status, 200);
    assert_closed_by_header_timeout(&mut idle).await;

    let mut slow = connect(server.addr).await;
    assert_eq!(send(&mut slow, &poll(closed, "")).await.status, 200);
    let started = Instant::now();
    let mut cut = false;
    for b in poll(closed, "X-Slow: 1\r\n") {
        if slow.write_all(&[b]).await.is_err() {
            cut = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let reply = read_reply(&mut slow).await;
    assert!(reply.is_none(), "a trickled head gets no answer: {reply:?}");
    assert!(cut || started.elapsed() <= Duration::from_secs(4));
}

#[tokio::test]
async fn shutdown_closes_idle_polling_connections_at_once() {
    let (server, hours) = two_hours().await;
    let closed = hours[0].clone();
    get(server.addr, &closed).await;
    let mut conns = Vec::new();
    for _ in 0..8 {
        let mut conn = connect(server.addr).await;
        assert_eq!(send(&mut conn, &poll(&closed, "")).await.status, 200);
        conns.push(conn);
    }
    // Shutdown waits for in-flight requests, up to its timeout: there are none, so each
    // idle connection is closed at once, not when the timeout would end it.
    server.shut_down(Duration::from_secs(3600)).await;
    for mut conn in conns {
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(30), conn.read(&mut buf))
            .await
            .expect("closed");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
}
