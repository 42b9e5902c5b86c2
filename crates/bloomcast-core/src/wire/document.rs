//! The v1 JSON document: a filter's metadata, its bits as hex and their digest in one
//! self-describing object, written without passing the hex through the serializer and
//! parsed strictly.

use super::Meta;
use crate::bloom::{Filter, FilterError};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::borrow::Cow;

/// A filter's JSON document (v1). Hourly filters carry `hour`; unions carry
/// `from` and `to` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The hour covered (RFC 3339, as `2008-09-03T13:00:00Z`); `None` for a union.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hour: Option<String>,
    /// A union's first hour (RFC 3339); `None` for one hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// A union's last hour, inclusive (RFC 3339); `None` for one hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `true` once the covered time is over and the content can never change.
    pub complete: bool,
    /// Distinct IDs recorded.
    pub count: u64,
    /// The filter's size in bits.
    pub m: u64,
    /// Probes per ID.
    pub k: u64,
    /// The hash scheme, `sha1-km32`.
    pub hash: String,
    /// Estimated false-positive probability at this fill.
    pub fpp: f64,
    /// The body as lowercase hex.
    pub filter: String,
    /// SHA-256 of the filter's bytes (the `.bin` body), lowercase hex: the digest the
    /// hour chain covers. Absent from documents of servers before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A document serialized with an empty `filter`, split where its hex goes: the text up to
/// and including the opening quote, and the rest from the closing one.
fn split_at_filter(mut shell: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    const EMPTY: &[u8] = br#""filter":"""#;
    // The only key `filter`; a string value holding those bytes would have its quotes
    // escaped, so this is the field itself.
    let at = shell
        .windows(EMPTY.len())
        .position(|w| w == EMPTY)
        .expect("a document has a filter field")
        + EMPTY.len()
        - 1;
    let after = shell.split_off(at);
    (shell, after)
}

impl Document {
    /// The document of `filter` with `meta`.
    pub fn new(meta: Meta, filter: &Filter) -> Document {
        let bytes = filter.bytes();
        Document::with_hex(meta, filter, &bytes, crate::bloom::to_hex(&bytes))
    }

    fn with_hex(meta: Meta, filter: &Filter, bytes: &[u8], hex: String) -> Document {
        let digest = super::digest_hex(bytes);
        Document::with_digest(meta, filter, hex, digest)
    }

    fn with_digest(meta: Meta, filter: &Filter, hex: String, digest: String) -> Document {
        Document {
            hour: meta.hour,
            from: meta.from,
            to: meta.to,
            complete: meta.complete,
            count: meta.count,
            m: u64::from(filter.m()),
            k: u64::from(filter.k()),
            hash: filter.hash().name().to_owned(),
            fpp: filter.fpp(),
            filter: hex,
            digest: Some(digest),
        }
    }

    /// Serialises to compact JSON.
    pub fn to_json(&self) -> Vec<u8> {
        // Sized up front: the filter's hex is nearly all of it, and growing a buffer of
        // tens of megabytes by doubling copies it several times.
        let mut out = Vec::with_capacity(self.filter.len() + 512);
        serde_json::to_writer(&mut out, self).expect("a document always serialises");
        out
    }

    /// The bytes of `Document::new(meta, filter).to_json()`, made without passing the
    /// filter's hex through the serializer: the other fields are serialized around an
    /// empty `filter`, and the hex is written into its place. serde_json scans every
    /// byte of a string for escapes and copies it (35 ms of an 80 ms render of a 10.4 MB
    /// union); hex never needs escaping.
    pub fn json_of(meta: Meta, filter: &Filter) -> Vec<u8> {
        let (before, bytes, after) = Document::json_parts(meta, filter);
        let mut out = Vec::with_capacity(before.len() + bytes.len() * 2 + after.len());
        out.extend_from_slice(&before);
        crate::bloom::hex_into(&bytes, &mut out);
        out.extend_from_slice(&after);
        out
    }

    /// [`Document::json_of`] in three parts: the text before the filter's hex, the
    /// filter's bytes (whose hex goes in between), and the text after it; for a body
    /// that is made from them without the hex ever written out (its gzip form).
    pub fn json_parts(meta: Meta, filter: &Filter) -> (Vec<u8>, Cow<'_, [u8]>, Vec<u8>) {
        let bytes = filter.bytes();
        let shell = Document::with_hex(meta, filter, &bytes, String::new()).to_json();
        let (before, after) = split_at_filter(shell);
        (before, bytes, after)
    }

    /// [`Document::json_of`] and the SHA-256 of its bytes, in one pass: the hex is
    /// written a piece at a time and hashed while the piece is still in L1, rather than
    /// read back from memory once the body is whole (a large union's body is 20 MB).
    /// Hand-written SHA-NI lanes hashing the filter's bytes and the body in step were
    /// no faster on that union and 10-13% faster on bodies of a few KB to 1 MB, not
    /// enough to keep (`benches/sha256.rs`, docs/BENCHMARKS.md).
    pub fn json_with_sha256(meta: Meta, filter: &Filter) -> (Vec<u8>, [u8; 32]) {
        Document::json_with_sha256_in(meta, filter, Vec::new())
    }

