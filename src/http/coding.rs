//! `Content-Encoding` of ingest bodies: which codings are accepted, and decoding them
//! with the body limit applied to what they decode to as well as to what was sent.
//!
//! Decoding stops one byte past the limit, so a small body that decodes to gigabytes (a
//! "zip bomb") costs about twice `limit` bytes of memory at most, and the time to decode
//! that much, before it is refused.

use super::error::{ApiError, Result};
use axum::body::Bytes;
use axum::http::{header, HeaderMap};
use std::io::Read;

/// The codings a body may arrive in, as `Accept-Encoding` names them on a 415.
pub const ACCEPTED: &str = "gzip, zstd";

/// The zstd window (log2 bytes) always allowed: the largest that levels 1 to 19 ask for
/// when the size is not known in advance (a streaming encoder), 8 MiB.
const ZSTD_WINDOW_LOG_FLOOR: u32 = 23;
/// The largest zstd window the decoder allocates (2^27 = 128 MiB, zstd's default cap).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// A body's content coding, parsed from its `Content-Encoding` header(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// No header, an empty one, or `identity`: the body is what it says it is.
    Identity,
    /// `gzip` (or `x-gzip`, which RFC 9110 §8.4.1.3 asks recipients to treat alike).
    Gzip,
    /// `zstd` (RFC 8878).
    Zstd,
}

impl Coding {
    /// Reads every `Content-Encoding` line as one list (RFC 9110 §5.3); empty elements
    /// are ignored (§5.6.1), so an empty header is no coding.
    ///
    /// # Errors
    /// 415 `unsupported_encoding` for any other coding, and for more than one coding
    /// (a body compressed twice): nothing of the body is read.
    pub fn of(headers: &HeaderMap) -> Result<Coding> {
        let mut codings = Vec::new();
        for value in headers.get_all(header::CONTENT_ENCODING) {
            let text = value.to_str().map_err(|_| unsupported("(not ASCII)"))?;
            codings.extend(
                text.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_ascii_lowercase),
            );
        }
        match codings.as_slice() {
            [] => Ok(Coding::Identity),
            [one] => match one.as_str() {
                "identity" => Ok(Coding::Identity),
                "gzip" | "x-gzip" => Ok(Coding::Gzip),
                "zstd" => Ok(Coding::Zstd),
                other => Err(unsupported(other)),
            },
            several => Err(unsupported(&several.join(", "))),
        }
    }

    /// The coding's name, as messages show it.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Zstd => "zstd",
        }
    }

    /// The body decoded, at most `limit` bytes of it. CPU-bound for the encoded codings:
    /// call it on the blocking pool.
    ///
    /// # Errors
    /// 413 as soon as the decoded bytes pass `limit`; 400 when the body is not valid in
    /// its coding (corrupt, truncated, trailing garbage).
    pub fn decode(self, body: Bytes, limit: usize) -> Result<Bytes> {
        match self {
            Coding::Identity => Ok(body),
            Coding::Gzip => {
                // Multi: a gzip file may hold several members, as `cat a.gz b.gz` makes.
                let reader = flate2::read::MultiGzDecoder::new(&body[..]);
                read_bounded(reader, limit, self)
            }
            Coding::Zstd => {
                let mut reader = zstd::stream::read::Decoder::with_buffer(&body[..])
                    .map_err(|e| invalid(self, &e))?;
                // A frame may ask for a window of up to 2^31 bytes, allocated before a
                // byte is decoded: allow what ordinary encoders use, or what the limit
                // could use, whichever is more.
                let wanted = usize::BITS - limit.saturating_sub(1).leading_zeros();
                reader
                    .window_log_max(wanted.clamp(ZSTD_WINDOW_LOG_FLOOR, ZSTD_WINDOW_LOG_MAX))
                    .map_err(|e| invalid(self, &e))?;
                read_bounded(reader, limit, self)
            }
        }
    }
}

/// Reads `reader` to its end, or to one byte past `limit` (which tells a body of exactly
/// `limit` bytes from a larger one): the buffer grows as `Vec` does, to about twice the
/// limit at most.
fn read_bounded(reader: impl Read, limit: usize, coding: Coding) -> Result<Bytes> {
    let mut out = Vec::new();
    let most = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(most)
        .read_to_end(&mut out)
        .map_err(|e| invalid(coding, &e))?;
    if out.len() > limit {
        return Err(ApiError::DecodedTooLarge(limit));
    }
    Ok(Bytes::from(out))
}

