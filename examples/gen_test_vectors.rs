//! Prints `docs/test-vectors.json`: hashes, bit positions, filter bodies with their
//! false-positive probabilities, and sizes computed by this crate, for client authors in
//! other languages to test against.
//!
//! ```text
//! cargo run --example gen_test_vectors > docs/test-vectors.json
//! ```
//!
//! `tests/test_vectors.rs` checks the committed file against the code, so regenerate
//! it whenever the vectors here change (the contract itself must never change).

use bloomcast::bloom::{probes, Filter, Key, Params, SHA1_KM32};
use serde::Serialize;

// Field order here is the order in the file, which follows docs/PROTOCOL.md.
#[derive(Serialize)]
struct KeyVector<'a> {
    id: &'a str,
    m: u32,
    k: u32,
    h1: u32,
    h2: u32,
    positions: Vec<u32>,
}

#[derive(Serialize)]
struct FilterVector<'a> {
    ids: &'a [String],
    m: u32,
    k: u32,
    hex: String,
    /// Section 8's figure: exact up to 4,096 bits, the fill estimate above.
    fpp: f64,
}

#[derive(Serialize)]
struct SizingVector {
    n: u64,
    p: f64,
    m: u32,
    k: u32,
}

/// The rule of section 3: its start for `n` at `p`, and the expected rate there.
#[derive(Serialize)]
struct SizedVector {
    n: u64,
    p: f64,
    m: u32,
    k: u32,
    expected: f64,
}

/// IDs chosen for the ways clients get hashing wrong: empty input, control characters,
/// multi-byte and non-BMP UTF-8, unnormalised text, whitespace that must not be trimmed,
/// and long input spanning many SHA-1 blocks. Each comes with an (m, k) to place it in.
fn key_cases() -> Vec<(String, u32, u32)> {
    let kib: String = "0123456789abcdef".repeat(64);
    assert_eq!(kib.len(), 1024);
    let cases: Vec<(&str, u32, u32)> = vec![
        // The worked example of docs/PROTOCOL.md.
        ("abc", 100, 7),
        ("", 959, 7),
        ("a", 8, 1),
        ("\0", 64, 4),
        ("user:123456", 28_756, 7),
        ("flickr:2008", 1_048, 8),
        // Precomposed é (U+00E9) and e + combining acute (U+0065 U+0301) hash differently.
        ("caf\u{e9}", 959, 7),
        ("cafe\u{301}", 959, 7),
        ("日本語", 1_000, 10),
        // Non-BMP: UTF-16 clients must hash the 4-byte UTF-8 form, not surrogates.
        ("\u{1f600}", 1_000, 10),
        ("\u{1f469}\u{200d}\u{1f469}\u{200d}\u{1f467}", 1_000, 10),
        ("  inner  spaces ", 500, 5),
        ("line\nbreak", 500, 5),
        ("tab\there", 500, 5),
        ("crlf\r\n", 500, 5),
        // m not a multiple of 8.
        ("odd m", 9, 3),
        // Large m and k: h1 + i*h2 passes 2^32, so 32-bit wrapping arithmetic fails here.
        ("big", u32::MAX, 64),
        ("prime m", 2_147_483_647, 13),
    ];
    let mut out: Vec<(String, u32, u32)> = cases
        .into_iter()
        .map(|(id, m, k)| (id.to_owned(), m, k))
        .collect();
    out.push((kib, 28_756, 7));
    out
}

fn key_vector(id: &str, m: u32, k: u32) -> KeyVector<'_> {
    let key = Key::of(id);
    KeyVector {
        id,
        m,
        k,
        h1: key.h1,
        h2: key.h2,
        positions: key.positions(m, k).collect(),
    }
}