    /// As [`Document::json_with_sha256`], written over `out`'s memory (its contents are
    /// dropped; see [`Filter::to_bytes_in`]).
    pub fn json_with_sha256_in(
        meta: Meta,
        filter: &Filter,
        mut out: Vec<u8>,
    ) -> (Vec<u8>, [u8; 32]) {
        /// Bytes of the filter a piece: 2 KiB of hex, hashed before the next is written.
        const PIECE: usize = 1024;
        let (before, bytes, after) = Document::json_parts(meta, filter);
        out.clear();
        out.reserve_exact(before.len() + bytes.len() * 2 + after.len());
        let mut body = Sha256::new();
        out.extend_from_slice(&before);
        body.update(&before);
        for piece in bytes.chunks(PIECE) {
            let at = out.len();
            crate::bloom::hex_into(piece, &mut out);
            body.update(&out[at..]);
        }
        out.extend_from_slice(&after);
        body.update(&after);
        (out, body.finalize().into())
    }

    /// Parses and validates a JSON document.
    ///
    /// # Errors
    /// [`FilterError::BadDocument`] for JSON that is not a v1 document, or any
    /// decoding error of the filter itself.
    pub fn parse(json: &[u8]) -> Result<(Meta, Filter), FilterError> {
        let doc: Document =
            serde_json::from_slice(json).map_err(|e| FilterError::BadDocument(e.to_string()))?;
        doc.into_parts()
    }

    /// Validates this document's filter (and its digest, when it has one) and splits it
    /// from its metadata.
    ///
    /// # Errors
    /// Any decoding error of the filter; [`FilterError::BadDocument`] when the digest
    /// is not the filter's.
    pub fn into_parts(self) -> Result<(Meta, Filter), FilterError> {
        let filter = Filter::decode_hex(self.m, self.k, &self.hash, &self.filter)?;
        if let Some(digest) = &self.digest {
            let actual = super::digest_hex(&filter.bytes());
            if !digest.eq_ignore_ascii_case(&actual) {
                return Err(FilterError::BadDocument(format!(
                    "the document's digest {digest} is not its filter's ({actual})"
                )));
            }
        }
        let meta = Meta {
            hour: self.hour,
            from: self.from,
            to: self.to,
            complete: self.complete,
            count: self.count,
        };
        Ok((meta, filter))
    }
}

#[cfg(test)]
mod tests {
    use super::super::meta::sample;
    use super::*;

    #[test]
    fn json_of_is_the_serialized_document_byte_for_byte() {
        let (meta, f) = sample();
        assert_eq!(
            Document::json_of(meta.clone(), &f),
            Document::new(meta, &f).to_json()
        );
        // A value holding the field's own bytes is escaped, so it is never taken for it.
        let tricky = Meta::range(r#""filter":"""#.into(), "to".into(), false, 3);
        let json = Document::json_of(tricky.clone(), &f);
        assert_eq!(json, Document::new(tricky, &f).to_json());
        assert_eq!(Document::parse(&json).unwrap().1, f);
    }

    #[test]
    fn json_with_sha256_is_json_of_and_its_sha256() {
        use sha2::Digest as _;
        let (_, small) = sample();
        let mut large = Filter::with_capacity(20_000, 0.01).unwrap();
        for i in 0..20_000 {
            large.insert(&format!("id-{i}"));
        }
        // Values holding the digest's key are escaped, so the stand-in is found, not them.
        let tricky = Meta::range(r#""digest":""#.into(), r#""filter":"""#.into(), false, 3);
        for f in [&small, &large] {
            for meta in [sample().0, tricky.clone()] {
                let (json, sha) = Document::json_with_sha256(meta.clone(), f);
                assert_eq!(json, Document::json_of(meta, f));
                assert_eq!(sha, <[u8; 32]>::from(sha2::Sha256::digest(&json)));
                let (_, parsed) = Document::parse(&json).unwrap();
                assert_eq!(&parsed, f);
            }
        }
    }

    #[test]
    fn json_has_the_v1_fields() {
        let (meta, f) = sample();
        let json: serde_json::Value =
            serde_json::from_slice(&Document::new(meta, &f).to_json()).unwrap();
        for field in [
            "hour", "complete", "count", "m", "k", "hash", "fpp", "filter", "digest",
        ] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        assert!(json.get("from").is_none());
        assert_eq!(json["hash"], "sha1-km32");
        assert_eq!(json["hour"], "2008-09-03T13:00:00Z");
    }

    #[test]
    fn json_round_trips() {
        let (meta, f) = sample();
        let (meta2, f2) = Document::parse(&Document::new(meta.clone(), &f).to_json()).unwrap();
        assert_eq!((meta2, f2), (meta, f));
    }

    #[test]
    fn documents_with_bad_parts_are_rejected() {
        assert!(matches!(
            Document::parse(b"{}"),
            Err(FilterError::BadDocument(_))
        ));
        assert!(matches!(
            Document::parse(b"not json"),
            Err(FilterError::BadDocument(_))
        ));
        let (meta, f) = sample();
        let mut doc = Document::new(meta, &f);
        doc.hash = "sha256".into();
        assert!(matches!(doc.into_parts(), Err(FilterError::UnknownHash(_))));
        let (meta, f) = sample();
        let mut doc = Document::new(meta, &f);
        doc.digest = Some("00".repeat(32));
        assert!(matches!(doc.into_parts(), Err(FilterError::BadDocument(_))));
    }
}
