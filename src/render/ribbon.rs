//! Rendering the compact (ribbon) representation: the binary body with the fields its
//! `Bloom-*` headers carry, and its self-describing JSON form. Both are immutable once
//! complete, so they are rendered (and the JSON form compressed) once.

use super::{gzip, Effort, RawFields, Rendered, Repr};
use crate::bloom::{Pages, Ribbon, Ribbon2};
use crate::wire::{Meta, RibbonDocument};
use bytes::Bytes;

/// The two forms of the compact representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compact {
    /// The `BCR1` body, never gzipped.
    Ribbon,
    /// The JSON document holding it as hex, gzipped on request.
    RibbonJson,
    /// Version 2, the `BCR2` body (any precision near the floor), never gzipped. Its
    /// precision is a [`crate::bloom::Grade`] code where the others have `r`.
    Ribbon2,
    /// An hour's paged form, the `BCP1` body (pages of version 2 bodies, each signed,
    /// read by `Range`), never gzipped. Its precision is a grade code, as version 2's.
    Pages,
}

impl Compact {
    pub const ALL: [Compact; 4] = [
        Compact::Ribbon,
        Compact::RibbonJson,
        Compact::Ribbon2,
        Compact::Pages,
    ];

    /// Whether the form's precision is a version 2 grade code (else whole bits).
    pub fn graded(self) -> bool {
        matches!(self, Compact::Ribbon2 | Compact::Pages)
    }
}

/// Renders a ribbon filter in one of its forms.
pub fn render_compact(meta: &Meta, ribbon: &Ribbon, form: Compact) -> Rendered {
    match form {
        Compact::Ribbon => render_ribbon(meta, ribbon),
        Compact::RibbonJson => {
            let identity = RibbonDocument::new(meta.clone(), ribbon).to_json();
            let gzip = gzip(&identity, Repr::Json, Effort::Best);
            rendered(meta, ribbon, identity, gzip, RawFields::None, Repr::Json)
        }
        Compact::Ribbon2 | Compact::Pages => {
            unreachable!("version 2 bodies are rendered by render_ribbon2 and render_pages")
        }
    }
}

/// A binary body (never gzipped) with its fields: `m` is what its size is counted in.
fn binary(meta: &Meta, fields: RawFields, identity: Vec<u8>, m: u64) -> Rendered {
    Rendered {
        repr: Repr::Bin,
        encodings: super::Encodings::Both,
        sha256: crate::dcz::sha256(&identity),
        gzip_sha256: crate::dcz::sha256(&[]),
        fields,
        chain: None,
        open: None,
        validator: None,
        m,
        count: meta.count,
        gzip: Bytes::new(),
        complete: meta.complete,
        identity: super::rendered::kept(identity),
        head: Default::default(),
    }
}

/// Renders an hour's paged body with its fields; never gzipped. Its signatures are in
/// its pages: it has no chain headers.
pub fn render_pages(meta: &Meta, pages: Pages) -> Rendered {
    let header = *pages.header();
    let fields = RawFields::Pages {
        meta: meta.clone(),
        fpp: header.grade.fpp(),
        k: header.grade.k,
        split: header.grade.split,
        pages: header.pages,
        slot: header.slot,
    };
    let identity = pages.into_bytes();
    binary(meta, fields, identity, header.body_len())
}

/// Renders a version 2 body with its fields; never gzipped, like version 1's.
pub fn render_ribbon2(meta: &Meta, ribbon: &Ribbon2) -> Rendered {
    let (shards_a, shards_b) = ribbon.shard_counts();
    let fields = RawFields::Ribbon2 {
        meta: meta.clone(),
        fpp: ribbon.fpp(),
        k: ribbon.grade().k,
        split: ribbon.grade().split,
        shards: [shards_a, shards_b],
    };
    let identity = ribbon.to_bytes();
    binary(meta, fields, identity, ribbon.rows())
}

/// Renders a ribbon filter's body with its fields. The body is near-random bits,
/// so it is never gzipped (`gzip` is empty) and `repr` is unused (`Bin`): the compact
/// responder names its content type itself.
pub fn render_ribbon(meta: &Meta, ribbon: &Ribbon) -> Rendered {
    let fields = RawFields::Ribbon {
        meta: meta.clone(),
        fpp: ribbon.fpp(),
        r: ribbon.r(),
        m: ribbon.m(),
        seed: ribbon.seed(),
    };
    let identity = ribbon.to_bytes();
    rendered(meta, ribbon, identity, Vec::new(), fields, Repr::Bin)
}

fn rendered(
    meta: &Meta,
    ribbon: &Ribbon,
    identity: Vec<u8>,
    gzip: Vec<u8>,
    fields: RawFields,
    repr: Repr,
) -> Rendered {
    Rendered {
        repr,
        encodings: super::Encodings::Both,
        sha256: crate::dcz::sha256(&identity),
        gzip_sha256: crate::dcz::sha256(&gzip),
        fields,
        chain: None,
        open: None,
        validator: None,
        m: u64::from(ribbon.m()),
        count: meta.count,
        gzip: super::rendered::kept(gzip),
        complete: meta.complete,
        identity: super::rendered::kept(identity),
        head: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Key;

    #[test]
    fn both_forms_hold_the_same_filter_and_the_raw_one_its_fields() {
        let keys: Vec<Key> = (0..50).map(|i| Key::of(&format!("k{i}"))).collect();
        let ribbon = Ribbon::build(&keys, 7).unwrap();
        let meta = Meta::range("a".into(), "b".into(), true, 50);
        let bin = render_compact(&meta, &ribbon, Compact::Ribbon);
        let json = render_compact(&meta, &ribbon, Compact::RibbonJson);
        assert_eq!(Ribbon::from_bytes(&bin.identity).unwrap(), ribbon);
        assert_eq!(RibbonDocument::parse(&json.identity).unwrap().1, ribbon);
        assert_ne!(bin.sha256, json.sha256);
        assert!(bin.gzip.is_empty() && !json.gzip.is_empty());
        let RawFields::Ribbon { meta: said, r, .. } = &bin.fields else {
            panic!("the raw form carries its fields: {:?}", bin.fields);
        };
        assert_eq!((said, *r), (&meta, ribbon.r()));
        assert_eq!(json.fields, RawFields::None);
    }
}
