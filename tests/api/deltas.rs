//! Open-hour deltas (RFC 9842, issue 15): a poller holding a kept version of the open
//! hour gets the current one as `dcz`, which decodes with that version to exactly the
//! full body; anything the server cannot delta from falls back to gzip, never an error.

use crate::helpers::*;
use base64::Engine as _;
use bloomcast::dcz;

const REPRS: [(&str, &str); 3] = [
    ("json", "application/json"),
    ("hex", "text/plain"),
    ("bin", "application/octet-stream"),
];

/// The `Available-Dictionary` value offering `dictionary`.
pub(crate) fn offer(dictionary: &[u8]) -> String {
    let sha = dcz::sha256(dictionary);
    format!(
        ":{}:",
        base64::engine::general_purpose::STANDARD.encode(sha)
    )
}

pub(crate) fn ids(from: usize, to: usize) -> Vec<String> {
    (from..to).map(|i| format!("item-{i}")).collect()
}

pub(crate) async fn ingest(app: &TestApp, ids: &[String]) {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    app.ingest(&ids).await;
}

/// The identity bytes at `path` now, as a dictionary-less client sees them.
async fn full(app: &TestApp, path: &str, accept: &str) -> (Reply, Vec<u8>) {
    let reply = app
        .get_with(path, &[("accept", accept), ("accept-encoding", "gzip")])
        .await;
    assert_eq!(reply.status, 200, "{path}");
    assert_eq!(reply.header("content-encoding"), Some("gzip"), "{path}");
    let identity = gunzip(&reply.body);
    (reply, identity)
}

async fn with_dictionary(app: &TestApp, path: &str, accept: &str, dictionary: &str) -> Reply {
    app.get_with(
        path,
        &[
            ("accept", accept),
            ("accept-encoding", "dcz, gzip"),
            ("available-dictionary", dictionary),
        ],
    )
    .await
}

#[tokio::test]
async fn a_delta_decodes_with_its_dictionary_to_the_current_body_in_every_representation() {
    // Every served version with a new ID is kept: each response is a dictionary.
    let app = TestApp::spawn_with(|s| s.delta_ids = 1).await;
    ingest(&app, &ids(0, 300)).await;
    let hour = start_hour();
    for suffixed in [true, false] {
        for (ext, accept) in REPRS {
            let path = match suffixed {
                true => format!("{}.{ext}", hour.path()),
                false => hour.path(),
            };
            let (first, dictionary) = full(&app, &path, accept).await;
            let kept = first.header("use-as-dictionary").expect("a dictionary");
            assert!(
                kept.starts_with(&format!("match=\"{path}\", id=\"")),
                "{kept}"
            );
            let vary = first.header("vary").unwrap();
            assert!(vary.contains("Accept-Encoding") && vary.contains("Available-Dictionary"));

            ingest(&app, &ids(300, 320)).await;
            let delta = with_dictionary(&app, &path, accept, &offer(&dictionary)).await;
            let (current, body) = full(&app, &path, accept).await;
            assert_eq!(delta.status, 200, "{path}");
            assert_eq!(delta.header("content-encoding"), Some("dcz"), "{path}");
            assert_eq!(delta.body[..8], dcz::MAGIC);
            let vary = delta.header("vary").unwrap();
            assert!(vary.contains("Accept-Encoding") && vary.contains("Available-Dictionary"));
            assert_eq!(delta.header("content-type"), current.header("content-type"));
            assert_eq!(
                dcz::decode(&dictionary, &delta.body).unwrap(),
                body,
                "{path}"
            );
            assert!(
                delta.body.len() * 3 < current.body.len(),
                "{path}: a delta is small: {} of {}",
                delta.body.len(),
                current.body.len()
            );

            // 304 wins, whatever the dictionary: the dcz tag and the plain one alike.
            for etag in [
                delta.header("etag").unwrap(),
                current.header("etag").unwrap(),
            ] {
                let again = app
                    .get_with(
                        &path,
                        &[
                            ("accept", accept),
                            ("accept-encoding", "dcz, gzip"),
                            ("available-dictionary", &offer(&dictionary)),
                            ("if-none-match", etag),
                        ],
                    )
                    .await;
                assert_eq!(again.status, 304, "{path} {etag}");
            }
            ingest(&app, &ids(320 + ext.len(), 321 + ext.len())).await;
        }
    }
}

