//! Rendering a filter into the bytes a client receives: each representation once,
//! with its gzip form and the SHA-256 that names it, so serving is a memory copy. What
//! a rendering is called on the wire (ETags, headers) is the HTTP layer's to say.

use crate::bloom::Filter;
use crate::wire::{Document, FilterParams, Meta};
use bytes::Bytes;
use flate2::{write::GzEncoder, Compression};
use std::io::Write;

mod gz;
mod ribbon;
pub use gz::HexCoding;
pub use ribbon::{render_compact, render_ribbon, Compact};

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

/// How fast to compress: closed hours are compressed once, so they get the best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Fast,
    Best,
}

/// The encodings a rendering holds.
///
/// Content served for long (an hour, a complete union) is rendered once with both. A
/// union ending in the open hour is rendered again for each new version of that hour,
/// and each version is read in the encoding its pollers ask for; rendering the other
/// too would double the bytes hashed (a full SHA-256 per body, its name and digest), so
/// such a version holds only the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encodings {
    Both,
    Identity,
    Gzip,
}

impl Encodings {
    /// The single encoding a request asks for (`gzip`: it accepts gzip).
    pub fn asked(gzip: bool) -> Encodings {
        if gzip {
            Encodings::Gzip
        } else {
            Encodings::Identity
        }
    }

    /// Whether a response from a rendering holding these is gzip, for a request that
    /// accepts gzip or not. A one-encoding rendering is only ever made for the requests
    /// that ask for its encoding ([`Encodings::asked`]).
    pub fn sends_gzip(self, accepts_gzip: bool) -> bool {
        match self {
            Encodings::Both => accepts_gzip,
            Encodings::Identity => false,
            Encodings::Gzip => true,
        }
    }
}

/// One representation of one filter, ready to send: its bodies and the values that
/// describe them (the SHA-256 that names it, its filter's metadata, its place in the
/// hour chain). The HTTP layer turns these into ETags and headers.
#[derive(Debug)]
pub struct Rendered {
    pub repr: Repr,
    /// Which of the two bodies below this rendering holds; the other is empty, and its
    /// digests are those of the one held.
    pub encodings: Encodings,
    pub identity: Bytes,
    pub gzip: Bytes,
    /// SHA-256 of the identity bytes: this version's name (its validator, and its name
    /// as a compression dictionary, RFC 9842). In a rendering of the gzip body alone,
    /// that body's SHA-256 instead: such a rendering (an open union's) is never a
    /// dictionary.
    pub sha256: [u8; 32],
    /// SHA-256 of the gzip bytes (their digest); in a rendering of one body, that
    /// body's ([`Rendered::sha256`]).
    pub gzip_sha256: [u8; 32],
    /// What the raw form's wire format says beside the body (its `Bloom-*` fields).
    pub fields: RawFields,
    /// A sealed hour's place in the hour chain, sent with every representation of it;
    /// `None` otherwise.
    pub chain: Option<ChainPlace>,
    pub complete: bool,
    /// The filter's size in bits and its count of IDs (a delta needs the same `m`).
    pub m: u64,
    pub count: u64,
}

/// What a raw body's wire format says beside it, as values: a JSON document says it all
/// in its body.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFields {
    /// A JSON document: nothing beside the body.
    None,
    /// A Bloom filter's raw form (hex or binary): its metadata and parameters.
    Bloom { meta: Meta, params: FilterParams },
    /// A ribbon filter's binary form: its metadata, its false-positive rate and its
    /// structure (fingerprint bits `r`, slots `m`, the seed).
    Ribbon {
        meta: Meta,
        fpp: f64,
        r: u32,
        m: u32,
        seed: u64,
    },
}

/// A sealed hour's place in the hour chain: the header of the hour before it, and the
/// publisher's signature over its link (none when the service does not sign).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPlace {
    pub prev: crate::chain::Hash,
    pub signature: Option<[u8; 64]>,
}