/// Filters: the empty set, the worked example, m not a multiple of 8, a large k, the
/// seed's n = 100 at p = 0.01 at the classical size and at the rule's, and 600 IDs at
/// the rule's size (past 4,096 bits, so its fpp is the fill estimate).
fn filter_cases() -> Vec<(Vec<String>, Params)> {
    let strs = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let seed: Vec<String> = (0..100).map(|i| format!("user:{i}")).collect();
    let params = |m: u64, k: u64| Params::new(m, k).expect("valid test parameters");
    vec![
        (vec![], Params::optimal(0, 0.01).expect("valid")),
        (vec![], params(8, 1)),
        (strs(&["abc"]), params(100, 7)),
        (strs(&["a", "b", "c"]), params(13, 3)),
        (
            strs(&["x", "y", "caf\u{e9}", "\u{1f600}"]),
            params(1_000, 64),
        ),
        (seed.clone(), Params::optimal(100, 0.01).expect("valid")),
        (seed, Params::sized(100, 0.01).expect("valid")),
        (
            (0..600).map(|i| format!("user:{i}")).collect(),
            Params::sized(600, 0.01).expect("valid"),
        ),
    ]
}

fn filter_vector(ids: &[String], params: Params) -> FilterVector<'_> {
    let mut filter = Filter::new(params);
    for id in ids {
        filter.insert(id);
    }
    FilterVector {
        ids,
        m: params.m,
        k: params.k,
        hex: filter.to_hex(),
        fpp: filter.fpp(),
    }
}

/// Sizing: the published examples, n = 0, the floor on m and the clamp on k.
const SIZING: &[(u64, f64)] = &[
    (3_000, 0.01),
    (100, 0.01),
    (95, 0.005),
    (0, 0.01),
    (1, 0.01),
    (0, 0.9),
    (10, 0.5),
    (1_000, 0.001),
    (1_000_000, 0.01),
    (10, 1e-25),
];

fn sizing_vector(n: u64, p: f64) -> SizingVector {
    let params = Params::optimal(n, p).expect("valid sizing case");
    SizingVector {
        n,
        p,
        m: params.m,
        k: params.k,
    }
}

/// The rule: quiet hours to large ones, targets from 0.5 to 1e-6 (where one-bit probes
/// set the size), and n = 0.
const SIZED: &[(u64, f64)] = &[
    (0, 0.01),
    (1, 0.01),
    (2, 0.01),
    (3, 0.01),
    (5, 0.01),
    (10, 0.01),
    (20, 0.01),
    (50, 0.01),
    (100, 0.01),
    (300, 0.01),
    (3_000, 0.01),
    (1_000_000, 0.01),
    (1, 0.5),
    (1, 0.1),
    (30, 0.1),
    (100, 0.001),
    (1_000, 0.001),
    (10, 1e-6),
    (10_000, 1e-6),
];

fn sized_vector(n: u64, p: f64) -> SizedVector {
    let params = Params::sized(n, p).expect("valid sizing case");
    SizedVector {
        n,
        p,
        m: params.m,
        k: params.k,
        expected: probes::expected_fpp(params, n.max(1)),
    }
}

/// One entry per line inside each array keeps the file diffable and readable.
fn section<T: Serialize>(name: &str, entries: impl IntoIterator<Item = T>) -> String {
    let lines: Vec<String> = entries
        .into_iter()
        .map(|e| format!("    {}", serde_json::to_string(&e).expect("serialisable")))
        .collect();
    format!("  \"{name}\": [\n{}\n  ]", lines.join(",\n"))
}

fn main() {
    let keys = key_cases();
    let filters = filter_cases();
    println!(
        "{{\n  \"hash\": \"{SHA1_KM32}\",\n{},\n{},\n{},\n{}\n}}",
        section("keys", keys.iter().map(|(id, m, k)| key_vector(id, *m, *k))),
        section(
            "filters",
            filters.iter().map(|(ids, p)| filter_vector(ids, *p))
        ),
        section("sizing", SIZING.iter().map(|&(n, p)| sizing_vector(n, p))),
        section("sized", SIZED.iter().map(|&(n, p)| sized_vector(n, p)))
    );
}
