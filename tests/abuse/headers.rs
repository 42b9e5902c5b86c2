//! Odd and hostile request heads: validators, negotiation headers, missing Host,
//! oversized heads, malformed framing and unknown methods.

use crate::helpers::*;

#[tokio::test]
async fn bad_validators_and_negotiation_headers_still_get_the_filter() {
    let server = spawn().await;
    let acked = ids("neg", 5);
    ingest(server.addr, &acked).await;
    for extra in [
        "If-None-Match: garbage\r\n",
        "If-None-Match: \"\r\n",
        "If-None-Match: W/\r\n",
        "If-None-Match: \"a\", , ,\"b\r\n",
        "Accept-Encoding: gzip;q=abc\r\n",
        "Accept-Encoding: ;;;,,,\r\n",
        "Accept-Encoding: gzip;q=nan, br;q=inf\r\n",
        "Accept: text/plain;q=nan\r\n",
        "Accept: ,;,;q=\r\n",
        "Accept: application/json;q=-1\r\n",
    ] {
        let reply = get_with(&server, HOUR, extra.as_bytes()).await;
        assert_eq!(reply.status, 200, "{extra:?}: {}", reply.head);
        assert!(reply.header("etag").is_some(), "{extra:?}");
        assert!(!reply.body.is_empty(), "{extra:?}");
    }
    // Non-UTF-8 (obs-text) header values are tolerated and ignored.
    let reply = get_with(
        &server,
        HOUR,
        b"If-None-Match: \"\xff\xfe\"\r\nAccept: \xff\r\n",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.head);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_healthy(server.addr, &acked).await;
}

async fn get_with(server: &Server, path: &str, extra: &[u8]) -> Reply {
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: test\r\n").into_bytes();
    raw.extend_from_slice(extra);
    raw.extend_from_slice(b"Connection: close\r\n\r\n");
    exchange(server.addr, &raw).await.expect("a reply")
}

#[tokio::test]
async fn a_matching_etag_among_garbage_is_still_a_304() {
    let server = spawn().await;
    let etag = get(server.addr, HOUR)
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let reply = get_with(
        &server,
        HOUR,
        format!("If-None-Match: junk, {etag}, \"x\"\r\n").as_bytes(),
    )
    .await;
    assert_eq!(reply.status, 304, "{}", reply.head);
    assert!(reply.body.is_empty());
}

#[tokio::test]
async fn a_request_without_host_is_answered_as_usual() {
    // Lenient on purpose: the server serves one site and needs no Host to route.
    let server = spawn().await;
    for version in ["HTTP/1.0", "HTTP/1.1"] {
        let raw = format!("GET {HOUR} {version}\r\nConnection: close\r\n\r\n");
        let reply = exchange(server.addr, raw.as_bytes())
            .await
            .expect("a reply");
        assert_eq!(reply.status, 200, "{version}: {}", reply.head);
    }
}

#[tokio::test]
async fn huge_heads_are_431_and_the_server_carries_on() {
    let server = spawn().await;
    for size in [70_000, 500_000] {
        let one_huge = format!("X-Junk: {}\r\n", "j".repeat(size));
        let reply = get_with(&server, HOUR, one_huge.as_bytes()).await;
        assert_eq!(reply.status, 431, "{size}: {}", reply.head);
    }
    let many: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
    let reply = get_with(&server, HOUR, many.as_bytes()).await;
    assert_eq!(reply.status, 431, "{}", reply.head);
    // A big but reasonable head is fine.
    let big = format!("Cookie: {}\r\n", "c".repeat(32_000));
    assert_eq!(get_with(&server, HOUR, big.as_bytes()).await.status, 200);
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn malformed_framing_is_a_bare_400() {
    let server = spawn().await;
    for raw in [
        &b"HELLO\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\n: empty-name\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nIf-None-Match: \x01\r\n\r\n",
        b"G\x01T / HTTP/1.1\r\nHost: t\r\n\r\n",
        b"POST /updates HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
        b"POST /updates HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcde",
        b"POST /updates HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
        b"POST /updates HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    ] {
        let shown = String::from_utf8_lossy(raw).into_owned();
        let reply = exchange(server.addr, raw).await;
        let status = reply.as_ref().map(|r| r.status);
        assert_eq!(status, Some(400), "{shown:?}: {reply:?}");
    }
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn other_methods_are_405_with_the_json_error() {
    let server = spawn().await;
    for (method, path) in [
        ("DELETE", HOUR),
        ("PUT", HOUR),
        ("POST", HOUR),
        ("FOO", HOUR),
        ("GET", "/updates"),
        ("PATCH", "/updates"),
        ("POST", "/healthz"),
    ] {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let reply = exchange(server.addr, raw.as_bytes())
            .await
            .expect("a reply");
        reply.assert_error(405, "method_not_allowed");
    }
    assert_healthy(server.addr, &[]).await;
}
