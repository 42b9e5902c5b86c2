//! Properties of the filter core that must hold for every input: no false negatives,
//! set operations that keep what they promise, lossless round trips through every
//! representation, and decoders that never panic. Plus measured false-positive rates
//! and cardinality estimates at the seed's sizes.

use bloomcast::bloom::{Filter, Key, Params, SHA1_KM32};
use bloomcast::wire::{decode_raw, Document, Meta};
use proptest::prelude::*;
use std::collections::HashMap;

/// IDs as clients send them: short ASCII, arbitrary Unicode (control characters,
/// combining marks, non-BMP) and long IDs up to 1 KiB of UTF-8.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,8}:[0-9]{1,9}",
        4 => prop::collection::vec(any::<char>(), 0..16).prop_map(String::from_iter),
        1 => prop::collection::vec(any::<char>(), 0..=256).prop_map(String::from_iter),
        1 => "[ -~]{1000,1024}",
    ]
}

fn ids(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(id(), 0..max)
}

/// Shapes from the tiniest legal filter (saturated after a few IDs) to a roomy one.
fn params() -> impl Strategy<Value = Params> {
    (8u64..5_000, 1u64..=64).prop_map(|(m, k)| Params::new(m, k).expect("in range"))
}

fn filter_of(params: Params, ids: &[String]) -> Filter {
    let mut filter = Filter::new(params);
    for id in ids {
        filter.insert(id);
    }
    filter
}

fn meta() -> impl Strategy<Value = Meta> {
    let time = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:00:00Z";
    prop_oneof![
        (time, any::<bool>(), any::<u64>()).prop_map(|(h, c, n)| Meta::hour(h, c, n)),
        (time, time, any::<bool>(), any::<u64>()).prop_map(|(f, t, c, n)| Meta::range(f, t, c, n)),
    ]
}

/// Decodes a raw body with the headers `meta` would send for `filter`.
fn via_headers(
    meta: &Meta,
    filter: &Filter,
    body: &[u8],
    hex: bool,
) -> Result<(Meta, Filter), bloomcast::bloom::FilterError> {
    let headers: HashMap<&str, String> = meta.headers(filter).into_iter().collect();
    decode_raw(|name| headers.get(name).map(String::as_str), body, hex)
}

