//! Checks `docs/test-vectors.json` against the code, and the code against the
//! contract's formulas recomputed here from scratch, so that neither the published
//! vectors nor the implementation can drift.

use bloomcast::bloom::{Filter, Key, Params, SHA1_KM32};
use serde::Deserialize;
use sha1::{Digest, Sha1};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Vectors {
    hash: String,
    keys: Vec<KeyVector>,
    filters: Vec<FilterVector>,
    sizing: Vec<SizingVector>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyVector {
    id: String,
    m: u32,
    k: u32,
    h1: u32,
    h2: u32,
    positions: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterVector {
    ids: Vec<String>,
    m: u32,
    k: u32,
    hex: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizingVector {
    n: u64,
    p: f64,
    m: u32,
    k: u32,
}

fn vectors() -> Vectors {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/test-vectors.json");
    let text = std::fs::read_to_string(path).expect("docs/test-vectors.json is readable");
    serde_json::from_str(&text).expect("docs/test-vectors.json has the documented shape")
}

/// The contract, written out with nothing from the crate: SHA-1, the first 8 bytes as
/// two big-endian u32s, then `(h1 + i*h2) mod m` in u64 (exact, as h1 + 63*h2 < 2^38).
fn reference_positions(id: &str, m: u32, k: u32) -> (u32, u32, Vec<u32>) {
    let d = Sha1::digest(id.as_bytes());
    let h1 = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
    let h2 = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
    let positions = (0..u64::from(k))
        .map(|i| ((u64::from(h1) + i * u64::from(h2)) % u64::from(m)) as u32)
        .collect();
    (h1, h2, positions)
}

/// The wire body built by hand: bit j in byte j/8 under mask 1 << (j % 8), lowercase hex.
fn reference_hex(ids: &[String], m: u32, k: u32) -> String {
    let mut bytes = vec![0u8; (m as usize).div_ceil(8)];
    for id in ids {
        for j in reference_positions(id, m, k).2 {
            bytes[(j / 8) as usize] |= 1 << (j % 8);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_file_names_the_v1_hash_and_covers_the_required_cases() {
    let v = vectors();
    assert_eq!(v.hash, SHA1_KM32);
    assert!(v.keys.len() >= 12, "at least a dozen keys");
    let has = |f: fn(&str) -> bool| v.keys.iter().any(|e| f(&e.id));
    assert!(has(str::is_empty), "the empty ID");
    assert!(has(|id| id.len() == 1), "a one-byte ID");
    assert!(has(|id| id.chars().any(|c| c > '\u{ffff}')), "non-BMP");
    assert!(has(|id| id.contains('\u{301}')), "a combining mark");
    assert!(has(|id| id.contains('\n')) && has(|id| id.contains('\t')));
    assert!(
        has(|id| id.trim() != id && id.trim().contains(' ')),
        "spaces"
    );
    assert!(has(|id| id.len() >= 1024), "a 1 KiB ID");
    assert!(v.filters.iter().any(|f| f.ids.is_empty()));
    assert!(v.filters.iter().any(|f| f.m % 8 != 0));
    for (n, p, m, k) in [
        (3000, 0.01, 28_756, 7),
        (100, 0.01, 959, 7),
        (95, 0.005, 1048, 8),
    ] {
        assert!(
            v.sizing
                .iter()
                .any(|s| (s.n, s.p, s.m, s.k) == (n, p, m, k)),
            "published example n={n} p={p}"
        );
    }
    assert!(v.sizing.iter().any(|s| s.n == 0));
}

#[test]
fn every_key_vector_matches_the_code_and_the_formula() {
    for e in vectors().keys {
        let key = Key::of(&e.id);
        assert_eq!((key.h1, key.h2), (e.h1, e.h2), "hash of {:?}", e.id);
        let code: Vec<u32> = key.positions(e.m, e.k).collect();
        assert_eq!(code, e.positions, "code positions of {:?}", e.id);
        let (h1, h2, formula) = reference_positions(&e.id, e.m, e.k);
        assert_eq!((h1, h2), (e.h1, e.h2), "reference hash of {:?}", e.id);
        assert_eq!(formula, e.positions, "formula positions of {:?}", e.id);
    }
}

#[test]
fn every_filter_vector_matches_the_code_and_the_layout() {
    for e in vectors().filters {
        let params = Params::new(u64::from(e.m), u64::from(e.k)).expect("valid shape");
        let mut filter = Filter::new(params);
        for id in &e.ids {
            filter.insert(id);
        }
        assert_eq!(filter.to_hex(), e.hex, "code hex for {:?}", e.ids);
        assert_eq!(
            reference_hex(&e.ids, e.m, e.k),
            e.hex,
            "layout for {:?}",
            e.ids
        );
        let decoded = Filter::decode_hex(e.m.into(), e.k.into(), SHA1_KM32, &e.hex)
            .expect("a published body decodes");
        assert_eq!(decoded, filter);
        assert!(e.ids.iter().all(|id| decoded.contains(id)));
    }
}

#[test]
fn every_sizing_vector_matches_the_code_and_the_formula() {
    let ln2 = std::f64::consts::LN_2;
    for e in vectors().sizing {
        let params = Params::optimal(e.n, e.p).expect("valid sizing");
        assert_eq!((params.m, params.k), (e.m, e.k), "code n={} p={}", e.n, e.p);
        let n = e.n.max(1) as f64;
        let m = ((-n * e.p.ln() / (ln2 * ln2)).ceil() as u32).max(8);
        let k = (f64::from(m) / n * ln2).round().clamp(1.0, 64.0) as u32;
        assert_eq!((m, k), (e.m, e.k), "formula n={} p={}", e.n, e.p);
    }
}