impl Rendered {
    /// Bytes held in memory, for the cache's budget.
    pub fn size(&self) -> usize {
        self.identity.len() + self.gzip.len() + 256
    }

    /// The SHA-256 of the body sent: the gzip body's when `gzip` (it is sent), else
    /// the identity body's.
    pub fn sha256_of(&self, gzip: bool) -> &[u8; 32] {
        if gzip {
            &self.gzip_sha256
        } else {
            &self.sha256
        }
    }
}

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
    render_next(meta, filter, repr, effort, encodings, None).0
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
    before: Option<HexCoding>,
) -> (Rendered, Option<HexCoding>) {
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
            gz::hex_of(&head, &bytes, &tail, before)
        }
        Repr::Hex => gz::hex_of(&[], &filter.bytes(), &[], before),
        Repr::Bin => None,
    };
    // The SHA-256 of the body that names the rendering, where making it gave it: the
    // JSON identity body's, hashed as it is written (`json_with_sha256`).
    let (identity, gzip, coding, named_sha256) = match straight {
        Some((gzip, coding)) => (Bytes::new(), gzip, Some(coding), None),
        None => {
            let (identity, sha256) = match repr {
                Repr::Json if !gzip_only => {
                    let (json, sha256) = Document::json_with_sha256(meta.clone(), filter);
                    (json, Some(sha256))
                }
                Repr::Json => (Document::json_of(meta.clone(), filter), None),
                Repr::Hex => (filter.to_hex().into_bytes(), None),
                Repr::Bin => (filter.to_bytes(), None),
            };
            let gzip = match encodings {
                Encodings::Identity => Vec::new(),
                Encodings::Both | Encodings::Gzip => gzip(&identity, repr, effort),
            };
            let identity = if gzip_only { Vec::new() } else { identity };
            (Bytes::from(identity), Bytes::from(gzip), None, sha256)
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
        complete: meta.complete,
        m: filter.m().into(),
        count: meta.count,
    };
    (rendered, coding)
}

