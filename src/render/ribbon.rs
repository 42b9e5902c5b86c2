//! Rendering the compact (ribbon) representation: the binary body with its `Bloom-*`
//! headers, and its self-describing JSON form. Both are immutable once complete, so
//! they are rendered (and the JSON form compressed) once.

use super::{gzip, Effort, Rendered, Repr};
use crate::bloom::{Ribbon, SHA1_KM32};
use crate::wire::{
    Meta, RibbonDocument, HEADER_COMPLETE, HEADER_COUNT, HEADER_FPP, HEADER_FROM, HEADER_HASH,
    HEADER_HOUR, HEADER_TO,
};
use bytes::Bytes;

/// The content type of the compact (ribbon) representation; see docs/PROTOCOL.md.
pub const RIBBON_TYPE: &str = "application/vnd.bloomcast.ribbon";
/// The content type of its JSON form.
pub const RIBBON_JSON_TYPE: &str = "application/vnd.bloomcast.ribbon+json";

/// The two forms of the compact representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compact {
    /// The `BCR1` body (`.ribbon`), never gzipped.
    Ribbon,
    /// The JSON document holding it as hex (`.ribbon.json`), gzipped on request.
    RibbonJson,
}

impl Compact {
    pub const ALL: [Compact; 2] = [Compact::Ribbon, Compact::RibbonJson];

    pub fn content_type(self) -> &'static str {
        match self {
            Compact::Ribbon => RIBBON_TYPE,
            Compact::RibbonJson => RIBBON_JSON_TYPE,
        }
    }

    /// The URL suffix that selects this form, after the dot.
    pub fn suffix(self) -> &'static str {
        match self {
            Compact::Ribbon => "ribbon",
            Compact::RibbonJson => "ribbon.json",
        }
    }
}

/// Renders a ribbon filter in one of its forms.
pub fn render_compact(meta: &Meta, ribbon: &Ribbon, form: Compact) -> Rendered {
    match form {
        Compact::Ribbon => render_ribbon(meta, ribbon),
        Compact::RibbonJson => {
            let identity = RibbonDocument::new(meta.clone(), ribbon).to_json();
            let gzip = gzip(&identity, Repr::Json, Effort::Best);
            rendered(meta, ribbon, identity, gzip, Vec::new(), Repr::Json)
        }
    }
}

/// Renders a ribbon filter's body with its headers. The body is near-random bits,
/// so it is never gzipped (`gzip` is empty) and `repr` is unused (`Bin`): the compact
/// responder sets [`RIBBON_TYPE`] itself.
pub fn render_ribbon(meta: &Meta, ribbon: &Ribbon) -> Rendered {
    let mut bloom_headers = vec![
        (HEADER_HASH, SHA1_KM32.to_owned()),
        (HEADER_COUNT, meta.count.to_string()),
        (HEADER_COMPLETE, meta.complete.to_string()),
        (
            HEADER_FPP,
            serde_json::Number::from_f64(ribbon.fpp())
                .map_or_else(|| "0".into(), |n| n.to_string()),
        ),
        (
            "bloom-ribbon",
            format!(
                "w=64; r={}; m={}; seed={}",
                ribbon.r(),
                ribbon.m(),
                ribbon.seed()
            ),
        ),
    ];
    for (name, value) in [
        (HEADER_HOUR, &meta.hour),
        (HEADER_FROM, &meta.from),
        (HEADER_TO, &meta.to),
    ] {
        if let Some(value) = value {
            bloom_headers.push((name, value.clone()));
        }
    }
    let identity = ribbon.to_bytes();
    rendered(meta, ribbon, identity, Vec::new(), bloom_headers, Repr::Bin)
}

fn rendered(
    meta: &Meta,
    ribbon: &Ribbon,
    identity: Vec<u8>,
    gzip: Vec<u8>,
    bloom_headers: Vec<(&'static str, String)>,
    repr: Repr,
) -> Rendered {
    let sha256 = crate::dcz::sha256(&identity);
    let tag = super::etag_of(&sha256);
    Rendered {
        repr,
        encodings: super::Encodings::Both,
        repr_digest: crate::chain::repr_digest_of(&sha256),
        repr_digest_gzip: if gzip.is_empty() {
            String::new()
        } else {
            crate::chain::repr_digest(&gzip)
        },
        chain_headers: Vec::new(),
        etag: format!("\"{tag}\""),
        etag_gzip: format!("\"{tag}-gz\""),
        sha256,
        m: u64::from(ribbon.m()),
        count: meta.count,
        gzip: Bytes::from(gzip),
        bloom_headers,
        complete: meta.complete,
        identity: Bytes::from(identity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Key;

    #[test]
    fn both_forms_hold_the_same_filter_and_union_headers_name_the_range() {
        let keys: Vec<Key> = (0..50).map(|i| Key::of(&format!("k{i}"))).collect();
        let ribbon = Ribbon::build(&keys, 7).unwrap();
        let meta = Meta::range("a".into(), "b".into(), true, 50);
        let bin = render_compact(&meta, &ribbon, Compact::Ribbon);
        let json = render_compact(&meta, &ribbon, Compact::RibbonJson);
        assert_eq!(Ribbon::from_bytes(&bin.identity).unwrap(), ribbon);
        assert_eq!(RibbonDocument::parse(&json.identity).unwrap().1, ribbon);
        assert_ne!(bin.etag, json.etag);
        assert!(bin.gzip.is_empty() && !json.gzip.is_empty());
        let header = |name| bin.bloom_headers.iter().find(|(n, _)| *n == name);
        assert_eq!(header(HEADER_FROM).unwrap().1, "a");
        assert_eq!(header(HEADER_TO).unwrap().1, "b");
        assert!(header(HEADER_HOUR).is_none());
    }
}
