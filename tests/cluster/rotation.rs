//! Keys that rotate in cluster mode: a new key recorded (`bloomcast rotate-key`) signs
//! the hours after the newest sealed one; a node still on the old key
//! signs none of them, and every node serves the same stored signatures.

use super::{drop_schema, node, unique_schema};
use crate::common::needs::Need;
use crate::common::nodes::keyed_node_settings;
use crate::common::post_ids;
use bloomcast::chain::{SignatureField, Signer};
use bloomcast::client::Client;
use bloomcast::clock::ManualClock;
use bloomcast::hour::{hour_of, Hour};
use chrono::Duration;

pub async fn a_node_on_a_new_key_signs_new_hours_and_the_old_key_signs_none_of_them() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let settings = |seed: u8| keyed_node_settings(&url, &schema, dir.path(), seed);
    let (k1, k2) = (
        Signer::from_seed(&[1; 32]).public_key(),
        Signer::from_seed(&[2; 32]).public_key(),
    );
    let h: Hour = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let http = reqwest::Client::new();
    let old = node(settings(1), &clock).await;
    post_ids(&http, &old.base, &["a".into()]).await.unwrap();
    clock.advance(Duration::hours(1));
    old.service.tick().await.unwrap();
    // Deliberately, as `bloomcast rotate-key` does: a key the cluster has not recorded
    // would be refused; its succession is signed both ways (key 1 vouches for it), so a
    // client trusting key 1 trusts it too.
    let store = bloomcast::startup::open_store(&settings(2), &clock)
        .await
        .unwrap();
    let genesis = store.genesis().await.unwrap();
    bloomcast::service::register_key(
        store.as_ref(),
        genesis,
        &Signer::from_seed(&[2; 32]),
        Some(&Signer::from_seed(&[1; 32])),
        true,
    )
    .await
    .unwrap();
    drop(store);
    let new = node(settings(2), &clock).await;
    post_ids(&http, &new.base, &["b".into()]).await.unwrap();
    clock.advance(Duration::hours(1));
    // The old node seals hour 14 first: it is key 2's, so it stays unsigned there...
    old.service.tick().await.unwrap();
    let path = |n: i64| format!("{}.bin", Hour::from_index(h.index() + n).path());
    let unsigned = http
        .get(format!("{}{}", old.base, path(1)))
        .send()
        .await
        .unwrap();
    assert!(unsigned.headers().get("bloom-signature").is_none());
    // No cache may keep it for ever unsigned (a 304 would never bring the signature).
    assert_eq!(unsigned.headers()["cache-control"], "no-store");

    // ...until the node holding key 2 serves it, signing it once for every node.
    let mut served = Vec::new();
    for node in [&new, &old] {
        for n in 0..2 {
            let reply = http
                .get(format!("{}{}", node.base, path(n)))
                .send()
                .await
                .unwrap();
            assert_eq!(
                reply.headers()["cache-control"],
                "max-age=31536000, immutable",
                "signed, hour {n} is immutable"
            );
            let field = reply.headers()["bloom-signature"]
                .to_str()
                .unwrap()
                .to_owned();
            served.push((n, SignatureField::parse(&field).unwrap()));
        }
    }

    for (n, field) in &served {
        let key = if *n == 0 { k1 } else { k2 };
        assert_eq!(field.key_id, Some(key.id()), "hour {n}");
    }
    assert_eq!(
        served[0], served[2],
        "both nodes serve hour 13's one signature"
    );
    assert_eq!(
        served[1], served[3],
        "both nodes serve hour 14's one signature"
    );
    let wk = crate::common::well_known(&http, &old.base).await;
    assert_eq!(wk["keys"][0]["last_hour"], h.rfc3339(), "{wk}");
    assert_eq!(wk["keys"][1]["public_key"], k2.to_string(), "{wk}");
    let report = Client::builder(&old.base)
        .pubkey(k1)
        .build()
        .unwrap()
        .verify_chain(h)
        .await
        .unwrap();
    assert_eq!(report.hours.len(), 2);
    drop((old, new));
    drop_schema(&url, &schema).await;
}
