//! What a rendering is called on the wire: its ETags, its `Repr-Digest`s, its `Bloom-*`
//! and chain headers, formatted from the values the service gives ([`Rendered`]) once
//! per rendering and worker thread, as the fast lane's prepared responses are; and the
//! `If-None-Match` check, made against those values without formatting anything.
//!
//! An ETag is the first 80 bits of the SHA-256 that names the rendering, in lowercase
//! hex and quoted: one SHA-256 pass names a body three ways (its ETag, its
//! `Repr-Digest`, its name as a compression dictionary), and the ETag is opaque to
//! clients. The tag of a gzip body has a `-gz` suffix, a `dcz` delta's a `-dcz` one.
//! A rendering of both bodies is named by its identity body; one of the gzip body alone
//! (an open union's) by that body's own SHA-256, its tag with `-gz` for either encoding.

use crate::chain;
use crate::render::{ChainPlace, Encodings, RawFields, Rendered};
use crate::wire::{self, fpp_text};
use axum::http::{HeaderName, HeaderValue};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Weak};

/// Renderings a thread keeps heads for; past it, the thread starts over. Each entry
/// holds its rendering's allocation (not its bodies: a [`Weak`]), so the address that
/// keys it is not reused while it is kept.
const HEADS: usize = 256;

/// A rendering's own header values.
pub(super) struct Head {
    /// The ETag of each body, quoted; the same tag for both in a rendering of one.
    etag: HeaderValue,
    etag_gzip: HeaderValue,
    /// The ETag of a `dcz` delta made for these bytes.
    etag_dcz: HeaderValue,
    /// `Repr-Digest` (RFC 9530) of each body.
    repr_digest: HeaderValue,
    repr_digest_gzip: HeaderValue,
    /// `Bloom-*` (raw forms only), then the chain's (a sealed hour's), in order.
    metadata: Vec<(HeaderName, HeaderValue)>,
}

impl Head {
    fn of(r: &Rendered) -> Head {
        let tag = crate::bloom::to_hex(&r.sha256[..10]);
        let quoted = |suffix: &str| value(format!("\"{tag}{suffix}\""));
        let (identity, gzip) = match r.encodings {
            Encodings::Both => ("", "-gz"),
            Encodings::Identity => ("", ""),
            Encodings::Gzip => ("-gz", "-gz"),
        };
        let mut metadata = Vec::new();
        fields(&r.fields, &mut metadata);
        if let Some(place) = &r.chain {
            chain_fields(place, &mut metadata);
        }
        Head {
            etag: quoted(identity),
            etag_gzip: quoted(gzip),
            etag_dcz: quoted(&format!("{identity}-dcz")),
            repr_digest: value(chain::repr_digest_of(r.sha256_of(false))),
            repr_digest_gzip: value(chain::repr_digest_of(r.sha256_of(true))),
            metadata,
        }
    }

    /// The ETag of the body sent: the gzip body's when `gzip`.
    pub fn etag(&self, gzip: bool) -> &HeaderValue {
        if gzip {
            &self.etag_gzip
        } else {
            &self.etag
        }
    }

    /// The ETag of a `dcz` delta of these bytes.
    pub fn etag_dcz(&self) -> &HeaderValue {
        &self.etag_dcz
    }

    /// The identity body's tag, unquoted: its `id` as a compression dictionary.
    pub fn dictionary_id(&self) -> &str {
        let quoted = self.etag.to_str().expect("a hex tag");
        quoted.trim_matches('"')
    }

    /// `Repr-Digest` of the body sent: the gzip body's when `gzip`.
    pub fn repr_digest(&self, gzip: bool) -> &HeaderValue {
        if gzip {
            &self.repr_digest_gzip
        } else {
            &self.repr_digest
        }
    }

    /// The rendering's `Bloom-*` and chain headers, in order.
    pub fn metadata(&self) -> &[(HeaderName, HeaderValue)] {
        &self.metadata
    }
}

fn value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).expect("ASCII without control characters")
}

