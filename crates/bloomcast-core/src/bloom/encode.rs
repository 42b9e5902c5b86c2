//! The raw representations of a filter body: bytes and lowercase hex, and decoding
//! them back with every check the wire format demands.

use super::{Filter, FilterError, HashScheme, Params};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Each byte's two lowercase hex characters, in the order they are written.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        pairs[b] = [HEX[b >> 4], HEX[b & 15]];
        b += 1;
    }
    pairs
};

/// Lowercase hex, two characters per byte, in byte order.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = Vec::new();
    hex_into(bytes, &mut out);
    // Every byte written is ASCII.
    String::from_utf8(out).expect("hex is ASCII")
}

/// [`to_hex`] appended to `out`, into room made at once (a push per character took
/// 40-50 ms for the 10.4 MB of a large union).
pub fn hex_into(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + bytes.len() * 2, 0);
    let dst = &mut out[start..];
    // Sixteen bytes at a time by arithmetic, which the compiler turns into vector
    // instructions (a table lookup per byte does not vectorize); the rest by the table.
    let mut src = bytes.chunks_exact(16);
    let mut dsts = dst.chunks_exact_mut(32);
    for (block, text) in (&mut src).zip(&mut dsts) {
        let mut digits = [0u8; 32];
        for (i, &b) in block.iter().enumerate() {
            digits[2 * i] = digit(b >> 4);
            digits[2 * i + 1] = digit(b & 15);
        }
        text.copy_from_slice(&digits);
    }
    for (pair, &b) in dsts
        .into_remainder()
        .chunks_exact_mut(2)
        .zip(src.remainder())
    {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(b)]);
    }
}

/// The lowercase hex digit of a nibble.
#[inline(always)]
fn digit(nibble: u8) -> u8 {
    nibble + if nibble > 9 { b'a' - 10 } else { b'0' }
}

/// Parses hex: lowercase on the wire; uppercase is accepted too, as docs/PROTOCOL.md
/// (section 6, "Bad hex") allows a decoder to. Anything else, a sign or `0x` included,
/// is refused. The digits are decoded by the `hex` crate, the one hex decoder of this
/// crate (`chain::parse_hex` is the same for fixed-size values).
///
/// # Errors
/// [`FilterError::OddHexLength`] or [`FilterError::BadHex`] naming the first bad character.
pub fn from_hex(text: &str) -> Result<Vec<u8>, FilterError> {
    hex::decode(text).map_err(|e| match e {
        hex::FromHexError::InvalidHexCharacter { index, .. } => FilterError::BadHex { index },
        hex::FromHexError::OddLength | hex::FromHexError::InvalidStringLength => {
            FilterError::OddHexLength(text.len())
        }
    })
}

impl Filter {
    /// The body as lowercase hex.
    pub fn to_hex(&self) -> String {
        to_hex(&self.bytes())
    }

    /// Decodes a body of raw bytes with its parameters (from headers or a document).
    ///
    /// # Errors
    /// m or k out of range, an unknown hash, a length that does not fit m, or bits set past m.
    pub fn decode_bytes(m: u64, k: u64, hash: &str, bytes: &[u8]) -> Result<Filter, FilterError> {
        let params = Params::new(m, k)?;
        let hash = HashScheme::parse(hash).ok_or_else(|| FilterError::UnknownHash(hash.into()))?;
        Filter::from_le_bytes(params, hash, bytes)
    }

