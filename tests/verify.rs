//! Verifiable history end to end: the Rust SDK and the CLI (`check`, `inspect`,
//! `verify`) read sealed hours through a mirror (tests/common/mirror.rs) and accept
//! them as published, and refuse, naming the hour, a flipped bit, a swapped hour, an
//! hour dropped from the chain and another key.

mod common;

use bloomcast::chain::Signer;
use bloomcast::cli::{Event, Watcher};
use bloomcast::client::{Client, ClientError};
use bloomcast::hour::Hour;
use common::mirror::{self, Mirror, Tamper};
use std::process::{Command, Output};

fn hour(n: i64) -> Hour {
    Hour::from_index(mirror::first_hour().index() + n)
}

/// The mirror's hours are of 2008: its open hour's versions were made then, and it is
/// far behind this machine's clock (stale), on purpose.
const FRESHNESS_FROM_2008: u64 = 600_000_000;

fn sdk(m: &Mirror, key: &str) -> Client {
    Client::builder(&m.base)
        .pubkey(key.parse().unwrap())
        .freshness(std::time::Duration::from_secs(FRESHNESS_FROM_2008))
        .accept_stale(true)
        .build()
        .unwrap()
}

fn other_key() -> String {
    Signer::from_seed(&[9; 32]).public_key().to_string()
}

/// Asserts a refusal naming `hour`.
fn assert_refused(result: Result<impl std::fmt::Debug, ClientError>, hour: Hour) {
    match result {
        Err(e @ ClientError::Unverified(_)) => {
            assert!(e.to_string().contains(&hour.rfc3339()), "{e}")
        }
        other => panic!("expected a refusal naming {hour}, got {other:?}"),
    }
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .args(args)
        .output()
        .unwrap()
}

