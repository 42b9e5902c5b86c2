//! The hour chain in cluster mode: nodes sealing the same hours at once write exactly
//! one link per hour, every node serves the same headers and signatures under the
//! shared key, and the chain survives the nodes' restart.

use super::{drop_schema, node, node_settings, unique_schema};
use crate::common::needs::Need;
use crate::common::post_ids;
use bloomcast::chain::{self, PublicKey, Signer};
use bloomcast::clock::ManualClock;
use bloomcast::hour::hour_of;
use chrono::Duration;

pub async fn nodes_sealing_at_once_publish_one_identical_signed_chain() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("cluster-signing-key");
    std::fs::write(&key_file, format!("{}\n", "42".repeat(32))).unwrap();
    let key: PublicKey = Signer::from_seed(&[0x42; 32]).public_key();
    let settings = || {
        let mut s = node_settings(&url, &schema, dir.path().to_owned());
        s.signing_key_file = key_file.clone();
        s
    };
    let h = hour_of(2008, 9, 3, 13).unwrap();
    let clock = ManualClock::at(h, Duration::minutes(10));
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(node(settings(), &clock).await);
    }
    let http = reqwest::Client::new();
    for (i, node) in nodes.iter().enumerate() {
        let ids: Vec<String> = (0..20).map(|n| format!("n{i}-{n}")).collect();
        post_ids(&http, &node.base, &ids).await.unwrap();
    }
    // Four hours close; every node races to seal (and link) them at once.
    clock.advance(Duration::hours(4));
    let ticks: Vec<_> = nodes
        .iter()
        .map(|n| {
            let s = n.service.clone();
            tokio::spawn(async move { s.tick().await })
        })
        .collect();
    for t in ticks {
        t.await.unwrap().unwrap();
    }
    let mut listings = Vec::new();
    for node in &nodes {
        let wk = crate::common::well_known(&http, &node.base).await;
        assert_eq!(wk["public_key"], key.to_string(), "{}", node.base);
        let body = http
            .get(format!("{}/chain{}", node.base, h.path()))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        listings.push(body);
    }
    assert!(
        listings.windows(2).all(|w| w[0] == w[1]),
        "every node lists the same chain"
    );
    let links: Vec<serde_json::Value> = serde_json::from_slice(&listings[0]).unwrap();
    assert_eq!(links.len(), 4, "one link per sealed hour: {links:?}");
    let mut prev = chain::GENESIS;
    for (i, link) in links.iter().enumerate() {
        let hour = bloomcast::hour::Hour::from_index(h.index() + i as i64);
        let hex32 = |f: &str| chain::parse_hex::<32>(link[f].as_str().unwrap()).unwrap();
        assert_eq!(hex32("prev"), prev);
        assert_eq!(chain::header(&hex32("digest"), &prev), hex32("header"));
        let sig = chain::parse_hex::<64>(link["signature"].as_str().unwrap()).unwrap();
        key.verify(&hour.rfc3339(), hour.index(), &hex32("header"), &sig)
            .unwrap();
        // Every node serves the hour with the signature the chain lists.
        for node in &nodes {
            let reply = http
                .get(format!("{}{}.bin", node.base, hour.path()))
                .send()
                .await
                .unwrap();
            let field = reply.headers()["bloom-signature"].to_str().unwrap();
            let field = chain::SignatureField::parse(field).unwrap();
            assert_eq!(chain::hex(&field.signature), link["signature"]);
            assert_eq!(field.key_id, Some(key.id()), "the key that signed it");
            assert_eq!(link["key_id"], key.id().to_string());
            let body = reply.bytes().await.unwrap();
            assert_eq!(chain::digest(&body), hex32("digest"));
        }
        prev = hex32("header");
    }
    drop(nodes);
    // A restarted node serves the same chain.
    let again = node(settings(), &clock).await;
    let body = http
        .get(format!("{}/chain{}", again.base, h.path()))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(body, listings[0], "the chain survives a restart");
    drop_schema(&url, &schema).await;
}

pub async fn a_cluster_without_a_key_file_publishes_unsigned() {
    let url = Need::Postgres.found();
    let schema = unique_schema();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at(hour_of(2008, 9, 3, 13).unwrap(), Duration::minutes(10));
    let n = node(node_settings(&url, &schema, dir.path().to_owned()), &clock).await;
    let wk: serde_json::Value = reqwest::get(format!("{}/.well-known/bloomcast.json", n.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(wk["public_key"].is_null(), "{wk}");
    assert!(
        !dir.path()
            .join(bloomcast::startup::SIGNING_KEY_FILE)
            .exists(),
        "no per-node key is generated in cluster mode"
    );
    drop(n);
    drop_schema(&url, &schema).await;
}
