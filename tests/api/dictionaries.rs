//! Linked dictionaries (RFC 9842, issue 36): the open hour's responses link the kept
//! version at a URL of its own, whose lifetime (`dictionary_max_age`, within the hour)
//! outlives the poll's `max-age`, so a client polling less often still gets deltas.

use crate::deltas::{ids, ingest, offer};
use crate::helpers::*;
use bloomcast::dcz;
use chrono::Duration;

const BIN: &str = "application/octet-stream";

/// The identity bytes of `.bin` at `path` now, with the response.
async fn full(app: &TestApp, path: &str) -> (Reply, Vec<u8>) {
    full_as(app, path, BIN).await
}

/// The identity bytes at `path` now as `accept` asks, with the response.
async fn full_as(app: &TestApp, path: &str, accept: &str) -> (Reply, Vec<u8>) {
    let reply = app
        .get_with(path, &[("accept", accept), ("accept-encoding", "gzip")])
        .await;
    assert_eq!(reply.status, 200, "{path}");
    let identity = gunzip(&reply.body);
    (reply, identity)
}

/// The URL a response links as its compression dictionary, if any.
fn linked(reply: &Reply) -> Option<String> {
    let link = reply.header("link")?;
    link.split(", ").find_map(|l| {
        let url = l.strip_suffix(">; rel=\"compression-dictionary\"")?;
        Some(url.strip_prefix('<')?.to_owned())
    })
}

/// The `id` of a `Use-As-Dictionary` value.
fn dictionary_id(value: &str) -> &str {
    let (_, id) = value.split_once("id=\"").unwrap();
    id.trim_end_matches('"')
}

fn max_age(reply: &Reply) -> i64 {
    let cc = reply.header("cache-control").unwrap();
    cc.rsplit_once("max-age=").unwrap().1.parse().unwrap()
}

#[tokio::test]
async fn the_linked_dictionary_outlives_the_poll_and_its_delta_decodes() {
    let app = TestApp::spawn_with(|s| s.delta_ids = 1).await;
    ingest(&app, &ids(0, 300)).await;
    let hour = start_hour();
    for (path, accept) in [
        (format!("{}.bin", hour.path()), BIN),
        (hour.path(), BIN),
        (format!("{}.json", hour.path()), "application/json"),
    ] {
        let first = app
            .get_with(&path, &[("accept", accept), ("accept-encoding", "gzip")])
            .await;
        let body = gunzip(&first.body);
        assert_eq!(max_age(&first), 30, "the open hour's max-age");
        let id = dictionary_id(first.header("use-as-dictionary").unwrap()).to_owned();
        let url = linked(&first).expect("a linked dictionary");
        assert_eq!(url, format!("/dictionaries{path}/{id}"));
        let dictionary = app.get_with(&url, &[("accept-encoding", "gzip")]).await;
        assert_eq!(dictionary.status, 200, "{url}");
        assert_eq!(dictionary.body, body, "the identity bytes, never encoded");
        assert_eq!(dictionary.header("content-encoding"), None);
        assert_eq!(
            dictionary.header("content-type"),
            first.header("content-type")
        );
        assert_eq!(
            dictionary.header("use-as-dictionary"),
            Some(format!("match=\"{path}\", match-dest=(\"\"), id=\"{id}\"").as_str())
        );
        assert_eq!(dictionary.header("cache-control"), Some("max-age=600"));
        assert_eq!(
            dictionary.header("etag"),
            Some(format!("\"{id}\"").as_str())
        );
        dictionary.assert_digest_of_body(&url);
        let again = app
            .get_with(&url, &[("if-none-match", &format!("\"{id}\""))])
            .await;
        assert_eq!(again.status, 304);
        assert_eq!(again.header("cache-control"), Some("max-age=600"));

        // Polled again after the poll's max-age ran out, the dictionary still serves.
        app.clock.advance(Duration::seconds(120));
        ingest(&app, &ids(300 + path.len(), 320 + path.len())).await;
        let delta = app
            .get_with(
                &path,
                &[
                    ("accept", accept),
                    ("accept-encoding", "dcz, gzip"),
                    ("available-dictionary", &offer(&dictionary.body)),
                ],
            )
            .await;
        let (_, current) = full_as(&app, &path, accept).await;
        assert_eq!(delta.header("content-encoding"), Some("dcz"), "{path}");
        assert_eq!(dcz::decode(&dictionary.body, &delta.body).unwrap(), current);
        let later = app.get(&url).await;
        assert_eq!(later.status, 200);
        assert_eq!(later.header("cache-control"), Some("max-age=480"));
        // The delta's response was kept in turn: it links itself now.
        let id = dictionary_id(delta.header("use-as-dictionary").unwrap());
        assert_eq!(linked(&delta), Some(format!("/dictionaries{path}/{id}")));
    }
}

