//! Hostile ingest: bad bodies, tokens and framing. Nothing rejected is recorded; the
//! head is judged before the body is read.

use crate::helpers::*;
use tokio::io::AsyncWriteExt;

async fn post(server: &Server, content_type: &str, auth: &str, body: &[u8]) -> Reply {
    exchange(server.addr, &post_request(content_type, auth, body))
        .await
        .expect("a reply")
}

#[tokio::test]
async fn malformed_bodies_are_400_and_record_nothing() {
    let server = spawn().await;
    let json = "application/json";
    let text = "text/plain; charset=utf-8";
    let deep = format!("{{\"ids\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    let long_id = format!("{{\"ids\": [\"{}\"]}}", "x".repeat(1025));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (json, b"".to_vec()),
        (json, b"{not json".to_vec()),
        (json, b"null".to_vec()),
        (json, b"[\"a\"]".to_vec()),
        (json, b"{}".to_vec()),
        (json, br#"{"ids": null}"#.to_vec()),
        (json, br#"{"ids": "a"}"#.to_vec()),
        (json, br#"{"ids": [1, 2]}"#.to_vec()),
        (json, br#"{"ids": [true]}"#.to_vec()),
        (json, br#"{"ids": [["nested"]]}"#.to_vec()),
        (json, br#"{"ids": [{"id": "a"}]}"#.to_vec()),
        (json, br#"{"ids": ["ok", ""]}"#.to_vec()),
        (json, br#"{"ids": ["a"], "ids": ["b"]}"#.to_vec()),
        (json, br#"{"ids": ["\ud800"]}"#.to_vec()),
        (json, br#"{"ids": ["a"]} trailing"#.to_vec()),
        (json, b"\xef\xbb\xbf{\"ids\": [\"bom\"]}".to_vec()),
        (json, b"{\"ids\": [\"\xff\"]}".to_vec()),
        (json, long_id.into_bytes()),
        (json, deep.into_bytes()),
        (text, b"fine\n\xc3\x28\n".to_vec()),
        (text, b"\xff\xfe\xfd".to_vec()),
        (text, "y".repeat(1025).into_bytes()),
        (text, format!("ok\r\n{}\r\n", "z".repeat(2000)).into_bytes()),
    ];
    for (content_type, body) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(40)]).into_owned();
        let reply = post(&server, content_type, &bearer(), &body).await;
        assert_eq!(
            reply.status, 400,
            "{content_type} {shown:?}: {}",
            reply.head
        );
        reply.assert_error(400, "bad_request");
    }
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn odd_but_valid_bodies_are_accepted_exactly() {
    let server = spawn().await;
    let max = "m".repeat(1024);
    let cases: Vec<(&str, Vec<u8>, Vec<String>)> = vec![
        (
            "application/json",
            br#"{"ids": ["a\u0000b", "caf\u00e9"], "extra": [1]}"#.to_vec(),
            vec!["a\0b".into(), "café".into()],
        ),
        (
            "APPLICATION/JSON; charset=utf-8",
            br#"{"ids": []}"#.to_vec(),
            vec![],
        ),
        (
            "text/plain",
            format!("\r\n \n{max}\r\n\ttab\n").into_bytes(),
            vec![max.clone(), "\ttab".into()],
        ),
        ("text/plain", b"".to_vec(), vec![]),
    ];
    let mut acked = Vec::new();
    for (content_type, body, expected) in cases {
        let reply = post(&server, content_type, &bearer(), &body).await;
        assert_eq!(
            reply.status,
            200,
            "{content_type}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.json()["accepted"], expected.len());
        acked.extend(expected);
    }
    assert_healthy(server.addr, &acked).await;
}

#[tokio::test]
async fn bad_tokens_are_401() {
    let server = spawn().await;
    let body = br#"{"ids": ["never"]}"#;
    for auth in [
        String::new(),
        "Authorization: \r\n".into(),
        "Authorization: Bearer\r\n".into(),
        "Authorization: Bearer \r\n".into(),
        format!("Authorization: Basic {TOKEN}\r\n"),
        format!("Authorization: {TOKEN}\r\n"),
        format!("Authorization: Bearer\t{TOKEN}\r\n"),
        format!("Authorization: Bearer {TOKEN} x\r\n"),
        format!("Authorization: Bearer {TOKEN}x\r\n"),
        format!("Authorization: Bearer {}\r\n", &TOKEN[1..]),
        format!("Authorization: Bearer {}\r\n", TOKEN.to_uppercase()),
        "Authorization: Bearer wrong-token-entirely\r\n".into(),
        "Authorization: Bearer \u{e9}\u{e9}\r\n".into(),
    ] {
        let reply = post(&server, "application/json", &auth, body).await;
        reply.assert_error(401, "unauthorized");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"), "{auth:?}");
    }
    // Whitespace around the token is not part of it.
    let spaced = format!("Authorization: bearer   {TOKEN}  \r\n");
    let reply = post(
        &server,
        "application/json",
        &spaced,
        br#"{"ids": ["spaced"]}"#,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.head);
    assert_healthy(server.addr, &["spaced".into()]).await;
}

/// Sends only the head of a POST that announces `length` body bytes, and expects the
/// answer without the body ever being sent: the one the head calls for, not the 1 s
/// request timeout's.
async fn reply_to_head_alone(server: &Server, head_lines: &str, length: u64) -> Reply {
    let raw = format!(
        "POST /updates HTTP/1.1\r\nHost: t\r\n{head_lines}Content-Length: {length}\r\n\r\n"
    );
    let mut stream = connect(server.addr).await;
    stream.write_all(raw.as_bytes()).await.unwrap();
    let reply = read_reply(&mut stream).await.expect("a reply to the head");
    // Had the body been awaited, the answer would be the request timeout's 408.
    assert_ne!(reply.status, 408, "the body was awaited: {}", reply.head);
    reply
}

#[tokio::test]
async fn token_type_and_declared_length_are_judged_before_the_body() {
    let server = spawn().await;
    let json = "Content-Type: application/json\r\n";
    let auth = bearer();
    reply_to_head_alone(&server, json, 1000)
        .await
        .assert_error(401, "unauthorized");
    reply_to_head_alone(
        &server,
        &format!("{auth}Content-Type: application/xml\r\n"),
        1000,
    )
    .await
    .assert_error(415, "unsupported_media_type");
    reply_to_head_alone(&server, &auth, 1000)
        .await
        .assert_error(415, "unsupported_media_type");
    reply_to_head_alone(&server, &format!("{auth}{json}"), 64 * 1024 + 1)
        .await
        .assert_error(413, "payload_too_large");
    // A length no body could have is refused by the HTTP layer itself.
    let reply = reply_to_head_alone(&server, &format!("{auth}{json}"), u64::MAX).await;
    assert_eq!(reply.status, 431, "{}", reply.head);
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn a_client_expecting_100_continue_is_refused_without_it() {
    let server = spawn().await;
    let head = |auth: &str| {
        format!(
            "POST /updates HTTP/1.1\r\nHost: t\r\n{auth}Content-Type: text/plain\r\n\
             Expect: 100-continue\r\nContent-Length: 8\r\n\r\n"
        )
    };
    let mut refused = connect(server.addr).await;
    refused.write_all(head("").as_bytes()).await.unwrap();
    let reply = read_reply(&mut refused).await.expect("a reply");
    reply.assert_error(401, "unauthorized");
    let mut welcome = connect(server.addr).await;
    welcome.write_all(head(&bearer()).as_bytes()).await.unwrap();
    let interim = read_reply(&mut welcome).await.expect("100 Continue");
    assert_eq!(interim.status, 100, "{}", interim.head);
    welcome.write_all(b"expect-1").await.unwrap();
    let reply = read_reply(&mut welcome).await.expect("a reply");
    assert_eq!(reply.status, 200, "{}", reply.head);
    assert_healthy(server.addr, &["expect-1".into()]).await;
}

/// A chunked POST of `body`, cut into chunks of `chunk` bytes.
fn chunked(body: &[u8], chunk: usize) -> Vec<u8> {
    let mut raw = format!(
        "POST /updates HTTP/1.1\r\nHost: t\r\n{}Content-Type: text/plain\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        bearer()
    )
    .into_bytes();
    for part in body.chunks(chunk) {
        raw.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        raw.extend_from_slice(part);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    raw
}

#[tokio::test]
async fn chunked_bodies_count_against_the_limit_too() {
    let server = spawn().await;
    let acked = ids("chunk", 50);
    let body = acked.join("\n");
    let reply = exchange(server.addr, &chunked(body.as_bytes(), 7))
        .await
        .unwrap();
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    // Over the 64 KiB limit with no Content-Length to refuse it up front.
    let big = "x\n".repeat(40 * 1024);
    let reply = exchange(server.addr, &chunked(big.as_bytes(), 4096))
        .await
        .unwrap();
    reply.assert_error(413, "payload_too_large");
    // Over the limit with a declared length, sent in full anyway.
    let reply = post(&server, "text/plain", &bearer(), big.as_bytes()).await;
    reply.assert_error(413, "payload_too_large");
    assert_healthy(server.addr, &acked).await;
}

#[tokio::test]
async fn broken_framing_and_truncated_bodies_record_nothing() {
    let server = spawn().await;
    let head = format!(
        "POST /updates HTTP/1.1\r\nHost: t\r\n{}Content-Type: text/plain\r\n",
        bearer()
    );
    // A chunk size that is not hex, and a chunk longer than announced.
    for tail in [
        "Transfer-Encoding: chunked\r\n\r\nzz\r\nlost-1\r\n0\r\n\r\n",
        "Transfer-Encoding: chunked\r\n\r\n2\r\nlost-2\r\n0\r\n\r\n",
    ] {
        let reply = exchange(server.addr, format!("{head}{tail}").as_bytes()).await;
        assert_ne!(reply.map(|r| r.status), Some(200), "{tail:?}");
    }
    // A body cut short: the client gives up half-way and closes its side.
    let mut stream = connect(server.addr).await;
    stream
        .write_all(format!("{head}Content-Length: 100\r\n\r\nlost-3\nlost-4\n").as_bytes())
        .await
        .unwrap();
    stream.shutdown().await.unwrap();
    if let Some(reply) = read_reply(&mut stream).await {
        reply.assert_error(400, "bad_request");
    }
    // Count 0: none of the broken uploads recorded anything.
    assert_healthy(server.addr, &[]).await;
}
