//! Damage an attacker with write access to the store would do, checksums recomputed so
//! that only the store's records and the hour chain can tell (issue "Faults, third
//! round"): every case answers 500 `corrupt` (listed by `/healthz`), never a body the
//! chain does not vouch for, and never a signature over one; everything the damage does
//! not touch is still served.

use crate::helpers::{ids, TestApp};
use axum::http::StatusCode;
use bloomcast::bloom::Key;
use bloomcast::hour::{hour_of, Hour};
use bloomcast::store::{blob_to_keys, exact_checksum, keys_to_blob, sealed_keys_checksum};
use rusqlite::params;

fn h(hour: u32) -> Hour {
    hour_of(2008, 9, 3, hour).unwrap()
}

/// Asserts `path` answers 500 `corrupt` with a message naming `hour`, and no signature.
async fn assert_corrupt_naming(app: &TestApp, path: &str, hour: &str) {
    let reply = app.get(path).await;
    reply.assert_error(500, "corrupt");
    let message = reply.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains(hour), "{path}: {message:?} names {hour}");
    assert!(reply.header("bloom-signature").is_none(), "{path}");
}

async fn assert_listed(app: &TestApp, hour: &str) {
    let json = app.get("/healthz").await.json();
    assert_eq!(json["status"], "degraded", "{json}");
    let listed = json["corrupt_hours"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(listed.iter().any(|h| h == hour), "{json}");
}

/// An app whose publisher registered `universe`, with hours 13 and 14 sealed (the
/// `changed` IDs of each) and 15 open.
async fn exact_app(universe: &[String], changed: [&[String]; 2]) -> TestApp {
    let app = TestApp::spawn().await;
    app.post_universe(universe).await;
    for ids in changed {
        app.ingest_all(ids).await;
        app.next_hour().await;
    }
    app
}

#[tokio::test]
async fn another_hours_exact_body_in_an_hours_row_is_corrupt_never_served_or_signed() {
    let universe = ids("user", 2_000);
    let app = exact_app(&universe, [&universe[..1000], &universe[1000..1010]]).await;
    let first = app.get("/2008/09/03/13.exact").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.header("bloom-signature").is_some());
    let conn = app.db();
    let other: Vec<u8> = conn
        .query_row(
            "SELECT body FROM exact_hours WHERE hour = ?1",
            [h(14).index()],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE exact_hours SET body = ?2, checksum = ?3 WHERE hour = ?1",
        params![h(13).index(), other, exact_checksum(h(13), &other)],
    )
    .unwrap();
    drop(conn);
    let app = app.restart().await;

    assert_corrupt_naming(&app, "/2008/09/03/13.exact", "2008-09-03T13:00:00Z").await;
    assert_listed(&app, "2008-09-03T13:00:00Z").await;
    // The hour's own filter and the other hour are untouched.
    assert_eq!(app.get("/2008/09/03/13.bin").await.status, StatusCode::OK);
    assert_eq!(app.get("/2008/09/03/14.exact").await.status, StatusCode::OK);
}

/// Replaces `n` of the sealed keys of `hour` by keys of IDs never published, with the
/// row's count and checksum kept consistent.
fn swap_sealed_keys(app: &TestApp, hour: Hour, n: usize) {
    let conn = app.db();
    let blob: Vec<u8> = conn
        .query_row(
            "SELECT keys FROM hours WHERE hour = ?1",
            [hour.index()],
            |r| r.get(0),
        )
        .unwrap();
    let mut keys = Vec::new();
    blob_to_keys(&blob, &mut keys).unwrap();
    for (i, key) in keys.iter_mut().take(n).enumerate() {
        *key = Key::of(&format!("forged:{i}"));
    }
    keys.sort_unstable();
    let blob = keys_to_blob(&keys);
    conn.execute(
        "UPDATE hours SET keys = ?2, keys_checksum = ?3 WHERE hour = ?1",
        params![hour.index(), blob, sealed_keys_checksum(hour, &blob)],
    )
    .unwrap();
}

