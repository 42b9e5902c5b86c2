//! `Accept` and `Accept-Encoding` at `q=0` (RFC 9110 §12.4.2: "not acceptable"): a
//! request refusing every type a filter is served as gets 406, never JSON it refused; a
//! type refused by name is not chosen by a wildcard above it; gzip refused by name is not
//! sent, and a request that refuses every coding gets the body without one.

use crate::helpers::TestApp;

/// A sealed hour 13 (read once, so its rendering is cached) and an open hour 14.
async fn app_with_a_sealed_and_an_open_hour() -> TestApp {
    let app = TestApp::spawn().await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    app.ingest(&["b"]).await;
    for ext in ["", ".json", ".hex", ".bin"] {
        assert_eq!(app.get(&format!("/2008/09/03/13{ext}")).await.status, 200);
    }
    app
}

#[tokio::test]
async fn accept_refusing_every_type_is_406_for_hours_days_and_unions() {
    let app = app_with_a_sealed_and_an_open_hour().await;
    for accept in [
        "*/*;q=0",
        "application/json;q=0, text/plain;q=0, application/octet-stream;q=0",
        "application/json;q=0",
    ] {
        for path in [
            "/2008/09/03/13",
            "/2008/09/03/14",
            "/2008/09/03",
            "/since/2008/09/03/13",
        ] {
            let reply = app.get_with(path, &[("accept", accept)]).await;
            reply.assert_error(406, "not_acceptable");
            assert_eq!(reply.header("cache-control"), Some("no-store"), "{path}");
        }
    }
    // A suffix names the representation: it wins over Accept, as ever.
    let reply = app
        .get_with("/2008/09/03/13.json", &[("accept", "*/*;q=0")])
        .await;
    assert_eq!(reply.status, 200);
    // An Accept naming nothing we serve is disregarded, as the RFC allows: JSON.
    let reply = app
        .get_with("/2008/09/03/13", &[("accept", "image/png")])
        .await;
    assert_eq!(reply.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn a_type_refused_at_q_0_is_not_chosen_by_a_wildcard_above_it() {
    let app = app_with_a_sealed_and_an_open_hour().await;
    for (accept, served) in [
        ("text/plain;q=0, */*", "application/json"),
        ("text/plain;q=0, text/*", "application/json"),
        ("application/json;q=0, */*", "application/octet-stream"),
        ("*/*;q=0, text/plain", "text/plain; charset=utf-8"),
    ] {
        for path in ["/2008/09/03/13", "/2008/09/03/14"] {
            let reply = app.get_with(path, &[("accept", accept)]).await;
            assert_eq!(reply.status, 200, "{path} {accept}");
            assert_eq!(
                reply.header("content-type"),
                Some(served),
                "{path} {accept}"
            );
        }
    }
}

#[tokio::test]
async fn gzip_refused_by_name_is_not_sent_and_refusing_every_coding_gets_none() {
    let app = app_with_a_sealed_and_an_open_hour().await;
    for (encoding, gzip) in [
        ("gzip;q=0, *", false),
        ("*;q=0, gzip", true),
        ("identity;q=0, gzip", true),
        // Nothing we have is acceptable: no coding at all (RFC 9110 §12.5.3).
        ("identity;q=0", false),
        ("*;q=0", false),
    ] {
        for path in ["/2008/09/03/13.bin", "/2008/09/03/14.bin", "/"] {
            let reply = app.get_with(path, &[("accept-encoding", encoding)]).await;
            assert_eq!(reply.status, 200, "{path} {encoding}");
            let sent = reply.header("content-encoding");
            assert_eq!(sent == Some("gzip"), gzip, "{path} {encoding}: {sent:?}");
        }
    }
}
