//! gzip members (RFC 1952) written directly rather than through a deflate encoder, for
//! the two kinds of body a filter has: its raw bits, and text that is mostly one long run
//! of hex digits (the JSON and hex forms).
//!
//! - [`stored`]: the bytes in stored (uncompressed) deflate blocks, a copy and a CRC;
//!   [`bits`] the same for a filter's raw bits when they are near half set. Such bits
//!   are close to random, so deflate gains nothing on them, and the deflate encoder's own
//!   stored mode took 70-90 ms for 11.5 MB.
//! - [`hex`](fn@hex): random hex has no repeats for deflate's matcher to find either: at the
//!   fastest level, flate2 spent 330–410 ms on the 20.9 MB hex of an 8.45M-key union and
//!   got 54.4% of the input, on every new version of an open union; at the best level,
//!   1.09 s for 57.0%. What the hex does have is a small alphabet: 16 symbols, about 4
//!   bits each. So each long hex run is one dynamic-Huffman deflate block (RFC 1951
//!   3.2.7) whose code is fitted to the run's own digit counts (at a fill of one half: 15
//!   digits of 4 bits, one of 5), holding literals only; everything around the runs (the
//!   JSON's fields) goes in stored blocks: 50.7% of that union's JSON, in about 5 ms.
//!   [`hex_of`] codes the same text straight from the filter's bytes (the text around
//!   them, the bytes whose hex it holds), for a gzip body made without its identity
//!   body: each byte's two digits in one lookup, and no hex written out but a chunk at a
//!   time for the CRC; given the coding of the filter's version before
//!   ([`HexCoding`]), it codes only the chunks that changed.
//!
//! Both are standard gzip members that any inflater reads.

mod bit_writer;
mod digit_code;
mod hex_runs;
mod huffman;
mod incremental;
mod member;
mod sampling;
mod stored_blocks;

pub(super) use hex_runs::hex;
pub use incremental::{hex_of, HexCoding};
pub(super) use stored_blocks::{bits, stored};

/// Inputs made for the coder's tests, and the inflater that reads its output back.
#[cfg(test)]
mod fixtures {
    use flate2::read::GzDecoder;
    use std::io::Read;

    pub(super) fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(gz)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    /// Hex of `n` pseudo-random bytes where each bit is set with probability `fill`.
    pub(super) fn hex_of_fill(n: usize, fill: f64, seed: u64) -> Vec<u8> {
        let mut state = seed;
        let bytes: Vec<u8> = (0..n)
            .map(|_| {
                (0..8).fold(0u8, |b, bit| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let r = (state >> 11) as f64 / (1u64 << 53) as f64;
                    b | (u8::from(r < fill) << bit)
                })
            })
            .collect();
        crate::bloom::to_hex(&bytes).into_bytes()
    }

    /// Pseudo-random bytes with each bit set with probability `fill`.
    pub(super) fn bytes_of_fill(n: usize, fill: f64, seed: u64) -> Vec<u8> {
        crate::bloom::from_hex(std::str::from_utf8(&hex_of_fill(n, fill, seed)).unwrap()).unwrap()
    }
}
