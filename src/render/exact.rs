//! Rendering an hour's exact body (docs/PROTOCOL.md section 14): the body as stored,
//! never gzipped (near-random bits), with its fields and the hour's place in the chain
//! (whose signature, for this form, is over the exact message).

use super::{ChainPlace, Encodings, RawFields, Rendered, Repr};
use crate::wire::Meta;
use bytes::Bytes;

/// Renders an exact body of the hour `meta` names, answering for `universe` IDs.
pub fn render_exact(
    meta: &Meta,
    body: Vec<u8>,
    universe: u32,
    chain: Option<ChainPlace>,
) -> Rendered {
    let sha256 = crate::dcz::sha256(&body);
    Rendered {
        repr: Repr::Bin,
        encodings: Encodings::Both,
        sha256,
        gzip_sha256: crate::dcz::sha256(&[]),
        fields: RawFields::Exact {
            meta: meta.clone(),
            universe,
        },
        chain,
        open: None,
        validator: None,
        complete: meta.complete,
        m: 0,
        count: meta.count,
        gzip: Bytes::new(),
        identity: super::rendered::kept(body),
        head: Default::default(),
    }
}