/// The `Bloom-*` headers of a raw form, in the order the wire format gives them; a
/// value a header cannot carry is left out.
fn fields(fields: &RawFields, out: &mut Vec<(HeaderName, HeaderValue)>) {
    let pairs = match fields {
        RawFields::None => return,
        RawFields::Bloom { meta, params } => meta.headers_for(params),
        RawFields::Ribbon {
            meta,
            fpp,
            r,
            m,
            seed,
        } => {
            let mut pairs = vec![
                (wire::HEADER_HASH, crate::bloom::SHA1_KM32.to_owned()),
                (wire::HEADER_COUNT, meta.count.to_string()),
                (wire::HEADER_COMPLETE, meta.complete.to_string()),
                (wire::HEADER_FPP, fpp_text(*fpp)),
                ("bloom-ribbon", format!("w=64; r={r}; m={m}; seed={seed}")),
            ];
            for (name, value) in [
                (wire::HEADER_HOUR, &meta.hour),
                (wire::HEADER_FROM, &meta.from),
                (wire::HEADER_TO, &meta.to),
            ] {
                if let Some(value) = value {
                    pairs.push((name, value.clone()));
                }
            }
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
fn chain_fields(place: &ChainPlace, out: &mut Vec<(HeaderName, HeaderValue)>) {
    let prev = value(chain::hex(&place.prev));
    out.push((HeaderName::from_static(chain::HEADER_PREV), prev));
    if let Some(signature) = &place.signature {
        let signature = value(chain::hex(signature));
        out.push((HeaderName::from_static(chain::HEADER_SIGNATURE), signature));
    }
}

/// A thread's heads, by the address of their rendering.
type Kept = FxHashMap<usize, (Weak<Rendered>, Rc<Head>)>;

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// The head of `r`, formatted on this thread's first response from it.
pub(super) fn head(r: &Arc<Rendered>) -> Rc<Head> {
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        let key = Arc::as_ptr(r) as usize;
        if let Some((_, head)) = kept.get(&key) {
            return head.clone();
        }
        if kept.len() >= HEADS {
            kept.clear();
        }
        let head = Rc::new(Head::of(r));
        kept.insert(key, (Arc::downgrade(r), head.clone()));
        head
    })
}

/// Whether an `If-None-Match` value names `r` in either encoding (weak comparison, as
/// RFC 9110 prescribes for `If-None-Match`), or a `dcz` delta of its bytes: each tag is
/// read against the rendering's SHA-256, with nothing formatted.
pub(super) fn matches(r: &Rendered, if_none_match: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|tag| {
        let tag = tag.strip_prefix("W/").unwrap_or(tag);
        tag == "*" || names(r, tag)
    })
}

/// Whether `tag` is one of the quoted tags [`Head`] gives `r`.
fn names(r: &Rendered, tag: &str) -> bool {
    let Some(inner) = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return false;
    };
    let Some((hex, suffix)) = inner.split_at_checked(20) else {
        return false;
    };
    let suffixes: &[&str] = match r.encodings {
        Encodings::Both => &["", "-gz", "-dcz"],
        Encodings::Identity => &["", "-dcz"],
        Encodings::Gzip => &["-gz", "-gz-dcz"],
    };
    suffixes.contains(&suffix) && is_hex_of(hex.as_bytes(), &r.sha256[..10])
}