fn assert_cli_refuses(out: &Output, hour: Hour) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    assert!(
        stderr.contains("does not verify") && stderr.contains(&hour.rfc3339()),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_accepts_an_honest_mirror_and_finds_every_id() {
    let m = mirror::start();
    let client = sdk(&m, &m.pubkey);
    let ids: Vec<String> = (0..3).flat_map(mirror::ids).collect();
    let changed = client.changed_since(&ids, hour(0)).await.unwrap();
    for n in 0..3 {
        let found = changed.iter().find(|c| c.from == hour(n)).unwrap();
        assert!(mirror::ids(n as usize)
            .iter()
            .all(|id| found.ids.contains(id)));
    }
    let report = client.verify_chain(hour(0)).await.unwrap();
    assert_eq!(report.hours, vec![hour(0), hour(1), hour(2)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_refuses_a_flipped_bit_a_swapped_hour_a_dropped_hour_and_another_key() {
    let m = mirror::start();
    m.set(Tamper::FlipBit(hour(1).path()));
    assert_refused(sdk(&m, &m.pubkey).hour(hour(1)).await, hour(1));
    assert_refused(sdk(&m, &m.pubkey).verify_chain(hour(0)).await, hour(1));

    m.set(Tamper::Swap(
        format!("{}.bin", hour(1).path()),
        format!("{}.bin", hour(2).path()),
    ));
    assert_refused(sdk(&m, &m.pubkey).hour(hour(1)).await, hour(1));

    m.set(Tamper::DropFromChain);
    assert_refused(sdk(&m, &m.pubkey).verify_chain(hour(0)).await, hour(2));

    m.set(Tamper::None);
    assert_refused(sdk(&m, &other_key()).hour(hour(0)).await, hour(0));
    // Unverified, nothing is refused: the key is what turns checking on.
    Client::new(&m.base).unwrap().hour(hour(0)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_verifies_through_a_mirror_and_refuses_tampering() {
    let m = mirror::start();
    let since = hour(0).rfc3339();
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
    };
    let verify = |key: &str| {
        vec![
            "verify".into(),
            "--pubkey".into(),
            key.to_owned(),
            "--since".into(),
            since.clone(),
            "--url".into(),
            m.base.clone(),
            // The publisher's hours are of 2008, and it has signed no checkpoint yet.
            "--accept-stale".into(),
        ]
    };
    let ok = run(verify(&m.pubkey)).await.unwrap();
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(stdout.contains("verified 3 hours"), "{stdout}");

    m.set(Tamper::FlipBit(hour(2).path()));
    assert_cli_refuses(&run(verify(&m.pubkey)).await.unwrap(), hour(2));
    let check = vec![
        "check".to_owned(),
        "--server".into(),
        m.base.clone(),
        "--since".into(),
        since.clone(),
        "--pubkey".into(),
        m.pubkey.clone(),
        "--accept-stale".into(),
        "--freshness".into(),
        FRESHNESS_FROM_2008.to_string(),
        "h0:1".into(),
    ];
    assert_cli_refuses(&run(check.clone()).await.unwrap(), hour(2));
    let inspect = vec![
        "inspect".to_owned(),
        format!("{}{}", m.base, hour(2).path()),
        "--pubkey".into(),
        m.pubkey.clone(),
    ];
    assert_cli_refuses(&run(inspect).await.unwrap(), hour(2));

    m.set(Tamper::DropFromChain);
    assert_cli_refuses(&run(verify(&m.pubkey)).await.unwrap(), hour(2));

    m.set(Tamper::None);
    // Another service's key: refused at the key list, which does not name it.
    let other = run(verify(&other_key())).await.unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    let other_id = other_key()
        .parse::<bloomcast::chain::PublicKey>()
        .unwrap()
        .id();
    assert_eq!(other.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("does not list the key you trust")
            && stderr.contains(&other_id.to_string()),
        "{stderr}"
    );
    let honest = run(check).await.unwrap();
    assert!(honest.status.success());
    assert_eq!(String::from_utf8_lossy(&honest.stdout).trim(), "h0:1");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_pins_the_key_on_first_use_and_refuses_another_later() {
    let m = mirror::start();
    let cache = tempfile::tempdir().unwrap();
    let pinned = || {
        Client::builder(&m.base)
            .cache_dir(cache.path())
            .pin_on_first_use()
            .build()
            .unwrap()
    };
    pinned().hour(hour(0)).await.unwrap();
    let files: Vec<_> = walk(cache.path());
    let pin = files
        .iter()
        .find(|p| p.ends_with("keys.json"))
        .expect("a pinned list of keys");
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pin).unwrap()).unwrap();
    assert_eq!(list["keys"][0]["public_key"], m.pubkey);
    assert_eq!(list["verified_through"], hour(0).rfc3339());

    m.set(Tamper::FlipBit(hour(1).path()));
    assert_refused(pinned().hour(hour(1)).await, hour(1));
    // Another key pinned for the same hours (as if the first use had met an impostor):
    // the server's list does not extend it, and is refused.
    m.set(Tamper::None);
    let mut impostor = list.clone();
    let other: bloomcast::chain::PublicKey = other_key().parse().unwrap();
    impostor["keys"][0]["public_key"] = other.to_string().into();
    impostor["keys"][0]["id"] = other.id().to_string().into();
    std::fs::write(pin, impostor.to_string()).unwrap();
    assert_refused(pinned().hour(hour(2)).await, hour(2));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_with_a_key_verifies_each_sealed_hour_before_moving_on() {
    let m = mirror::start();
    let watched: Vec<String> = mirror::ids(1).into_iter().chain(mirror::ids(2)).collect();
    // Honest: hour 06 verifies, its IDs are reported, and the watch moves to 07.
    let mut watcher = Watcher::start_at(sdk(&m, &m.pubkey), watched.clone(), hour(1));
    let events = watcher.poll().await.unwrap();
    let reported: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Changed { id, .. } => Some(id.as_str()),
            Event::Version { .. } => None,
        })
        .collect();
    assert!(mirror::ids(1)
        .iter()
        .all(|id| reported.contains(&id.as_str())));
    assert_eq!(watcher.hour(), hour(2));
    // A flipped bit in 07, or another key: refused, naming the hour, nothing reported.
    m.set(Tamper::FlipBit(hour(2).path()));
    assert_refused(watcher.poll().await, hour(2));
    assert_eq!(watcher.hour(), hour(2), "a refused hour is not passed");
    m.set(Tamper::None);
    let mut other = Watcher::start_at(sdk(&m, &other_key()), watched.clone(), hour(2));
    assert_refused(other.poll().await, hour(2));
    // Without a key the same tampered hour is read (what --pubkey is for).
    m.set(Tamper::FlipBit(hour(2).path()));
    let mut blind = Watcher::start_at(Client::new(&m.base).unwrap(), watched, hour(2));
    assert!(blind.poll().await.is_ok());
}

#[test]
fn the_watch_cli_takes_a_pubkey_and_refuses_a_malformed_one() {
    // Starting at the open hour, a watch reads nothing sealed until the boundary (the
    // verification itself is the Watcher's, tested above); the key is checked at once.
    let out = cli(&[
        "watch",
        "--server",
        "127.0.0.1:9",
        "--pubkey",
        "not-a-key",
        "x",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--pubkey") && stderr.contains("not a public key"),
        "{stderr}"
    );
}
