//! Representations, the index, links, and the false-positive guarantee.

use crate::helpers::*;
use bloomcast::bloom::Filter;
use bloomcast::wire::decode_raw;

#[tokio::test]
async fn an_hour_with_no_ids_is_a_valid_empty_filter() {
    let app = TestApp::spawn().await;
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert_eq!((meta.count, meta.complete), (0, false));
    assert_eq!(filter.ones(), 0);
    assert_eq!(meta.hour.as_deref(), Some("2008-09-03T13:00:00Z"));
}

#[tokio::test]
async fn raw_hex_and_binary_agree_with_json() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b", "c"]).await;
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    let variants = [
        ("/2008/09/03/13.hex", None, true),
        ("/2008/09/03/13", Some("text/plain"), true),
        ("/2008/09/03/13.bin", None, false),
        ("/2008/09/03/13", Some("application/octet-stream"), false),
    ];
    for (path, accept, hex) in variants {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
        let reply = app.get_with(path, &headers).await;
        assert_eq!(reply.status, 200, "{path}");
        let (raw_meta, raw_filter) = decode_raw(|n| reply.header(n), &reply.body, hex).unwrap();
        assert_eq!(raw_filter, filter, "{path} {accept:?}");
        assert_eq!(
            (raw_meta.count, raw_meta.complete),
            (meta.count, meta.complete)
        );
        assert_eq!(reply.header("bloom-hash"), Some("sha1-km32"));
    }
    let json = app.get("/2008/09/03/13.json").await;
    assert_eq!(
        bloomcast::wire::Document::parse(&json.body).unwrap().1,
        filter
    );
}

#[tokio::test]
async fn head_answers_like_get_without_a_body() {
    let app = TestApp::spawn().await;
    let get = app.get("/2008/09/03/13").await;
    let head = app
        .request(
            axum::http::Request::head("/2008/09/03/13")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.header("etag"), get.header("etag"));
}

#[tokio::test]
async fn reads_are_public_with_cors() {
    let app = TestApp::spawn().await;
    let reply = app
        .get_with("/2008/09/03/13", &[("origin", "https://example.org")])
        .await;
    assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    assert!(reply
        .header("access-control-expose-headers")
        .unwrap()
        .contains("etag"));
}

#[tokio::test]
async fn growth_past_capacity_keeps_fpp_under_target_open_and_closed() {
    let app = TestApp::spawn_with(|s| s.capacity = 100).await;
    let ids: Vec<String> = (0..3000).map(|i| format!("user:{i}")).collect();
    for chunk in ids.chunks(300) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        app.ingest(&refs).await;
        let (meta, filter) = app.filter("/2008/09/03/13").await;
        assert!(
            filter.fpp() <= 0.01,
            "open fpp {} at count {}",
            filter.fpp(),
            meta.count
        );
        let doc = app.get("/2008/09/03/13").await.json();
        assert!(doc["fpp"].as_f64().unwrap() <= 0.01);
    }
    let (_, open) = app.filter("/2008/09/03/13").await;
    assert!(ids.iter().all(|id| open.contains(id)));
    app.next_hour().await;
    let (meta, closed) = app.filter("/2008/09/03/13").await;
    assert_eq!((meta.count, meta.complete), (3000, true));
    assert!(closed.fpp() <= 0.01);
    assert!(ids.iter().all(|id| closed.contains(id)));
    let optimal = bloomcast::bloom::Params::optimal(3000, 0.01).unwrap();
    assert!(
        closed.m() >= optimal.m && closed.m() < optimal.m * 2,
        "sized for its count: {}",
        closed.m()
    );
    let absent = (0..20_000)
        .filter(|i| closed.contains(&format!("absent:{i}")))
        .count();
    assert!(
        (absent as f64 / 20_000.0) < 0.015,
        "measured fp rate {absent}/20000"
    );
}