/// Whether `hex` is the lowercase hex of `bytes`.
fn is_hex_of(hex: &[u8], bytes: &[u8]) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    hex.len() == 2 * bytes.len()
        && hex.chunks_exact(2).zip(bytes).all(|(pair, b)| {
            pair[0] == DIGITS[usize::from(b >> 4)] && pair[1] == DIGITS[usize::from(b & 15)]
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{Filter, Key, Ribbon};
    use crate::render::{render, render_as, render_compact, Compact, Effort, Repr};
    use crate::wire::{Meta, HEADER_FROM, HEADER_HOUR, HEADER_TO};

    fn sample(complete: bool) -> (Meta, Filter) {
        let mut f = Filter::with_capacity(100, 0.01).unwrap();
        f.insert("x");
        (Meta::hour("2008-09-03T13:00:00Z".into(), complete, 1), f)
    }

    fn half_full() -> (Meta, Filter) {
        let mut f = Filter::with_capacity(20_000, 0.01).unwrap();
        for i in 0..20_000 {
            f.insert(&format!("id-{i}"));
        }
        (Meta::hour("2008-09-03T13:00:00Z".into(), true, 20_000), f)
    }

    fn text(v: &HeaderValue) -> &str {
        v.to_str().unwrap()
    }

    fn tag_of(r: &Rendered) -> String {
        crate::bloom::to_hex(&r.sha256[..10])
    }

    #[test]
    fn etags_are_stable_and_differ_by_content_and_encoding() {
        let (meta, f) = sample(true);
        let a = Head::of(&render(&meta, &f, Repr::Json, Effort::Best));
        let b = Head::of(&render(&meta, &f, Repr::Json, Effort::Fast));
        assert_eq!(
            a.etag(false),
            b.etag(false),
            "the tag depends on content, not compression effort"
        );
        assert_ne!(a.etag(false), a.etag(true));
        let mut g = f.clone();
        g.insert("y");
        let other = Head::of(&render(&meta, &g, Repr::Json, Effort::Best));
        assert_ne!(other.etag(false), a.etag(false));
        let hex = Head::of(&render(&meta, &f, Repr::Hex, Effort::Best));
        assert_ne!(hex.etag(false), a.etag(false));
    }

    #[test]
    fn each_encoding_is_named_by_the_body_that_names_the_rendering() {
        let (meta, f) = half_full();
        for repr in Repr::ALL {
            let both = render(&meta, &f, repr, Effort::Fast);
            let tag = tag_of(&both);
            let head = Head::of(&both);
            assert_eq!(text(head.etag(false)), format!("\"{tag}\""));
            assert_eq!(text(head.etag(true)), format!("\"{tag}-gz\""));
            assert_eq!(text(head.etag_dcz()), format!("\"{tag}-dcz\""));
            assert_eq!(head.dictionary_id(), tag);
            let digest = |bytes: &[u8]| chain::repr_digest(bytes);
            assert_eq!(text(head.repr_digest(false)), digest(&both.identity));
            assert_eq!(text(head.repr_digest(true)), digest(&both.gzip));

            let gz = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            let gz_head = Head::of(&gz);
            let gz_tag = format!("\"{}-gz\"", tag_of(&gz));
            assert_eq!(gz.sha256, crate::dcz::sha256(&gz.gzip));
            for sent_gzip in [false, true] {
                assert_eq!(text(gz_head.etag(sent_gzip)), gz_tag);
                assert_eq!(text(gz_head.repr_digest(sent_gzip)), digest(&gz.gzip));
            }
            assert_ne!(
                gz_head.etag(true),
                head.etag(true),
                "tags of different encodings differ"
            );

            let id = render_as(&meta, &f, repr, Effort::Fast, Encodings::Identity);
            let id_head = Head::of(&id);
            for sent_gzip in [false, true] {
                assert_eq!(id_head.etag(sent_gzip), head.etag(false));
                assert_eq!(id_head.repr_digest(sent_gzip), head.repr_digest(false));
            }
        }
    }

    #[test]
    fn if_none_match_accepts_lists_weak_tags_and_star() {
        let (meta, f) = sample(false);
        let r = render(&meta, &f, Repr::Hex, Effort::Fast);
        let head = Head::of(&r);
        assert!(matches(&r, text(head.etag(false))));
        assert!(matches(
            &r,
            &format!("\"other\", W/{}", text(head.etag(true)))
        ));
        assert!(matches(&r, "*"));
        assert!(matches(&r, text(head.etag_dcz())));
        assert!(!matches(&r, "\"other\""));
        assert!(!matches(&r, "\"other-dcz\""));
    }

    #[test]
    fn if_none_match_names_exactly_the_tags_a_rendering_gives() {
        let (meta, f) = half_full();
        for encodings in [Encodings::Both, Encodings::Identity, Encodings::Gzip] {
            let r = render_as(&meta, &f, Repr::Hex, Effort::Fast, encodings);
            let head = Head::of(&r);
            let given = [head.etag(false), head.etag(true), head.etag_dcz()].map(text);
            let tag = tag_of(&r);
            for suffix in ["", "-gz", "-dcz", "-gz-dcz", "-x", "-dcz-gz"] {
                let candidate = format!("\"{tag}{suffix}\"");
                assert_eq!(
                    matches(&r, &candidate),
                    given.contains(&candidate.as_str()),
                    "{encodings:?} {candidate}"
                );
            }
            if tag.bytes().any(|b| b.is_ascii_alphabetic()) {
                let upper = format!("\"{}\"", tag.to_uppercase());
                assert!(!matches(&r, &upper), "lowercase hex only");
            }
            assert!(!matches(&r, &format!("\"{}\"", &tag[..19])), "too short");
            assert!(!matches(&r, &tag), "unquoted");
            assert!(!matches(&r, &format!("\"{tag}")), "unclosed");
        }
    }

    #[test]
    fn raw_representations_carry_bloom_headers() {
        let (meta, f) = sample(false);
        let json = Head::of(&render(&meta, &f, Repr::Json, Effort::Fast));
        assert!(json.metadata().is_empty());
        let hex = Head::of(&render(&meta, &f, Repr::Hex, Effort::Fast));
        let names: Vec<&str> = hex.metadata().iter().map(|(n, _)| n.as_str()).collect();
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
            signature: Some([9; 64]),
        });
        let head = Head::of(&r);
        let names: Vec<&str> = head.metadata().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [chain::HEADER_PREV, chain::HEADER_SIGNATURE]);
        assert_eq!(text(&head.metadata()[0].1), chain::hex(&[7; 32]));
        r.chain = Some(ChainPlace {
            prev: [7; 32],
            signature: None,
        });
        assert_eq!(Head::of(&r).metadata().len(), 1, "unsigned");
    }

    #[test]
    fn a_thread_formats_a_rendering_once() {
        let (meta, f) = sample(true);
        let r = Arc::new(render(&meta, &f, Repr::Hex, Effort::Fast));
        let first = head(&r);
        assert!(Rc::ptr_eq(&first, &head(&r)));
        let other = Arc::new(render(&meta, &f, Repr::Hex, Effort::Fast));
        assert!(!Rc::ptr_eq(&first, &head(&other)), "keyed by rendering");
    }
}
