//! `Content-Encoding` on ingest: gzip and zstd bodies are decoded, the body limit (64 KiB
//! here) holds for the decoded body too, and any other coding is refused before the body
//! is read. Nothing refused is recorded.

use crate::helpers::*;
use std::io::Write;

/// A POST /updates with the given `Content-Encoding` line and (already encoded) body.
async fn post_coded(server: &Server, content_type: &str, coding: &str, body: &[u8]) -> Reply {
    let mut raw = format!(
        "POST /updates HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n{}\
         Content-Encoding: {coding}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bearer(),
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    exchange(server.addr, &raw).await.expect("a reply")
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 19).unwrap()
}

#[tokio::test]
async fn gzip_and_zstd_bodies_are_decoded_and_every_id_recorded() {
    let server = spawn().await;
    let by_gzip = ids("gzipped", 300);
    let reply = post_coded(
        &server,
        "text/plain",
        "gzip",
        &gzip(by_gzip.join("\n").as_bytes()),
    )
    .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["accepted"], 300);
    let by_zstd = ids("zstded", 300);
    let json = serde_json::to_vec(&serde_json::json!({ "ids": by_zstd })).unwrap();
    let reply = post_coded(&server, "application/json", "zstd", &zstd(&json)).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["accepted"], 300);
    // The open hour holds exactly these 600 IDs: the decoded text, not the wire bytes.
    assert_healthy(server.addr, &[by_gzip, by_zstd].concat()).await;
}

#[tokio::test]
async fn other_codings_are_415_with_accept_encoding_and_record_nothing() {
    let server = spawn().await;
    let acked = ids("before", 10);
    ingest(server.addr, &acked).await;
    // Text that would be recorded as two IDs if the coding were ignored.
    let plain = b"brt:77\nxyz".to_vec();
    let mut deflated = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
    deflated.write_all(b"deflated-1\ndeflated-2").unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("br", plain.clone()),
        ("deflate", deflated.finish().unwrap()),
        ("compress", plain.clone()),
        ("gzip, gzip", gzip(&gzip(b"twice"))),
        ("identity, gzip", gzip(b"listed")),
        ("x-unknown-coding", plain),
    ];
    for (coding, body) in cases {
        let reply = post_coded(&server, "text/plain", coding, &body).await;
        reply.assert_error(415, "unsupported_encoding");
        assert_eq!(
            reply.header("accept-encoding"),
            Some("gzip, zstd"),
            "{coding}"
        );
        let message = reply.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("gzip, zstd"), "{coding}: {message}");
    }
    assert_healthy(server.addr, &acked).await;
}

#[tokio::test]
async fn a_body_that_decodes_past_the_limit_is_413_and_records_nothing() {
    let server = spawn().await;
    // 60 gzip members of 1 MiB of zeros each: under 64 KiB sent, 60 MiB decoded.
    let member = gzip(&vec![0u8; 1 << 20]);
    let gzip_bomb = member.repeat(60);
    assert!(gzip_bomb.len() < 64 * 1024, "{} bytes", gzip_bomb.len());
    // One zstd frame of 64 MiB of newlines (blank lines, valid text if it were read).
    let zstd_bomb = zstd(&vec![b'\n'; 64 << 20]);
    assert!(zstd_bomb.len() < 64 * 1024, "{} bytes", zstd_bomb.len());
    for (coding, bomb) in [("gzip", gzip_bomb), ("zstd", zstd_bomb)] {
        let reply = post_coded(&server, "text/plain", coding, &bomb).await;
        reply.assert_error(413, "payload_too_large");
        let message = reply.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("decodes to more than"), "{message}");
    }
    // Just within the limit decoded is fine, even when the encoding is tiny.
    let fits = "a\n".repeat(32 * 1024);
    let reply = post_coded(&server, "text/plain", "gzip", &gzip(fits.as_bytes())).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_healthy(server.addr, &["a".to_owned()]).await;
}

#[tokio::test]
async fn corrupt_or_truncated_compressed_bodies_are_400_and_record_nothing() {
    let server = spawn().await;
    let good = gzip(ids("lost", 100).join("\n").as_bytes());
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let good_zstd = zstd(ids("lost", 100).join("\n").as_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("gzip", b"lost-1\nlost-2\n".to_vec()),
        ("gzip", flipped),
        ("gzip", good[..good.len() - 8].to_vec()),
        ("zstd", good_zstd[..good_zstd.len() - 3].to_vec()),
        ("zstd", good),
    ];
    for (coding, body) in cases {
        let reply = post_coded(&server, "text/plain", coding, &body).await;
        reply.assert_error(400, "bad_request");
        let message = reply.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(&format!("not valid {coding}")),
            "{message}"
        );
    }
    assert_healthy(server.addr, &[]).await;
}
