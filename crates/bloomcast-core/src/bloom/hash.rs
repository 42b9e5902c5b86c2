//! The "sha1-km32" hash scheme: one SHA-1 digest per ID, sliced into two 32-bit
//! halves and expanded into k bit positions by Kirsch–Mitzenmacher double hashing.
//!
//! The 8 bytes `(h1, h2)` of a [`Key`] are all that is needed to place an ID in a
//! filter of *any* size, which is why the server stores keys, not IDs: it can rebuild
//! an hour's filter at whatever size its final count calls for.

use sha1::{Digest, Sha1};

/// The name of the only hash scheme of wire format v1.
pub const SHA1_KM32: &str = "sha1-km32";

/// The hash scheme a filter was built with. Filters only combine with filters of
/// the same scheme; an unknown name is rejected when decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HashScheme {
    /// `d = SHA-1(id)`, `h1 = d[0..4]`, `h2 = d[4..8]` (big-endian u32),
    /// position `i` is `(h1 + i*h2) mod m`.
    #[default]
    Sha1Km32,
}

impl HashScheme {
    /// The scheme's wire name, as in the `hash` JSON field and `Bloom-Hash` header.
    pub fn name(self) -> &'static str {
        match self {
            HashScheme::Sha1Km32 => SHA1_KM32,
        }
    }

    /// Parses a wire name; `None` for a scheme this version does not know.
    pub fn parse(name: &str) -> Option<Self> {
        (name == SHA1_KM32).then_some(HashScheme::Sha1Km32)
    }
}

impl std::fmt::Display for HashScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The hash of one ID: the first 8 bytes of its SHA-1 digest as two big-endian u32s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Digest bytes 0..4: the first probe.
    pub h1: u32,
    /// Digest bytes 4..8: the step between probes.
    pub h2: u32,
}

impl Key {
    /// Hashes an ID's exact UTF-8 bytes (no normalisation).
    #[inline]
    pub fn of(id: &str) -> Key {
        Key::of_bytes(id.as_bytes())
    }

    /// Hashes raw bytes; [`Key::of`] is this on the ID's UTF-8 encoding.
    #[inline]
    pub fn of_bytes(id: &[u8]) -> Key {
        let d = Sha1::digest(id);
        Key {
            h1: u32::from_be_bytes([d[0], d[1], d[2], d[3]]),
            h2: u32::from_be_bytes([d[4], d[5], d[6], d[7]]),
        }
    }

    /// The 8 stored bytes: `h1` then `h2`, big-endian (the digest's first 8 bytes).
    #[inline]
    pub fn to_bytes(self) -> [u8; 8] {
        self.to_u64().to_be_bytes()
    }

    /// Reads the 8 stored bytes back.
    #[inline]
    pub fn from_bytes(b: [u8; 8]) -> Key {
        Key::from_u64(u64::from_be_bytes(b))
    }

    /// `h1` in the high half, `h2` in the low half: a compact set element.
    #[inline]
    pub fn to_u64(self) -> u64 {
        (u64::from(self.h1) << 32) | u64::from(self.h2)
    }

    /// Inverse of [`Key::to_u64`].
    #[inline]
    pub fn from_u64(v: u64) -> Key {
        Key {
            h1: (v >> 32) as u32,
            h2: v as u32,
        }
    }

    /// The k bit positions of this key in a filter of m bits, in order i = 0..k.
    ///
    /// Equal to `(h1 + i*h2) mod m` in exact arithmetic; computed with two divisions
    /// per key and a conditional subtraction per position, which is exact because
    /// both addends are already below m.
    #[inline]
    pub fn positions(self, m: u32, k: u32) -> Positions {
        debug_assert!(m > 0);
        Positions {
            next: self.h1 % m,
            step: self.h2 % m,
            m,
            left: k,
        }
    }

    /// [`Key::positions`] with the two divisions replaced by multiplications, for
    /// filters that reduce many keys by the same m.
    #[inline]
    pub(crate) fn positions_mod(self, modulus: Modulus, k: u32) -> Positions {
        Positions {
            next: modulus.reduce(self.h1),
            step: modulus.reduce(self.h2),
            m: modulus.m,
            left: k,
        }
    }
}

/// `x mod m` for a fixed m by two multiplications instead of a division (Lemire,
/// Kaser and Kurz, "Faster remainder by direct computation", 2019). Exact for every
/// u32 `x` and every nonzero u32 `m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Modulus {
    m: u32,
    /// `floor((2^64 - 1) / m) + 1`: the fraction 1/m in 0.64 fixed point, rounded up.
    magic: u64,
}

