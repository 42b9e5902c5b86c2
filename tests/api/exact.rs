//! Exact hours (docs/PROTOCOL.md section 14): the universe (`POST`/`GET /universe`),
//! `.exact` bodies that answer every universe ID exactly, their caching headers and
//! signature, and what bad requests get.

use crate::helpers::{TestApp, TOKEN};
use axum::body::Body;
use axum::http::Request;
use bloomcast::bloom::Key;
use bloomcast::chain::{self, PublicKey};
use bloomcast::exact::Exact;

const EXACT: &str = "application/vnd.bloomcast.exact";

async fn post_universe(
    app: &TestApp,
    ids: &[String],
    token: Option<&str>,
) -> crate::helpers::Reply {
    let body = serde_json::to_vec(&serde_json::json!({ "ids": ids })).unwrap();
    let mut req = Request::post("/universe").header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    app.request(req.body(Body::from(body)).unwrap()).await
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

#[tokio::test]
async fn every_universe_id_gets_the_true_answer_in_a_sealed_hour() {
    let app = TestApp::spawn().await;
    let universe = ids("user", 5_000);
    let reply = post_universe(&app, &universe, Some(TOKEN)).await;
    reply.assert_status(200);
    assert_eq!(reply.json()["count"], 5_000);
    assert_eq!(reply.json()["accepted"], 5_000);
    assert_eq!(reply.header("cache-control"), Some("private, no-store"));
    // 1% of the universe changes, and two IDs the universe did not have.
    let changed: Vec<&str> = universe.iter().step_by(100).map(String::as_str).collect();
    app.ingest(&changed).await;
    app.ingest(&["new:1", "new:2"]).await;
    app.next_hour().await;

    let reply = app.get("/2008/09/03/13.exact").await;
    reply.assert_status(200);
    assert_eq!(reply.header("content-type"), Some(EXACT));
    assert_eq!(reply.header("bloom-count"), Some("52"));
    assert_eq!(reply.header("bloom-universe"), Some("5002"));
    assert_eq!(reply.header("bloom-complete"), Some("true"));
    assert_eq!(
        reply.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    reply.assert_digest_of_body("exact");
    let exact = Exact::from_bytes(&reply.body).unwrap();
    for id in &universe {
        assert_eq!(exact.changed_id(id), changed.contains(&id.as_str()), "{id}");
    }
    assert!(exact.changed_id("new:1") && exact.changed_id("new:2"));
    // Ingested IDs joined the universe when their hour was sealed.
    let info = app
        .get_with(
            "/universe",
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    assert_eq!(info.json()["count"], 5_002);
    assert_eq!(info.json()["since"], "2008-09-03T13:00:00Z");
    // Smaller than the Bloom filter's gzip bytes at 1%, header included.
    let bin = app
        .get_with("/2008/09/03/13.bin", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(bin.header("content-encoding"), Some("gzip"));
    assert!(
        reply.body.len() < bin.body.len(),
        "{} vs {}",
        reply.body.len(),
        bin.body.len()
    );
}

#[tokio::test]
async fn the_body_is_immutable_revalidates_and_survives_a_restart() {
    let app = TestApp::spawn().await;
    post_universe(&app, &ids("u", 300), Some(TOKEN)).await;
    app.ingest(&["u:1", "u:2"]).await;
    app.next_hour().await;
    let first = app.get("/2008/09/03/13.exact").await;
    assert_eq!(first.status, 200);
    let etag = first.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/2008/09/03/13.exact", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    // Accept negotiates the same bytes on the plain path.
    let by_accept = app.get_with("/2008/09/03/13", &[("accept", EXACT)]).await;
    assert_eq!(by_accept.status, 200);
    assert_eq!(by_accept.body, first.body);
    // IDs added after the hour was sealed do not change its bytes, here or after a restart.
    post_universe(&app, &ids("later", 1000), Some(TOKEN)).await;
    assert_eq!(app.get("/2008/09/03/13.exact").await.body, first.body);
    let app = app.restart().await;
    let reply = app.get("/2008/09/03/13.exact").await;
    assert_eq!(reply.body, first.body);
    assert_eq!(reply.header("etag"), Some(etag.as_str()));
    // The index says where exact bodies start and how large a built one is.
    let index = app.get("/").await.json();
    assert_eq!(index["exact_since"], "2008-09-03T13:00:00Z");
    let line = &index["hours"][1];
    assert_eq!(line["hour"], "2008-09-03T13:00:00Z");
    assert_eq!(line["exact_bytes"], first.body.len());
}

#[tokio::test]
async fn the_signature_covers_the_body_under_the_hours_chain_header() {
    let app = TestApp::spawn().await;
    post_universe(&app, &ids("s", 100), Some(TOKEN)).await;
    app.ingest(&["s:5"]).await;
    app.next_hour().await;
    let reply = app.get("/2008/09/03/13.exact").await;
    assert_eq!(reply.status, 200);
    let well_known = app.get("/.well-known/bloomcast.json").await.json();
    let key: PublicKey = well_known["public_key"].as_str().unwrap().parse().unwrap();
    let entry = &app.get("/chain/2008/09/03/13?limit=1").await.json()[0];
    let header: [u8; 32] = chain::parse_hex(entry["header"].as_str().unwrap()).unwrap();
    let field = reply
        .header("bloom-signature")
        .expect("a signed service signs it");
    let signature: [u8; 64] = chain::parse_hex(field.split(';').next().unwrap()).unwrap();
    let hour = bloomcast::hour::hour_of(2008, 9, 3, 13).unwrap();
    key.verify_exact("13", hour.index(), &header, &reply.body, &signature)
        .expect("verifies");
    let mut tampered = reply.body.clone();
    *tampered.last_mut().unwrap() ^= 1;
    assert!(key
        .verify_exact("13", hour.index(), &header, &tampered, &signature)
        .is_err());
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let app = TestApp::spawn().await;
    // No universe yet: 404, and GET /universe says so.
    app.ingest(&["a"]).await;
    app.next_hour().await;
    app.get("/2008/09/03/13.exact")
        .await
        .assert_error(404, "not_found");
    let none = app
        .get_with(
            "/universe",
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    assert_eq!(none.json(), serde_json::json!({"count": 0, "since": null}));
    // The token is needed for both verbs.
    post_universe(&app, &ids("x", 3), None)
        .await
        .assert_error(401, "unauthorized");
    post_universe(&app, &ids("x", 3), Some("wrong-token"))
        .await
        .assert_error(401, "unauthorized");
    app.get("/universe").await.assert_error(401, "unauthorized");
    // Bodies as /updates refuses them.
    let empty = Request::post("/universe")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::from("{\"ids\": [\"\"]}"))
        .unwrap();
    app.request(empty).await.assert_error(400, "bad_request");
    // A body with nothing in it, as /updates answers it.
    for route in ["/universe", "/updates"] {
        let nothing = Request::post(route)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        app.request(nothing).await.assert_error(400, "bad_request");
    }
    let xml = Request::post("/universe")
        .header("content-type", "application/xml")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::from("<ids/>"))
        .unwrap();
    app.request(xml)
        .await
        .assert_error(415, "unsupported_media_type");
    // Created now: the hour sealed before it has no exact body; the open hour is 406.
    assert_eq!(
        post_universe(&app, &ids("x", 3), Some(TOKEN)).await.status,
        200
    );
    app.get("/2008/09/03/13.exact")
        .await
        .assert_error(404, "not_found");
    app.get("/2008/09/03/14.exact")
        .await
        .assert_error(406, "not_acceptable");
    app.next_hour().await;
    assert_eq!(app.get("/2008/09/03/14.exact").await.status, 200);
    app.get("/2008/09/03/14.exact?fpp=0.01")
        .await
        .assert_error(400, "bad_request");
    // Today includes the open hour; a since-range from the open hour holds no sealed one.
    app.get("/2008/09/03.exact")
        .await
        .assert_error(406, "not_acceptable");
    app.get("/since/2008/09/03/15.exact")
        .await
        .assert_error(406, "not_acceptable");
    app.get("/2008/09/03/23.exact")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn a_batch_past_max_universe_ids_is_refused_whole() {
    let app = TestApp::spawn_with(|s| s.max_universe_ids = 100).await;
    assert_eq!(
        post_universe(&app, &ids("a", 60), Some(TOKEN)).await.status,
        200
    );
    let reply = post_universe(&app, &ids("b", 50), Some(TOKEN)).await;
    reply.assert_error(507, "universe_full");
    let info = app
        .get_with(
            "/universe",
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    assert_eq!(
        info.json()["count"],
        60,
        "nothing of the refused batch was recorded"
    );
    // Adding IDs already there is idempotent and fits.
    let again = post_universe(&app, &ids("a", 60), Some(TOKEN)).await;
    assert_eq!(again.json()["count"], 60);
    assert_eq!(
        post_universe(&app, &ids("b", 40), Some(TOKEN)).await.json()["count"],
        100
    );
}

#[tokio::test]
async fn a_rotten_exact_body_is_built_again_with_the_same_bytes() {
    let app = TestApp::spawn().await;
    post_universe(&app, &ids("r", 2000), Some(TOKEN)).await;
    let changed: Vec<String> = ids("r", 2000).into_iter().step_by(7).collect();
    let refs: Vec<&str> = changed.iter().map(String::as_str).collect();
    app.ingest(&refs).await;
    app.next_hour().await;
    let first = app.get("/2008/09/03/13.exact").await;
    assert_eq!(first.status, 200);
    // IDs added later are left out of a rebuild too: it reads the universe as it stood
    // when the hour was sealed.
    post_universe(&app, &ids("late", 500), Some(TOKEN)).await;
    let db = crate::corruption::db_file(&app.settings.data_dir);
    let hour = bloomcast::hour::hour_of(2008, 9, 3, 13).unwrap().index();
    crate::corruption::flip_bit(&db, "exact_hours", "body", "hour", hour, 20);
    let app = app.restart().await;
    let again = app.get("/2008/09/03/13.exact").await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body, "the same bytes, built again");
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(
        metrics.contains("bloomcast_corrupt_found_total 1"),
        "the rot is counted"
    );
}

#[tokio::test]
async fn accept_gets_the_exact_form_even_when_the_v1_rendering_is_cached() {
    let app = TestApp::spawn().await;
    post_universe(&app, &ids("f", 200), Some(TOKEN)).await;
    app.ingest(&["f:3"]).await;
    app.next_hour().await;
    // Read as v1 first, twice, so its v1 rendering is cached: it must not answer.
    for _ in 0..2 {
        assert_eq!(app.get("/2008/09/03/13").await.status, 200);
    }
    let reply = app.get_with("/2008/09/03/13", &[("accept", EXACT)]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some(EXACT));
    assert!(Exact::from_bytes(&reply.body).unwrap().changed_id("f:3"));
}

#[tokio::test]
async fn after_a_restart_the_index_lists_the_stored_exact_bodies_sizes_before_any_is_served() {
    let app = TestApp::spawn().await;
    post_universe(&app, &ids("r", 500), Some(TOKEN)).await;
    app.ingest(&["r:1", "r:2"]).await;
    app.next_hour().await;
    app.ingest(&["r:3"]).await;
    app.next_hour().await;
    let app = app.restart().await;

    // Nothing served since the restart: the sizes are the stored bodies'.
    let index = app.get("/").await.json();
    let listed = |hour: &str| {
        index["hours"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["hour"] == hour)
            .unwrap()["exact_bytes"]
            .clone()
    };
    let (at_13, at_14) = (
        listed("2008-09-03T13:00:00Z"),
        listed("2008-09-03T14:00:00Z"),
    );
    assert_eq!(
        index["hours"][0]["exact_bytes"],
        serde_json::Value::Null,
        "open"
    );
    for (path, listed) in [
        ("/2008/09/03/13.exact", at_13),
        ("/2008/09/03/14.exact", at_14),
    ] {
        let body = app.get(path).await;
        assert_eq!(body.status, 200);
        assert_eq!(listed, body.body.len(), "{path}");
    }
}

#[tokio::test]
async fn a_since_range_and_a_past_day_answer_every_universe_id_exactly() {
    let app = TestApp::spawn().await;
    // The universe from 2008-09-03T23 on, so that the next day is all after it.
    app.clock.advance(chrono::Duration::hours(10));
    app.service.tick().await.unwrap();
    let universe = ids("u", 2_000);
    assert_eq!(
        post_universe(&app, &universe, Some(TOKEN)).await.status,
        200
    );
    // Four sealed hours of the next day (overlapping), then an open one.
    let mut changed = std::collections::BTreeSet::new();
    app.next_hour().await;
    for hour in 0..4 {
        let ids: Vec<&str> = (universe.iter().skip(hour * 30).step_by(7).take(40))
            .map(String::as_str)
            .collect();
        changed.extend(ids.iter().map(|id| id.to_string()));
        app.ingest(&ids).await;
        app.next_hour().await;
    }
    app.ingest(&["u:1999", "open:only"]).await;
    let changed_in = |id: &str| changed.contains(id);

    let since = app.get("/since/2008/09/04/00.exact").await;
    since.assert_status(200);
    assert_eq!(since.header("content-type"), Some(EXACT));
    assert_eq!(since.header("bloom-from"), Some("2008-09-04T00:00:00Z"));
    assert_eq!(since.header("bloom-to"), Some("2008-09-04T03:00:00Z"));
    assert_eq!(
        since.header("bloom-count"),
        Some(changed.len().to_string().as_str())
    );
    assert_eq!(since.header("bloom-universe"), Some("2000"));
    assert!(since.header("bloom-hour").is_none());
    // Fresh until the open hour closes, as a since-range's version 2 body.
    let cache = since.header("cache-control").unwrap();
    assert!(cache.starts_with("max-age="), "{cache}");
    since.assert_digest_of_body("exact");
    let exact = Exact::from_bytes(&since.body).unwrap();
    for id in &universe {
        assert_eq!(exact.changed_id(id), changed_in(id), "{id}");
    }
    // An ID of the open hour alone is the open hour's to say, read on its own.
    assert!(!changed_in("u:1999") && !exact.changed_id("u:1999"));
    let etag = since.header("etag").unwrap().to_owned();
    let again = app
        .get_with("/since/2008/09/04/00.exact", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, 304);
    // A range from a later hour is its own body; by Accept on the plain path, the same.
    let later = app.get("/since/2008/09/04/02.exact").await;
    assert_eq!(later.header("bloom-from"), Some("2008-09-04T02:00:00Z"));
    let by_accept = app
        .get_with("/since/2008/09/04/00", &[("accept", EXACT)])
        .await;
    assert_eq!(by_accept.body, since.body);
    // Once the open hour closes, the range holds it too.
    app.next_hour().await;
    let grown = app.get("/since/2008/09/04/00.exact").await;
    assert_eq!(grown.header("bloom-to"), Some("2008-09-04T04:00:00Z"));
    let grown = Exact::from_bytes(&grown.body).unwrap();
    assert!(grown.changed_id("u:1999") && grown.changed_id("open:only"));

    // A past day, once it is over: every hour of it, with its keys' universe.
    app.clock.advance(chrono::Duration::hours(20));
    app.service.tick().await.unwrap();
    let day = app.get("/2008/09/04.exact").await;
    day.assert_status(200);
    assert_eq!(day.header("bloom-from"), Some("2008-09-04T00:00:00Z"));
    assert_eq!(day.header("bloom-to"), Some("2008-09-04T23:00:00Z"));
    assert_eq!(
        day.header("cache-control"),
        Some("max-age=31536000, immutable")
    );
    let day = Exact::from_bytes(&day.body).unwrap();
    for id in &universe {
        assert_eq!(day.changed_id(id), changed_in(id) || id == "u:1999", "{id}");
    }
    assert_eq!(
        day.universe(),
        2_001,
        "open:only joined when its hour was sealed"
    );

    // What cannot have an exact form says why.
    app.get("/since/2008/09/03/22.exact")
        .await
        .assert_error(404, "not_found");
    app.get("/2008/09/03.exact")
        .await
        .assert_error(404, "not_found");
    app.get("/since/2008/09/04/00.exact?fpp=0.01")
        .await
        .assert_error(400, "bad_request");
    app.get("/since/2030/01/01/00.exact")
        .await
        .assert_error(400, "invalid_hour");
}

#[tokio::test]
async fn most_of_the_universe_changed_gets_a_complemented_body_and_a_range_first_served_uncomplemented_keeps_its_bytes(
) {
    let app = TestApp::spawn().await;
    let universe = ids("c", 300);
    post_universe(&app, &universe, Some(TOKEN)).await;
    // Two of every three IDs change in the first hour, a few more in the second.
    let first: Vec<&str> = universe.iter().take(200).map(String::as_str).collect();
    app.ingest(&first).await;
    app.next_hour().await;
    app.ingest(&["c:250", "c:251"]).await;
    app.next_hour().await;
    let changed = |id: &str| first.contains(&id) || id == "c:250" || id == "c:251";

    let hour = app.get("/2008/09/03/13.exact").await;
    hour.assert_status(200);
    assert_eq!(hour.body[4], 2, "a complemented body is version 2");
    let since = app.get("/since/2008/09/03/13.exact").await;
    since.assert_status(200);
    assert_eq!(since.body[4], 2);
    let exact = Exact::from_bytes(&since.body).unwrap();
    assert!(exact.complemented());
    assert_eq!(since.header("bloom-count"), Some("202"));
    for id in &universe {
        assert_eq!(exact.changed_id(id), changed(id), "{id}");
    }

    // A server before version 2 recorded the range's version 1 body: rebuilt after a
    // restart, the range is served in the form first served, not reported corrupt.
    let keys: Vec<Key> = universe.iter().map(|id| Key::of(id)).collect();
    let changed_keys: Vec<Key> = universe
        .iter()
        .filter(|id| changed(id))
        .map(|id| Key::of(id))
        .collect();
    let old = Exact::build_over_uncomplemented(&keys, &changed_keys)
        .unwrap()
        .to_bytes();
    assert_eq!(old[4], 1);
    assert!(old.len() > since.body.len());
    let db = crate::corruption::db_file(&app.settings.data_dir);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let from = bloomcast::hour::hour_of(2008, 9, 3, 13).unwrap().index();
    let updated = conn
        .execute(
            "UPDATE forms SET digest = ?1 WHERE from_hour = ?2 AND form = 'exact' \
             AND to_hour = ?2 + 1",
            rusqlite::params![&chain::digest(&old)[..], from],
        )
        .unwrap();
    assert_eq!(updated, 1);
    drop(conn);
    let app = app.restart().await;
    let again = app.get("/since/2008/09/03/13.exact").await;
    again.assert_status(200);
    assert_eq!(again.body, old);
    let metrics = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(
        metrics.contains("bloomcast_corrupt_found_total 0"),
        "{metrics}"
    );
}
