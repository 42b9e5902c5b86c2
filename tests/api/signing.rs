//! Signatures kept in the store, over the router: an hour's signature is made once, by
//! the key registered for the hour, and only by a node holding that key; a stored
//! signature that fails verification is never served.

use crate::helpers::*;
use bloomcast::chain::{self, Signer};
use bloomcast::hour::{hour_of, Hour};

fn hour(h: u32) -> Hour {
    hour_of(2008, 9, 3, h).unwrap()
}

/// Hours 13, 14 and 15 sealed, signed with the key of seed 1 held in a key file.
async fn sealed_with_key(dir: &tempfile::TempDir) -> TestApp {
    let file = dir.path().join("key");
    std::fs::write(&file, chain::hex(&[1; 32])).unwrap();
    let app = TestApp::spawn_with(|s| s.signing_key_file = file.clone()).await;
    for id in ["a", "b", "c"] {
        app.ingest(&[id]).await;
        app.next_hour().await;
    }
    assert!(app
        .get("/2008/09/03/15.bin")
        .await
        .header("bloom-signature")
        .is_some());
    app
}

fn use_key(dir: &tempfile::TempDir, seed: u8) {
    std::fs::write(dir.path().join("key"), chain::hex(&[seed; 32])).unwrap();
}

fn db(app: &TestApp) -> rusqlite::Connection {
    rusqlite::Connection::open(app.settings.data_dir.join("bloomcast.sqlite3")).unwrap()
}

#[tokio::test]
async fn an_unsigned_old_hour_is_signed_only_by_a_node_holding_the_key_registered_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    // As for hours sealed before signatures were stored.
    let gone = db(&app).execute("DELETE FROM signatures", []).unwrap();
    assert_eq!(gone, 3);
    use_key(&dir, 2);
    let app = app.restart().await;

    let old = app.get("/2008/09/03/14.bin").await;

    assert_eq!(old.status, 200);
    assert!(
        old.header("bloom-signature").is_none(),
        "key 2 does not sign key 1's hours"
    );
    let listed = app.get("/chain/2008/09/03/13").await.json();
    assert!(listed
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["signature"].is_null()));
    let keys = app.get("/.well-known/bloomcast.json").await.json()["keys"].clone();
    assert_eq!(keys[0]["last_hour"], hour(15).rfc3339());
    assert_eq!(keys[1]["first_hour"], hour(16).rfc3339());

    // Key 1 back (retired, yet registered for these hours): it signs them, once.
    use_key(&dir, 1);
    let app = app.restart().await;
    let signed = app.get("/2008/09/03/14.bin").await;
    let field = chain::SignatureField::parse(signed.header("bloom-signature").unwrap()).unwrap();
    let key1 = Signer::from_seed(&[1; 32]).public_key();
    assert_eq!(field.key_id, Some(key1.id()));
    let stored: Vec<u8> = db(&app)
        .query_row(
            "SELECT signature FROM signatures WHERE hour = ?1",
            [hour(14).index()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        stored,
        field.signature.to_vec(),
        "the signature served is the one stored"
    );
}

#[tokio::test]
async fn a_stored_signature_that_fails_verification_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    let changed = db(&app)
        .execute(
            "UPDATE signatures SET signature = zeroblob(64) WHERE hour = ?1",
            [hour(14).index()],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let app = app.restart().await;

    let rotten = app.get("/2008/09/03/14.bin").await;

    assert_eq!(rotten.status, 200, "the filter itself is intact");
    assert!(rotten.header("bloom-signature").is_none());
    let next = app.get("/2008/09/03/15.bin").await;
    assert!(
        next.header("bloom-signature").is_some(),
        "other hours stay signed"
    );
}

