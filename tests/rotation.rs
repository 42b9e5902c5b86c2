//! Keys that rotate, end to end on real sockets: a publisher whose key file is replaced
//! twice (restarted over the same data each time) verifies across both rotations with
//! the SDK and the CLI; an old hour keeps its signature and ETag; a client refuses an
//! hour signed by a key listed for other hours, and a forged well-known document that
//! adds a key for old hours once it pinned the publisher's list.

mod common;

use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::Response;
use bloomcast::chain::{self, PublicKey, SignatureField, Signer};
use bloomcast::client::{Client, ClientError};
use bloomcast::hour::Hour;
use common::rotated::{hour, pinned, rotated_twice, signer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

fn with_key(base: &str, key: PublicKey) -> Client {
    Client::builder(base).pubkey(key).build().unwrap()
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, ClientError>, hour: Hour, why: &str) {
    match result {
        Err(e @ ClientError::Unverified(_)) => {
            let text = e.to_string();
            assert!(
                text.contains(&hour.rfc3339()) && text.contains(why),
                "{text}"
            );
        }
        other => panic!("expected a refusal of {hour} ({why}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_well_known_lists_each_key_with_the_hours_it_signed() {
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;

    let doc = publisher.well_known().await;

    let keys = doc["keys"].as_array().unwrap();
    let expected = [
        (1, hour(0), Some(hour(1))),
        (2, hour(2), Some(hour(2))),
        (3, hour(3), None),
    ];
    assert_eq!(keys.len(), expected.len(), "{doc}");
    for (listed, (seed, first, last)) in keys.iter().zip(expected) {
        let key = signer(seed).public_key();
        assert_eq!(listed["id"], key.id().to_string());
        assert_eq!(listed["public_key"], key.to_string());
        assert_eq!(listed["first_hour"], first.rfc3339());
        assert_eq!(
            listed["last_hour"],
            serde_json::json!(last.map(Hour::rfc3339))
        );
    }
    assert_eq!(doc["public_key"], signer(3).public_key().to_string());
    publisher.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_old_hour_keeps_its_signature_and_etag_after_two_rotations() {
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, signature, etag) = rotated_twice(data.path(), pins.path()).await;

    let again = publisher.get(&format!("{}.bin", hour(0).path())).await;

    assert_eq!(
        again.headers()["bloom-signature"].to_str().unwrap(),
        signature
    );
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    let field = SignatureField::parse(&signature).unwrap();
    assert_eq!(field.key_id, Some(signer(1).public_key().id()));
    let chain: serde_json::Value = publisher
        .get(&format!("/chain{}", hour(0).path()))
        .await
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = chain
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key_id"].as_str().unwrap())
        .collect();
    let id = |seed| signer(seed).public_key().id().to_string();
    assert_eq!(ids, [id(1), id(1), id(2), id(3)]);
    publisher.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_and_the_cli_verify_the_chain_across_both_rotations() {
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;

    for seed in [1, 3] {
        let report = with_key(&publisher.base, signer(seed).public_key())
            .verify_chain(hour(0))
            .await
            .unwrap();
        assert_eq!(report.hours, (0..4).map(hour).collect::<Vec<_>>());
    }
    // Pinned before the rotations: the rotated list extends the pinned one.
    let report = pinned(&publisher.base, pins.path())
        .verify_chain(hour(0))
        .await
        .unwrap();
    assert_eq!(report.hours.len(), 4);
    let base = publisher.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_bloomcast"))
            .args(["verify", "--pubkey", &signer(1).public_key().to_string()])
            .args(["--since", &hour(0).rfc3339(), "--url", &base])
            // Hours of 2008: stale on purpose.
            .arg("--accept-stale")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified 4 hours"), "{stdout}");
    // `check --pubkey` reads hour by hour, each under the key listed for it, given the
    // first key (trusting the later ones through its vouches) or the newest (the
    // earlier ones through their acknowledgements).
    for seed in [1, 3] {
        let base = publisher.base.clone();
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_bloomcast"))
                .args(["check", "--server", &base, "--since", &hour(0).rfc3339()])
                .args([
                    "--pubkey",
                    &signer(seed).public_key().to_string(),
                    // Hours of 2008 (made then), far behind this machine's clock: on
                    // purpose.
                    "--accept-stale",
                    "--freshness",
                    "600000000",
                    "id0",
                    "id3",
                ])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "key {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(found, ["id0", "id3"], "key {seed}");
    }
    publisher.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_refuses_an_hour_signed_by_a_key_listed_for_other_hours() {
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;
    let forger = Forger::start(&publisher.base).await;
    // Hour 0 re-signed, validly, by key 2 (listed for hour 2 only), naming it.
    let link = &forger.chain_entry(hour(0)).await;
    let header = chain::parse_hex::<32>(link["header"].as_str().unwrap()).unwrap();
    let forged = SignatureField {
        signature: signer(2).sign(hour(0).index(), &header),
        key_id: Some(signer(2).public_key().id()),
    };
    forger.set_header(&format!("{}.bin", hour(0).path()), forged.to_string());

    let result = with_key(&forger.base, signer(3).public_key())
        .hour(hour(0))
        .await;

    assert_refused(result, hour(0), "listed for other hours");
    // The same response with a bare signature (no key named) fails under key 1.
    let bare = SignatureField {
        key_id: None,
        ..forged
    };
    forger.set_header(&format!("{}.bin", hour(0).path()), bare.to_string());
    let result = with_key(&forger.base, signer(3).public_key())
        .hour(hour(0))
        .await;
    assert_refused(result, hour(0), "does not verify");
    publisher.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_well_known_adding_a_key_for_old_hours_is_refused_once_pinned() {
    let (data, pins) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (publisher, _, _) = rotated_twice(data.path(), pins.path()).await;
    let forger = Forger::start(&publisher.base).await;
    pinned(&forger.base, pins.path())
        .hour(hour(3))
        .await
        .unwrap();
    // A key of the forger's own for hour 1, cut out of key 1's hours.
    let mut doc = publisher.well_known().await;
    let evil = signer(9).public_key();
    let keys = doc["keys"].as_array_mut().unwrap();
    keys[0]["last_hour"] = hour(0).rfc3339().into();
    keys.insert(
        1,
        serde_json::json!({"id": evil.id().to_string(), "public_key": evil.to_string(),
            "first_hour": hour(1).rfc3339(), "last_hour": hour(1).rfc3339()}),
    );
    forger.set_body("/.well-known/bloomcast.json", doc.to_string());

    let result = pinned(&forger.base, pins.path()).hour(hour(1)).await;

    assert_refused(result, hour(1), "does not extend the one pinned");
    // A client that never pinned anything takes the document as it finds it (trust on
    // first use): the pin is what refuses it.
    let fresh = tempfile::tempdir().unwrap();
    let unpinned = pinned(&forger.base, fresh.path()).hour(hour(1)).await;
    assert_refused(unpinned, hour(1), "does not verify");
    publisher.stop().await;
}

/// A proxy in front of the publisher that replaces, per path, the `Bloom-Signature`
/// field or the whole body.
struct Forger {
    base: String,
    origin: String,
    headers: Arc<Mutex<HashMap<String, String>>>,
    bodies: Arc<Mutex<HashMap<String, String>>>,
}

impl Forger {
    async fn start(origin: &str) -> Forger {
        let headers = Arc::new(Mutex::new(HashMap::new()));
        let bodies = Arc::new(Mutex::new(HashMap::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback({
            let (origin, headers, bodies) = (origin.to_owned(), headers.clone(), bodies.clone());
            move |request: Request| {
                forward(request, origin.clone(), headers.clone(), bodies.clone())
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Forger {
            base,
            origin: origin.to_owned(),
            headers,
            bodies,
        }
    }

    fn set_header(&self, path: &str, signature: String) {
        self.headers.lock().unwrap().insert(path.into(), signature);
    }

    fn set_body(&self, path: &str, body: String) {
        self.bodies.lock().unwrap().insert(path.into(), body);
    }

    async fn chain_entry(&self, hour: Hour) -> serde_json::Value {
        let url = format!("{}/chain{}?limit=1", self.origin, hour.path());
        let list: serde_json::Value = reqwest::get(url).await.unwrap().json().await.unwrap();
        list[0].clone()
    }
}

async fn forward(
    request: Request,
    origin: String,
    forged_headers: Arc<Mutex<HashMap<String, String>>>,
    forged_bodies: Arc<Mutex<HashMap<String, String>>>,
) -> Response {
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let (status, mut headers, mut body) = common::upstream(&origin, &asked).await;
    if let Some(signature) = forged_headers.lock().unwrap().get(&asked) {
        headers.insert("bloom-signature", HeaderValue::from_str(signature).unwrap());
    }
    if let Some(forged) = forged_bodies.lock().unwrap().get(&asked) {
        body = forged.clone().into_bytes();
    }
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// `bloomcast rotate-key` in a working directory of its own (no config files), the key
/// file in `data`.
fn rotate_key(dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("rotate-key")
        .current_dir(dir)
        .env("BLOOMCAST_DATA_DIR", dir.join("data"))
        .env_remove("BLOOMCAST_SIGNING_KEY_FILE")
        .output()
        .unwrap()
}

#[test]
fn rotate_key_puts_a_new_key_in_the_key_file_and_refuses_a_file_that_is_not_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("data")
        .join(bloomcast::startup::SIGNING_KEY_FILE);
    let seed = chain::hex(&[1; 32]);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &seed).unwrap();

    let out = rotate_key(dir.path());

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old = signer(1).public_key().id().to_string();
    assert!(stdout.contains(&format!("old key id {old}")), "{stdout}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert_ne!(written.trim(), seed);
    let new = Signer::from_seed(&chain::parse_hex(&written).unwrap()).public_key();
    assert!(
        stdout.contains(&format!("new key id {}", new.id())),
        "{stdout}"
    );

    std::fs::write(&file, "not a key").unwrap();
    let refused = rotate_key(dir.path());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.starts_with("bloomcast: ") && stderr.contains("left as it is"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a key");
}
