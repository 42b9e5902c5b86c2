//! Rendering a filter into what a client receives: each representation once, with its
//! gzip form, the SHA-256 that names it and, made on its first response, its headers
//! ([`Head`]: ETags, `Repr-Digest`, `Bloom-*` and the chain's), so serving copies a
//! finished value and formats nothing.

use crate::bloom::Filter;
use crate::wire::{Document, FilterParams, Meta};
use bytes::Bytes;

mod compress;
mod exact;
mod gz;
pub(crate) mod head;
mod rendered;
mod ribbon;
pub(crate) use compress::gzip;
pub use compress::Effort;
pub use exact::render_exact;
pub use gz::HexCoding;
pub use head::Head;
pub use rendered::{ChainPlace, Encodings, OpenSignature, RawFields, Rendered};
pub use ribbon::{render_compact, render_pages, render_ribbon, render_ribbon2, Compact};

/// The gzip coder's entry points, for `benches/gzip.rs` to measure against the deflate
/// crates on the server's own inputs; not an API.
#[doc(hidden)]
pub mod codec {
    pub use super::gz::hex_of;
    use super::{Effort, Repr};

    /// The gzip body of `data`, a body of `repr`, as [`super::render`] makes it.
    pub fn gzip(data: &[u8], repr: Repr, effort: Effort) -> Vec<u8> {
        super::gzip(data, repr, effort)
    }
}

/// The three representations of a filter (defined with the wire formats).
pub use crate::wire::Repr;

/// Renders a filter with its metadata, in both encodings.
pub fn render(meta: &Meta, filter: &Filter, repr: Repr, effort: Effort) -> Rendered {
    render_as(meta, filter, repr, effort, Encodings::Both)
}

/// Renders a filter with its metadata, holding the bodies of `encodings` only.
///
/// A rendering that holds both is named by the identity body's SHA-256; one of the gzip
/// body alone by that body's own, so the identity body is never hashed (a union's JSON
/// is twice the size of its bits).
pub fn render_as(
    meta: &Meta,
    filter: &Filter,
    repr: Repr,
    effort: Effort,
    encodings: Encodings,
) -> Rendered {
    render_next(meta, filter, repr, effort, encodings, Before::default()).0
}

/// What the renderings of a filter's earlier versions leave for rendering the next: the
/// gzip coding of a hex form ([`HexCoding`]), and the memory of a body nothing holds any
/// more ([`Rendered::into_body_memory`] of the version before last), to be written over:
/// a union's body is megabytes, and fresh pages cost about as much as hashing them.
/// Empty for a first rendering.
#[derive(Default)]
pub struct Before {
    pub coding: Option<HexCoding>,
    pub body: Vec<u8>,
}