#[tokio::test]
async fn hours_left_unsigned_are_signed_at_start_by_the_node_holding_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    let gone = db(&app).execute("DELETE FROM signatures", []).unwrap();
    assert_eq!(gone, 3);

    let app = app.restart().await;

    // Nothing is served: the start signs them (in the background, after loading).
    crate::wait::eventually("hours 13, 14 and 15 signed again", || {
        let stored: i64 = db(&app)
            .query_row("SELECT count(*) FROM signatures", [], |r| r.get(0))
            .unwrap();
        stored == 3
    })
    .await;
    let key1 = Signer::from_seed(&[1; 32]).public_key();
    let listed = app.get("/chain/2008/09/03/13").await.json();
    for entry in listed.as_array().unwrap() {
        assert_eq!(entry["key_id"], key1.id().to_string());
    }
}

/// The key list the well-known document serves, parsed as a client reads it.
async fn listed_keys(app: &TestApp) -> chain::KeyList {
    let wk = app.get("/.well-known/bloomcast.json").await.json();
    bloomcast::client::parse_key_list(&wk["keys"]).unwrap()
}

#[tokio::test]
async fn rotate_key_signs_the_succession_both_ways_so_either_key_trusts_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    let (settings, clock) = (app.settings.clone(), app.clock.clone());
    let (rotated, recorded) = bloomcast::startup::rotate_key_recorded(&settings, &clock)
        .await
        .unwrap();
    let (listed, old) = (recorded.listed, Signer::from_seed(&[1; 32]).public_key());
    assert_eq!(rotated.old, Some(old));
    assert_eq!(recorded.previous, Some(old), "the key it retires");
    assert_eq!(listed.first_hour, hour(16), "after the newest sealed hour");
    let app = app.restart().await;
    app.ingest(&["d"]).await;
    app.next_hour().await;

    let list = listed_keys(&app).await;
    assert_eq!(list.keys().len(), 2);
    for anchor in [old, rotated.new] {
        let trusted = list.trusted_from(&anchor).unwrap();
        assert_eq!(trusted.key_for(hour(14)), Ok(old), "from {}", anchor.id());
        assert_eq!(
            trusted.key_for(hour(16)),
            Ok(rotated.new),
            "from {}",
            anchor.id()
        );
    }
    let signed = app.get("/2008/09/03/16.bin").await;
    let field = chain::SignatureField::parse(signed.header("bloom-signature").unwrap()).unwrap();
    assert_eq!(field.key_id, Some(rotated.new.id()));
}

#[tokio::test]
async fn a_key_file_replaced_by_hand_is_acknowledged_but_not_vouched_for_by_the_old_key() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    use_key(&dir, 2);
    let app = app.restart().await;
    let (old, new) = (
        Signer::from_seed(&[1; 32]).public_key(),
        Signer::from_seed(&[2; 32]).public_key(),
    );
    let list = listed_keys(&app).await;
    let from_old = list.trusted_from(&old).unwrap();
    let refused = from_old.key_for(hour(16)).unwrap_err().to_string();
    assert!(refused.contains(&new.id().to_string()), "{refused}");
    // The new key acknowledges the old one: its holders verify the old hours.
    let from_new = list.trusted_from(&new).unwrap();
    assert_eq!(from_new.key_for(hour(14)), Ok(old));
}

#[tokio::test]
async fn a_key_registered_before_successions_were_signed_acknowledges_its_predecessor_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    use_key(&dir, 2);
    let app = app.restart().await;
    // As a registry written before successions: no acknowledgement stored.
    db(&app)
        .execute("UPDATE signing_keys SET ack = NULL", [])
        .unwrap();
    let new = Signer::from_seed(&[2; 32]).public_key();
    let app = app.restart().await;
    let list = listed_keys(&app).await;
    assert!(list.keys()[1].succession.ack.is_some());
    let from_new = list.trusted_from(&new).unwrap();
    assert!(from_new.key_for(hour(14)).is_ok());
}

