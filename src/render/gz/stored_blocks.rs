//! Stored (uncompressed) deflate blocks, and the two bodies sent in them alone: any
//! bytes ([`stored`]), and a filter's raw bits when they are near half set ([`bits`]).

use super::bit_writer::BitWriter;
use super::member::{header, trailer};
use super::sampling::sample;

/// A stored block holds at most this many bytes.
const STORED_MAX: usize = 65_535;

/// `data` as a gzip member of stored blocks.
pub(in crate::render) fn stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(STORED_MAX).max(1);
    let mut out = BitWriter::with_capacity(data.len() + 5 * blocks + 18);
    header(&mut out);
    stored_blocks(&mut out, data, true);
    trailer(out, data)
}

/// A filter's raw bits as a gzip member of stored blocks, or `None` when fewer than 40%
/// or more than 60% of them are set: within that band they are within 3% of random
/// (their entropy), and deflate gains nothing worth its time.
pub(in crate::render) fn bits(data: &[u8]) -> Option<Vec<u8>> {
    let (mut ones, mut bytes) = (0u64, 0u64);
    for block in sample(data) {
        let words = block.chunks_exact(8);
        let tail = words.remainder();
        ones += words
            .map(|w| u64::from(u64::from_le_bytes(w.try_into().expect("8 bytes")).count_ones()))
            .sum::<u64>();
        ones += tail.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        bytes += block.len() as u64;
    }
    let bits = bytes * 8;
    (bits > 0 && (bits * 2..=bits * 3).contains(&(ones * 5))).then(|| stored(data))
}

/// `bytes` as stored blocks (none when empty, unless it must carry the final bit).
pub(super) fn stored_blocks(out: &mut BitWriter, bytes: &[u8], last: bool) {
    if bytes.is_empty() && !last {
        return;
    }
    let mut chunks = bytes.chunks(STORED_MAX).peekable();
    if chunks.peek().is_none() {
        out.bits(1, 3); // BFINAL, BTYPE 00
        out.align();
        out.bytes(&[0, 0, 0xff, 0xff]);
        return;
    }
    while let Some(chunk) = chunks.next() {
        let final_block = last && chunks.peek().is_none();
        out.bits(u64::from(final_block), 3); // BFINAL, BTYPE 00
        out.align();
        let len = chunk.len() as u16;
        out.bytes(&len.to_le_bytes());
        out.bytes(&(!len).to_le_bytes());
        out.bytes(chunk);
    }
}

#[cfg(test)]
mod tests {
    use crate::render::gz;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn stored_gzip_decompresses_to_its_input_at_any_length() {
        for len in [0, 1, 65_534, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            GzDecoder::new(&gz::stored(&data)[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, data, "{len}");
        }
    }
}