#[tokio::test]
async fn the_index_lists_recent_hours_newest_first() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.ingest(&["c"]).await;
    let index = app.get("/").await.json();
    assert_eq!(index["service"], "bloomcast");
    assert_eq!(index["current"]["url"], "/2008/09/03/14");
    assert_eq!(index["target_fpp"], 0.01);
    let hours = index["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 2);
    assert_eq!(hours[0]["url"], "/2008/09/03/14");
    assert_eq!(
        (hours[0]["count"].as_u64(), hours[0]["complete"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(
        (hours[1]["count"].as_u64(), hours[1]["complete"].as_bool()),
        (Some(2), Some(true))
    );
}

#[tokio::test]
async fn the_index_is_gzipped_for_clients_that_take_it_and_revalidates_until_it_changes() {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    let plain = app.get("/").await;
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("cache-control"), Some("no-cache"));
    assert_eq!(plain.header("vary"), Some("Accept-Encoding"));
    let gz = app.get_with("/", &[("accept-encoding", "gzip")]).await;
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert!(gz.body.len() < plain.body.len(), "gzip is smaller");
    assert_eq!(gunzip(&gz.body), plain.body, "the same document");
    let (tag, gz_tag) = (plain.header("etag").unwrap(), gz.header("etag").unwrap());
    assert_ne!(tag, gz_tag, "one tag per encoding");
    let again = app.get_with("/", &[("if-none-match", tag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let again = app
        .get_with(
            "/",
            &[("accept-encoding", "gzip"), ("if-none-match", gz_tag)],
        )
        .await;
    assert_eq!(again.status, 304);
    // The count moves: the old tag no longer matches.
    app.ingest(&["c"]).await;
    let changed = app.get_with("/", &[("if-none-match", tag)]).await;
    assert_eq!(changed.status, 200);
    assert_eq!(changed.json()["hours"][0]["count"], 3);
}

#[tokio::test]
async fn filters_link_to_the_previous_hour() {
    let app = TestApp::spawn().await;
    app.next_hour().await;
    let reply = app.get("/2008/09/03/14").await;
    // The open hour also links its dictionary (tests/api/dictionaries.rs), after them.
    let link = reply.header("link").unwrap();
    assert!(
        link.starts_with("</2008/09/03/13>; rel=\"prev\", </dictionaries/2008/09/03/14/"),
        "{link}"
    );
    assert!(
        link.ends_with(">; rel=\"compression-dictionary\""),
        "{link}"
    );
    let first = app.get("/2008/09/03/13.hex").await;
    assert_eq!(
        first.header("link"),
        Some("</2008/09/03/14.hex>; rel=\"next\""),
        "genesis has no prev"
    );
}

#[tokio::test]
async fn a_closed_hours_headers_are_the_same_every_time_and_follow_retention() {
    let app = TestApp::spawn_with(|s| s.retention_hours = 3).await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    app.ingest(&["b"]).await;
    app.next_hour().await;
    // Now 15:00: 14:00 is closed, between 13:00 and the open hour.
    let without_date = |reply: &Reply| {
        let mut headers = reply.headers.clone();
        headers.remove("date");
        headers
    };
    for (path, links) in [
        (
            "/2008/09/03/14",
            "</2008/09/03/13>; rel=\"prev\", </2008/09/03/15>; rel=\"next\"",
        ),
        (
            "/2008/09/03/14.hex",
            "</2008/09/03/13.hex>; rel=\"prev\", </2008/09/03/15.hex>; rel=\"next\"",
        ),
    ] {
        for gzip in [false, true] {
            let asked: &[(&str, &str)] = if gzip {
                &[("accept-encoding", "gzip")]
            } else {
                &[]
            };
            let first = app.get_with(path, asked).await;
            assert_eq!(first.status, 200);
            assert_eq!(first.header("link"), Some(links), "{path}");
            assert_eq!(
                first.header("cache-control"),
                Some("max-age=31536000, immutable")
            );
            assert_eq!(first.header("content-encoding").is_some(), gzip, "{path}");
            let again = app.get_with(path, asked).await;
            assert_eq!(
                without_date(&again),
                without_date(&first),
                "{path} gzip {gzip}"
            );
            assert_eq!(again.body, first.body);
        }
    }
    // At 16:00 retention keeps 14:00 to 16:00: 14:00 has no previous hour any more.
    app.next_hour().await;
    let later = app.get("/2008/09/03/14").await;
    assert_eq!(
        later.header("link"),
        Some("</2008/09/03/15>; rel=\"next\""),
        "the neighbour gone out of retention is not linked"
    );
}

#[tokio::test]
async fn health_is_ok_when_the_store_is_usable() {
    let app = TestApp::spawn().await;
    // The open hour loads in the background; until then /healthz says `loading` (503).
    app.service.wait_loaded().await;
    let reply = app.get("/healthz").await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["status"], "ok");
}

#[tokio::test]
async fn decoding_a_served_filter_never_finds_false_negatives() {
    let app = TestApp::spawn().await;
    let ids: Vec<String> = (0..500).map(|i| format!("feed/{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    app.ingest(&refs).await;
    let reply = app.get("/2008/09/03/13.bin").await;
    let (_, filter): (_, Filter) = decode_raw(|n| reply.header(n), &reply.body, false).unwrap();
    assert!(filter.definitely_absent(refs.iter().copied()).is_empty());
}
