//! What a rendering is called on the wire: its ETags, its `Repr-Digest`s, its `Bloom-*`
//! and chain headers, formatted once per rendering ([`Rendered::head`]) and kept with
//! it in the one cache, so a response copies them and formats nothing.
//!
//! An ETag is the first 80 bits of the SHA-256 that names the rendering, in lowercase
//! hex and quoted: one SHA-256 pass names a body three ways (its ETag, its
//! `Repr-Digest`, its name as a compression dictionary), and the ETag is opaque to
//! clients. The tag of a gzip body has a `-gz` suffix, a `dcz` delta's a `-dcz` one.
//! A rendering of both bodies is named by its identity body; one of the gzip body alone
//! (an open union's) by that body's own SHA-256, its tag with `-gz` for either encoding.

use super::{Encodings, Rendered};
use crate::chain;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use std::sync::OnceLock;

mod fields;
use fields::{chain_fields, fields, value};

/// A rendering's own header values.
#[derive(Debug)]
pub struct Head {
    /// The ETag of each body, quoted; the same tag for both in a rendering of one.
    etag: HeaderValue,
    etag_gzip: HeaderValue,
    /// The ETag of a `dcz` delta made for these bytes.
    etag_dcz: HeaderValue,
    /// `Repr-Digest` (RFC 9530) of each body.
    repr_digest: HeaderValue,
    repr_digest_gzip: HeaderValue,
    /// What a 200 of each body says of it ([`Head::sent`]): the identity body's, then
    /// the gzip body's. Between the ETag and `Repr-Digest`, the rendering's `Bloom-*`
    /// (raw forms only), then the chain's (a sealed hour's), in order.
    sent: [HeaderMap; 2],
    /// The whole header block of a complete view's 200 ([`Head::finished`]), by body
    /// sent, with the key of what else it was made for.
    finished: [OnceLock<(u128, HeaderMap)>; 2],
}

/// What the head of `r` holds at most, once made (with both its finished blocks, when it
/// is complete: only a complete view has them): counted in the rendering's size
/// ([`Rendered::size`]) from its insertion into the cache, before any of it is made. A header map of n entries holds a table of the next power of two
/// above 4n/3 slots, of at most [`MAP_SLOT_BYTES`] each (`tests/head_bytes.rs` measures it).
pub fn bytes_at_most(r: &Rendered) -> usize {
    let mut metadata = Vec::new();
    fields(&r.fields, &mut metadata);
    let chain = r
        .chain
        .as_ref()
        .map_or(0, |place| 1 + usize::from(place.signature.is_some()));
    let own = metadata.len() + chain + usize::from(r.open.is_some());
    let map = |entries: usize| MAP_SLOT_BYTES * (entries + entries / 3 + 1).next_power_of_two();
    // `sent`: the ETag, `Repr-Digest` and coding beside the rendering's own; a finished
    // block adds content type, cache control, `Vary` and `Link`.
    2 * map(own + 3) + if r.complete { 2 * map(own + 7) } else { 0 }
}

/// The bytes of one slot of a header map's table, with its share of the heap values it
/// holds (the formatted ones; the rest are static or shared with the rendering's maps).
pub const MAP_SLOT_BYTES: usize = 112;

/// The ETag of the body a rendering named `name` holding both encodings sends (the gzip
/// body's when `gzip`), as [`Head`] gives it, without the rendering.
pub fn etag_of_name(name: &[u8; 32], gzip: bool) -> HeaderValue {
    quoted_tag(name, if gzip { "-gz" } else { "" })
}

/// An ETag: the first 80 bits of `name` in lowercase hex, then `suffix` (at most
/// `-gz-dcz`), quoted; written in place, as a 304 answered by name makes one per request.
fn quoted_tag(name: &[u8; 32], suffix: &str) -> HeaderValue {
    let mut tag = [0u8; 1 + 20 + "-gz-dcz".len() + 1];
    tag[0] = b'"';
    hex::encode_to_slice(&name[..10], &mut tag[1..21]).expect("20 digits for 10 bytes");
    let end = 21 + suffix.len();
    tag[21..end].copy_from_slice(suffix.as_bytes());
    tag[end] = b'"';
    HeaderValue::from_bytes(&tag[..=end]).expect("a quoted hex tag")
}

