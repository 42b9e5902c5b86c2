//! Checks `docs/chain-vectors.json` (the verifiable history's published vectors) against
//! the code: filter bytes, digests, headers, signed messages and signatures over a fixed
//! key (RFC 8032's test 1), and the chain as the SDK verifies it.

use bloomcast::bloom::{Filter, Params};
use bloomcast::chain::{self, Claim, PublicKey, Signer};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Vectors {
    #[allow(dead_code)]
    comment: String,
    genesis: String,
    signing_domain: String,
    seed: String,
    public_key: String,
    hours: Vec<HourVector>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HourVector {
    hour: String,
    index: i64,
    ids: Vec<String>,
    m: u32,
    k: u32,
    bin_hex: String,
    digest: String,
    prev: String,
    header: String,
    signed_message: String,
    signature: String,
}

fn vectors() -> Vectors {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/chain-vectors.json");
    let text = std::fs::read_to_string(path).expect("docs/chain-vectors.json is readable");
    serde_json::from_str(&text).expect("docs/chain-vectors.json has the documented shape")
}

fn hash(s: &str) -> chain::Hash {
    chain::parse_hex(s).expect("32 bytes of hex")
}

#[test]
fn the_genesis_domain_and_key_are_the_documented_ones() {
    let v = vectors();
    assert_eq!(hash(&v.genesis), chain::GENESIS);
    assert_eq!(v.signing_domain.as_bytes(), chain::SIGNING_DOMAIN);
    let signer = Signer::from_seed(&chain::parse_hex(&v.seed).unwrap());
    assert_eq!(signer.public_key().to_string(), v.public_key);
}

#[test]
fn every_hour_vector_matches_the_code() {
    let v = vectors();
    let signer = Signer::from_seed(&chain::parse_hex(&v.seed).unwrap());
    let mut prev = chain::GENESIS;
    assert!(v.hours.len() >= 3);
    assert!(v.hours.iter().any(|h| h.ids.is_empty()), "an empty hour");
    for h in &v.hours {
        let mut filter = Filter::new(Params::new(h.m.into(), h.k.into()).unwrap());
        for id in &h.ids {
            filter.insert(id);
        }
        let bin = filter.to_bytes();
        assert_eq!(chain::hex(&bin), h.bin_hex, "{}", h.hour);
        let digest = chain::digest(&bin);
        assert_eq!(chain::hex(&digest), h.digest, "{}", h.hour);
        assert_eq!(
            hash(&h.prev),
            prev,
            "{}: chained from the hour before",
            h.hour
        );
        let header = chain::header(&digest, &prev);
        assert_eq!(chain::hex(&header), h.header, "{}", h.hour);
        assert_eq!(
            chain::hex(&chain::signed_message(h.index, &header)),
            h.signed_message,
            "{}",
            h.hour
        );
        let signature = signer.sign(h.index, &header);
        assert_eq!(chain::hex(&signature), h.signature, "{}", h.hour);
        assert_eq!(bloomcast::hour::Hour::from_index(h.index).rfc3339(), h.hour);
        prev = header;
    }
}

#[test]
fn the_vectors_verify_as_a_chain_and_fail_when_an_hour_is_dropped() {
    let v = vectors();
    let key: PublicKey = v.public_key.parse().unwrap();
    let claims: Vec<Claim> = v
        .hours
        .iter()
        .map(|h| Claim {
            hour: h.hour.clone(),
            index: h.index,
            digest: hash(&h.digest),
            prev: hash(&h.prev),
            signature: chain::parse_hex(&h.signature).unwrap(),
        })
        .collect();
    let mut known = None;
    for c in &claims {
        known = Some(c.verify(&key, known.as_ref()).expect("the vectors verify"));
    }
    let first = claims[0].verify(&key, None).unwrap();
    let err = claims[2].verify(&key, Some(&first)).unwrap_err();
    assert!(err.to_string().contains(&claims[2].hour), "{err}");
}

/// `docs/rotation-vectors.json`: keys that rotate.
fn rotation() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/rotation-vectors.json");
    let text = std::fs::read_to_string(path).expect("docs/rotation-vectors.json is readable");
    serde_json::from_str(&text).expect("docs/rotation-vectors.json is JSON")
}

fn text(v: &serde_json::Value) -> &str {
    v.as_str().expect("a string")
}

#[test]
fn the_rotation_vectors_key_ids_and_signature_fields_match_the_code() {
    let v = rotation();
    let list = bloomcast::client::parse_key_list(&v["keys"]).expect("the listed keys");
    // The vectors' list predates signed successions: the code writes `vouch` and `ack`
    // as null where it has none, which is what the list without them means.
    let mut written = bloomcast::client::key_list_json(&list);
    for key in written.as_array_mut().unwrap() {
        let key = key.as_object_mut().unwrap();
        for field in ["vouch", "ack"] {
            assert_eq!(key.remove(field), Some(serde_json::Value::Null), "{field}");
        }
    }
    assert_eq!(written, v["keys"]);
    for listed in list.keys() {
        let id = listed.id().to_string();
        let seed = chain::parse_hex(text(&v["seeds"][&id])).unwrap();
        assert_eq!(Signer::from_seed(&seed).public_key(), listed.public_key);
    }
    for h in v["hours"].as_array().unwrap() {
        let hour = bloomcast::hour::Hour::from_index(h["index"].as_i64().unwrap());
        let listed = list.for_hour(hour).expect("a key for every hour");
        assert_eq!(listed.id().to_string(), text(&h["key_id"]), "{hour}");
        let seed = chain::parse_hex(text(&v["seeds"][text(&h["key_id"])])).unwrap();
        let header = hash(text(&h["header"]));
        let field = chain::SignatureField {
            signature: Signer::from_seed(&seed).sign(hour.index(), &header),
            key_id: Some(listed.id()),
        };
        assert_eq!(field.to_string(), text(&h["bloom_signature"]), "{hour}");
        let parsed = chain::SignatureField::parse(text(&h["bloom_signature"])).unwrap();
        let key = list.key_for(hour, parsed.key_id).unwrap();
        key.verify(&hour.rfc3339(), hour.index(), &header, &parsed.signature)
            .unwrap();
    }
}

#[test]
fn the_rotation_vectors_refusals_are_refused() {
    let v = rotation();
    let list = bloomcast::client::parse_key_list(&v["keys"]).unwrap();
    for r in v["refused"].as_array().unwrap() {
        let hour = bloomcast::hour::Hour::parse_flexible(text(&r["hour"])).unwrap();
        let parsed = chain::SignatureField::parse(text(&r["bloom_signature"])).unwrap();
        let err = list.key_for(hour, parsed.key_id).unwrap_err();
        assert!(err.to_string().contains(text(&r["why"])), "{err}");
    }
    let pinned = bloomcast::client::parse_key_list(&v["pinned"]).unwrap();
    let verified = bloomcast::hour::Hour::parse_flexible(text(&v["verified"])).unwrap();
    for case in v["extending"].as_array().unwrap() {
        let new = bloomcast::client::parse_key_list(&case["keys"]).unwrap();
        let accepted = new.extends(&pinned, Some(verified)).is_ok();
        assert_eq!(accepted, case["accepted"], "{}", text(&case["why"]));
    }
}