/// [`render_as`] for a filter whose earlier version was rendered with `before` (what
/// that rendering left, the second value returned here): the gzip body alone of a hex
/// form then codes only what changed since (`gz::hex_of`), and returns what the next
/// version needs. The bytes are those [`render_as`] gives. Whoever makes successive
/// versions keeps that coding beside the rendering it came with.
pub fn render_next(
    meta: &Meta,
    filter: &Filter,
    repr: Repr,
    effort: Effort,
    encodings: Encodings,
    before: Before,
) -> (Rendered, Option<HexCoding>) {
    let Before {
        coding: before,
        body: mut spare,
    } = before;
    // One body is written over the spare memory: the one this rendering holds (the
    // first `take` gets it, any later one an empty vector).
    let fields = match repr {
        Repr::Json => RawFields::None,
        Repr::Hex | Repr::Bin => RawFields::Bloom {
            meta: meta.clone(),
            params: FilterParams::of(filter),
        },
    };
    let gzip_only = encodings == Encodings::Gzip;
    // The gzip body alone of a hex form: coded straight from the filter's bytes, the
    // hex (twice their size) never written out (`gz::hex_of`).
    let straight = match repr {
        _ if !gzip_only => None,
        Repr::Json => {
            let (head, bytes, tail) = Document::json_parts(meta.clone(), filter);
            gz::hex_of(&head, &bytes, &tail, before, std::mem::take(&mut spare))
        }
        Repr::Hex => gz::hex_of(
            &[],
            &filter.bytes(),
            &[],
            before,
            std::mem::take(&mut spare),
        ),
        Repr::Bin => None,
    };
    // The SHA-256 of the body that names the rendering, where making it gave it: the
    // JSON identity body's, hashed as it is written (`json_with_sha256`).
    let (identity, gzip, coding, named_sha256) = match straight {
        Some((gzip, coding)) => (Bytes::new(), gzip, Some(coding), None),
        None => {
            let (identity, sha256) = match repr {
                Repr::Json if !gzip_only => {
                    let (json, sha256) = Document::json_with_sha256_in(
                        meta.clone(),
                        filter,
                        std::mem::take(&mut spare),
                    );
                    (json, Some(sha256))
                }
                Repr::Json => (Document::json_of(meta.clone(), filter), None),
                Repr::Hex => (filter.to_hex().into_bytes(), None),
                Repr::Bin => (filter.to_bytes_in(std::mem::take(&mut spare)), None),
            };
            let gzip = match encodings {
                Encodings::Identity => Vec::new(),
                Encodings::Both | Encodings::Gzip => gzip(&identity, repr, effort),
            };
            let identity = if gzip_only { Vec::new() } else { identity };
            (rendered::kept(identity), rendered::kept(gzip), None, sha256)
        }
    };
    // One body names the rendering: the identity, or the gzip body when it is alone.
    let sha256 = named_sha256
        .unwrap_or_else(|| crate::dcz::sha256(if gzip_only { &gzip } else { &identity }));
    // A rendering of one body gives that body's digest for either encoding.
    let gzip_sha256 = match encodings {
        Encodings::Both => crate::dcz::sha256(&gzip),
        Encodings::Identity | Encodings::Gzip => sha256,
    };
    let rendered = Rendered {
        repr,
        encodings,
        identity,
        gzip,
        sha256,
        gzip_sha256,
        fields,
        chain: None,
        open: None,
        validator: None,
        complete: meta.complete,
        m: filter.m().into(),
        count: meta.count,
        head: Default::default(),
    };
    (rendered, coding)
}

