//! Checks `docs/test-vectors.json` against the code, and the code against the
//! contract's formulas recomputed here from scratch, so that neither the published
//! vectors nor the implementation can drift.

use bloomcast::bloom::{probes, Filter, Key, Params, SHA1_KM32};
use serde::Deserialize;
use sha1::{Digest, Sha1};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Vectors {
    hash: String,
    keys: Vec<KeyVector>,
    filters: Vec<FilterVector>,
    sizing: Vec<SizingVector>,
    sized: Vec<SizedVector>,
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
    fpp: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizingVector {
    n: u64,
    p: f64,
    m: u32,
    k: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizedVector {
    n: u64,
    p: f64,
    m: u32,
    k: u32,
    expected: f64,
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

/// `a_j` of PROTOCOL.md section 3, by its formula.
fn overlaps(k: u64) -> Vec<f64> {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let classes = |x: u64| [(k / x + 1, k % x), (k / x, x - k % x)];
    let mut a = vec![0.0; k as usize + 1];
    for p in 1..k {
        for q in (1..k).filter(|&q| gcd(p, q) == 1) {
            for (l, nl) in classes(q) {
                for (c, nc) in classes(p) {
                    if nl * nc == 0 {
                        continue;
                    }
                    for j in 2..=l.min(c) {
                        let shifts = if j < l.min(c) { 2 } else { l.abs_diff(c) + 1 };
                        a[j as usize] += (2 * nl * nc * shifts) as f64;
                    }
                }
            }
        }
    }
    a
}

/// `E(m, k, n)` of section 3 at fill `f` (section 8's estimate with `w = 1 - z`).
fn rate(m: u64, k: u64, n: f64, f: f64) -> f64 {
    let z = (1u64 << 32).div_ceil(m) as f64 / 4_294_967_296.0;
    if k == 1 {
        return f;
    }
    let a = overlaps(k);
    let shared: f64 = (k.min(3)..=k)
        .map(|j| a[j as usize] * f.powi((k - j) as i32))
        .sum();
    let mf = m as f64;
    z * f + (1.0 - z) * (f.powi(k as i32) + n * (1.0 - z) / (mf * (mf - 1.0)) * shared)
}

fn expected(m: u64, k: u64, n: u64) -> f64 {
    let z = (1u64 << 32).div_ceil(m) as f64 / 4_294_967_296.0;
    let c = (z + (1.0 - z) * k as f64) / m as f64;
    let f = -((n as f64) * (-c).ln_1p()).exp_m1();
    rate(m, k, n as f64, f)
}

fn prime(m: u64) -> bool {
    m >= 2 && (2..).take_while(|d| d * d <= m).all(|d| m % d != 0)
}

/// Section 3's rule, transcribed: for each k the smallest prime m > max(7, 2k^2) with
/// E <= p (bisection over integers, then the next prime), the smallest m over k, and for
/// it the lowest E; k stops 4 past the best found.
fn rule(n: u64, p: f64) -> (u64, u64) {
    let n = n.max(1);
    let mut best: Option<(u64, u64, f64)> = None;
    for k in 1..=64u64 {
        if best.is_some_and(|(_, bk, _)| k > bk + 4) {
            break;
        }
        let (mut lo, mut hi) = ((2 * k * k + 1).max(8), (2 * k * k + 1).max(8));
        while expected(hi, k, n) > p {
            lo = hi + 1;
            hi *= 2;
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if expected(mid, k, n) <= p {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let m = (hi..).find(|&m| prime(m)).unwrap();
        let e = expected(m, k, n);
        if best.is_none_or(|(bm, _, be)| m < bm || (m == bm && e < be)) {
            best = Some((m, k, e));
        }
    }
    best.map(|(m, k, _)| (m, k)).unwrap()
}

#[test]
fn every_sized_vector_matches_the_code_and_the_rule() {
    for e in vectors().sized {
        let params = Params::sized(e.n, e.p).expect("sizable");
        assert_eq!((params.m, params.k), (e.m, e.k), "code n={} p={}", e.n, e.p);
        let code = probes::expected_fpp(params, e.n.max(1));
        assert!(
            (code - e.expected).abs() <= e.expected * 1e-15,
            "n={} p={}",
            e.n,
            e.p
        );
        let (m, k) = rule(e.n, e.p);
        assert_eq!(
            (m, k),
            (u64::from(e.m), u64::from(e.k)),
            "rule n={} p={}",
            e.n,
            e.p
        );
        let again = expected(m, k, e.n.max(1));
        assert!(
            (again - e.expected).abs() <= e.expected * 1e-12,
            "E n={} p={}",
            e.n,
            e.p
        );
    }
}

/// Section 8's `fpp` of a body, transcribed: by definition up to 4,096 bits (every pair
/// of residues, weighted by how many of the 2^32 values of a half land on it), the fill
/// estimate above (for the prime sizes of the vectors: no divisor below k).
fn reference_fpp(hex: &str, m: u64, k: u64) -> f64 {
    let body: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let set = |j: u64| body[(j / 8) as usize] & (1 << (j % 8)) != 0;
    if m > 4096 {
        assert!(prime(m), "the vectors' large filters are of the rule");
        let ones = (0..m).filter(|&j| set(j)).count() as f64;
        let f = ones / m as f64;
        let n = -(m as f64 / k as f64) * (1.0 - f).ln();
        return rate(m, k, n, f);
    }
    let (q, s) = ((1u64 << 32) / m, (1u64 << 32) % m);
    let w = |x: u64| (q + u64::from(x < s)) as f64 / 4_294_967_296.0;
    let mut fpp = 0.0;
    for r in 0..m {
        for a in 0..m {
            if (0..k).all(|i| set((a + i * r) % m)) {
                fpp += w(r) * w(a);
            }
        }
    }
    fpp
}

#[test]
fn every_filter_vector_has_the_fpp_of_section_8() {
    for e in vectors().filters {
        let filter = Filter::decode_hex(e.m.into(), e.k.into(), SHA1_KM32, &e.hex).unwrap();
        let code = filter.fpp();
        assert!(
            (code - e.fpp).abs() <= e.fpp * 1e-15,
            "code m={} k={}",
            e.m,
            e.k
        );
        let by_hand = reference_fpp(&e.hex, e.m.into(), e.k.into());
        assert!(
            (by_hand - e.fpp).abs() <= e.fpp * 1e-9,
            "m={} k={}: {by_hand} vs {}",
            e.m,
            e.k,
            e.fpp
        );
    }
}
