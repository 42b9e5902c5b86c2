//! What makes deflate blocks a gzip member (RFC 1952): the header before them, and the
//! trailer after them (the CRC-32 and the length of the input).

use super::bit_writer::BitWriter;

/// The member's header: magic, deflate, no flags, no mtime, no extra flags, OS unknown.
pub(super) fn header(out: &mut BitWriter) {
    out.bytes(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
}

/// The member's trailer (the CRC and length of `data`, the uncompressed input) after
/// the blocks written to `out`.
pub(super) fn trailer(out: BitWriter, data: &[u8]) -> Vec<u8> {
    trailer_of(out, crc32fast::hash(data), data.len())
}

/// The trailer of an uncompressed input of CRC `crc` and length `len`.
pub(super) fn trailer_of(mut out: BitWriter, crc: u32, len: usize) -> Vec<u8> {
    out.align();
    out.bytes(&crc.to_le_bytes());
    out.bytes(&(len as u32).to_le_bytes());
    out.finish()
}
