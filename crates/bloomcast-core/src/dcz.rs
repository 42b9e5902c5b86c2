//! The `dcz` content encoding of RFC 9842 (Compression Dictionary Transport), pure:
//! a body compressed with zstd against an earlier body used as a *raw* dictionary,
//! behind a 40-byte header naming that dictionary.
//!
//! Header: the 8 bytes `5E 2A 4D 18 20 00 00 00` (a zstd skippable frame holding 32
//! bytes), then the SHA-256 of the dictionary, then one zstd frame. The dictionary is
//! raw content, and the frame's window covers the whole body, so every byte of the
//! dictionary stays reachable. zstd would parse a dictionary beginning with its own
//! dictionary magic (`37 A4 30 EC`) as a trained one, so such a dictionary (a `.bin`
//! whose first 32 bits happen to be those, once in 2^32) is never used: no delta.

use sha2::{Digest, Sha256};
use zstd::zstd_safe::{CCtx, CParameter, DCtx, DParameter};

/// The first 8 bytes of every `dcz` body.
pub const MAGIC: [u8; 8] = [0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00];
/// Bytes before the zstd frame: the magic and the dictionary's SHA-256.
pub const HEADER_LEN: usize = 40;
/// Largest window a decoder here accepts (2^27 = 128 MiB, zstd's default limit).
const WINDOW_LOG_MAX: u32 = 27;

/// Why a `dcz` body cannot be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DczError {
    /// No `dcz` header: too short, or another magic.
    #[error("not a dcz body (bad or missing 40-byte header)")]
    Header,
    /// The header names another dictionary than the one given.
    #[error("dcz body made with another dictionary")]
    WrongDictionary,
    /// zstd refused the frame.
    #[error("zstd: {0}")]
    Zstd(String),
}

/// SHA-256 of some bytes.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// zstd's magic for trained dictionaries: a dictionary starting with it is not raw.
pub(crate) const ZSTD_DICTIONARY_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];

/// `body` compressed against `dictionary` (whose SHA-256 is `dictionary_sha`) at a
/// zstd `level`, header included; `None` when the dictionary cannot be used as raw
/// content (it starts with zstd's dictionary magic `37 A4 30 EC`).
pub fn encode(
    dictionary: &[u8],
    dictionary_sha: &[u8; 32],
    body: &[u8],
    level: i32,
) -> Option<Vec<u8>> {
    if dictionary.starts_with(&ZSTD_DICTIONARY_MAGIC) {
        return None;
    }
    // Smallest power of two covering the body (zstd's floor is 2^10).
    let window_log = (usize::BITS - body.len().max(1024).saturating_sub(1).leading_zeros()).max(10);
    let mut cctx = CCtx::create();
    let frame = (|| {
        cctx.set_parameter(CParameter::CompressionLevel(level))?;
        cctx.set_parameter(CParameter::WindowLog(window_log))?;
        cctx.set_parameter(CParameter::ChecksumFlag(false))?;
        cctx.load_dictionary(dictionary)?;
        let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(body.len()));
        cctx.compress2(&mut frame, body)?;
        Ok::<_, usize>(frame)
    })()
    .expect("zstd accepts these parameters and an output of compress_bound");
    let mut out = Vec::with_capacity(HEADER_LEN + frame.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(dictionary_sha);
    out.extend_from_slice(&frame);
    Some(out)
}

/// The SHA-256 of the dictionary a `dcz` body names, if it has the header.
pub fn dictionary_of(body: &[u8]) -> Option<[u8; 32]> {
    if body.len() < HEADER_LEN || body[..8] != MAGIC {
        return None;
    }
    body[8..HEADER_LEN].try_into().ok()
}

/// Decodes a `dcz` body with the dictionary it was made with.
///
/// # Errors
/// A missing header, a body naming another dictionary, or a bad zstd frame.
pub fn decode(dictionary: &[u8], body: &[u8]) -> Result<Vec<u8>, DczError> {
    let named = dictionary_of(body).ok_or(DczError::Header)?;
    if named != sha256(dictionary) || dictionary.starts_with(&ZSTD_DICTIONARY_MAGIC) {
        return Err(DczError::WrongDictionary);
    }
    let frame = &body[HEADER_LEN..];
    let zstd = |code: usize| DczError::Zstd(zstd::zstd_safe::get_error_name(code).to_owned());
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .map_err(|_| DczError::Zstd("bad frame header".into()))?
        .ok_or_else(|| DczError::Zstd("frame without a content size".into()))?;
    if size > 1 << WINDOW_LOG_MAX {
        return Err(DczError::Zstd(format!(
            "content of {size} bytes is too large"
        )));
    }
    let mut dctx = DCtx::create();
    dctx.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))
        .map_err(zstd)?;
    dctx.load_dictionary(dictionary).map_err(zstd)?;
    let mut out = Vec::with_capacity(size as usize);
    dctx.decompress(&mut out, frame).map_err(zstd)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_small_for_a_small_change() {
        let old: Vec<u8> = (0..50_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut new = old.clone();
        for i in (0..new.len()).step_by(997) {
            new[i] ^= 0x10;
        }
        let body = encode(&old, &sha256(&old), &new, 3).unwrap();
        assert_eq!(body[..8], MAGIC);
        assert_eq!(dictionary_of(&body), Some(sha256(&old)));
        assert_eq!(decode(&old, &body).unwrap(), new);
        assert!(body.len() < new.len() / 10, "{} bytes", body.len());
    }

    #[test]
    fn refuses_another_dictionary_and_a_missing_header() {
        let old = b"the old version of the body".to_vec();
        let new = b"the new version of the body".to_vec();
        let body = encode(&old, &sha256(&old), &new, 3).unwrap();
        assert_eq!(decode(&new, &body), Err(DczError::WrongDictionary));
        assert_eq!(decode(&old, &body[1..]), Err(DczError::Header));
        let mut bad = body.clone();
        bad.truncate(HEADER_LEN + 3);
        assert!(matches!(decode(&old, &bad), Err(DczError::Zstd(_))));
    }

    #[test]
    fn a_dictionary_that_looks_like_a_trained_one_is_never_used() {
        // zstd's magic for trained dictionaries, as random filter bits could begin.
        let mut old = ZSTD_DICTIONARY_MAGIC.to_vec();
        old.extend((0..4000u32).map(|i| (i * 7) as u8));
        assert_eq!(encode(&old, &sha256(&old), &old, 3), None);
    }

    #[test]
    fn a_self_delta_is_a_few_bytes() {
        let old: Vec<u8> = (0..100_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let body = encode(&old, &sha256(&old), &old, 19).unwrap();
        assert!(body.len() < HEADER_LEN + 40, "{} bytes", body.len());
    }
}