fn invalid(coding: Coding, e: &std::io::Error) -> ApiError {
    ApiError::BadRequest(format!(
        "body is not valid {} ({e}), as its Content-Encoding says it is",
        coding.name()
    ))
}

fn unsupported(what: &str) -> ApiError {
    ApiError::UnsupportedEncoding(format!(
        "Content-Encoding {what:?} is not accepted: send the body as is, or compressed \
         once with one of: {ACCEPTED}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::io::Write;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::CONTENT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn gzip(data: &[u8]) -> Bytes {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap().into()
    }

    #[test]
    fn codings_are_read_from_the_header_list() {
        let cases: &[(&[&str], Coding)] = &[
            (&[], Coding::Identity),
            (&[""], Coding::Identity),
            (&["identity"], Coding::Identity),
            (&["gzip"], Coding::Gzip),
            (&[" GZip "], Coding::Gzip),
            (&["x-gzip"], Coding::Gzip),
            (&["zstd"], Coding::Zstd),
            (&["gzip, "], Coding::Gzip),
        ];
        for (values, want) in cases {
            assert_eq!(Coding::of(&headers(values)).unwrap(), *want, "{values:?}");
        }
    }

    #[test]
    fn other_and_stacked_codings_are_415() {
        for values in [
            &["br"][..],
            &["deflate"],
            &["compress"],
            &["gzip, gzip"],
            &["gzip", "zstd"],
            &["identity, gzip"],
            &["snappy"],
        ] {
            let err = Coding::of(&headers(values)).unwrap_err();
            assert_eq!(err.code(), "unsupported_encoding", "{values:?}");
            assert!(err.to_string().contains(ACCEPTED), "{err}");
        }
    }

    #[test]
    fn gzip_and_zstd_round_trip_and_identity_is_untouched() {
        let text = b"a\nb\nc\n".repeat(1000);
        let limit = text.len();
        assert_eq!(Coding::Gzip.decode(gzip(&text), limit).unwrap(), text);
        let z = zstd::encode_all(&text[..], 3).unwrap();
        assert_eq!(Coding::Zstd.decode(z.into(), limit).unwrap(), text);
        let raw = Bytes::from_static(b"\x1f\x8b not decoded");
        assert_eq!(Coding::Identity.decode(raw.clone(), 1).unwrap(), raw);
    }

    #[test]
    fn concatenated_gzip_members_decode_as_one_body() {
        let mut both = gzip(b"one\n").to_vec();
        both.extend_from_slice(&gzip(b"two\n"));
        assert_eq!(
            Coding::Gzip.decode(both.into(), 100).unwrap(),
            &b"one\ntwo\n"[..]
        );
    }

    #[test]
    fn decoding_past_the_limit_is_413_at_one_byte_over() {
        let text = vec![b'x'; 200_000];
        assert!(Coding::Gzip.decode(gzip(&text), 200_000).is_ok());
        let err = Coding::Gzip.decode(gzip(&text), 199_999).unwrap_err();
        assert_eq!(err.status(), 413);
        let z = zstd::encode_all(&text[..], 3).unwrap();
        let err = Coding::Zstd.decode(z.into(), 199_999).unwrap_err();
        assert_eq!(err.code(), "payload_too_large");
    }

    #[test]
    fn an_endless_stream_stops_just_past_the_limit() {
        // Returns at all only because reading stops at the limit.
        let err = read_bounded(std::io::repeat(b'x'), 1000, Coding::Gzip).unwrap_err();
        assert_eq!(err.code(), "payload_too_large");
    }

    #[test]
    fn corrupt_and_truncated_bodies_are_400() {
        let good = gzip(b"some ids\n");
        let cases: Vec<(Coding, Bytes)> = vec![
            (Coding::Gzip, Bytes::from_static(b"plain text, not gzip")),
            (Coding::Gzip, good.slice(..good.len() - 4)),
            (Coding::Gzip, [&good[..], b"trailing"].concat().into()),
            (Coding::Zstd, Bytes::from_static(b"plain text, not zstd")),
            (Coding::Zstd, good),
        ];
        for (coding, body) in cases {
            let err = coding.decode(body, 1 << 20).unwrap_err();
            assert_eq!(err.code(), "bad_request", "{coding:?}: {err}");
            assert!(err.to_string().contains(coding.name()), "{err}");
        }
    }
}
