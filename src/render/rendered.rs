//! What a rendering is: one representation's bodies, which encodings it holds, and the
//! values that describe them (the SHA-256s that name it, the fields beside a raw body,
//! a sealed hour's place in the chain), for the HTTP layer to name on the wire.

use super::Repr;
use crate::wire::{FilterParams, Meta};
use bytes::Bytes;

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
    /// A version of the open hour's signature, when the service signs: sent with it.
    pub open: Option<OpenSignature>,
    /// What names a complete union instead of its bytes: a digest of its hours' chain
    /// digests, known without building it (so a revalidation needs no build). `None`:
    /// named by [`Rendered::sha256`].
    pub validator: Option<[u8; 32]>,
    pub complete: bool,
    /// The filter's size in bits and its count of IDs (a delta needs the same `m`).
    pub m: u64,
    pub count: u64,
    /// Its headers, formatted on its first response ([`Rendered::head`]).
    pub head: std::sync::OnceLock<super::Head>,
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
    /// A version 2 ribbon body: its metadata, rate and structure.
    Ribbon2 {
        meta: Meta,
        fpp: f64,
        k: u32,
        split: u32,
        shards: [u32; 2],
    },
    /// An hour's paged body: its metadata, rate, grade and layout.
    Pages {
        meta: Meta,
        fpp: f64,
        k: u32,
        split: u32,
        pages: u32,
        slot: u32,
    },
    /// An exact body: its metadata (`count` is the changed IDs) and the IDs of the
    /// universe it answers for.
    Exact { meta: Meta, universe: u32 },
}

/// A sealed hour's place in the hour chain: the header of the hour before it, and the
/// publisher's signature over its link (none when the service does not sign).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPlace {
    pub prev: crate::chain::Hash,
    pub signature: Option<crate::chain::SignatureField>,
}

/// A version of the open hour signed (docs/PROTOCOL.md section 11, "Trust"): over the
/// hour, when it was made (Unix seconds) and its filter's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSignature {
    pub made: i64,
    pub field: crate::chain::SignatureField,
}

impl std::fmt::Display for OpenSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; made={}", self.field, self.made)
    }
}

/// A body to keep in a [`Rendered`]: its memory cut to its length (a `Vec` reserved
/// for a bound, as a gzip body's is, or grown by doubling holds more), so that what the
/// cache counts ([`Rendered::size`]) is what it holds.
pub(crate) fn kept(body: Vec<u8>) -> Bytes {
    Bytes::from(body.into_boxed_slice())
}

impl Rendered {
    /// The memory of the body this rendering holds (the identity body, or the gzip one
    /// of a rendering of that alone), for rendering a next version over it
    /// ([`super::Before`]); empty when something else still holds the body.
    pub fn into_body_memory(self) -> Vec<u8> {
        let body = if self.identity.is_empty() {
            self.gzip
        } else {
            self.identity
        };
        body.try_into_mut().map(Vec::from).unwrap_or_default()
    }

    /// Bytes held in memory, for the cache's budget: its bodies, itself with its head's
    /// values, and its head's header maps as they will be once made
    /// (`head::bytes_at_most`).
    pub fn size(&self) -> usize {
        self.identity.len() + self.gzip.len() + 1024 + super::head::bytes_at_most(self)
    }

    /// Its headers (ETags, `Repr-Digest`s, `Bloom-*` and the chain's), formatted once.
    pub fn head(&self) -> &super::Head {
        self.head.get_or_init(|| super::Head::of(self))
    }

    /// What its ETags are made from: its [`Rendered::validator`] if it has one, else
    /// its [`Rendered::sha256`].
    pub fn tag(&self) -> &[u8; 32] {
        self.validator.as_ref().unwrap_or(&self.sha256)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
