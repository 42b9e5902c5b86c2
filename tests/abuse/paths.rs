//! Malformed filter paths: each gets its documented status and, when the request
//! reached the API, the JSON error.

use crate::helpers::*;

/// What a path must get.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Ok,
    /// A JSON error from the API.
    Error(u16, &'static str),
    /// A bare status from the HTTP layer: the request never reached the API.
    Bare(u16),
}
use Expect::*;

async fn check(server: &Server, raw_path: &[u8], expect: Expect) {
    let mut raw = b"GET ".to_vec();
    raw.extend_from_slice(raw_path);
    raw.extend_from_slice(b" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    let shown = String::from_utf8_lossy(&raw_path[..raw_path.len().min(60)]).into_owned();
    let reply = exchange(server.addr, &raw)
        .await
        .unwrap_or_else(|| panic!("{shown}: closed without a reply"));
    match expect {
        Ok => {
            assert_eq!(reply.status, 200, "{shown}: {}", reply.head);
            assert!(!reply.body.is_empty(), "{shown}");
        }
        Error(status, code) => {
            assert_eq!(reply.status, status, "{shown}: {}", reply.head);
            reply.assert_error(status, code);
        }
        Bare(status) => {
            assert_eq!(reply.status, status, "{shown}: {}", reply.head);
            assert!(reply.body.is_empty(), "{shown}");
        }
    }
}

#[tokio::test]
async fn bad_dates_and_hours_are_400_and_future_or_past_ones_404() {
    let server = spawn().await;
    let invalid = Error(400, "invalid_hour");
    let missing = Error(404, "not_found");
    for (path, expect) in [
        ("/2008/09/03/13", Ok),
        ("/2008/09/03/24", invalid),
        ("/2008/09/03/99", invalid),
        ("/2008/02/30/00", invalid),
        ("/2009/02/29/00", invalid),
        ("/2008/13/01/00", invalid),
        ("/2008/00/10/00", invalid),
        ("/2008/09/00/00", invalid),
        ("/2008/09/31/00", invalid),
        ("/2008/9/3/13", invalid),
        ("/08/09/03/13", invalid),
        ("/02008/09/03/13", invalid),
        ("/2008/09/03/013", invalid),
        ("/2008/09/03/+1", invalid),
        ("/2008/09/03/-1", invalid),
        ("/2008/09/03/1e1", invalid),
        ("/99999999999999999999/09/03/13", invalid),
        ("/2008/09/03/18446744073709551617", invalid),
        ("/x2008/09/03/13", invalid),
        ("/2008/09/03/13x", invalid),
        ("/2008/09/03/%2013", invalid),
        ("/2008/09/03/13%00", invalid),
        ("/2008/09/03/%FF", invalid),
        ("/2008/09/03/%C3%A9", invalid),
        ("/2008/09/03/%", invalid),
        ("/2008/09/./13", invalid),
        // ".." splits into an empty hour and an unknown "." suffix.
        ("/2008/09/03/%2e%2e", missing),
        ("/2008%2F09/03/13", invalid),
        ("/since/2008/09/03/14", invalid),
        ("/since/2008/09/03/24", invalid),
        ("/since/2008/09/03", invalid),
        ("/2008/09/32", invalid),
        ("/2008/09/03/14", missing),
        ("/2008/09/03/12", missing),
        ("/0000/01/01/00", missing),
        ("/9999/12/31/23", missing),
        ("/2008/09/04", missing),
    ] {
        check(&server, path.as_bytes(), expect).await;
    }
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn percent_encoded_digits_are_the_same_hour() {
    let server = spawn().await;
    ingest(server.addr, &ids("pct", 3)).await;
    let plain = get(server.addr, HOUR).await;
    let encoded = get(server.addr, "/2008/09/%30%33/%31%33").await;
    assert_eq!(encoded.status, 200, "{}", encoded.head);
    assert_eq!(encoded.header("etag"), plain.header("etag"));
    assert_eq!(encoded.body, plain.body);
}

#[tokio::test]
async fn unknown_suffixes_odd_slashes_and_dot_segments_are_json_errors() {
    let server = spawn().await;
    let missing = Error(404, "not_found");
    for (path, expect) in [
        ("/2008/09/03/13.json", Ok),
        ("/2008/09/03/13.hex", Ok),
        ("/2008/09/03/13.bin", Ok),
        ("/2008/09/03.hex", Ok),
        ("/since/2008/09/03/13.bin", Ok),
        ("/2008/09/03/13?x=1&y", Error(400, "bad_request")),
        ("/2008/09/03/13.xml", missing),
        ("/2008/09/03/13.", missing),
        ("/2008/09/03/13.HEX", missing),
        ("/2008/09/03/13.hex.gz", missing),
        ("/2008/09/03/13.hex/", missing),
        ("/2008/09/03/.hex", Error(400, "invalid_hour")),
        ("/2008//09/03/13", missing),
        ("/2008/09/03//13", missing),
        ("//2008/09/03/13", missing),
        ("/2008/09/03/13/", missing),
        ("/2008/09/03/13/00", missing),
        ("/2008/09/03/../13", missing),
        ("/since", missing),
        ("/since/", missing),
        ("/since/2008/09/03/13/14", missing),
        ("/updates/x", missing),
        ("/%", missing),
        ("/nothing", missing),
    ] {
        check(&server, path.as_bytes(), expect).await;
    }
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn very_long_paths_are_refused_without_harm() {
    let server = spawn().await;
    let long_segment = format!("/{}", "a".repeat(10_000));
    check(&server, long_segment.as_bytes(), Error(404, "not_found")).await;
    let long_hour = format!("/2008/09/03/{}", "1".repeat(10_000));
    check(&server, long_hour.as_bytes(), Error(400, "invalid_hour")).await;
    let many_segments = "/2008".repeat(5_000);
    check(&server, many_segments.as_bytes(), Error(404, "not_found")).await;
    // Past the 64 KiB a request head may take, and far past it.
    let too_long = format!("/{}", "b".repeat(70_000));
    check(&server, too_long.as_bytes(), Bare(431)).await;
    let way_too_long = format!("/{}", "c".repeat(600_000));
    check(&server, way_too_long.as_bytes(), Bare(431)).await;
    assert_healthy(server.addr, &[]).await;
}

#[tokio::test]
async fn raw_non_ascii_and_control_bytes_in_the_path_are_400s() {
    let server = spawn().await;
    let invalid = Error(400, "invalid_hour");
    for (path, expect) in [
        // Bytes the URI parser refuses: the request never reaches the API.
        (&b"/2008/09/03/\xff"[..], Bare(400)),
        (b"/2008/09/03/\x80", Bare(400)),
        (b"/2008/09/03/1\x003", Bare(400)),
        (b"/2008/09/03/1\x7f", Bare(400)),
        // Bytes it lets through reach the hour parser, which refuses them.
        (b"/2008/09/\xc3\xa9/13", invalid),
        (b"/2008/09/03/13\"", invalid),
        (b"/2008/09/03/{13}", invalid),
    ] {
        check(&server, path, expect).await;
    }
    assert_healthy(server.addr, &[]).await;
}
