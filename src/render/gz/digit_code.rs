//! The one deflate code the coder makes: literals only, for hex digits, fitted to their
//! counts; with the dynamic-Huffman block header that describes it, and the tables that
//! code two digits at one lookup.

use super::bit_writer::BitWriter;
use super::huffman::{canonical_codes, huffman_lengths, run_lengths};

/// Deflate's end-of-block symbol.
const END_OF_BLOCK: usize = 256;

/// The order in which code-length code lengths are sent (RFC 1951 3.2.7).
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The hex digits, in the order of their deflate symbols.
pub(super) const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// A literal-only deflate code for hex digits, fitted to their counts, with the
/// block header that describes it.
pub(super) struct DigitCode {
    /// Each literal/length symbol's code, bit-reversed for writing, and its length.
    pub(super) lit_codes: [(u16, u8); END_OF_BLOCK + 1],
    /// The code lengths as sent: run-length symbols with their extra bits.
    rle: Vec<(u8, u8)>,
    /// The code-length code: each symbol's code and length.
    cl_codes: [(u16, u8); 19],
    cl_lens: [u8; 19],
    /// Code-length code lengths sent (HCLEN + 4).
    hclen: usize,
}

impl DigitCode {
    /// The code for digits of these counts (by digit value, `0`..`f`), or `None` when
    /// one digit is more than a quarter of them (a code spends at least a bit per digit,
    /// where deflate's matcher shrinks the long runs of one digit of such a filter far
    /// more) or a code would be too deep. Every digit gets a code (one the text lacks
    /// costs a sliver of code space), and so does the end-of-block symbol.
    pub(super) fn fit(counts: &[u64; 16]) -> Option<DigitCode> {
        if counts.iter().max().copied().unwrap_or(0) * 4 > counts.iter().sum::<u64>() {
            return None;
        }
        let mut symbols: Vec<(usize, u64)> = DIGITS
            .iter()
            .zip(counts)
            .map(|(&b, &count)| (usize::from(b), count + 1))
            .collect();
        symbols.push((END_OF_BLOCK, 1));
        let lens = huffman_lengths(&symbols.iter().map(|s| s.1).collect::<Vec<_>>(), 15)?;
        let mut lit_lens = [0u8; END_OF_BLOCK + 1];
        for (&(symbol, _), &len) in symbols.iter().zip(&lens) {
            lit_lens[symbol] = len;
        }

        // Two distance codes of one bit each: a complete code no symbol uses.
        let mut all_lens: Vec<u8> = lit_lens.to_vec();
        all_lens.extend_from_slice(&[1, 1]);
        let rle = run_lengths(&all_lens);
        let mut cl_counts = [0u64; 19];
        for &(symbol, _) in &rle {
            cl_counts[usize::from(symbol)] += 1;
        }
        let used: Vec<usize> = (0..19).filter(|&s| cl_counts[s] > 0).collect();
        let used_lens =
            huffman_lengths(&used.iter().map(|&s| cl_counts[s]).collect::<Vec<_>>(), 7)?;
        let mut cl_lens = [0u8; 19];
        for (&s, &len) in used.iter().zip(&used_lens) {
            cl_lens[s] = len;
        }
        let hclen = CL_ORDER
            .iter()
            .rposition(|&s| cl_lens[s] > 0)
            .map_or(4, |i| (i + 1).max(4));
        Some(DigitCode {
            lit_codes: canonical_codes(&lit_lens),
            rle,
            cl_codes: canonical_codes(&cl_lens),
            cl_lens,
            hclen,
        })
    }

    /// The block's header: its type, then its code as code lengths, themselves coded.
    pub(super) fn start_block(&self, out: &mut BitWriter, last: bool) {
        out.bits(u64::from(last), 1);
        out.bits(2, 2); // BTYPE 10: dynamic Huffman codes
        out.bits(0, 5); // HLIT: 257 literal/length codes
        out.bits(1, 5); // HDIST: 2 distance codes
        out.bits((self.hclen - 4) as u64, 4);
        for &s in &CL_ORDER[..self.hclen] {
            out.bits(u64::from(self.cl_lens[s]), 3);
        }
        for &(symbol, extra) in &self.rle {
            let (code, len) = self.cl_codes[usize::from(symbol)];
            out.bits(u64::from(code), u32::from(len));
            match symbol {
                17 => out.bits(u64::from(extra), 3),
                18 => out.bits(u64::from(extra), 7),
                _ => {}
            }
        }
    }

    pub(super) fn end_block(&self, out: &mut BitWriter) {
        let (code, len) = self.lit_codes[END_OF_BLOCK];
        out.bits(u64::from(code), u32::from(len));
    }

    /// The codes of two digits `a` then `b`, as one entry: the codes in the low 32
    /// bits, their total length above.
    fn two(&self, a: u8, b: u8) -> u64 {
        let (ca, la) = self.lit_codes[usize::from(a)];
        let (cb, lb) = self.lit_codes[usize::from(b)];
        u64::from(ca) | (u64::from(cb) << la) | (u64::from(la + lb) << 32)
    }

    /// Both digits' codes by the pair of digit bytes, read little-endian.
    pub(super) fn pair_table(&self) -> Vec<u64> {
        let mut pairs = vec![0u64; 1 << 16];
        for &a in DIGITS {
            for &b in DIGITS {
                pairs[usize::from(u16::from_le_bytes([a, b]))] = self.two(a, b);
            }
        }
        pairs
    }

    /// The codes of a byte's two hex digits (high nibble first), by the byte.
    pub(super) fn byte_table(&self) -> [u64; 256] {
        std::array::from_fn(|byte| self.two(DIGITS[byte >> 4], DIGITS[byte & 15]))
    }
}
