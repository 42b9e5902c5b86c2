//! Wire format v1: the JSON document and the raw representations' headers.
//!
//! Pure: values in, values out. The server renders with it, the SDK and CLI parse
//! with it, and `docs/PROTOCOL.md` describes exactly this.
//!
//! - [`Meta`]: what a response says about its filter besides the bits (`meta`).
//! - [`Document`]: the JSON document (`document`).
//! - [`decode_raw`] and the `HEADER_*` names: the raw representations (`raw`).
//! - [`Repr`]: which of the three a request asks for (`repr`).
//! - [`check_id`]: the rule every ingested ID follows (`ids`).
//! - [`RibbonDocument`] and [`decode_compact`]: the compact ribbon form (`ribbon`).

mod document;
mod ids;
mod meta;
mod raw;
mod repr;
mod ribbon;

pub use document::Document;
pub use ids::{check_id, IdError, MAX_ID_BYTES};
pub use meta::Meta;
pub use raw::{
    decode_raw, fpp_text, FilterParams, HEADER_COMPLETE, HEADER_COUNT, HEADER_FPP, HEADER_FROM,
    HEADER_HASH, HEADER_HOUR, HEADER_K, HEADER_M, HEADER_TO,
};
pub use repr::Repr;
pub use ribbon::{decode_compact, RibbonDocument, STRUCTURE as RIBBON_STRUCTURE};

/// The `digest` a document carries: SHA-256 of the filter's bytes in wire order, lowercase
/// hex (the hour chain's `digest(h)`, available without the `chain` feature).
pub(crate) fn digest_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    crate::bloom::to_hex(&sha2::Sha256::digest(bytes))
}
