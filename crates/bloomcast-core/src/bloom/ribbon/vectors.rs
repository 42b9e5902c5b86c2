//! docs/ribbon-vectors.json: generated from the code, checked against it and against a
//! decoder transcribed from docs/PROTOCOL.md section 12 alone (bit by bit, no shared
//! helpers). `BLOOMCAST_BLESS=1 cargo test -p bloomcast-core ribbon` rewrites the file.

use super::Ribbon;
use crate::bloom::{to_hex, Key};
use serde_json::{json, Value};

/// The vectors live with the protocol, at the top of the repository.
const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/ribbon-vectors.json"
);

const IDS: [&str; 6] = ["", "abc", "flickr:12345", "ünïcødé", "😀", "user:1000"];

/// The generated document.
fn generate() -> Value {
    let slots: Vec<Value> = IDS
        .iter()
        .flat_map(|id| {
            [(0u64, 64u32, 7u32), (1, 1000, 10), (u64::MAX, 300_000, 24)].map(|p| (id, p))
        })
        .map(|(id, (seed, m, r))| {
            let key = Key::of(id);
            let slot = super::Slot::of(key, seed, m);
            json!({
                "id": id, "h1": key.h1, "h2": key.h2, "seed": seed.to_string(), "m": m, "r": r,
                "start": slot.start,
                "coeff": format!("{:016x}", slot.coeff),
                "fp": slot.fingerprint & ((1u64 << r) - 1),
            })
        })
        .collect();
    let filters: Vec<Value> = [(0usize, 7u32), (3, 7), (100, 4), (200, 10)]
        .into_iter()
        .map(|(n, r)| {
            let ids: Vec<String> = (0..n).map(|i| format!("user:{}", 1000 + i * 7)).collect();
            let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
            let f = Ribbon::build(&keys, r).expect("builds");
            let absent: Vec<String> = (0..20).map(|i| format!("absent:{i}")).collect();
            let answers: Vec<Value> = absent
                .iter()
                .map(|id| json!({"id": id, "contains": f.contains_id(id)}))
                .collect();
            json!({"ids": ids, "r": r, "body": to_hex(&f.to_bytes()), "absent": answers})
        })
        .collect();
    json!({"hash": "sha1-km32", "slots": slots, "filters": filters})
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// (start, coeff, fp) as section 12 writes them.
fn transcribed_slot(h1: u64, h2: u64, seed: u64, m: u64, r: u32) -> (u64, u64, u64) {
    let a = mix64(((h1 << 32) | h2) ^ seed);
    let b = mix64(a ^ 0x9e3779b97f4a7c15);
    let c = mix64(b ^ 0x9e3779b97f4a7c15);
    let start = ((a as u128 * (m - 63) as u128) >> 64) as u64;
    (start, b | 1, c & ((1u64 << r) - 1))
}

/// Section 12's query over the raw body, one bit at a time.
fn transcribed_contains(body: &[u8], id: &str) -> bool {
    let r = u32::from(body[5]);
    let m = u64::from(u32::from_le_bytes(body[12..16].try_into().unwrap()));
    let seed = u64::from_le_bytes(body[16..24].try_into().unwrap());
    let key = Key::of(id);
    let (start, coeff, fp) = transcribed_slot(key.h1.into(), key.h2.into(), seed, m, r);
    let bit = |t: u64| (body[24 + (t / 8) as usize] >> (t % 8)) & 1;
    let mut got = 0u64;
    for b in 0..u64::from(r) {
        let mut parity = 0;
        for j in 0..64 {
            if coeff >> j & 1 == 1 {
                parity ^= bit(b * m + start + j);
            }
        }
        got |= u64::from(parity) << b;
    }
    got == fp
}

#[test]
fn the_vectors_file_is_what_the_code_generates() {
    let generated = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("BLOOMCAST_BLESS").is_some() {
        std::fs::write(PATH, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(PATH).expect("docs/ribbon-vectors.json exists");
    assert_eq!(on_disk, generated, "regenerate with BLOOMCAST_BLESS=1");
}

#[test]
fn the_vectors_decode_by_the_written_protocol_alone() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    for s in doc["slots"].as_array().unwrap() {
        let n = |f: &str| s[f].as_u64().unwrap();
        let seed: u64 = s["seed"].as_str().unwrap().parse().unwrap();
        let (start, coeff, fp) = transcribed_slot(n("h1"), n("h2"), seed, n("m"), n("r") as u32);
        assert_eq!(start, n("start"), "{s}");
        assert_eq!(format!("{coeff:016x}"), s["coeff"].as_str().unwrap(), "{s}");
        assert_eq!(fp, n("fp"), "{s}");
    }
    for f in doc["filters"].as_array().unwrap() {
        let body = crate::bloom::from_hex(f["body"].as_str().unwrap()).unwrap();
        assert_eq!(&body[..4], b"BCR1");
        for id in f["ids"].as_array().unwrap() {
            assert!(
                transcribed_contains(&body, id.as_str().unwrap()),
                "member {id}"
            );
        }
        let mut positives = 0;
        for a in f["absent"].as_array().unwrap() {
            let got = transcribed_contains(&body, a["id"].as_str().unwrap());
            assert_eq!(got, a["contains"].as_bool().unwrap(), "{a}");
            positives += usize::from(got);
        }
        assert!(positives < 20, "absent IDs are not all positives");
    }
}
