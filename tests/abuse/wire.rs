//! Requests without a body framed by the connection's own writer (`src/server/conn.rs`):
//! answered byte for byte as hyper answers the same request, in order when pipelined,
//! the connection handed to hyper mid-way for anything else, and under the same
//! slow-client defences.

use crate::helpers::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A keep-alive poll (no `Connection: close`), as pollers send it.
fn poll(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n").into_bytes()
}

/// A request that asks something of the connection, so hyper frames it and every
/// request after it on that connection.
fn handover() -> Vec<u8> {
    poll("/healthz", "Connection: keep-alive\r\n")
}

/// A counter of `/metrics` (read on a connection of its own, which hyper frames).
async fn counter(addr: std::net::SocketAddr, name: &str) -> u64 {
    let reply = get(addr, "/metrics").await;
    String::from_utf8(reply.body)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .expect("the counter is exported")
        .parse()
        .unwrap()
}

/// How many responses the connection's own writer has sent.
async fn wire_count(addr: std::net::SocketAddr) -> u64 {
    counter(addr, "bloomcast_http_wire_responses_total").await
}

/// The head with its `date` value blanked (it is the only per-second part), and the
/// body.
fn masked(reply: &Reply) -> (String, Vec<u8>) {
    let head = reply
        .head
        .split("\r\n")
        .map(|line| match line.strip_prefix("date: ") {
            Some(date) => {
                assert!(httpdate::parse_http_date(date).is_ok(), "{date}");
                "date: -".to_owned()
            }
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\r\n");
    (head, reply.body.clone())
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
async fn polls_on_the_socket_are_byte_for_byte_what_hyper_sends() {
    let (server, hours) = two_hours().await;
    let mut checked = 0;
    for hour in &hours {
        for suffix in ["", ".json", ".hex", ".bin"] {
            for gzip in [false, true] {
                for revalidate in [false, true] {
                    for origin in [false, true] {
                        let mut extra = String::new();
                        if suffix.is_empty() {
                            extra += "Accept: application/json\r\n";
                        }
                        if gzip {
                            extra += "Accept-Encoding: gzip, deflate\r\n";
                        }
                        if revalidate {
                            extra += "If-None-Match: *\r\n";
                        }
                        if origin {
                            extra += "Origin: https://example.org\r\n";
                        }
                        let request = poll(&format!("{hour}{suffix}"), &extra);
                        // Through hyper: a request asking something of the connection
                        // first hands it over; the poll is then read twice (the first
                        // may render).
                        let mut hyper = connect(server.addr).await;
                        assert_eq!(send(&mut hyper, &handover()).await.status, 200);
                        send(&mut hyper, &request).await;
                        let by_hyper = send(&mut hyper, &request).await;
                        let before = wire_count(server.addr).await;
                        let mut wire = connect(server.addr).await;
                        let on_wire = send(&mut wire, &request).await;
                        assert_eq!(
                            wire_count(server.addr).await,
                            before + 1,
                            "{hour}{suffix} {extra:?}: answered on the socket"
                        );
                        assert_eq!(
                            on_wire.status,
                            if revalidate { 304 } else { 200 },
                            "{hour}{suffix} {extra:?}"
                        );
                        assert_eq!(
                            masked(&on_wire),
                            masked(&by_hyper),
                            "{hour}{suffix} {extra:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 64);
}

#[tokio::test]
async fn polls_the_lane_cannot_answer_are_routed_on_the_socket_as_hyper_would_send_them() {
    let (server, hours) = two_hours().await;
    let open = &hours[1];
    get(server.addr, &hours[0]).await; // rendered: ready for the lane
                                       // The router's answers: an hour not yet begun (404), a form the open hour does not
                                       // have (406), an hour before the first (404 or 410); each read first through hyper,
                                       // then on a fresh connection, where it is routed without hyper.
    for (path, extra) in [
        ("/2008/09/03/20", ""),
        (
            open.as_str(),
            "Accept: application/vnd.bloomcast.ribbon\r\n",
        ),
        ("/2008/09/02/01", "Accept-Encoding: gzip\r\n"),
    ] {
        let request = poll(path, extra);
        let mut hyper = connect(server.addr).await;
        assert_eq!(send(&mut hyper, &handover()).await.status, 200);
        let by_hyper = send(&mut hyper, &request).await;
        assert!(by_hyper.status >= 400, "{path}: {}", by_hyper.status);
        let mut wire = connect(server.addr).await;
        let routed = send(&mut wire, &request).await;
        assert_eq!(masked(&routed), masked(&by_hyper), "{path} {extra:?}");
        // The connection stays on the socket's writer: the next poll is answered there.
        let before = wire_count(server.addr).await;
        send(&mut wire, &poll(&hours[0], "")).await;
        assert_eq!(
            wire_count(server.addr).await,
            before + 1,
            "{path}: still on the wire"
        );
    }
    // The open hour just after an ingest is not ready: the first reader's poll is
    // routed (and renders), on the socket; through hyper, the fast lane then sends the
    // same bytes.
    ingest(server.addr, &ids("more", 5)).await;
    let request = poll(open, "Accept-Encoding: gzip\r\n");
    let fast = "bloomcast_http_fast_responses_total";
    let (before, fast_before) = (
        wire_count(server.addr).await,
        counter(server.addr, fast).await,
    );
    let mut wire = connect(server.addr).await;
    let routed = send(&mut wire, &request).await;
    assert_eq!(wire_count(server.addr).await, before + 1, "on the socket");
    assert_eq!(
        counter(server.addr, fast).await,
        fast_before,
        "routed, not prepared"
    );
    let mut hyper = connect(server.addr).await;
    assert_eq!(send(&mut hyper, &handover()).await.status, 200);
    let by_hyper = send(&mut hyper, &request).await;
    assert_eq!(routed.status, 200);
    assert_eq!(masked(&routed), masked(&by_hyper));
    let (meta, filter) = bloomcast::wire::Document::parse(&{
        use std::io::Read as _;
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&routed.body[..])
            .read_to_end(&mut json)
            .unwrap();
        json
    })
    .unwrap();
    assert_eq!(meta.count, 35);
    assert!(ids("more", 5).iter().all(|id| filter.contains(id)));
}

#[tokio::test]
async fn pipelined_polls_are_answered_in_order_and_hyper_takes_over_mid_connection() {
    let (server, hours) = two_hours().await;
    let closed = &hours[0];
    let expected = get(server.addr, closed).await;
    let etag = expected.header("etag").unwrap().to_owned();
    let before = wire_count(server.addr).await;
    let mut conn = connect(server.addr).await;
    let mut batch = poll(closed, "");
    batch.extend(poll(closed, &format!("If-None-Match: {etag}\r\n")));
    batch.extend(handover());
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
    // Two on the socket; after the hand-over, hyper answers (still from the fast lane).
    assert_eq!(wire_count(server.addr).await, before + 2);
    assert_eq!(send(&mut conn, &poll(closed, "")).await.body, expected.body);
    assert_eq!(wire_count(server.addr).await, before + 2);
}

#[tokio::test]
async fn a_head_split_across_writes_is_answered_and_odd_requests_get_hypers_answers() {
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

    // A body on a GET: hyper reads it, and the connection goes on.
    let mut with_body = poll(closed, "Content-Length: 3\r\n");
    with_body.extend_from_slice(b"abc");
    assert_eq!(send(&mut conn, &with_body).await.body, expected.body);
    assert_eq!(send(&mut conn, &poll(closed, "")).await.body, expected.body);

    // A head past 64 KiB: 431, as hyper answers it.
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

    // HTTP/1.0 takes hyper, a query the router; the answers are what they should be.
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
    let started = Instant::now();
    server.shut_down(Duration::from_secs(2)).await;
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    for mut conn in conns {
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(1), conn.read(&mut buf))
            .await
            .expect("closed");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
}
