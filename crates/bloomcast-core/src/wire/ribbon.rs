//! The self-describing JSON form of the compact (ribbon) representation
//! (`application/vnd.bloomcast.ribbon+json`, suffix `.ribbon.json`): every parameter a
//! decoder needs, and the `.ribbon` body itself as hex, as the v1 document carries the
//! `.bin` body. docs/PROTOCOL.md section 12.

use super::Meta;
use crate::bloom::{FilterError, Ribbon, SHA1_KM32, WIDTH};
use serde::{Deserialize, Serialize};

/// The one structure this document describes.
pub const STRUCTURE: &str = "ribbon";

/// A ribbon filter's JSON document (`.ribbon.json`): the compact form's metadata and body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RibbonDocument {
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
    /// Distinct IDs (keys) the filter was built from: the body's `n`.
    pub count: u64,
    /// `"ribbon"`: lets one parser tell this document from a v1 Bloom document.
    pub structure: String,
    /// The key scheme (section 1), named as in the v1 document.
    pub hash: String,
    /// Band width, coefficient bits per key: 64.
    pub w: u32,
    /// Fingerprint bits; the false-positive rate is `2^-r`.
    pub r: u32,
    /// Rows of the solution.
    pub m: u32,
    /// The seed construction succeeded with (counted up from 0, so small).
    pub seed: u64,
    /// `2^-r`.
    pub fpp: f64,
    /// The `.ribbon` body, header included, as lowercase hex.
    pub filter: String,
    /// SHA-256 of the body's bytes, lowercase hex.
    pub digest: String,
}

impl RibbonDocument {
    /// The document of `ribbon` with `meta`.
    pub fn new(meta: Meta, ribbon: &Ribbon) -> RibbonDocument {
        let body = ribbon.to_bytes();
        RibbonDocument {
            hour: meta.hour,
            from: meta.from,
            to: meta.to,
            complete: meta.complete,
            count: meta.count,
            structure: STRUCTURE.to_owned(),
            hash: SHA1_KM32.to_owned(),
            w: WIDTH,
            r: ribbon.r(),
            m: ribbon.m(),
            seed: ribbon.seed(),
            fpp: ribbon.fpp(),
            filter: crate::bloom::to_hex(&body),
            digest: super::digest_hex(&body),
        }
    }

    /// Serialises to compact JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a document always serialises")
    }

    /// Parses and validates a document: the body must decode, and every field that
    /// repeats the body's header (and the digest) must agree with it.
    ///
    /// # Errors
    /// [`FilterError::BadDocument`] for anything that disagrees or is not such a
    /// document; [`FilterError::BadRibbon`] for a body that does not decode.
    pub fn parse(json: &[u8]) -> Result<(Meta, Ribbon), FilterError> {
        let bad = |what: String| FilterError::BadDocument(what);
        let doc: RibbonDocument = serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
        if doc.structure != STRUCTURE {
            return Err(bad(format!(
                "structure {:?} is not \"ribbon\"",
                doc.structure
            )));
        }
        if doc.hash != SHA1_KM32 {
            return Err(bad(format!("unknown hash scheme {:?}", doc.hash)));
        }
        let body = crate::bloom::from_hex(&doc.filter)?;
        let digest = super::digest_hex(&body);
        if !doc.digest.eq_ignore_ascii_case(&digest) {
            return Err(bad(format!(
                "the document's digest {} is not its body's ({digest})",
                doc.digest
            )));
        }
        let ribbon = Ribbon::from_bytes(&body)?;
        let header = (
            WIDTH,
            ribbon.r(),
            ribbon.m(),
            ribbon.seed(),
            u64::from(ribbon.n()),
        );
        let fields = (doc.w, doc.r, doc.m, doc.seed, doc.count);
        if fields != header {
            return Err(bad(format!(
                "w, r, m, seed, count {fields:?} disagree with the body's {header:?}"
            )));
        }
        let meta = Meta {
            hour: doc.hour,
            from: doc.from,
            to: doc.to,
            complete: doc.complete,
            count: doc.count,
        };
        Ok((meta, ribbon))
    }
}

/// Decodes either form of the compact representation: a `BCR1` body (which says nothing
/// of its time, so no [`Meta`]), or its JSON document (with it). Leading whitespace is
/// allowed before a document.
///
/// # Errors
/// As [`Ribbon::from_bytes`] or [`RibbonDocument::parse`].
pub fn decode_compact(body: &[u8]) -> Result<(Option<Meta>, Ribbon), FilterError> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        let (meta, ribbon) = RibbonDocument::parse(body)?;
        return Ok((Some(meta), ribbon));
    }
    Ok((None, Ribbon::from_bytes(body)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Key;

    fn sample() -> (Meta, Ribbon) {
        let keys: Vec<Key> = (0..300).map(|i| Key::of(&format!("id:{i}"))).collect();
        let ribbon = Ribbon::build(&keys, 9).unwrap();
        let meta = Meta::range(
            "2008-09-03T00:00:00Z".into(),
            "2008-09-03T23:00:00Z".into(),
            true,
            300,
        );
        (meta, ribbon)
    }

    #[test]
    fn a_document_parses_back_to_its_meta_and_filter() {
        let (meta, ribbon) = sample();
        let json = RibbonDocument::new(meta.clone(), &ribbon).to_json();
        assert_eq!(RibbonDocument::parse(&json).unwrap(), (meta, ribbon));
    }

    #[test]
    fn either_form_decodes_to_the_same_filter() {
        let (meta, ribbon) = sample();
        let json = RibbonDocument::new(meta.clone(), &ribbon).to_json();
        assert_eq!(decode_compact(&json).unwrap(), (Some(meta), ribbon.clone()));
        assert_eq!(decode_compact(&ribbon.to_bytes()).unwrap(), (None, ribbon));
        assert!(decode_compact(b"{}").is_err());
        assert!(decode_compact(b"BCR2").is_err());
    }

    #[test]
    fn fields_that_disagree_with_the_body_are_refused() {
        let (meta, ribbon) = sample();
        let good = RibbonDocument::new(meta, &ribbon);
        let edits: [fn(&mut RibbonDocument); 8] = [
            |d| d.r += 1,
            |d| d.m -= 1,
            |d| d.seed += 1,
            |d| d.count += 1,
            |d| d.w = 32,
            |d| d.hash = "md5".into(),
            |d| d.structure = "fuse".into(),
            |d| d.digest = "00".repeat(32),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut doc = good.clone();
            edit(&mut doc);
            assert!(RibbonDocument::parse(&doc.to_json()).is_err(), "edit {i}");
        }
        let mut flipped = good.clone();
        let last = flipped.filter.pop().unwrap();
        flipped.filter.push(if last == '0' { '1' } else { '0' });
        assert!(
            RibbonDocument::parse(&flipped.to_json()).is_err(),
            "a body bit"
        );
    }
}