#[tokio::test]
async fn keys_swapped_in_a_sealed_hour_build_no_form_and_its_filter_is_still_served() {
    let app = TestApp::spawn().await;
    let published = ids("post", 1_000);
    app.ingest_all(&published).await;
    app.next_hour().await;
    app.ingest(&["later:1"]).await;
    app.next_hour().await;
    swap_sealed_keys(&app, h(13), 100);
    let app = app.restart().await;

    // The sealed filter is what the chain vouches for: served, every ID in it.
    let (meta, filter) = app.filter("/2008/09/03/13").await;
    assert!(meta.complete);
    assert!(published.iter().all(|id| filter.contains(id)));
    for path in [
        "/2008/09/03/13.ribbon",
        "/2008/09/03/13.ribbon2",
        "/2008/09/03/13.ribbon.json",
        "/2008/09/03",
        "/since/2008/09/03/13",
    ] {
        assert_corrupt_naming(&app, path, "2008-09-03T13:00:00Z").await;
    }
    assert_listed(&app, "2008-09-03T13:00:00Z").await;
    // Forms of the hours the damage does not touch are served.
    assert_eq!(app.get("/since/2008/09/03/14").await.status, StatusCode::OK);
    assert_eq!(
        app.get("/2008/09/03/14.ribbon2").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_sealed_hours_keys_are_recorded_as_stored() {
    let app = TestApp::spawn().await;
    app.ingest_all(&ids("post", 500)).await;
    app.next_hour().await;
    let (blob, digest): (Vec<u8>, Vec<u8>) = app
        .db()
        .query_row(
            "SELECT h.keys, f.digest FROM hours h JOIN forms f
             ON f.from_hour = h.hour AND f.to_hour = h.hour AND f.form = 'keys'
             WHERE h.hour = ?1",
            [h(13).index()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(blob.len(), 500 * 8);
    assert_eq!(digest, bloomcast::chain::digest(&blob).to_vec());
}

#[tokio::test]
async fn keys_swapped_after_they_were_vouched_for_are_found_as_before() {
    let app = TestApp::spawn().await;
    app.ingest_all(&ids("post", 1_000)).await;
    app.next_hour().await;
    app.next_hour().await;
    // A build vouches for the hour's keys by its filter and records their digest.
    assert_eq!(
        app.get("/2008/09/03/13.ribbon2").await.status,
        StatusCode::OK
    );
    swap_sealed_keys(&app, h(13), 1);
    let app = app.restart().await;
    // The keys no longer match the digest: the filter is rebuilt from them, and differs.
    for path in ["/2008/09/03/13.ribbon", "/since/2008/09/03/13"] {
        assert_corrupt_naming(&app, path, "2008-09-03T13:00:00Z").await;
    }
    assert_listed(&app, "2008-09-03T13:00:00Z").await;
}

#[tokio::test]
async fn a_rebuild_whose_bytes_differ_from_the_bytes_first_served_is_corrupt() {
    let app = TestApp::spawn().await;
    app.ingest_all(&ids("post", 300)).await;
    app.next_hour().await;
    app.next_hour().await;
    for path in ["/2008/09/03/13.ribbon", "/2008/09/03/13.ribbon2"] {
        assert_eq!(app.get(path).await.status, StatusCode::OK, "{path}");
    }
    // Hour 15 is open: the day is not complete, so it has no record yet.
    let recorded = |app: &TestApp, which: &str| -> i64 {
        let sql = format!("SELECT count(*) FROM forms WHERE {which}");
        app.db().query_row(&sql, [], |r| r.get(0)).unwrap()
    };
    assert_eq!(
        recorded(&app, "form <> 'keys'"),
        2,
        "one record per form served"
    );
    assert_eq!(
        recorded(
            &app,
            &format!(
                "form = 'keys' AND from_hour IN ({}, {})",
                h(13).index(),
                h(14).index()
            )
        ),
        2,
        "each sealed hour's keys, recorded at its seal"
    );
    // What was first served, as the record holds it, is not what a build makes now.
    app.tamper("UPDATE forms SET digest = zeroblob(32)");
    let app = app.restart().await;
    for path in ["/2008/09/03/13.ribbon", "/2008/09/03/13.ribbon2"] {
        assert_corrupt_naming(&app, path, "2008-09-03T13:00:00Z").await;
    }
    // A form never served is recorded as now built and served.
    let fresh = app.get("/2008/09/03/13.ribbon?fpp=0.001").await;
    assert_eq!(fresh.status, StatusCode::OK);
}

#[tokio::test]
async fn a_complete_day_is_recorded_and_a_different_rebuild_is_refused() {
    let app = TestApp::spawn().await;
    app.ingest_all(&ids("post", 200)).await;
    // The day of 2008-09-03 ends; the service moves to the next one.
    app.clock.advance(chrono::Duration::hours(11));
    app.service.tick().await.unwrap();
    let day = app.get("/2008/09/03.bin").await;
    assert_eq!(day.status, StatusCode::OK);
    assert_eq!(day.header("bloom-complete"), Some("true"));
    let form: String = app
        .db()
        .query_row("SELECT form FROM forms WHERE form <> 'keys'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(form, "bloom");
    app.tamper("UPDATE forms SET digest = zeroblob(32)");
    let app = app.restart().await;
    app.get("/2008/09/03.bin")
        .await
        .assert_error(500, "corrupt");
    app.get("/2008/09/03").await.assert_error(500, "corrupt");
}

#[tokio::test]
async fn universe_rows_deleted_or_moved_make_exact_hours_corrupt_never_false_positives() {
    let universe = ids("user", 2_000);
    let damages = [
        // Rows gone: the tally the seal recorded no longer adds up.
        "DELETE FROM universe WHERE key IN (SELECT key FROM universe LIMIT 100)".to_owned(),
        // Moved 100 hours on: each row fails its checksum.
        "UPDATE universe SET added = added + 100 WHERE key IN (SELECT key FROM universe LIMIT 50)"
            .to_owned(),
        // The universe's first hour lost: damage, not "no universe".
        "DELETE FROM meta WHERE name = 'universe_since'".to_owned(),
    ];
    for damage in &damages {
        let app = exact_app(&universe, [&universe[..20], &universe[20..40]]).await;
        assert_eq!(app.get("/2008/09/03/13.exact").await.status, StatusCode::OK);
        // Not kept: built again from the universe as stored now.
        app.tamper(&format!("DELETE FROM exact_hours; {damage}"));
        let app = app.restart().await;
        for path in ["/2008/09/03/13.exact", "/2008/09/03/14.exact"] {
            let reply = app.get(path).await;
            reply.assert_error(500, "corrupt");
        }
        assert_listed(&app, "2008-09-03T13:00:00Z").await;
        // The Bloom forms do not depend on the universe.
        assert_eq!(
            app.get("/2008/09/03/13.bin").await.status,
            StatusCode::OK,
            "{damage}"
        );
    }
}

#[tokio::test]
async fn universe_rows_moved_with_their_checksums_recomputed_are_found_by_the_tally() {
    let universe = ids("user", 2_000);
    let app = exact_app(&universe, [&universe[..20], &universe[20..40]]).await;
    let conn = app.db();
    let moved: Vec<i64> = conn
        .prepare("SELECT key FROM universe LIMIT 30")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let later = h(13).index() + 100;
    for key in moved {
        let sum =
            bloomcast::store::universe_checksum(Hour::from_index(later), Key::from_u64(key as u64));
        conn.execute(
            "UPDATE universe SET added = ?2, checksum = ?3 WHERE key = ?1",
            params![key, later, sum],
        )
        .unwrap();
    }
    conn.execute_batch("DELETE FROM exact_hours").unwrap();
    drop(conn);
    let app = app.restart().await;
    assert_corrupt_naming(&app, "/2008/09/03/13.exact", "2008-09-03T13:00:00Z").await;
}

#[tokio::test]
async fn a_closed_hour_with_no_row_and_no_link_is_corrupt_in_every_form_and_union() {
    let app = TestApp::spawn().await;
    let published = ids("post", 300);
    app.post_universe(&published).await;
    app.ingest_all(&published).await;
    app.next_hour().await;
    assert_eq!(app.get("/2008/09/03/13").await.status, StatusCode::OK);
    let h13 = h(13).index();
    app.tamper(&format!(
        "DELETE FROM hours WHERE hour = {h13}; DELETE FROM chain WHERE hour = {h13};
             DELETE FROM exact_hours WHERE hour = {h13};"
    ));
    let app = app.restart().await;
    for path in [
        "/2008/09/03/13",
        "/2008/09/03/13.bin",
        "/2008/09/03/13.hex",
        "/2008/09/03/13.ribbon",
        "/2008/09/03/13.ribbon2",
        "/2008/09/03/13.exact",
        "/2008/09/03",
        "/since/2008/09/03/13",
    ] {
        assert_corrupt_naming(&app, path, "2008-09-03T13:00:00Z").await;
    }
    assert_listed(&app, "2008-09-03T13:00:00Z").await;
    // Housekeeping seals nothing empty in its place.
    let _ = app.service.tick().await;
    let sealed: i64 = app
        .db()
        .query_row("SELECT count(*) FROM hours WHERE hour = ?1", [h13], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(sealed, 0);
    // The open hour goes on.
    app.ingest(&["after:1"]).await;
    assert_eq!(app.get("/2008/09/03/14").await.status, StatusCode::OK);
}

#[tokio::test]
async fn every_sealed_row_and_link_deleted_leaves_no_hour_served_empty() {
    let app = TestApp::spawn().await;
    app.post_universe(&ids("user", 50)).await;
    for hour in 0..3 {
        app.ingest_all(&ids(&format!("h{hour}"), 100)).await;
        app.next_hour().await;
    }
    app.tamper("DELETE FROM hours; DELETE FROM chain; DELETE FROM exact_hours;");
    let app = app.restart().await;
    for hour in 13..16 {
        let path = format!("/2008/09/03/{hour}");
        let name = format!("2008-09-03T{hour}:00:00Z");
        assert_corrupt_naming(&app, &path, &name).await;
        assert_corrupt_naming(&app, &format!("{path}.exact"), &name).await;
    }
}

#[tokio::test]
async fn a_sealed_row_whose_link_is_gone_while_later_hours_are_linked_is_corrupt() {
    let app = TestApp::spawn().await;
    for hour in 0..3 {
        app.ingest_all(&ids(&format!("h{hour}"), 100)).await;
        app.next_hour().await;
    }
    app.tamper(&format!("DELETE FROM chain WHERE hour = {}", h(14).index()));
    let app = app.restart().await;
    assert_corrupt_naming(&app, "/2008/09/03/14", "2008-09-03T14:00:00Z").await;
    assert_corrupt_naming(&app, "/2008/09/03/14.ribbon2", "2008-09-03T14:00:00Z").await;
    for path in ["/2008/09/03/13", "/2008/09/03/15", "/since/2008/09/03/15"] {
        assert_eq!(app.get(path).await.status, StatusCode::OK, "{path}");
    }
    assert_listed(&app, "2008-09-03T14:00:00Z").await;
}

#[tokio::test]
async fn an_hours_ribbons_are_signed_bound_to_its_chain_place_and_a_days_are_not() {
    use bloomcast::chain::{self, BodyForm, PublicKey};
    let app = TestApp::spawn().await;
    app.ingest_all(&ids("post", 200)).await;
    app.next_hour().await;
    let well_known = app.get("/.well-known/bloomcast.json").await.json();
    let key: PublicKey = well_known["public_key"].as_str().unwrap().parse().unwrap();
    let entry = &app.get("/chain/2008/09/03/13?limit=1").await.json()[0];
    let header: [u8; 32] = chain::parse_hex(entry["header"].as_str().unwrap()).unwrap();
    let signature_of = |reply: &crate::helpers::Reply| -> [u8; 64] {
        let field = reply.header("bloom-signature").expect("signed");
        chain::parse_hex(field.split(';').next().unwrap()).unwrap()
    };
    let index = h(13).index();
    for (path, form) in [
        ("/2008/09/03/13.ribbon", BodyForm::Ribbon),
        ("/2008/09/03/13.ribbon?fpp=0.001", BodyForm::Ribbon),
        ("/2008/09/03/13.ribbon2", BodyForm::Ribbon2),
    ] {
        let reply = app.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(
            reply.header("bloom-prev-header"),
            entry["prev"].as_str(),
            "{path}"
        );
        let signature = signature_of(&reply);
        key.verify_body(form, path, index, &header, &reply.body, &signature)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        // Not a signature of the hour's filter, nor of the other ribbon version.
        let other = match form {
            BodyForm::Ribbon => BodyForm::Ribbon2,
            _ => BodyForm::Ribbon,
        };
        assert!(key
            .verify_body(other, path, index, &header, &reply.body, &signature)
            .is_err());
        assert!(key.verify(path, index, &header, &signature).is_err());
    }
    // The JSON form carries the same body, with the same signature.
    let json = app.get("/2008/09/03/13.ribbon.json").await;
    let binary = app.get("/2008/09/03/13.ribbon").await;
    assert_eq!(signature_of(&json), signature_of(&binary));
    // A past day is a union: not in the chain, not signed.
    app.clock.advance(chrono::Duration::hours(11));
    app.service.tick().await.unwrap();
    let day = app.get("/2008/09/03.ribbon2").await;
    assert_eq!(day.status, StatusCode::OK);
    assert!(day.header("bloom-signature").is_none());
}