impl Head {
    pub(super) fn of(r: &Rendered) -> Head {
        let quoted = |suffix: &str| quoted_tag(r.tag(), suffix);
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
        if let Some(open) = &r.open {
            metadata.push((
                HeaderName::from_static(chain::HEADER_OPEN_SIGNATURE),
                value(open.to_string()),
            ));
        }
        let mut head = Head {
            etag: quoted(identity),
            etag_gzip: quoted(gzip),
            etag_dcz: quoted(&format!("{identity}-dcz")),
            repr_digest: value(chain::repr_digest_of(r.sha256_of(false))),
            repr_digest_gzip: value(chain::repr_digest_of(r.sha256_of(true))),
            sent: Default::default(),
            finished: Default::default(),
        };
        head.sent = [false, true].map(|gzip| head.sent_map(&metadata, gzip));
        head
    }

    fn sent_map(&self, metadata: &[(HeaderName, HeaderValue)], gzip: bool) -> HeaderMap {
        let mut out = HeaderMap::with_capacity(metadata.len() + 4);
        out.insert(header::ETAG, self.etag(gzip).clone());
        for (name, value) in metadata {
            out.insert(name.clone(), value.clone());
        }
        out.insert(
            HeaderName::from_static(chain::HEADER_REPR_DIGEST),
            self.repr_digest(gzip).clone(),
        );
        if gzip {
            out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        out
    }

    /// The headers of a 200 sending the gzip body when `gzip`, else the identity body:
    /// its `ETag`, `Bloom-*` and chain headers, `Repr-Digest` and `Content-Encoding`,
    /// made once per rendering. A response starts from a copy of them (a copy of the
    /// values' handles: no header is formatted, parsed or hashed again) and adds what
    /// is the request's (`Content-Type`, `Cache-Control`, `Vary`, links).
    pub fn sent(&self, gzip: bool) -> &HeaderMap {
        &self.sent[usize::from(gzip)]
    }

    /// The whole header block of a 200 of a complete view sending the gzip body when
    /// `gzip`: what [`Head::sent`] has and what the view adds (content type, cache
    /// control, `Vary`, links), made by `make` on the first such response and handed out
    /// as a copy while `key` (what else the block depends on: the URL's form and the
    /// view's neighbours) is the one it was made for, and made anew for another key. One
    /// block per body bounds what a rendering holds (`bytes_at_most`): clients of one
    /// rendering ask it by one URL, bar a few.
    pub fn finished(&self, gzip: bool, key: u128, make: impl FnOnce() -> HeaderMap) -> HeaderMap {
        let slot = &self.finished[usize::from(gzip)];
        let mut make = Some(make);
        let (made_for, headers) = slot.get_or_init(|| (key, make.take().expect("unused")()));
        match make {
            Some(make) if *made_for != key => make(),
            _ => headers.clone(),
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

    /// The rendering's `Bloom-*` and chain headers, in order: what [`Head::sent`] has
    /// beside the ETag, `Repr-Digest` and coding.
    #[cfg(test)]
    pub(crate) fn metadata(&self) -> Vec<(HeaderName, HeaderValue)> {
        let own = [
            header::ETAG,
            HeaderName::from_static(chain::HEADER_REPR_DIGEST),
        ];
        (self.sent(false).iter())
            .filter(|(name, _)| !own.contains(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    }
}

/// Renderings and their tags for the head tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::bloom::Filter;
    use crate::render::Rendered;
    use crate::wire::Meta;
    use axum::http::HeaderValue;

    pub(crate) use crate::render::fixtures::sample;

    /// An hour of 20,000 IDs.
    pub(crate) fn half_full() -> (Meta, Filter) {
        crate::render::fixtures::filled(20_000)
    }

    pub(crate) fn text(v: &HeaderValue) -> &str {
        v.to_str().unwrap()
    }

    pub(crate) fn tag_of(r: &Rendered) -> String {
        crate::bloom::to_hex(&r.sha256[..10])
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{half_full, sample, tag_of, text};
    use super::*;
    use crate::render::{render, render_as, ChainPlace, Effort, Repr};

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
    fn the_headers_sent_are_the_heads_values_in_order() {
        let (meta, f) = half_full();
        let r = render(&meta, &f, Repr::Hex, Effort::Fast);
        let head = r.head();
        for gzip in [false, true] {
            let sent: Vec<(&str, &HeaderValue)> = head
                .sent(gzip)
                .iter()
                .map(|(n, v)| (n.as_str(), v))
                .collect();
            let mut expected = vec![("etag", head.etag(gzip))];
            let metadata = head.metadata();
            expected.extend(metadata.iter().map(|(n, v)| (n.as_str(), v)));
            expected.push(("repr-digest", head.repr_digest(gzip)));
            let coding = HeaderValue::from_static("gzip");
            if gzip {
                expected.push(("content-encoding", &coding));
            }
            assert_eq!(sent, expected);
            assert!(head.metadata().len() > 3, "a raw form's Bloom-* fields");
        }
    }

    #[test]
    fn a_complete_views_headers_are_made_once_per_body_and_key() {
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Json, Effort::Fast);
        let head = r.head();
        let made = std::cell::Cell::new(0);
        let make = |tag: &'static str| {
            made.set(made.get() + 1);
            let mut headers = HeaderMap::new();
            headers.insert(header::LINK, HeaderValue::from_static(tag));
            headers
        };
        let link = |h: HeaderMap| h[header::LINK].to_str().unwrap().to_owned();
        assert_eq!(link(head.finished(true, 7, || make("a"))), "a");
        assert_eq!(link(head.finished(true, 7, || make("b"))), "a");
        assert_eq!(made.get(), 1, "kept after the first");
        assert_eq!(link(head.finished(false, 7, || make("c"))), "c");
        assert_eq!(made.get(), 2, "one block per body");
        assert_eq!(link(head.finished(true, 8, || make("d"))), "d");
        assert_eq!(link(head.finished(true, 8, || make("e"))), "e");
        assert_eq!(made.get(), 4, "another key: made each time");
        assert_eq!(link(head.finished(true, 7, || make("f"))), "a");
    }

    #[test]
    fn a_head_holds_no_more_than_its_rendering_counts() {
        use crate::memory::counting::held;
        let (meta, f) = half_full();
        let signed = ChainPlace {
            prev: [7; 32],
            signature: Some(chain::SignatureField {
                signature: [9; 64],
                key_id: Some(chain::KeyId([3; 8])),
            }),
        };
        for repr in Repr::ALL {
            for chain in [None, Some(signed)] {
                let mut r = render(&meta, &f, repr, Effort::Fast);
                r.chain = chain;
                let before = held();
                let head = r.head();
                for gzip in [false, true] {
                    // A finished block as `http::filters` makes it: the sent headers
                    // and the view's four, a `Link` of two neighbours among them.
                    let made = head.finished(gzip, 1, || {
                        let mut headers = head.sent(gzip).clone();
                        let link = "</2008/09/03/12.json>; rel=\"prev\", \
                                    </2008/09/03/14.json>; rel=\"next\"";
                        for (name, value) in [
                            (header::CONTENT_TYPE, "application/json"),
                            (header::CACHE_CONTROL, "max-age=31536000, immutable"),
                            (header::VARY, "Accept, Accept-Encoding"),
                            (header::LINK, link),
                        ] {
                            headers.insert(name, HeaderValue::try_from(value).unwrap());
                        }
                        headers
                    });
                    drop(made);
                }
                let holds = usize::try_from(held() - before).unwrap();
                let counted = bytes_at_most(&r);
                assert!(
                    holds <= counted && counted <= 2 * holds,
                    "{repr:?}, signed {}: holds {holds}, counted {counted}",
                    r.chain.is_some()
                );
            }
        }
    }

    #[test]
    fn a_rendering_is_formatted_once() {
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Hex, Effort::Fast);
        assert!(std::ptr::eq(r.head(), r.head()));
        assert_eq!(r.head().etag(false), Head::of(&r).etag(false));
    }
}