/// Filters and their metadata for the rendering tests (and `http::head`'s).
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::bloom::Filter;
    use crate::wire::Meta;

    pub(crate) fn sample(complete: bool) -> (Meta, Filter) {
        let mut f = Filter::with_capacity(100, 0.01).unwrap();
        f.insert("x");
        (Meta::hour("2008-09-03T13:00:00Z".into(), complete, 1), f)
    }

    /// A complete hour of `n` IDs at its sizing target: about half its bits set.
    pub(crate) fn filled(n: u64) -> (Meta, Filter) {
        let mut f = Filter::with_capacity(n, 0.01).unwrap();
        for i in 0..n {
            f.insert(&format!("id-{i}"));
        }
        (Meta::hour("2008-09-03T13:00:00Z".into(), true, n), f)
    }

    /// A filter of 200,000 IDs.
    pub(super) fn half_full() -> (Meta, Filter) {
        filled(200_000)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{half_full, sample};
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn digests_cover_the_bytes_of_each_encoding() {
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert_eq!(r.sha256, crate::dcz::sha256(&r.identity));
        assert_eq!(r.gzip_sha256, crate::dcz::sha256(&r.gzip));
        assert_ne!(r.sha256, r.gzip_sha256);
        assert_eq!(
            (r.sha256_of(false), r.sha256_of(true)),
            (&r.sha256, &r.gzip_sha256)
        );
    }

    #[test]
    fn the_name_is_stable_and_differs_by_content() {
        let (meta, f) = sample(true);
        let a = render(&meta, &f, Repr::Json, Effort::Best);
        let b = render(&meta, &f, Repr::Json, Effort::Fast);
        assert_eq!(
            a.sha256, b.sha256,
            "the name depends on content, not compression effort"
        );
        let mut g = f.clone();
        g.insert("y");
        assert_ne!(render(&meta, &g, Repr::Json, Effort::Best).sha256, a.sha256);
        assert_ne!(render(&meta, &f, Repr::Hex, Effort::Best).sha256, a.sha256);
    }

    #[test]
    fn a_rendering_of_one_encoding_holds_that_body_alone_named_by_its_own_digest() {
        let (meta, f) = half_full();
        for repr in Repr::ALL {
            let both = render(&meta, &f, repr, Effort::Fast);

            let gz = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            assert!(gz.identity.is_empty(), "{repr:?}: no identity body kept");
            let mut text = Vec::new();
            GzDecoder::new(&gz.gzip[..]).read_to_end(&mut text).unwrap();
            assert_eq!(text, both.identity, "{repr:?}: the same document");
            assert!(gz.gzip.len() <= both.gzip.len() + 64, "{repr:?}: as small");
            assert_eq!(gz.sha256, crate::dcz::sha256(&gz.gzip));
            assert_eq!(gz.gzip_sha256, gz.sha256);
            assert_ne!(gz.sha256, both.sha256, "named by another body");

            let id = render_as(&meta, &f, repr, Effort::Fast, Encodings::Identity);
            assert!(id.gzip.is_empty(), "{repr:?}: no gzip body made");
            assert_eq!(id.identity, both.identity);
            assert_eq!(id.sha256, both.sha256);
            assert_eq!(id.gzip_sha256, id.sha256);
            assert!(id.size() < both.size() && gz.size() < both.size());
        }
    }

    #[test]
    fn a_body_written_over_an_older_one_is_the_fresh_rendering() {
        let (meta, mut f) = half_full();
        let forms = [
            (Repr::Json, Encodings::Identity),
            (Repr::Bin, Encodings::Identity),
            (Repr::Json, Encodings::Gzip),
            (Repr::Hex, Encodings::Gzip),
        ];
        for (repr, encodings) in forms {
            let first = render_as(&meta, &f, repr, Effort::Fast, encodings);
            f.insert(&format!("one more {repr:?}"));
            let mut spare = first.into_body_memory();
            assert!(!spare.is_empty(), "{repr:?}: nothing else held the body");
            spare.truncate(spare.len() / 3);
            let before = Before {
                coding: None,
                body: spare,
            };
            let (next, _) = render_next(&meta, &f, repr, Effort::Fast, encodings, before);
            let fresh = render_as(&meta, &f, repr, Effort::Fast, encodings);
            assert_eq!(next.identity, fresh.identity, "{repr:?}");
            assert_eq!(next.gzip, fresh.gzip, "{repr:?}");
            assert_eq!(next.sha256, fresh.sha256);
        }
    }

    #[test]
    fn a_version_rendered_from_the_one_before_is_the_fresh_rendering() {
        let (meta, mut f) = half_full();
        for repr in [Repr::Json, Repr::Hex] {
            let (_, before) = render_next(
                &meta,
                &f,
                repr,
                Effort::Fast,
                Encodings::Gzip,
                Before::default(),
            );
            let before = before.expect("a gzip body alone of a hex form leaves its coding");
            assert!(before.size() >= f.bytes().len(), "it keeps the bytes coded");
            f.insert(&format!("one more {repr:?}"));
            let meta = Meta::hour("2008-09-03T13:00:00Z".into(), false, 200_001);
            let (next, after) = render_next(
                &meta,
                &f,
                repr,
                Effort::Fast,
                Encodings::Gzip,
                Before {
                    coding: Some(before),
                    body: Vec::new(),
                },
            );
            assert!(after.is_some(), "and the next version's for the one after");
            let fresh = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            assert_eq!(next.gzip, fresh.gzip, "{repr:?}");
            assert_eq!(next.sha256, fresh.sha256);
            // Renderings that hold an identity body leave no coding.
            let (_, none) = render_next(
                &meta,
                &f,
                repr,
                Effort::Fast,
                Encodings::Both,
                Before::default(),
            );
            assert!(none.is_none());
        }
    }

    #[test]
    fn raw_representations_carry_their_fields() {
        let (meta, f) = sample(false);
        let json = render(&meta, &f, Repr::Json, Effort::Fast);
        assert_eq!(json.fields, RawFields::None);
        let hex = render(&meta, &f, Repr::Hex, Effort::Fast);
        let params = FilterParams::of(&f);
        assert_eq!(hex.fields, RawFields::Bloom { meta, params });
        assert_eq!(hex.identity, Bytes::from(f.to_hex()));
    }
}
