//! Verifiable history over the router: `Repr-Digest` on every filter response, the
//! chain headers and signature on sealed hours, `GET /chain/...`, the well-known
//! document and the signing key file.

use crate::helpers::*;
use bloomcast::chain::{self, Claim, PublicKey};
use bloomcast::hour::Hour;

async fn public_key(app: &TestApp) -> PublicKey {
    let reply = app.get("/.well-known/bloomcast.json").await;
    assert_eq!(reply.status, 200);
    // Cached a minute at most: after a key rotation, caches list the new key soon.
    assert_eq!(reply.header("cache-control"), Some("max-age=60"));
    let json = reply.json();
    assert_eq!(json["chain_genesis"], "00".repeat(32));
    assert_eq!(json["signing_domain"], "bloomcast-hour-v1");
    json["public_key"].as_str().unwrap().parse().unwrap()
}

/// Three sealed hours (13, 14 empty, 15) and the open hour 16.
async fn three_sealed_hours() -> TestApp {
    let app = TestApp::spawn().await;
    app.ingest(&["a", "b"]).await;
    app.next_hour().await;
    app.next_hour().await;
    app.ingest(&["c"]).await;
    app.next_hour().await;
    app
}

fn hash(s: &str) -> chain::Hash {
    chain::parse_hex(s).unwrap_or_else(|| panic!("not 32 bytes of hex: {s:?}"))
}

#[tokio::test]
async fn every_filter_response_carries_the_digest_of_the_bytes_sent() {
    let app = three_sealed_hours().await;
    for path in ["/2008/09/03/13.bin", "/2008/09/03/16.hex", "/2008/09/03"] {
        let plain = app.get(path).await;
        plain.assert_digest_of_body(path);
        let gz = app.get_with(path, &[("accept-encoding", "gzip")]).await;
        assert_eq!(gz.header("content-encoding"), Some("gzip"), "{path}");
        gz.assert_digest_of_body(&format!(
            "{path}: the digest of the gzip bytes when gzip is sent"
        ));
    }
}

#[tokio::test]
async fn a_sealed_hour_verifies_with_the_published_key_and_the_open_hour_is_unsigned() {
    let app = three_sealed_hours().await;
    let key = public_key(&app).await;
    let mut prev = chain::GENESIS;
    for h in 13..16 {
        let reply = app.get(&format!("/2008/09/03/{h}.bin")).await;
        let hour = bloomcast::hour::hour_of(2008, 9, 3, h).unwrap();
        let field = chain::SignatureField::parse(reply.header("bloom-signature").unwrap()).unwrap();
        assert_eq!(field.key_id, Some(key.id()), "the signature names its key");
        let claim = Claim {
            hour: hour.rfc3339(),
            index: hour.index(),
            digest: chain::digest(&reply.body),
            prev: hash(reply.header("bloom-prev-header").unwrap()),
            signature: field.signature,
        };
        prev = claim
            .verify(&key, Some(&prev))
            .expect("a sealed hour verifies");
        // The JSON document carries the same `.bin` digest.
        let doc = app.get(&format!("/2008/09/03/{h}.json")).await.json();
        assert_eq!(doc["digest"], chain::hex(&claim.digest));
        assert!(app
            .get(&format!("/2008/09/03/{h}.json"))
            .await
            .header("bloom-signature")
            .is_some());
    }
    let open = app.get("/2008/09/03/16.bin").await;
    assert!(open.header("bloom-signature").is_none());
    assert!(open.header("repr-digest").is_some());
}

#[tokio::test]
async fn not_modified_and_head_still_work_on_signed_hours() {
    let app = three_sealed_hours().await;
    let first = app.get("/2008/09/03/13.bin").await;
    let etag = first.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/2008/09/03/13.bin", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let head = app
        .request(
            axum::http::Request::head("/2008/09/03/13.bin")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("bloom-signature"),
        first.header("bloom-signature")
    );
}

#[tokio::test]
async fn the_chain_lists_linked_signed_headers_in_pages() {
    let app = three_sealed_hours().await;
    let key = public_key(&app).await;
    let reply = app.get("/chain/2008/09/03/13").await;
    assert_eq!(reply.status, 200);
    let links = reply.json();
    let links = links.as_array().unwrap();
    assert_eq!(links.len(), 3, "{links:?}");
    let mut prev = chain::GENESIS;
    for (i, link) in links.iter().enumerate() {
        let hour =
            Hour::from_index(bloomcast::hour::hour_of(2008, 9, 3, 13).unwrap().index() + i as i64);
        assert_eq!(link["hour"], hour.rfc3339());
        assert_eq!(hash(link["prev"].as_str().unwrap()), prev);
        let header = hash(link["header"].as_str().unwrap());
        assert_eq!(
            chain::header(&hash(link["digest"].as_str().unwrap()), &prev),
            header
        );
        let sig = chain::parse_hex(link["signature"].as_str().unwrap()).unwrap();
        assert_eq!(link["key_id"], key.id().to_string());
        key.verify(&hour.rfc3339(), hour.index(), &header, &sig)
            .unwrap();
        prev = header;
    }
    assert_ne!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );

    let page = app.get("/chain/2008/09/03/13?limit=2").await;
    assert_eq!(page.json().as_array().unwrap().len(), 2);
    assert_eq!(
        page.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    assert_eq!(
        page.header("link"),
        Some("</chain/2008/09/03/15?limit=2>; rel=\"next\"")
    );
    app.get("/chain/2008/09/03/13?limit=0")
        .await
        .assert_error(400, "bad_request");
    app.get("/chain/2008/09/03/13?limit=x")
        .await
        .assert_error(400, "bad_request");
    app.get("/chain/2008/09/03/99")
        .await
        .assert_error(400, "invalid_hour");
    app.get("/chain/2030/01/01/00")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn the_chain_and_the_key_survive_a_restart() {
    let app = three_sealed_hours().await;
    let key = public_key(&app).await;
    let before = app.get("/chain/2008/09/03/13").await.body;
    let key_file = app
        .settings
        .data_dir
        .join(bloomcast::startup::SIGNING_KEY_FILE);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the key file is private");
    }
    let app = app.restart().await;
    assert_eq!(public_key(&app).await, key);
    assert_eq!(app.get("/chain/2008/09/03/13").await.body, before);
    app.next_hour().await;
    let links = app.get("/chain/2008/09/03/15").await.json();
    assert_eq!(
        links.as_array().unwrap().len(),
        2,
        "hour 16 linked after 15"
    );
    assert_eq!(links[1]["prev"], links[0]["header"]);
}