/// Whatever a decoder accepts must re-encode to exactly the filter it decoded.
fn assert_reencodes(filter: &Filter) {
    let (m, k) = (u64::from(filter.m()), u64::from(filter.k()));
    let again = Filter::decode_bytes(m, k, SHA1_KM32, &filter.to_bytes()).expect("re-decodes");
    assert_eq!(&again, filter);
    assert_eq!(again.to_hex(), filter.to_hex());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_inserted_id_is_ever_reported_absent(ids in ids(64), params in params()) {
        let filter = filter_of(params, &ids);
        for id in &ids {
            prop_assert!(filter.contains(id), "false negative for {id:?}");
        }
        prop_assert!(filter.definitely_absent(ids.iter().map(String::as_str)).is_empty());
    }

    #[test]
    fn filters_sized_for_their_ids_have_no_false_negatives(ids in ids(64), p in 1e-6..0.5f64) {
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id)).collect();
        let filter = Filter::sized_within(&keys, p).expect("sizable");
        prop_assert!(filter.fpp() <= p);
        for id in &ids {
            prop_assert!(filter.contains(id), "false negative for {id:?}");
        }
    }

    #[test]
    fn union_contains_everything_either_side_contained(
        a in ids(32), b in ids(32), params in params()
    ) {
        let mut union = filter_of(params, &a);
        union.union_with(&filter_of(params, &b)).expect("same shape");
        for id in a.iter().chain(&b) {
            prop_assert!(union.contains(id), "union lost {id:?}");
        }
        let all: Vec<String> = a.iter().chain(&b).cloned().collect();
        prop_assert_eq!(union, filter_of(params, &all));
    }

    #[test]
    fn intersection_keeps_what_both_contained(
        common in ids(16), a in ids(16), b in ids(16), params in params()
    ) {
        let both = |extra: &[String]| {
            filter_of(params, &common.iter().chain(extra).cloned().collect::<Vec<_>>())
        };
        let mut meet = both(&a);
        meet.intersect_with(&both(&b)).expect("same shape");
        for id in &common {
            prop_assert!(meet.contains(id), "intersection lost {id:?}");
        }
        prop_assert!(meet.ones() >= filter_of(params, &common).ones());
    }

    #[test]
    fn every_representation_round_trips(ids in ids(32), params in params(), meta in meta()) {
        let filter = filter_of(params, &ids);
        let (m, k) = (u64::from(filter.m()), u64::from(filter.k()));

        let json = Document::new(meta.clone(), &filter).to_json();
        prop_assert_eq!(Document::parse(&json).expect("json"), (meta.clone(), filter.clone()));

        let hex = filter.to_hex();
        prop_assert_eq!(hex.len(), 2 * params.byte_len());
        prop_assert_eq!(&Filter::decode_hex(m, k, SHA1_KM32, &hex).expect("hex"), &filter);
        prop_assert_eq!(
            &Filter::decode_bytes(m, k, SHA1_KM32, &filter.to_bytes()).expect("bytes"),
            &filter
        );

        let raw_hex = via_headers(&meta, &filter, format!("{hex}\n").as_bytes(), true);
        prop_assert_eq!(raw_hex.expect("raw hex"), (meta.clone(), filter.clone()));
        let raw_bin = via_headers(&meta, &filter, &filter.to_bytes(), false);
        prop_assert_eq!(raw_bin.expect("raw bytes"), (meta, filter));
    }

    #[test]
    fn parsing_arbitrary_bytes_as_a_document_never_panics(input in any::<Vec<u8>>()) {
        if let Ok((_, filter)) = Document::parse(&input) {
            assert_reencodes(&filter);
        }
    }

    #[test]
    fn parsing_document_shaped_json_never_panics(
        m in prop_oneof![any::<u64>(), 0u64..80],
        k in prop_oneof![any::<u64>(), 0u64..70],
        hash in prop_oneof![Just(SHA1_KM32.to_owned()), ".{0,12}"],
        body in "[0-9a-fA-Fg ]{0,24}",
        count in any::<u64>(),
        fpp in any::<f64>(),
    ) {
        let doc = serde_json::json!({
            "hour": "2008-09-03T13:00:00Z", "complete": true, "count": count,
            "m": m, "k": k, "hash": hash, "fpp": if fpp.is_finite() { fpp } else { 0.0 },
            "filter": body,
        });
        if let Ok((_, filter)) = Document::parse(doc.to_string().as_bytes()) {
            assert_reencodes(&filter);
            prop_assert_eq!(filter.to_hex(), body.to_lowercase());
        }
    }

    #[test]
    fn decoding_random_hex_never_panics(
        m in prop_oneof![any::<u64>(), 0u64..80],
        k in prop_oneof![any::<u64>(), 0u64..70],
        hex in prop_oneof!["[0-9a-f]{0,24}", ".{0,24}"],
    ) {
        if let Ok(filter) = Filter::decode_hex(m, k, SHA1_KM32, &hex) {
            assert_reencodes(&filter);
            prop_assert_eq!(filter.to_hex(), hex.to_lowercase());
        }
    }

    #[test]
    fn decoding_random_bytes_never_panics(
        m in prop_oneof![any::<u64>(), 0u64..80],
        k in prop_oneof![any::<u64>(), 0u64..70],
        bytes in prop::collection::vec(any::<u8>(), 0..12),
        hex in any::<bool>(),
    ) {
        if let Ok(filter) = Filter::decode_bytes(m, k, SHA1_KM32, &bytes) {
            assert_reencodes(&filter);
            prop_assert_eq!(filter.to_bytes(), bytes.clone());
        }
        let (m, k) = (m.to_string(), k.to_string());
        let header = |name: &str| match name {
            "bloom-m" => Some(m.as_str()),
            "bloom-k" => Some(k.as_str()),
            "bloom-hash" => Some(SHA1_KM32),
            "bloom-count" => Some("1"),
            "bloom-complete" => Some("true"),
            _ => None,
        };
        if let Ok((_, filter)) = decode_raw(header, &bytes, hex) {
            assert_reencodes(&filter);
        }
    }

    #[test]
    fn corrupting_a_valid_encoding_never_panics(
        ids in ids(8), params in params(), at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()
    ) {
        let filter = filter_of(params, &ids);
        let mut bytes = filter.to_bytes();
        let i = at % bytes.len();
        if cut { bytes.truncate(i) } else { bytes[i] = byte }
        let (m, k) = (u64::from(params.m), u64::from(params.k));
        if let Ok(decoded) = Filter::decode_bytes(m, k, SHA1_KM32, &bytes) {
            prop_assert_eq!(decoded.to_bytes(), bytes.clone());
        }
        if let Ok(decoded) = Filter::decode_hex(m, k, SHA1_KM32, &bloomcast::bloom::to_hex(&bytes)) {
            prop_assert_eq!(decoded.to_bytes(), bytes);
        }
    }
}

/// Fraction of `trials` IDs never inserted that the filter reports as maybe present.
fn measured_fpp(n: u64, p: f64, trials: u64) -> (Filter, f64) {
    let mut filter = Filter::with_capacity(n, p).expect("valid sizing");
    for i in 0..n {
        filter.insert(&format!("present:{i}"));
    }
    let false_positives = (0..trials)
        .filter(|i| filter.contains(&format!("absent:{i}")))
        .count();
    (filter, false_positives as f64 / trials as f64)
}

#[test]
fn measured_false_positive_rate_is_near_the_target_at_the_seed_sizes() {
    for (n, p) in [(3000, 0.01), (100, 0.01), (95, 0.005)] {
        let (filter, rate) = measured_fpp(n, p, 100_000);
        assert!(
            rate <= 1.5 * p && rate >= p / 1.5,
            "n={n} p={p}: measured {rate} (m={}, k={}, estimate {})",
            filter.m(),
            filter.k(),
            filter.fpp()
        );
    }
}

#[test]
fn estimated_count_is_within_a_few_percent_of_the_true_count() {
    let mut filter = Filter::with_capacity(3000, 0.01).expect("valid sizing");
    for i in 0..3000 {
        filter.insert(&format!("user:{i}"));
    }
    let estimate = filter.estimated_count();
    assert!(
        (estimate - 3000.0).abs() / 3000.0 < 0.03,
        "estimate {estimate} for 3000"
    );
}
