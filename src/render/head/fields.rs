//! The metadata headers of a rendering, in order: a raw form's `Bloom-*` (a Bloom
//! filter's from its wire format, a ribbon's with its structure), then a sealed hour's
//! chain headers.

use crate::chain;
use crate::render::{ChainPlace, RawFields};
use crate::wire::{self, fpp_text};
use axum::http::{HeaderName, HeaderValue};

pub(super) fn value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).expect("ASCII without control characters")
}

/// The `Bloom-*` headers of a raw form, in the order the wire format gives them; a
/// value a header cannot carry is left out.
/// The headers of a ribbon body, either version: `structure` is `Bloom-Ribbon`'s value.
fn ribbon_pairs(meta: &wire::Meta, fpp: f64, structure: String) -> Vec<(&'static str, String)> {
    let mut pairs = vec![
        (wire::HEADER_HASH, crate::bloom::SHA1_KM32.to_owned()),
        (wire::HEADER_COUNT, meta.count.to_string()),
        (wire::HEADER_COMPLETE, meta.complete.to_string()),
        (wire::HEADER_FPP, fpp_text(fpp)),
        ("bloom-ribbon", structure),
    ];
    push_span(meta, &mut pairs);
    pairs
}

/// `Bloom-Hour`, or `Bloom-From` and `Bloom-To`, of what `meta` covers.
fn push_span(meta: &wire::Meta, pairs: &mut Vec<(&'static str, String)>) {
    for (name, value) in [
        (wire::HEADER_HOUR, &meta.hour),
        (wire::HEADER_FROM, &meta.from),
        (wire::HEADER_TO, &meta.to),
    ] {
        if let Some(value) = value {
            pairs.push((name, value.clone()));
        }
    }
}

pub(super) fn fields(fields: &RawFields, out: &mut Vec<(HeaderName, HeaderValue)>) {
    let pairs = match fields {
        RawFields::None => return,
        RawFields::Bloom { meta, params } => meta.headers_for(params),
        RawFields::Ribbon {
            meta,
            fpp,
            r,
            m,
            seed,
        } => ribbon_pairs(meta, *fpp, format!("w=64; r={r}; m={m}; seed={seed}")),
        RawFields::Ribbon2 {
            meta,
            fpp,
            k,
            split,
            shards: [a, b],
        } => ribbon_pairs(
            meta,
            *fpp,
            format!("v=2; w=128; k={k}; split={split}; shards={a},{b}"),
        ),
        // Everything is in the body's header, and every range of it a cache serves
        // repeats the response's headers: none.
        RawFields::Pages { .. } => return,
        RawFields::Exact { meta, universe } => {
            let mut pairs = vec![
                (wire::HEADER_HASH, crate::bloom::SHA1_KM32.to_owned()),
                (wire::HEADER_COUNT, meta.count.to_string()),
                ("bloom-universe", universe.to_string()),
                (wire::HEADER_COMPLETE, meta.complete.to_string()),
            ];
            push_span(meta, &mut pairs);
            pairs
        }
    };
    for (name, text) in pairs {
        if let Ok(value) = HeaderValue::try_from(text) {
            out.push((HeaderName::from_static(name), value));
        }
    }
}

/// A sealed hour's chain headers: the previous hour's header, and the signature.
pub(super) fn chain_fields(place: &ChainPlace, out: &mut Vec<(HeaderName, HeaderValue)>) {
    let prev = value(chain::hex(&place.prev));
    out.push((HeaderName::from_static(chain::HEADER_PREV), prev));
    if let Some(signature) = &place.signature {
        let signature = value(signature.to_string());
        out.push((HeaderName::from_static(chain::HEADER_SIGNATURE), signature));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{sample, text};
    use super::super::Head;
    use super::*;
    use crate::bloom::{Key, Ribbon};
    use crate::render::{render, render_compact, Compact, Effort, Repr};
    use crate::wire::{Meta, HEADER_FROM, HEADER_HOUR, HEADER_TO};

    #[test]
    fn raw_representations_carry_bloom_headers() {
        let (meta, f) = sample(false);
        let json = Head::of(&render(&meta, &f, Repr::Json, Effort::Fast));
        assert!(json.metadata().is_empty());
        let hex = Head::of(&render(&meta, &f, Repr::Hex, Effort::Fast));
        let metadata = hex.metadata();
        let names: Vec<&str> = metadata.iter().map(|(n, _)| n.as_str()).collect();
        let expected: Vec<&str> = meta.headers(&f).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, expected, "in the wire format's order");
        for ((_, value), (_, expected)) in hex.metadata().iter().zip(meta.headers(&f)) {
            assert_eq!(text(value), expected);
        }
        assert!(hex
            .metadata()
            .iter()
            .any(|(n, v)| n == "bloom-m" && text(v) == f.m().to_string()));
    }

    #[test]
    fn a_ribbon_names_its_range_and_structure() {
        let keys: Vec<Key> = (0..50).map(|i| Key::of(&format!("k{i}"))).collect();
        let ribbon = Ribbon::build(&keys, 7).unwrap();
        let meta = Meta::range("a".into(), "b".into(), true, 50);
        let bin = Head::of(&render_compact(&meta, &ribbon, Compact::Ribbon));
        let header = |name: &str| {
            bin.metadata()
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| text(v).to_owned())
        };
        assert_eq!(header(HEADER_FROM).unwrap(), "a");
        assert_eq!(header(HEADER_TO).unwrap(), "b");
        assert!(header(HEADER_HOUR).is_none());
        let structure = format!("w=64; r=7; m={}; seed={}", ribbon.m(), ribbon.seed());
        assert_eq!(header("bloom-ribbon").unwrap(), structure);
        let json = Head::of(&render_compact(&meta, &ribbon, Compact::RibbonJson));
        assert!(json.metadata().is_empty());
    }

    #[test]
    fn a_sealed_hour_carries_its_place_in_the_chain() {
        let (meta, f) = sample(true);
        let mut r = render(&meta, &f, Repr::Json, Effort::Best);
        r.chain = Some(ChainPlace {
            prev: [7; 32],
            signature: Some(chain::SignatureField {
                signature: [9; 64],
                key_id: Some(chain::KeyId([3; 8])),
            }),
        });
        let head = Head::of(&r);
        let metadata = head.metadata();
        let names: Vec<&str> = metadata.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [chain::HEADER_PREV, chain::HEADER_SIGNATURE]);
        assert_eq!(text(&head.metadata()[0].1), chain::hex(&[7; 32]));
        let signature = format!("{}; keyid=\"0303030303030303\"", chain::hex(&[9; 64]));
        assert_eq!(text(&head.metadata()[1].1), signature);
        r.chain = Some(ChainPlace {
            prev: [7; 32],
            signature: None,
        });
        assert_eq!(Head::of(&r).metadata().len(), 1, "unsigned");
    }
}