#[tokio::test]
async fn unknown_expired_and_closed_dictionaries_are_not_found() {
    let app = TestApp::spawn_with(|s| s.delta_ids = 1).await;
    ingest(&app, &ids(0, 50)).await;
    let path = format!("{}.bin", start_hour().path());
    let (first, _) = full(&app, &path).await;
    let url = linked(&first).unwrap();
    assert_eq!(app.get(&url).await.status, 200);
    let (prefix, id) = url.rsplit_once('/').unwrap();
    let hex_path = prefix.replace(".bin", ".hex");
    for missing in [
        format!("{prefix}/{}", "0".repeat(20)),
        format!("{prefix}/{}", &id[..18]),
        format!("{prefix}/{id}0"),
        format!("{prefix}/not-hex-at-all-here!"),
        format!("{hex_path}/{id}"),
        format!("/dictionaries/2008/09/03/{id}"),
        format!("/dictionaries{}/{id}", start_hour().next().path()),
    ] {
        app.get(&missing).await.assert_error(404, "not_found");
    }
    app.get(&format!("/dictionaries/2008/09/03/25.bin/{id}"))
        .await
        .assert_error(400, "invalid_hour");

    // Its promise runs out: the URL is gone (the version itself may still serve deltas
    // while the budget has room for it).
    app.clock.advance(Duration::seconds(600));
    app.get(&url).await.assert_error(404, "not_found");

    // The hour closes: its dictionaries go, and a closed hour links none.
    ingest(&app, &ids(50, 60)).await;
    let (open, _) = full(&app, &path).await;
    let url = linked(&open).expect("a newer version, linked");
    assert_eq!(app.get(&url).await.status, 200);
    app.next_hour().await;
    app.get(&url).await.assert_error(404, "not_found");
    let (closed, _) = full(&app, &path).await;
    assert_eq!(linked(&closed), None);
}

#[tokio::test]
async fn while_the_budget_holds_promised_versions_no_newer_one_is_kept() {
    // Room for one .bin version (an hour of capacity 3000 is ~3.6 kB as .bin).
    let app = TestApp::spawn_with(|s| {
        s.delta_ids = 1;
        s.delta_bytes = 5000;
        s.capacity = 3000;
    })
    .await;
    let path = format!("{}.bin", start_hour().path());
    ingest(&app, &ids(0, 100)).await;
    let (first, v0) = full(&app, &path).await;
    let url = linked(&first).unwrap();
    ingest(&app, &ids(100, 110)).await;
    let (second, _) = full(&app, &path).await;
    assert_eq!(
        second.header("use-as-dictionary"),
        None,
        "v0 is promised: v1 is not kept"
    );
    assert_eq!(
        linked(&second),
        Some(url.clone()),
        "v0 is still the one linked"
    );
    let reply = app
        .get_with(
            &path,
            &[
                ("accept-encoding", "dcz, gzip"),
                ("available-dictionary", &offer(&v0)),
            ],
        )
        .await;
    assert_eq!(reply.header("content-encoding"), Some("dcz"));

    app.clock.advance(Duration::seconds(600));
    ingest(&app, &ids(110, 120)).await;
    let (third, _) = full(&app, &path).await;
    assert!(
        third.header("use-as-dictionary").is_some(),
        "v0's promise ran out"
    );
    let newer = linked(&third).unwrap();
    assert_ne!(newer, url);
    assert_eq!(app.get(&newer).await.status, 200);
    app.get(&url).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_zero_dictionary_max_age_links_none() {
    let app = TestApp::spawn_with(|s| {
        s.delta_ids = 1;
        s.dictionary_max_age = 0;
    })
    .await;
    ingest(&app, &ids(0, 50)).await;
    let path = format!("{}.bin", start_hour().path());
    let (reply, _) = full(&app, &path).await;
    let id = dictionary_id(reply.header("use-as-dictionary").unwrap()).to_owned();
    assert_eq!(linked(&reply), None);
    app.get(&format!("/dictionaries{path}/{id}"))
        .await
        .assert_error(404, "not_found");
}