#[tokio::test]
async fn unknown_expired_and_resized_dictionaries_fall_back_to_the_whole_body() {
    // Room for one .bin version only (an hour of capacity 3000 is ~3.6 kB as .bin), none
    // promised to linked dictionaries (tests/api/dictionaries.rs), so each goes for the next.
    let app = TestApp::spawn_with(|s| {
        s.delta_ids = 1;
        s.dictionary_max_age = 0;
        s.delta_bytes = 5000;
        s.capacity = 3000;
    })
    .await;
    let path = format!("{}.bin", start_hour().path());
    let accept = "application/octet-stream";
    ingest(&app, &ids(0, 100)).await;
    let (_, v0) = full(&app, &path, accept).await;
    ingest(&app, &ids(100, 110)).await;
    let (_, v1) = full(&app, &path, accept).await;
    ingest(&app, &ids(110, 120)).await;
    let (_, v2) = full(&app, &path, accept).await;

    let unknown = format!(
        ":{}:",
        base64::engine::general_purpose::STANDARD.encode([9u8; 32])
    );
    for (why, dictionary) in [("unknown", unknown), ("expired", offer(&v0))] {
        let reply = with_dictionary(&app, &path, accept, &dictionary).await;
        assert_eq!(reply.status, 200, "{why}");
        assert_eq!(reply.header("content-encoding"), Some("gzip"), "{why}");
        assert_eq!(gunzip(&reply.body), v2, "{why}");
    }
    // The one still kept (v2: it replaced v1) gives a delta; v1 went with the budget.
    let reply = with_dictionary(&app, &path, accept, &offer(&v2)).await;
    assert_eq!(reply.header("content-encoding"), Some("dcz"));
    assert_eq!(dcz::decode(&v2, &reply.body).unwrap(), v2);
    let reply = with_dictionary(&app, &path, accept, &offer(&v1)).await;
    assert_eq!(reply.header("content-encoding"), Some("gzip"));

    // The filter grows to a new `m`: the old version is no base for a delta.
    let before = app.get(&path).await;
    ingest(&app, &ids(1000, 9000)).await;
    let (after, v3) = full(&app, &path, accept).await;
    assert_ne!(
        before.header("bloom-m"),
        after.header("bloom-m"),
        "the filter grew"
    );
    let reply = with_dictionary(&app, &path, accept, &offer(&v2)).await;
    assert_eq!(reply.header("content-encoding"), Some("gzip"), "resized");
    assert_eq!(gunzip(&reply.body), v3);
}

#[tokio::test]
async fn a_closed_hour_is_served_whole_and_is_no_dictionary() {
    let app = TestApp::spawn_with(|s| s.delta_ids = 1).await;
    let path = format!("{}.bin", start_hour().path());
    let accept = "application/octet-stream";
    ingest(&app, &ids(0, 50)).await;
    let (_, open) = full(&app, &path, accept).await;
    ingest(&app, &ids(50, 60)).await;
    app.next_hour().await;
    let (closed, whole) = full(&app, &path, accept).await;
    assert_eq!(closed.header("use-as-dictionary"), None);
    assert_eq!(closed.header("vary"), Some("Accept, Accept-Encoding"));
    let reply = with_dictionary(&app, &path, accept, &offer(&open)).await;
    assert_eq!(reply.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&reply.body), whole, "its final bytes, whole");
}

#[tokio::test]
async fn deltas_need_dcz_in_accept_encoding() {
    let app = TestApp::spawn_with(|s| s.delta_ids = 1).await;
    let path = format!("{}.bin", start_hour().path());
    let accept = "application/octet-stream";
    ingest(&app, &ids(0, 50)).await;
    let (_, v0) = full(&app, &path, accept).await;
    ingest(&app, &ids(50, 60)).await;
    let reply = app
        .get_with(
            &path,
            &[
                ("accept-encoding", "gzip"),
                ("available-dictionary", &offer(&v0)),
            ],
        )
        .await;
    assert_eq!(reply.header("content-encoding"), Some("gzip"));
}