#[tokio::test]
async fn a_checkpoint_names_the_newest_sealed_hour_signed_and_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    let key = Signer::from_seed(&[1; 32]).public_key();
    let reply = app.get("/checkpoint").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("cache-control"), Some("max-age=60"));
    let json = reply.json();
    assert_eq!(json["hour"], "2008-09-03T15:00:00Z", "{json}");
    let entry = &app.get("/chain/2008/09/03/15?limit=1").await.json()[0];
    assert_eq!(json["header"], entry["header"]);
    assert_eq!(json["key_id"], key.id().to_string());
    let now = app.service.now().timestamp();
    let made = json["made"].as_i64().unwrap();
    assert!(made <= now && made > now - 60, "made {made}, now {now}");
    let checkpoint = chain::Checkpoint {
        hour: hour(15),
        header: chain::parse_hex(json["header"].as_str().unwrap()).unwrap(),
        made,
        signature: chain::parse_hex(json["signature"].as_str().unwrap()).unwrap(),
    };
    key.verify_checkpoint(&checkpoint).unwrap();
    // The next hour sealed, a newer checkpoint.
    app.ingest(&["d"]).await;
    app.next_hour().await;
    assert_eq!(
        app.get("/checkpoint").await.json()["hour"],
        "2008-09-03T16:00:00Z"
    );
}

#[tokio::test]
async fn each_version_of_the_open_hour_is_signed_with_the_time_it_was_made() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    app.ingest(&["open-1", "open-2"]).await;
    let key = Signer::from_seed(&[1; 32]).public_key();
    let open = hour(16);
    for path in ["/2008/09/03/16", "/2008/09/03/16.hex", "/2008/09/03/16.bin"] {
        let reply = app.get(path).await;
        assert_eq!(reply.status, 200, "{path}");
        let value = reply
            .header("bloom-open-signature")
            .unwrap_or_else(|| panic!("{path}: the open hour is signed"));
        let field = chain::SignatureField::parse(value).unwrap();
        assert_eq!(field.key_id, Some(key.id()));
        let made: i64 = value
            .split(';')
            .find_map(|p| p.trim().strip_prefix("made="))
            .unwrap()
            .parse()
            .unwrap();
        let now = app.service.now().timestamp();
        assert!(
            made <= now && made > now - 60,
            "{path}: made {made}, now {now}"
        );
        let bytes = match path.rsplit_once('.').map(|(_, s)| s) {
            Some("bin") => reply.body.clone(),
            Some("hex") => {
                bloomcast::bloom::from_hex(std::str::from_utf8(&reply.body).unwrap().trim())
                    .unwrap()
            }
            _ => bloomcast::wire::Document::parse(&reply.body)
                .unwrap()
                .1
                .to_bytes(),
        };
        let digest = chain::digest(&bytes);
        key.verify_open(open, made, &digest, &field.signature)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        // Not valid for another time (a replay claiming to be newer), nor other bytes.
        assert!(key
            .verify_open(open, made + 3600, &digest, &field.signature)
            .is_err());
        assert!(key
            .verify_open(open, made, &[0; 32], &field.signature)
            .is_err());
        assert!(
            reply.header("bloom-signature").is_none(),
            "{path}: no chain signature"
        );
    }
}

#[tokio::test]
async fn a_quiet_open_hour_is_signed_again_so_its_signature_never_lags_by_more_than_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed_with_key(&dir).await;
    app.ingest(&["open-1"]).await;
    let made = |reply: &Reply| -> i64 {
        reply
            .header("bloom-open-signature")
            .unwrap()
            .split(';')
            .find_map(|p| p.trim().strip_prefix("made="))
            .unwrap()
            .parse()
            .unwrap()
    };
    let first = app.get("/2008/09/03/16.bin").await;
    app.clock.advance(chrono::Duration::seconds(30));
    let soon = app.get("/2008/09/03/16.bin").await;
    assert_eq!(made(&soon), made(&first), "signed once for a while");
    app.clock.advance(chrono::Duration::seconds(40));
    let later = app.get("/2008/09/03/16.bin").await;
    assert!(
        made(&later) >= made(&first) + 70,
        "signed again, nothing having changed"
    );
    assert_eq!(later.body, first.body);
    assert_eq!(
        later.header("etag"),
        first.header("etag"),
        "the same version"
    );
    let key = Signer::from_seed(&[1; 32]).public_key();
    let field =
        chain::SignatureField::parse(later.header("bloom-open-signature").unwrap()).unwrap();
    key.verify_open(
        hour(16),
        made(&later),
        &chain::digest(&later.body),
        &field.signature,
    )
    .unwrap();
}
