//! The raw (hex or binary) representations: the `Bloom-*` headers that describe their
//! body, made from a filter's [`Meta`] and read back by [`decode_raw`].

use super::Meta;
use crate::bloom::{Filter, FilterError, HashScheme};

// Response headers that describe a raw (hex or binary) body.
/// Response header of a raw body: the filter's size in bits.
pub const HEADER_M: &str = "bloom-m";
/// Response header of a raw body: probes per ID.
pub const HEADER_K: &str = "bloom-k";
/// Response header of a raw body: the hash scheme (`sha1-km32`).
pub const HEADER_HASH: &str = "bloom-hash";
/// Response header of a raw body: distinct IDs recorded.
pub const HEADER_COUNT: &str = "bloom-count";
/// Response header of a raw body: `true` once the content can never change.
pub const HEADER_COMPLETE: &str = "bloom-complete";
// Extensions: the time range a raw body covers (RFC 3339 hour starts, inclusive).
/// Response header of a union's raw body: its first hour (RFC 3339).
pub const HEADER_FROM: &str = "bloom-from";
/// Response header of a union's raw body: its last hour, inclusive (RFC 3339).
pub const HEADER_TO: &str = "bloom-to";
/// Response header of one hour's raw body: the hour (RFC 3339).
pub const HEADER_HOUR: &str = "bloom-hour";
/// Response header of a raw body: the false-positive estimate at this fill.
pub const HEADER_FPP: &str = "bloom-fpp";

impl Meta {
    /// The raw representations' headers for this metadata and filter.
    pub fn headers(&self, filter: &Filter) -> Vec<(&'static str, String)> {
        self.headers_for(&FilterParams::of(filter))
    }

    /// The raw representations' headers for this metadata and a filter's parameters
    /// (what [`Meta::headers`] gives for that filter, from values kept without it).
    pub fn headers_for(&self, params: &FilterParams) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (HEADER_M, params.m.to_string()),
            (HEADER_K, params.k.to_string()),
            (HEADER_HASH, params.hash.name().to_owned()),
            (HEADER_COUNT, self.count.to_string()),
            (HEADER_COMPLETE, self.complete.to_string()),
            (HEADER_FPP, fpp_text(params.fpp)),
        ];
        if let Some(h) = &self.hour {
            out.push((HEADER_HOUR, h.clone()));
        }
        if let Some(f) = &self.from {
            out.push((HEADER_FROM, f.clone()));
        }
        if let Some(t) = &self.to {
            out.push((HEADER_TO, t.clone()));
        }
        out
    }
}

/// What the raw headers say of a Bloom filter besides [`Meta`]: its size, hash count
/// and scheme, and its false-positive estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterParams {
    /// Size in bits (`Bloom-M`).
    pub m: u32,
    /// Probes per ID (`Bloom-K`).
    pub k: u32,
    /// Hash scheme (`Bloom-Hash`).
    pub hash: HashScheme,
    /// False-positive estimate (`Bloom-Fpp`).
    pub fpp: f64,
}

impl FilterParams {
    /// The parameters of `filter`.
    pub fn of(filter: &Filter) -> FilterParams {
        FilterParams {
            m: filter.m(),
            k: filter.k(),
            hash: filter.hash(),
            fpp: filter.fpp(),
        }
    }
}

/// A false-positive estimate as the `Bloom-Fpp` header gives it: the shortest
/// round-tripping form, as in JSON (e.g. `1.2e-22`, not 22 zeros; `0` for a value JSON
/// cannot hold).
pub fn fpp_text(fpp: f64) -> String {
    serde_json::Number::from_f64(fpp).map_or_else(|| "0".to_owned(), |n| n.to_string())
}

/// Decodes a raw body (hex when `hex`, else bytes) with its headers, looked up by
/// lowercase name through `header`.
///
/// # Errors
/// [`FilterError::BadDocument`] for a missing or unreadable header, or any decoding error.
pub fn decode_raw<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
    hex: bool,
) -> Result<(Meta, Filter), FilterError> {
    let need = |name: &str| {
        header(name).ok_or_else(|| FilterError::BadDocument(format!("missing header {name}")))
    };
    let number = |name: &str| -> Result<u64, FilterError> {
        need(name)?
            .trim()
            .parse()
            .map_err(|_| FilterError::BadDocument(format!("header {name} is not a number")))
    };
    let (m, k, count) = (number(HEADER_M)?, number(HEADER_K)?, number(HEADER_COUNT)?);
    let hash = need(HEADER_HASH)?.trim();
    let complete = match need(HEADER_COMPLETE)?.trim() {
        "true" => true,
        "false" => false,
        other => {
            return Err(FilterError::BadDocument(format!(
                "header {HEADER_COMPLETE} must be true or false, got {other:?}"
            )))
        }
    };
    let filter = if hex {
        let text = std::str::from_utf8(body)
            .map_err(|_| FilterError::BadDocument("hex body is not UTF-8".into()))?;
        Filter::decode_hex(m, k, hash, text.trim_end())?
    } else {
        Filter::decode_bytes(m, k, hash, body)?
    };
    let owned = |name: &str| header(name).map(str::to_owned);
    let meta = Meta {
        hour: owned(HEADER_HOUR),
        from: owned(HEADER_FROM),
        to: owned(HEADER_TO),
        complete,
        count,
    };
    Ok((meta, filter))
}

#[cfg(test)]
mod tests {
    use super::super::meta::sample;
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn raw_round_trips_through_headers() {
        let (meta, f) = sample();
        let headers: HashMap<&str, String> = meta.headers(&f).into_iter().collect();
        let get = |n: &str| headers.get(n).map(String::as_str);
        assert_eq!(
            decode_raw(get, f.to_hex().as_bytes(), true).unwrap(),
            (meta.clone(), f.clone())
        );
        assert_eq!(decode_raw(get, &f.to_bytes(), false).unwrap(), (meta, f));
    }

    #[test]
    fn the_fpp_header_is_short_for_tiny_probabilities() {
        let (meta, _) = sample();
        // Three IDs in a filter sized for 100,000: an fpp near 1e-10.
        let mut f = crate::bloom::Filter::with_capacity(100_000, 0.01).unwrap();
        for id in ["a", "b", "c"] {
            f.insert(id);
        }
        let headers: HashMap<&str, String> = meta.headers(&f).into_iter().collect();
        let fpp = &headers[HEADER_FPP];
        assert!(fpp.len() < 30 && fpp.contains("e-"), "{fpp}");
        assert_eq!(fpp.parse::<f64>().unwrap(), f.fpp());
    }
}
