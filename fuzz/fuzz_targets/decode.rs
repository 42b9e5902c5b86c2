//! Feeds arbitrary input to every decoder: the JSON document, hex and bytes with
//! m and k taken from the input's first bytes, and raw bodies with headers. Nothing
//! may panic, and whatever decodes must re-encode to an identical filter.

#![no_main]

use bloomcast::bloom::{Filter, SHA1_KM32};
use bloomcast::wire::{decode_raw, Document, Meta};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((meta, filter)) = Document::parse(data) {
        let json = Document::new(meta.clone(), &filter).to_json();
        let again = Document::parse(&json).expect("a rendered document parses");
        assert_eq!(again, (meta, filter));
    }

    // Header: m as a little-endian u32 and k as one byte; the rest is the body.
    let Some((head, body)) = data.split_first_chunk::<5>() else {
        return;
    };
    let m = u64::from(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
    let k = u64::from(head[4]);
    // Also an m that fits the body's length exactly, so decoding gets past the length
    // check and exercises the padding rule (0..=7 bits short of a whole byte).
    let fitted = (body.len() as u64 * 8).saturating_sub(u64::from(head[0] % 8));
    for m in [m, fitted] {
        if let Ok(filter) = Filter::decode_bytes(m, k, SHA1_KM32, body) {
            assert_eq!(filter.to_bytes(), body);
            check_reencodes(&filter);
        }
        if let Ok(text) = std::str::from_utf8(body) {
            let hex_m = (text.len() as u64 * 4).saturating_sub(u64::from(head[0] % 8));
            for m in [m, hex_m] {
                if let Ok(filter) = Filter::decode_hex(m, k, SHA1_KM32, text) {
                    assert_eq!(filter.to_hex(), text.to_ascii_lowercase());
                    check_reencodes(&filter);
                }
            }
        }
        let (m, k) = (m.to_string(), k.to_string());
        let header = |name: &str| match name {
            "bloom-m" => Some(m.as_str()),
            "bloom-k" => Some(k.as_str()),
            "bloom-hash" => Some(SHA1_KM32),
            "bloom-count" => Some("0"),
            "bloom-complete" => Some("false"),
            _ => None,
        };
        for hex in [false, true] {
            if let Ok((meta, filter)) = decode_raw(header, body, hex) {
                check_reencodes(&filter);
                check_raw_round_trip(&meta, &filter);
            }
        }
    }
});

/// Bytes and hex of a decoded filter decode back to the same filter.
fn check_reencodes(filter: &Filter) {
    let (m, k) = (u64::from(filter.m()), u64::from(filter.k()));
    let from_bytes = Filter::decode_bytes(m, k, SHA1_KM32, &filter.to_bytes());
    assert_eq!(from_bytes.as_ref(), Ok(filter));
    let from_hex = Filter::decode_hex(m, k, SHA1_KM32, &filter.to_hex());
    assert_eq!(from_hex.as_ref(), Ok(filter));
}

/// The headers a server would send for this filter decode it back unchanged.
fn check_raw_round_trip(meta: &Meta, filter: &Filter) {
    let headers = meta.headers(filter);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    };
    let decoded = decode_raw(header, &filter.to_bytes(), false).expect("own headers decode");
    assert_eq!(&decoded.1, filter);
    assert_eq!(&decoded.0, meta);
}
