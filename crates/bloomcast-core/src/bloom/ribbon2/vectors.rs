//! docs/ribbon2-vectors.json: generated from the code, checked against it and against a
//! decoder transcribed from docs/PROTOCOL.md section 12 ("Version 2") alone (bit by bit,
//! no shared helpers). `BLOOMCAST_BLESS=1 cargo test -p bloomcast-core ribbon2` rewrites
//! the file.

use super::{Grade, Ribbon2};
use crate::bloom::{to_hex, Key};
use serde_json::{json, Value};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/ribbon2-vectors.json"
);

const IDS: [&str; 6] = ["", "abc", "flickr:12345", "ünïcødé", "😀", "user:1000"];

fn generate() -> Value {
    let rows: Vec<Value> = IDS
        .iter()
        .flat_map(|id| [(0u8, true, 100u32), (7, false, 4200), (255, true, 0)].map(|p| (id, p)))
        .map(|(id, (seed, part_a, m))| {
            let key = Key::of(id);
            let row = super::row(super::row_base(key.to_u64()), super::shard_salt(part_a, seed), m);
            let (in_a, shard) = super::route(key.to_u64(), 103, 2, 3);
            json!({
                "id": id, "h1": key.h1, "h2": key.h2,
                "part": if part_a { "A" } else { "B" }, "seed": seed, "m": m,
                "start": row.start,
                "coeff": format!("{:032x}", row.coeff),
                "fingerprint": format!("{:016x}", row.fingerprint),
                "route": {"split": 103, "sA": 2, "sB": 3, "part": if in_a { "A" } else { "B" }, "shard": shard},
            })
        })
        .collect();
    let grades: Vec<Value> = [0.05, 0.01, 0.001, 1e-4, 0.0078125, (-20f64).exp2(), 0.5]
        .into_iter()
        .map(|p| {
            let g = Grade::for_fpp(p).expect("grade");
            json!({"fpp": p, "k": g.k, "split": g.split, "grade_fpp": g.fpp()})
        })
        .collect();
    let filters: Vec<Value> = [
        (0usize, 0.01),
        (3, 0.01),
        (150, 0.05),
        (1000, 0.001),
        (9000, 0.05),
        (300, 0.6),
    ]
    .into_iter()
    .map(|(n, p)| {
        let ids: Vec<String> = (0..n).map(|i| format!("user:{}", 1000 + i * 7)).collect();
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        let f = Ribbon2::build(&keys, Grade::for_fpp(p).expect("grade")).expect("builds");
        let absent: Vec<Value> = (0..40)
            .map(|i| format!("absent:{i}"))
            .map(|id| json!({"contains": f.contains_id(&id), "id": id}))
            .collect();
        let (a, b) = f.shard_counts();
        // The members are "user:1000", "user:1007", ...: `count` of them.
        let members = json!({"prefix": "user:", "first": 1000, "step": 7, "count": n});
        json!({
            "members": members, "fpp": p, "k": f.grade().k, "split": f.grade().split,
            "shards": [a, b], "body": to_hex(&f.to_bytes()), "absent": absent,
        })
    })
    .collect();
    json!({"hash": "sha1-km32", "rows": rows, "grades": grades, "filters": filters})
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

const G: u64 = 0x9e3779b97f4a7c15;

/// salt(tag, seed) = mix64(tag << 32 | seed).
fn salt(tag: u64, seed: u64) -> u64 {
    mix64(tag << 32 | seed)
}

/// (start, coeff, fingerprint) as section 12 writes them.
fn transcribed_row(key: u64, part_a: bool, seed: u64, m: u64) -> (u64, u128, u64) {
    let e = mix64(key ^ 0x2545f4914f6cdd1d);
    let u = e ^ salt(if part_a { 1 } else { 2 }, seed);
    let (b, c, d) = (mix64(u), mix64(u ^ G), mix64(u ^ G.wrapping_mul(2)));
    let w = m.min(128);
    let start = ((b as u128 * (m - w + 1) as u128) >> 64) as u64;
    let mut coeff = c as u128 | (d as u128) << 64;
    if w < 128 {
        coeff &= (1u128 << w) - 1;
    }
    if w > 0 {
        coeff |= 1;
    }
    (start, coeff, e)
}

fn transcribed_route(key: u64, split: u64, sa: u64, sb: u64) -> (bool, u64) {
    let in_a = key >> 56 < split;
    let count = if in_a { sa } else { sb };
    (
        in_a,
        (((key & ((1 << 56) - 1)) as u128 * count as u128) >> 56) as u64,
    )
}

fn varint(body: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = body[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Section 12's query over the raw body, one bit at a time.
fn transcribed_contains(body: &[u8], id: &str) -> bool {
    let (k, split) = (u64::from(body[4]), u64::from(body[5]));
    let mut at = 6;
    let _n = varint(body, &mut at);
    let (sa, sb) = (varint(body, &mut at), varint(body, &mut at));
    let mut shards = Vec::new();
    for _ in 0..sa + sb {
        let m = varint(body, &mut at);
        shards.push((m, u64::from(body[at])));
        at += 1;
    }
    let key = Key::of(id).to_u64();
    let (in_a, shard) = transcribed_route(key, split, sa, sb);
    if (in_a && sa == 0) || (!in_a && sb == 0) {
        return false;
    }
    let index = if in_a { shard } else { sa + shard };
    let bits_of = |i: u64| if i < sa { k + 1 } else { k };
    let offset: u64 = (0..index).map(|i| shards[i as usize].0 * bits_of(i)).sum();
    let (m, seed) = shards[index as usize];
    let bits = bits_of(index);
    let (start, coeff, fp) = transcribed_row(key, in_a, seed, m);
    let bit = |t: u64| (body[at + (t / 8) as usize] >> (t % 8)) & 1;
    for b in 0..bits {
        let mut parity = 0;
        for j in 0..128 {
            if coeff >> j & 1 == 1 {
                parity ^= bit(offset + b * m + start + j);
            }
        }
        if u64::from(parity) != fp >> b & 1 {
            return false;
        }
    }
    true
}

#[test]
fn the_vectors_file_is_what_the_code_generates() {
    let generated = serde_json::to_string_pretty(&generate()).unwrap() + "\n";
    if std::env::var_os("BLOOMCAST_BLESS").is_some() {
        std::fs::write(PATH, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(PATH).expect("docs/ribbon2-vectors.json exists");
    assert_eq!(on_disk, generated, "regenerate with BLOOMCAST_BLESS=1");
}

#[test]
fn the_vectors_decode_by_the_written_protocol_alone() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    for r in doc["rows"].as_array().unwrap() {
        let n = |f: &str| r[f].as_u64().unwrap();
        let key = (n("h1") << 32) | n("h2");
        let part_a = r["part"] == "A";
        let (start, coeff, fp) = transcribed_row(key, part_a, n("seed"), n("m"));
        assert_eq!(start, n("start"), "{r}");
        assert_eq!(format!("{coeff:032x}"), r["coeff"].as_str().unwrap(), "{r}");
        assert_eq!(
            format!("{fp:016x}"),
            r["fingerprint"].as_str().unwrap(),
            "{r}"
        );
        let (in_a, shard) = transcribed_route(key, 103, 2, 3);
        assert_eq!(in_a, r["route"]["part"] == "A", "{r}");
        assert_eq!(shard, r["route"]["shard"].as_u64().unwrap(), "{r}");
    }
    for g in doc["grades"].as_array().unwrap() {
        // Section 12: k = floor(log2(1/p)), split = ceil(512 (1 - p 2^k)), 256 -> k + 1.
        let p = g["fpp"].as_f64().unwrap();
        let mut k = (1.0 / p).log2().floor();
        let mut split = (512.0 * (1.0 - p * k.exp2())).ceil();
        if split >= 256.0 {
            (k, split) = (k + 1.0, 0.0);
        }
        assert_eq!(
            (k as u64, split as u64),
            (g["k"].as_u64().unwrap(), g["split"].as_u64().unwrap()),
            "{g}"
        );
    }
    for f in doc["filters"].as_array().unwrap() {
        let body = crate::bloom::from_hex(f["body"].as_str().unwrap()).unwrap();
        assert_eq!(&body[..4], b"BCR2");
        let m = &f["members"];
        let (first, step) = (m["first"].as_u64().unwrap(), m["step"].as_u64().unwrap());
        for i in 0..m["count"].as_u64().unwrap() {
            let id = format!("{}{}", m["prefix"].as_str().unwrap(), first + i * step);
            assert!(transcribed_contains(&body, &id), "member {id}");
        }
        let mut positives = 0;
        for a in f["absent"].as_array().unwrap() {
            let got = transcribed_contains(&body, a["id"].as_str().unwrap());
            assert_eq!(got, a["contains"].as_bool().unwrap(), "{a}");
            positives += usize::from(got);
        }
        assert!(positives < 40, "absent IDs are not all positives");
    }
}