impl Modulus {
    pub(crate) fn new(m: u32) -> Modulus {
        debug_assert!(m > 0);
        Modulus {
            m,
            magic: (u64::MAX / u64::from(m)).wrapping_add(1),
        }
    }

    /// The modulus itself.
    #[inline]
    pub(crate) fn m(self) -> u32 {
        self.m
    }

    #[inline]
    pub(crate) fn reduce(self, x: u32) -> u32 {
        // The low 64 bits of x/m in fixed point are the fractional part of x/m; times m,
        // its integer part is the remainder.
        let fraction = self.magic.wrapping_mul(u64::from(x));
        ((u128::from(fraction) * u128::from(self.m)) >> 64) as u32
    }
}

/// Iterator over a key's bit positions; see [`Key::positions`].
#[derive(Debug, Clone)]
pub struct Positions {
    next: u32,
    step: u32,
    m: u32,
    left: u32,
}

impl Iterator for Positions {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let pos = self.next;
        // pos < m and step < m, so the sum is below 2m < 2^33: one subtraction reduces it.
        let sum = u64::from(pos) + u64::from(self.step);
        let m = u64::from(self.m);
        self.next = if sum >= m { sum - m } else { sum } as u32;
        Some(pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Positions {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slices_the_sha1_digest_big_endian() {
        // SHA-1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d
        let key = Key::of("abc");
        assert_eq!(key.h1, 0xa999_3e36);
        assert_eq!(key.h2, 0x4706_816a);
        assert_eq!(
            key.to_bytes(),
            [0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a]
        );
    }

    #[test]
    fn positions_match_the_exact_formula() {
        for id in ["", "a", "flickr:12345", "ünïcødé", "x y z"] {
            let key = Key::of(id);
            for (m, k) in [
                (8u32, 1u32),
                (959, 7),
                (28_756, 7),
                (u32::MAX, 64),
                (1_000_003, 13),
            ] {
                let expected: Vec<u32> = (0..u64::from(k))
                    .map(|i| ((u64::from(key.h1) + i * u64::from(key.h2)) % u64::from(m)) as u32)
                    .collect();
                let got: Vec<u32> = key.positions(m, k).collect();
                assert_eq!(got, expected, "id {id:?} m {m} k {k}");
            }
        }
    }

    #[test]
    fn modulus_reduces_exactly_like_the_remainder_operator() {
        let ms = [
            1u32,
            2,
            3,
            7,
            8,
            9,
            64,
            959,
            28_756,
            9_585_059,
            (1 << 31) - 1,
            1 << 31,
            (1 << 31) + 1,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut x: u32 = 0x9e37_79b9;
        for m in ms {
            let modulus = Modulus::new(m);
            let edges = [
                0,
                1,
                m - 1,
                m,
                m.wrapping_add(1),
                m.wrapping_mul(2),
                u32::MAX,
            ];
            for x in edges {
                assert_eq!(modulus.reduce(x), x % m, "{x} mod {m}");
            }
            for _ in 0..10_000 {
                // xorshift32: cheap, deterministic coverage of the whole u32 range.
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                assert_eq!(modulus.reduce(x), x % m, "{x} mod {m}");
            }
        }
    }

    #[test]
    fn positions_with_a_prepared_modulus_are_the_same_positions() {
        for id in ["", "a", "flickr:12345", "ünïcødé"] {
            let key = Key::of(id);
            for (m, k) in [(8u32, 1u32), (959, 7), (u32::MAX, 64), (1_000_003, 13)] {
                let expected: Vec<u32> = key.positions(m, k).collect();
                let got: Vec<u32> = key.positions_mod(Modulus::new(m), k).collect();
                assert_eq!(got, expected, "id {id:?} m {m} k {k}");
            }
        }
    }

    #[test]
    fn key_round_trips_through_bytes_and_u64() {
        let key = Key::of("round trip");
        assert_eq!(Key::from_bytes(key.to_bytes()), key);
        assert_eq!(Key::from_u64(key.to_u64()), key);
    }

    #[test]
    fn only_the_v1_scheme_name_parses() {
        assert_eq!(HashScheme::parse("sha1-km32"), Some(HashScheme::Sha1Km32));
        assert_eq!(HashScheme::parse("SHA1-KM32"), None);
        assert_eq!(HashScheme::parse("murmur3"), None);
    }
}
