//! Rendering a filter into the bytes a client receives: each representation once,
//! with its gzip form and its ETag, so serving is a memory copy.

use crate::bloom::Filter;
use crate::wire::{Document, Meta};
use bytes::Bytes;
use flate2::{write::GzEncoder, Compression};
use std::io::Write;
use std::sync::Mutex;

mod gz;
mod ribbon;
pub use gz::HexCoding;
pub use ribbon::{render_compact, render_ribbon, Compact, RIBBON_JSON_TYPE, RIBBON_TYPE};

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
/// too would double the bytes hashed (a full SHA-256 per body, for its ETag and
/// `Repr-Digest`), so such a version holds only the one asked for.
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

/// One representation of one filter, ready to send.
#[derive(Debug)]
pub struct Rendered {
    pub repr: Repr,
    /// Which of the two bodies below this rendering holds; the other is empty, and its
    /// ETag and `Repr-Digest` are those of the one held.
    pub encodings: Encodings,
    pub identity: Bytes,
    pub gzip: Bytes,
    /// Strong ETag of the identity bytes, quoted.
    pub etag: String,
    /// Strong ETag of the gzip bytes, quoted: the identity tag with a `-gz` suffix (in a
    /// rendering of the gzip body alone, the prefix of that body's own SHA-256 with it).
    pub etag_gzip: String,
    /// `Bloom-*` headers (raw representations only).
    pub bloom_headers: Vec<(&'static str, String)>,
    /// `Repr-Digest` (RFC 9530) of the identity bytes and of the gzip bytes.
    pub repr_digest: String,
    pub repr_digest_gzip: String,
    /// The hour chain's headers (`Bloom-Prev-Header`, `Bloom-Signature`) of a sealed
    /// hour, in every representation; empty otherwise.
    pub chain_headers: Vec<(&'static str, String)>,
    pub complete: bool,
    /// SHA-256 of the identity bytes: this version's name as a compression dictionary
    /// (RFC 9842 `Available-Dictionary`). In a rendering of the gzip body alone, that
    /// body's SHA-256 instead: such a rendering (an open union's) is never a dictionary.
    pub sha256: [u8; 32],
    /// The filter's size in bits and its count of IDs (a delta needs the same `m`).
    pub m: u64,
    pub count: u64,
    /// What rendering the gzip body alone of a hex form left for the next version
    /// ([`render_next`]); taken by the first renderer of that version.
    coding: Mutex<Option<HexCoding>>,
    /// Its size in bytes when this was rendered, counted in [`Rendered::size`] even once
    /// taken, so the cache's accounting of this rendering never changes.
    coding_size: usize,
}

impl Rendered {
    /// Bytes held in memory, for the cache's budget.
    pub fn size(&self) -> usize {
        self.identity.len() + self.gzip.len() + self.coding_size + 256
    }

    /// What the next version's rendering needs of this one ([`render_next`]), once.
    pub fn take_coding(&self) -> Option<HexCoding> {
        crate::sync::lock(&self.coding).take()
    }

    /// Whether an `If-None-Match` value matches this representation in either
    /// encoding (weak comparison, as RFC 9110 prescribes for `If-None-Match`).
    pub fn matches(&self, if_none_match: &str) -> bool {
        // The common case first: a client sending back the one tag it was given.
        if if_none_match == self.etag || if_none_match == self.etag_gzip {
            return true;
        }
        if_none_match.split(',').map(str::trim).any(|tag| {
            let tag = tag.strip_prefix("W/").unwrap_or(tag);
            tag == "*" || tag == self.etag || tag == self.etag_gzip || self.is_dcz_tag(tag)
        })
    }

    /// Strong ETag of a `dcz` (dictionary-compressed) response of these bytes, quoted.
    pub fn etag_dcz(&self) -> String {
        format!("{}-dcz\"", &self.etag[..self.etag.len() - 1])
    }

    fn is_dcz_tag(&self, tag: &str) -> bool {
        let base = &self.etag[..self.etag.len() - 1];
        tag.strip_prefix(base) == Some("-dcz\"")
    }
}

/// Renders a filter with its metadata, in both encodings.
pub fn render(meta: &Meta, filter: &Filter, repr: Repr, effort: Effort) -> Rendered {
    render_as(meta, filter, repr, effort, Encodings::Both)
}

/// Renders a filter with its metadata, holding the bodies of `encodings` only.
///
/// The ETag of a rendering that holds both is the identity body's; one of the gzip
/// body alone is named by that body's own SHA-256, so the identity body is never
/// hashed (a union's JSON is twice the size of its bits).
pub fn render_as(
    meta: &Meta,
    filter: &Filter,
    repr: Repr,
    effort: Effort,
    encodings: Encodings,
) -> Rendered {
    render_next(meta, filter, repr, effort, encodings, None)
}

/// [`render_as`] for a filter whose earlier version was rendered as `before` (its
/// [`Rendered::take_coding`]): the gzip body alone of a hex form then codes only what
/// changed since (`gz::hex_of`), and keeps what the next version needs. The bytes are
/// those [`render_as`] gives.
pub fn render_next(
    meta: &Meta,
    filter: &Filter,
    repr: Repr,
    effort: Effort,
    encodings: Encodings,
    before: Option<HexCoding>,
) -> Rendered {
    let bloom_headers = match repr {
        Repr::Json => Vec::new(),
        Repr::Hex | Repr::Bin => meta.headers(filter),
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
    let tag = etag_of(&sha256);
    let etag = format!("\"{tag}{}\"", if gzip_only { "-gz" } else { "" });
    let repr_digest = crate::chain::repr_digest_of(&sha256);
    // A rendering of one body gives that body's tag and digest for either encoding.
    let (etag_gzip, repr_digest_gzip) = match encodings {
        Encodings::Both => (format!("\"{tag}-gz\""), crate::chain::repr_digest(&gzip)),
        Encodings::Identity | Encodings::Gzip => (etag.clone(), repr_digest.clone()),
    };
    Rendered {
        repr,
        encodings,
        repr_digest,
        repr_digest_gzip,
        chain_headers: Vec::new(),
        etag,
        etag_gzip,
        identity,
        coding_size: coding.as_ref().map_or(0, HexCoding::size),
        coding: Mutex::new(coding),
        gzip,
        bloom_headers,
        complete: meta.complete,
        sha256,
        m: filter.m().into(),
        count: meta.count,
    }
}

/// The strong ETag's value (unquoted) of a body whose SHA-256 is `sha256` (the identity
/// body's, or the gzip body's in a rendering of that alone): its first 80 bits in hex.
/// One SHA-256 pass names a body three ways (its ETag, its `Repr-Digest`, its name as a
/// dictionary); the ETag is opaque to clients.
pub(crate) fn etag_of(sha256: &[u8; 32]) -> String {
    crate::bloom::to_hex(&sha256[..10])
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
    fn repr_digests_cover_the_bytes_of_each_encoding() {
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert_eq!(r.repr_digest, crate::chain::repr_digest(&r.identity));
        assert_eq!(r.repr_digest_gzip, crate::chain::repr_digest(&r.gzip));
        assert_ne!(r.repr_digest, r.repr_digest_gzip);
    }

    #[test]
    fn etags_are_stable_and_differ_by_content_and_encoding() {
        let (meta, f) = sample(true);
        let a = render(&meta, &f, Repr::Json, Effort::Best);
        let b = render(&meta, &f, Repr::Json, Effort::Fast);
        assert_eq!(
            a.etag, b.etag,
            "the tag depends on content, not compression effort"
        );
        assert_ne!(a.etag, a.etag_gzip);
        let mut g = f.clone();
        g.insert("y");
        assert_ne!(render(&meta, &g, Repr::Json, Effort::Best).etag, a.etag);
        assert_ne!(render(&meta, &f, Repr::Hex, Effort::Best).etag, a.etag);
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
            assert_eq!(gz.repr_digest_gzip, crate::chain::repr_digest(&gz.gzip));
            assert_eq!(gz.sha256, crate::dcz::sha256(&gz.gzip));
            assert_eq!(gz.etag_gzip, format!("\"{}-gz\"", etag_of(&gz.sha256)));
            assert_eq!(
                (&gz.etag, &gz.repr_digest),
                (&gz.etag_gzip, &gz.repr_digest_gzip)
            );
            assert_ne!(
                gz.etag_gzip, both.etag_gzip,
                "tags of different encodings differ"
            );

            let id = render_as(&meta, &f, repr, Effort::Fast, Encodings::Identity);
            assert!(id.gzip.is_empty(), "{repr:?}: no gzip body made");
            assert_eq!(id.identity, both.identity);
            assert_eq!((&id.etag, &id.repr_digest), (&both.etag, &both.repr_digest));
            assert_eq!(
                (&id.etag_gzip, &id.repr_digest_gzip),
                (&id.etag, &id.repr_digest)
            );
            assert_eq!(id.sha256, both.sha256);
            assert!(id.size() < both.size() && gz.size() < both.size());
        }
    }

    #[test]
    fn a_version_rendered_from_the_one_before_is_the_fresh_rendering() {
        let (meta, mut f) = half_full();
        for repr in [Repr::Json, Repr::Hex] {
            let first = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            assert!(
                first.size() > first.gzip.len() + f.bytes().len(),
                "its coding counted"
            );
            let before = first.take_coding();
            assert!(
                before.is_some() && first.take_coding().is_none(),
                "taken once"
            );
            f.insert(&format!("one more {repr:?}"));
            let meta = Meta::hour("2008-09-03T13:00:00Z".into(), false, 200_001);
            let next = render_next(&meta, &f, repr, Effort::Fast, Encodings::Gzip, before);
            let fresh = render_as(&meta, &f, repr, Effort::Fast, Encodings::Gzip);
            assert_eq!(next.gzip, fresh.gzip, "{repr:?}");
            assert_eq!(
                (&next.etag, &next.repr_digest),
                (&fresh.etag, &fresh.repr_digest)
            );
            // Renderings that hold an identity body keep no coding.
            let both = render_as(&meta, &f, repr, Effort::Fast, Encodings::Both);
            assert!(both.take_coding().is_none());
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
    fn if_none_match_accepts_lists_weak_tags_and_star() {
        let (meta, f) = sample(false);
        let r = render(&meta, &f, Repr::Hex, Effort::Fast);
        assert!(r.matches(&r.etag));
        assert!(r.matches(&format!("\"other\", W/{}", r.etag_gzip)));
        assert!(r.matches("*"));
        assert!(r.matches(&r.etag_dcz()));
        assert!(!r.matches("\"other\""));
        assert!(!r.matches("\"other-dcz\""));
    }

    #[test]
    fn raw_representations_carry_bloom_headers() {
        let (meta, f) = sample(false);
        assert!(render(&meta, &f, Repr::Json, Effort::Fast)
            .bloom_headers
            .is_empty());
        let hex = render(&meta, &f, Repr::Hex, Effort::Fast);
        assert!(hex
            .bloom_headers
            .iter()
            .any(|(n, v)| *n == "bloom-m" && v == &f.m().to_string()));
        assert_eq!(hex.identity, Bytes::from(f.to_hex()));
    }
}