    /// Decodes a hex body with its parameters.
    ///
    /// # Errors
    /// As [`Filter::decode_bytes`], plus bad hex.
    pub fn decode_hex(m: u64, k: u64, hash: &str, hex: &str) -> Result<Filter, FilterError> {
        // Check the cheap things first so the error names the real problem.
        let params = Params::new(m, k)?;
        let expected = params.byte_len();
        if hex.len() != expected * 2 && hex.len() % 2 == 0 {
            return Err(FilterError::WrongLength {
                m: params.m,
                expected,
                actual: hex.len() / 2,
            });
        }
        Filter::decode_bytes(m, k, hash, &from_hex(hex)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_in_byte_order() {
        assert_eq!(to_hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(from_hex("000fa0ff").unwrap(), vec![0x00, 0x0f, 0xa0, 0xff]);
        assert_eq!(from_hex("ABcd").unwrap(), vec![0xab, 0xcd]);
    }

    #[test]
    fn hex_of_every_byte_at_every_length_matches_the_table() {
        let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 255, 512] {
            let mut out = b"x".to_vec();
            hex_into(&bytes[..len], &mut out);
            let expected: Vec<u8> = bytes[..len]
                .iter()
                .flat_map(|&b| HEX_PAIRS[usize::from(b)])
                .collect();
            assert_eq!(&out[1..], &expected[..], "{len}");
            assert_eq!(out[0], b'x', "appended after what was there");
        }
        assert_eq!(to_hex(&[0x9a, 0xf0]), "9af0");
    }

    #[test]
    fn bad_hex_names_the_character() {
        assert_eq!(from_hex("0g"), Err(FilterError::BadHex { index: 1 }));
        assert_eq!(from_hex("abc"), Err(FilterError::OddHexLength(3)));
    }

    #[test]
    fn a_sign_or_prefix_before_a_digit_is_bad_hex() {
        assert_eq!(from_hex("+f"), Err(FilterError::BadHex { index: 0 }));
        assert_eq!(from_hex("00-1"), Err(FilterError::BadHex { index: 2 }));
        assert_eq!(from_hex("0x0f"), Err(FilterError::BadHex { index: 1 }));
        assert_eq!(from_hex("0 "), Err(FilterError::BadHex { index: 1 }));
        assert_eq!(from_hex("é"), Err(FilterError::BadHex { index: 0 }));
        assert_eq!(from_hex("f"), Err(FilterError::OddHexLength(1)));
        assert_eq!(from_hex(""), Ok(vec![]));
    }

    #[test]
    fn a_filter_body_in_loose_hex_is_refused_and_in_uppercase_accepted() {
        assert!(matches!(
            Filter::decode_hex(16, 1, "sha1-km32", "+f00"),
            Err(FilterError::BadHex { index: 0 })
        ));
        assert!(matches!(
            Filter::decode_hex(16, 1, "sha1-km32", "0x0f"),
            Err(FilterError::BadHex { index: 1 })
        ));
        assert!(matches!(
            Filter::decode_hex(16, 1, "sha1-km32", "00f"),
            Err(FilterError::OddHexLength(3))
        ));
        assert_eq!(
            Filter::decode_hex(16, 1, "sha1-km32", "A0FF").unwrap(),
            Filter::decode_hex(16, 1, "sha1-km32", "a0ff").unwrap()
        );
    }

    #[test]
    fn decoding_rejects_each_kind_of_bad_input() {
        let ok = "00";
        assert!(Filter::decode_hex(8, 1, "sha1-km32", ok).is_ok());
        assert!(matches!(
            Filter::decode_hex(8, 1, "md5", ok),
            Err(FilterError::UnknownHash(_))
        ));
        assert!(matches!(
            Filter::decode_hex(7, 1, "sha1-km32", ok),
            Err(FilterError::MOutOfRange(7))
        ));
        assert!(matches!(
            Filter::decode_hex(8, 65, "sha1-km32", ok),
            Err(FilterError::KOutOfRange(65))
        ));
        assert!(matches!(
            Filter::decode_hex(16, 1, "sha1-km32", ok),
            Err(FilterError::WrongLength {
                expected: 2,
                actual: 1,
                ..
            })
        ));
        assert!(matches!(
            Filter::decode_hex(9, 1, "sha1-km32", "0002"),
            Err(FilterError::BitsPastM { m: 9 })
        ));
        assert!(Filter::decode_hex(9, 1, "sha1-km32", "ff01").is_ok());
        assert!(matches!(
            Filter::decode_bytes(70, 1, "sha1-km32", &[0, 0, 0, 0, 0, 0, 0, 0, 0x40]),
            Err(FilterError::BitsPastM { m: 70 })
        ));
    }

    #[test]
    fn bytes_and_hex_round_trip() {
        let mut f = Filter::with_capacity(50, 0.01).unwrap();
        for i in 0..50 {
            f.insert(&format!("{i}"));
        }
        let (m, k) = (u64::from(f.m()), u64::from(f.k()));
        assert_eq!(
            Filter::decode_bytes(m, k, "sha1-km32", &f.to_bytes()).unwrap(),
            f
        );
        assert_eq!(
            Filter::decode_hex(m, k, "sha1-km32", &f.to_hex()).unwrap(),
            f
        );
    }
}
