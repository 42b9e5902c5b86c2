//! docs/exact-vectors.json: generated from the code, checked against it and against a
//! decoder transcribed from docs/PROTOCOL.md section 14 alone (bit by bit, no shared
//! helpers). `BLOOMCAST_BLESS=1 cargo test -p bloomcast-core exact` rewrites the file.

use super::system::Row;
use super::{salt, selector, Exact};
use crate::bloom::{to_hex, Key};
use serde_json::{json, Value};

/// The vectors live with the protocol, at the top of the repository.
const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/exact-vectors.json");

const IDS: [&str; 6] = ["", "abc", "flickr:12345", "ünïcødé", "😀", "user:1000"];

/// (universe size, changed: every `stride`-th ID from 0, `count` of them).
/// The last three are complemented (version 2): more than half of each changed.
const BODIES: [(usize, usize, usize); 9] = [
    (0, 1, 0),
    (5, 1, 0),
    (20, 7, 3),
    (300, 25, 12),
    (1000, 5, 200),
    (2000, 2, 1000),
    (20, 1, 17),
    (400, 1, 332),
    (3000, 1, 3000),
];

fn generate() -> Value {
    let rows: Vec<Value> = IDS
        .iter()
        .flat_map(|id| [(1u32, 0u32, 10u32), (2, 7, 128), (3, 65_537, 1000)].map(|p| (id, p)))
        .map(|(id, (tag, seed, m))| {
            let key = Key::of(id);
            let row = Row::of(key.to_u64(), salt(tag, seed), m);
            json!({
                "id": id, "h1": key.h1, "h2": key.h2, "tag": tag, "seed": seed, "m": m,
                "salt": format!("{:016x}", salt(tag, seed)),
                "selector": selector(key.to_u64()),
                "start": row.start,
                "coeff": format!("{:032x}", row.coeff),
                "fingerprint": format!("{:016x}", row.fingerprint),
            })
        })
        .collect();
    let bodies: Vec<Value> = BODIES
        .into_iter()
        .map(|(n, stride, count)| {
            let universe: Vec<String> = (0..n).map(|i| format!("u:{i}")).collect();
            let changed: Vec<String> = (0..count).map(|i| format!("u:{}", i * stride)).collect();
            let keys = |ids: &[String]| ids.iter().map(|id| Key::of(id)).collect::<Vec<_>>();
            let exact = Exact::build(keys(&universe), &keys(&changed)).expect("builds");
            json!({
                "universe": universe.len(),
                "universe_ids": "u:0 .. u:(universe - 1)",
                "changed": changed,
                "complemented": exact.complemented(),
                "k": exact.k(), "split": exact.split(),
                "rows": exact.rows(), "seeds": exact.seeds(),
                "body": to_hex(&exact.to_bytes()),
            })
        })
        .collect();
    json!({"hash": "sha1-km32", "rows": rows, "bodies": bodies})
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// (start, coeff, fingerprint) as section 14 writes them.
fn transcribed_row(key: u64, tag: u64, seed: u64, m: u64) -> (u64, u128, u64) {
    let salt = mix64(tag << 32 | seed);
    let a = mix64(key ^ salt);
    let b = mix64(a ^ 0x9e3779b97f4a7c15);
    let c = mix64(b ^ 0x9e3779b97f4a7c15);
    let d = mix64(c ^ 0x9e3779b97f4a7c15);
    let w = m.min(128);
    let start = ((a as u128 * (m - w + 1) as u128) >> 64) as u64;
    let mut coeff = 0u128;
    for j in 0..w {
        let bit = if j < 64 {
            b >> j & 1
        } else {
            c >> (j - 64) & 1
        };
        coeff |= u128::from(bit) << j;
    }
    if w > 0 {
        coeff |= 1;
    }
    (start, coeff, d)
}

/// Section 14's query over the raw body, one bit at a time.
fn transcribed_changed(body: &[u8], id: &str) -> bool {
    let k = u64::from(body[5]);
    let split = u64::from(body[6]);
    // Eight LEB128 varints from byte 7.
    let mut at = 7;
    let mut fields = [0u64; 8];
    for field in &mut fields {
        let mut shift = 0;
        loop {
            let b = body[at];
            at += 1;
            *field |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    let [_, _, ma, mb, mr, sa, sb, sr] = fields;
    let data = at;
    let key = Key::of(id);
    let key = u64::from(key.h1) << 32 | u64::from(key.h2);
    let bit = |t: u64| u64::from(body[data + (t / 8) as usize] >> (t % 8) & 1);
    // value(system at offset, m rows, bits columns) for the key's row.
    let value = |offset: u64, m: u64, bits: u64, tag: u64, seed: u64| -> (u64, u64) {
        let (start, coeff, d) = transcribed_row(key, tag, seed, m);
        let mut got = 0;
        for b in 0..bits {
            let mut parity = 0;
            for j in 0..m.min(128) {
                if coeff >> j & 1 == 1 {
                    parity ^= bit(offset + b * m + start + j);
                }
            }
            got |= parity << b;
        }
        let mask = if bits == 0 { 0 } else { (1u64 << bits) - 1 };
        (got, d & mask)
    };
    let selector = mix64(key ^ mix64(4 << 32)) >> 56;
    let (offset, m, bits, tag, seed) = if selector < split {
        (0, ma, k + 1, 1, sa)
    } else {
        ((k + 1) * ma, mb, k, 2, sb)
    };
    let (got, fingerprint) = value(offset, m, bits, tag, seed);
    if got != fingerprint {
        return false;
    }
    let offset = (k + 1) * ma + k * mb;
    value(offset, mr, 1, 3, sr).0 == 1
}

/// Section 14's answer: the query's, negated in a version 2 body.
fn transcribed_answer(body: &[u8], id: &str) -> bool {
    transcribed_changed(body, id) != (body[4] == 2)
}

#[test]
fn the_vectors_file_is_what_the_code_generates() {
    let generated = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("BLOOMCAST_BLESS").is_some() {
        std::fs::write(PATH, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(PATH).expect("docs/exact-vectors.json exists");
    assert_eq!(on_disk, generated, "regenerate with BLOOMCAST_BLESS=1");
}

#[test]
fn the_vectors_decode_by_the_written_protocol_alone() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    for r in doc["rows"].as_array().unwrap() {
        let n = |f: &str| r[f].as_u64().unwrap();
        let key = n("h1") << 32 | n("h2");
        let (start, coeff, d) = transcribed_row(key, n("tag"), n("seed"), n("m"));
        assert_eq!(start, n("start"), "{r}");
        assert_eq!(format!("{coeff:032x}"), r["coeff"].as_str().unwrap(), "{r}");
        assert_eq!(
            format!("{d:016x}"),
            r["fingerprint"].as_str().unwrap(),
            "{r}"
        );
        assert_eq!(mix64(key ^ mix64(4 << 32)) >> 56, n("selector"), "{r}");
    }
    for b in doc["bodies"].as_array().unwrap() {
        let body = crate::bloom::from_hex(b["body"].as_str().unwrap()).unwrap();
        assert_eq!(&body[..4], b"BCX1");
        let complemented = b["complemented"].as_bool().unwrap();
        assert_eq!(body[4], if complemented { 2 } else { 1 });
        let changed: std::collections::HashSet<&str> = b["changed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for i in 0..b["universe"].as_u64().unwrap() {
            let id = format!("u:{i}");
            assert_eq!(
                transcribed_answer(&body, &id),
                changed.contains(id.as_str()),
                "{id} in a universe of {}",
                b["universe"]
            );
        }
    }
}