pub(crate) fn gzip(data: &[u8], repr: Repr, effort: Effort) -> Vec<u8> {
    // The hex forms are a long run of 16 symbols, near uniform at a filter's usual fill:
    // coded by their counts alone (`gz::hex`), smaller than deflate at any level and in
    // about 5 ms for a 10.4 MB union's JSON, where deflate took 158 ms at its fastest
    // level and about 1 s at its best.
    if matches!(repr, Repr::Json | Repr::Hex) {
        if let Some(gz) = gz::hex(data) {
            return gz;
        }
    }
    // The raw bits of a filter near half full are as good as random (`gz::bits`), where
    // the best deflate took 320 ms on a 10.4 MB union to reach 100.02%.
    if repr == Repr::Bin && effort == Effort::Best {
        if let Some(gz) = gz::bits(data) {
            return gz;
        }
    }
    let level = match (repr, effort) {
        // A filter's bits are close to random at its fill, so deflate gains nothing on
        // the raw form (measured: 100.03% of the input at the fastest level, in 0.28 s for
        // an 11.5 MB union). Content that changes is therefore only framed as gzip.
        (Repr::Bin, Effort::Fast) => return gz::stored(data),
        (_, Effort::Fast) => Compression::fast(),
        (_, Effort::Best) => Compression::best(),
    };
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 2 + 64), level);
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn sample(complete: bool) -> (Meta, Filter) {
        let mut f = Filter::with_capacity(100, 0.01).unwrap();
        f.insert("x");
        (Meta::hour("2008-09-03T13:00:00Z".into(), complete, 1), f)
    }

    #[test]
    fn gzip_decompresses_to_the_identity_bytes() {
        let (meta, f) = sample(true);
        for repr in Repr::ALL {
            for effort in [Effort::Best, Effort::Fast] {
                let r = render(&meta, &f, repr, effort);
                let mut out = Vec::new();
                GzDecoder::new(&r.gzip[..]).read_to_end(&mut out).unwrap();
                assert_eq!(out, r.identity.to_vec(), "{repr:?} {effort:?}");
            }
        }
    }

    #[test]
    fn stored_gzip_decompresses_to_its_input_at_any_length() {
        for len in [0, 1, 65_534, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            GzDecoder::new(&gz::stored(&data)[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, data, "{len}");
        }
    }

    #[test]
    fn the_raw_form_of_changing_content_is_stored_not_deflated() {
        let (meta, f) = sample(false);
        let r = render(&meta, &f, Repr::Bin, Effort::Fast);
        // Stored blocks: the bytes plus the gzip frame and 5 bytes per 64 KiB block.
        assert!(r.gzip.len() > r.identity.len());
        assert!(r.gzip.len() <= r.identity.len() + 64 + 5 * r.identity.len().div_ceil(65535));
    }

    /// A filter of 200,000 IDs at its sizing target: about half its bits set.
    fn half_full() -> (Meta, Filter) {
        let mut f = Filter::with_capacity(200_000, 0.01).unwrap();
        for i in 0..200_000 {
            f.insert(&format!("id-{i}"));
        }
        (Meta::hour("2008-09-03T13:00:00Z".into(), true, 200_000), f)
    }

    fn deflated(data: &[u8], level: Compression) -> usize {
        let mut enc = GzEncoder::new(Vec::new(), level);
        enc.write_all(data).unwrap();
        enc.finish().unwrap().len()
    }

    #[test]
    fn the_hex_forms_of_a_half_full_filter_are_coded_smaller_than_deflate_at_any_effort() {
        let (meta, f) = half_full();
        for repr in [Repr::Json, Repr::Hex] {
            for effort in [Effort::Fast, Effort::Best] {
                let r = render(&meta, &f, repr, effort);
                let mut out = Vec::new();
                GzDecoder::new(&r.gzip[..]).read_to_end(&mut out).unwrap();
                assert_eq!(out, r.identity);
                assert!(r.gzip.len() < r.identity.len() * 52 / 100);
                assert!(r.gzip.len() < deflated(&r.identity, Compression::best()));
            }
        }
    }

    #[test]
    fn raw_bits_near_half_full_are_stored_and_sparse_ones_deflated() {
        let (meta, f) = half_full();
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert!(r.gzip.len() > r.identity.len(), "stored blocks");
        // One ID in a filter sized for 100: nearly all zero bits, which deflate shrinks.
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert!(r.gzip.len() < r.identity.len());
    }

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
    fn a_version_rendered_from_the_one_before_is_the_fresh_rendering() {
        let (meta, mut f) = half_full();
        for repr in [Repr::Json, Repr::Hex] {
            let (_, before) = render_next(&meta, &f, repr, Effort::Fast, Encodings::Gzip, None);
            let before = before.expect("a gzip body alone of a hex form leaves its coding");
            assert!(before.size() >= f.bytes().len(), "it keeps the bytes coded");
            f.insert(&format!("one more {repr:?}"));
            let meta = Meta::hour("2008-09-03T13:00:00Z".into(), false, 200_001);
            let (next, after) =
                render_next(&meta, &f, repr, Effort::Fast, Encodings::Gzip, Some(before));
            assert!(after.is_some(), "and the next version's for the one after");
            let fresh = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            assert_eq!(next.gzip, fresh.gzip, "{repr:?}");
            assert_eq!(next.sha256, fresh.sha256);
            // Renderings that hold an identity body leave no coding.
            let (_, none) = render_next(&meta, &f, repr, Effort::Fast, Encodings::Both, None);
            assert!(none.is_none());
        }
    }

    #[test]
    fn a_response_is_gzip_when_asked_and_held() {
        for accepts in [false, true] {
            assert_eq!(Encodings::Both.sends_gzip(accepts), accepts);
            assert!(Encodings::asked(accepts).sends_gzip(accepts) == accepts);
        }
        assert!(
            Encodings::Gzip.sends_gzip(false),
            "a gzip-only rendering sends gzip"
        );
        assert!(!Encodings::Identity.sends_gzip(true));
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