#[tokio::test]
async fn a_configured_key_file_is_used_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, format!("{}\n", "11".repeat(32))).unwrap();
    let app = TestApp::spawn_with(|s| s.signing_key_file = file.clone()).await;
    let expected = chain::Signer::from_seed(&[0x11; 32]).public_key();
    assert_eq!(public_key(&app).await, expected);

    std::fs::write(&file, "not a key").unwrap();
    let mut settings = settings(dir.path().join("data"));
    settings.signing_key_file = file;
    let built = bloomcast::startup::Application::build_with_clock(
        settings,
        std::sync::Arc::new(bloomcast::clock::ManualClock::at(
            start_hour(),
            chrono::Duration::minutes(1),
        )),
    )
    .await;
    assert!(built.is_err(), "a file that is not a key is refused");
}

/// As after `kill -9` between an hour's seal and its link, or a store from before the
/// chain: a sealed hour without a link is linked by the next seal, with the same header.
#[tokio::test]
async fn a_sealed_hour_left_without_its_link_is_linked_by_the_next_seal() {
    let app = three_sealed_hours().await;
    let before = app.get("/chain/2008/09/03/13").await.json();
    let db = app.settings.data_dir.join("bloomcast.sqlite3");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let gone = conn
        .execute(
            "DELETE FROM chain WHERE hour >= ?1",
            [bloomcast::hour::hour_of(2008, 9, 3, 14).unwrap().index()],
        )
        .unwrap();
    assert_eq!(gone, 2);
    drop(conn);
    let app = app.restart().await;
    app.next_hour().await;
    let after = app.get("/chain/2008/09/03/13").await.json();
    let after = after.as_array().unwrap();
    assert_eq!(after.len(), 4, "14 and 15 linked again, then 16: {after:?}");
    assert_eq!(&after[..3], before.as_array().unwrap().as_slice());
    assert_eq!(after[3]["prev"], after[2]["header"]);
}

/// A chain row that fails its checksum is never served: the hour is served unsigned (a
/// verifying client refuses it) and the listing answers 500 `corrupt`.
#[tokio::test]
async fn a_rotted_link_is_not_served_and_its_hour_goes_unsigned() {
    let app = three_sealed_hours().await;
    let db = app.settings.data_dir.join("bloomcast.sqlite3");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let changed = conn
        .execute(
            "UPDATE chain SET digest = zeroblob(32) WHERE hour = ?1",
            [bloomcast::hour::hour_of(2008, 9, 3, 14).unwrap().index()],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let app = app.restart().await;
    let hour = app.get("/2008/09/03/14.bin").await;
    assert_eq!(hour.status, 200, "the filter itself is intact");
    assert!(hour.header("bloom-signature").is_none());
    app.get("/chain/2008/09/03/13")
        .await
        .assert_error(500, "corrupt");
    let next = app.get("/2008/09/03/15.bin").await;
    assert!(
        next.header("bloom-signature").is_some(),
        "other hours stay signed"
    );
}

/// The clock faults of the faults issue: stepped back, the chain never changes; jumped
/// past retention, the hours never sealed leave a gap and the chain restarts from the
/// genesis value after it, which a verifying client accepts (and only there).
#[tokio::test]
async fn clock_steps_never_change_the_chain_and_a_jump_past_retention_restarts_it() {
    let app = TestApp::spawn_with(|s| s.retention_hours = 3).await;
    app.ingest(&["a"]).await;
    app.next_hour().await;
    app.next_hour().await; // 15:10; 13 and 14 sealed
    let before = app.get("/chain/2008/09/03/13").await.body;
    app.clock.advance(chrono::Duration::hours(-2));
    app.service.tick().await.unwrap();
    app.ingest(&["b"]).await;
    assert_eq!(app.get("/chain/2008/09/03/13").await.body, before);

    // 15 holds "b"; jump to 23:10: 15..=20 fall out of retention unsealed (as before the
    // chain: they are past retention), 21 and 22 are sealed and linked anew.
    app.clock.advance(chrono::Duration::hours(10));
    app.service.tick().await.unwrap();
    let links = app.get("/chain/2008/09/03/13").await.json();
    let hours: Vec<&str> = links
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["hour"].as_str().unwrap())
        .collect();
    assert_eq!(
        hours,
        [
            "2008-09-03T13:00:00Z",
            "2008-09-03T14:00:00Z",
            "2008-09-03T21:00:00Z",
            "2008-09-03T22:00:00Z"
        ]
    );
    assert_eq!(links[1]["prev"], links[0]["header"], "14 follows 13");
    assert_eq!(
        links[2]["prev"],
        "00".repeat(32),
        "21 restarts after the gap"
    );
    assert_eq!(links[3]["prev"], links[2]["header"]);
    let (_, twenty_one) = app.filter("/2008/09/03/21").await;
    assert!(!twenty_one.contains("b"));
}
