//! Checks `docs/trust-vectors.json` (section 11, "Trust": successions, checkpoints, the
//! open hour's signatures), computed by an independent Python transcription, against
//! the code: the exact messages, the signatures a key makes over them, and what a client
//! holding one key trusts from a list and refuses from a forged one.

use bloomcast::chain::{self, Checkpoint, PublicKey, SignatureField, Signer};
use bloomcast::client::parse_key_list;
use bloomcast::hour::Hour;
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/trust-vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn hex<const N: usize>(v: &Value) -> [u8; N] {
    chain::parse_hex(v.as_str().unwrap()).unwrap()
}

fn hour(v: &Value) -> Hour {
    Hour::parse_flexible(v.as_str().unwrap()).unwrap()
}

fn signer(v: &Value, id: &str) -> Signer {
    Signer::from_seed(&hex::<32>(&v["seeds"][id]))
}

#[test]
fn successions_are_the_documented_messages_signed_by_each_side() {
    let v = vectors();
    let keys = v["keys"].as_array().unwrap();
    for pair in keys.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        let (prev_key, next_key): (PublicKey, PublicKey) = (
            prev["public_key"].as_str().unwrap().parse().unwrap(),
            next["public_key"].as_str().unwrap().parse().unwrap(),
        );
        let first = hour(&next["first_hour"]);
        assert_eq!(
            chain::hex(&chain::vouch_message(&next_key, first)),
            next["vouch_message"].as_str().unwrap()
        );
        assert_eq!(
            chain::hex(&chain::ack_message(&prev_key, first)),
            next["ack_message"].as_str().unwrap()
        );
        let prev_signer = signer(&v, prev["id"].as_str().unwrap());
        let next_signer = signer(&v, next["id"].as_str().unwrap());
        assert_eq!(
            chain::hex(&prev_signer.vouch(&next_key, first)),
            next["vouch"].as_str().unwrap()
        );
        assert_eq!(
            chain::hex(&next_signer.acknowledge(&prev_key, first)),
            next["ack"].as_str().unwrap()
        );
    }
}

#[test]
fn from_any_key_of_a_signed_list_every_key_is_trusted() {
    let v = vectors();
    let list = parse_key_list(&v["keys"]).unwrap();
    for key in list.keys() {
        let trusted = list.trusted_from(&key.public_key).unwrap();
        let ids: Vec<String> = trusted.keys().iter().map(|k| k.id().to_string()).collect();
        let want: Vec<String> = v["trusted_from_any"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, want, "from {}", key.id());
        for listed in list.keys() {
            assert_eq!(trusted.key_for(listed.first_hour), Ok(listed.public_key));
        }
    }
}

#[test]
fn a_forged_list_gives_the_forgers_key_nothing() {
    let v = vectors();
    let forged = parse_key_list(&v["forged"]).unwrap();
    let first: PublicKey = v["keys"][0]["public_key"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let trusted = forged.trusted_from(&first).unwrap();
    let refused = trusted
        .key_for(hour(&v["forged_refused_hour"]))
        .unwrap_err()
        .to_string();
    let forger = v["forged"][1]["id"].as_str().unwrap();
    assert!(refused.contains(forger), "{refused}");
}

#[test]
fn the_checkpoint_and_the_open_hours_signature_are_the_documented_ones() {
    let v = vectors();
    let c = &v["checkpoint"];
    let checkpoint = Checkpoint {
        hour: hour(&c["hour"]),
        header: hex(&c["header"]),
        made: c["made"].as_i64().unwrap(),
        signature: hex(&c["signature"]),
    };
    assert_eq!(
        chain::hex(&chain::checkpoint_message(
            checkpoint.made,
            checkpoint.hour,
            &checkpoint.header
        )),
        c["message"].as_str().unwrap()
    );
    let by = signer(&v, c["key_id"].as_str().unwrap());
    assert_eq!(
        by.checkpoint(checkpoint.made, checkpoint.hour, &checkpoint.header),
        checkpoint.signature
    );
    by.public_key().verify_checkpoint(&checkpoint).unwrap();

    let o = &v["open"];
    let (open, made) = (hour(&o["hour"]), o["made"].as_i64().unwrap());
    let bytes = chain::parse_hex::<3>(o["filter_hex"].as_str().unwrap()).unwrap();
    let digest = chain::digest(&bytes);
    assert_eq!(chain::hex(&digest), o["digest"].as_str().unwrap());
    assert_eq!(
        chain::hex(&chain::open_message(open, made, &digest)),
        o["message"].as_str().unwrap()
    );
    let by = signer(&v, o["key_id"].as_str().unwrap());
    assert_eq!(
        by.sign_open(open, made, &digest),
        hex::<64>(&o["signature"])
    );
    let field = SignatureField::parse(o["header_value"].as_str().unwrap()).unwrap();
    by.public_key()
        .verify_open(open, made, &digest, &field.signature)
        .unwrap();
}
