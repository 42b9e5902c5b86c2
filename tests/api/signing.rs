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
    let mut stored = 0;
    for _ in 0..100 {
        stored = db(&app)
            .query_row("SELECT count(*) FROM signatures", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        if stored == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(stored, 3, "hours 13, 14 and 15 signed again");
    let key1 = Signer::from_seed(&[1; 32]).public_key();
    let listed = app.get("/chain/2008/09/03/13").await.json();
    for entry in listed.as_array().unwrap() {
        assert_eq!(entry["key_id"], key1.id().to_string());
    }
}
