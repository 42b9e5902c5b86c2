//! gzip members (RFC 1952) written directly rather than through a deflate encoder, for
//! the two kinds of body a filter has: its raw bits, and text that is mostly one long run
//! of hex digits (the JSON and hex forms).
//!
//! - [`stored`]: the bytes in stored (uncompressed) deflate blocks, a copy and a CRC;
//!   [`bits`] the same for a filter's raw bits when they are near half set. Such bits
//!   are close to random, so deflate gains nothing on them, and the deflate encoder's own
//!   stored mode took 70-90 ms for 11.5 MB.
//! - [`hex`]: random hex has no repeats for deflate's matcher to find either: at the
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

use bytes::Bytes;

/// Hex runs shorter than this go in stored blocks: a block's code takes a few dozen bytes
/// to describe.
const MIN_RUN: usize = 4096;
/// A stored block holds at most this many bytes.
const STORED_MAX: usize = 65_535;
/// Deflate's end-of-block symbol.
const END_OF_BLOCK: usize = 256;
/// The order in which code-length code lengths are sent (RFC 1951 3.2.7).
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];
/// The hex digits, in the order of their deflate symbols.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `data` as a gzip member of stored blocks.
pub(super) fn stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(STORED_MAX).max(1);
    let mut out = BitWriter::with_capacity(data.len() + 5 * blocks + 18);
    header(&mut out);
    stored_blocks(&mut out, data, true);
    trailer(out, data)
}

/// A filter's raw bits as a gzip member of stored blocks, or `None` when fewer than 40%
/// or more than 60% of them are set: within that band they are within 3% of random
/// (their entropy), and deflate gains nothing worth its time.
pub(super) fn bits(data: &[u8]) -> Option<Vec<u8>> {
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

/// `data` as a gzip member, or `None` when it holds no hex run long enough to gain, or
/// a run's digits are skewed: one digit more than a quarter of them, as in a filter
/// far below or above half full. A code spends at least a bit per digit, where
/// deflate's matcher shrinks the long runs of one digit of such a filter far more.
pub(super) fn hex(data: &[u8]) -> Option<Vec<u8>> {
    let runs = hex_runs(data);
    if runs.is_empty() {
        return None;
    }
    let mut out = BitWriter::with_capacity(data.len() / 2 + data.len() / 16 + 1024);
    header(&mut out);
    let mut at = 0;
    for (i, run) in runs.iter().enumerate() {
        let last_run = i + 1 == runs.len();
        stored_blocks(&mut out, &data[at..run.start], false);
        let tail_empty = run.end == data.len();
        huffman_block(&mut out, &data[run.clone()], last_run && tail_empty)?;
        at = run.end;
    }
    if at < data.len() {
        stored_blocks(&mut out, &data[at..], true);
    }
    Some(trailer(out, data))
}

/// Bytes of a filter coded as one unit in a hex body: where a new version's bytes differ
/// from the version before, [`hex_of`] codes again only the chunks that hold them, and
/// copies the codes of every other chunk from the body before.
const CHUNK: usize = 1024;

/// What coding a filter's bytes into a hex body leaves for coding the next version of
/// the same filter: the bytes coded, their code, the body, and where each chunk's codes
/// end in it. A union that ends in the open hour gains a few hundred bits a version, so
/// most of its chunks are as they were.
pub struct HexCoding {
    code: DigitCode,
    /// The bytes coded, a copy: a chunk is coded again only where it differs.
    bytes: Vec<u8>,
    /// The bit at which the first byte's codes start in `body`.
    start: u64,
    /// Each chunk's end, in bits from `start`.
    ends: Vec<u64>,
    /// The CRC-32 of each chunk's hex.
    crcs: Vec<u32>,
    /// The gzip body, shared with the rendering that serves it.
    body: Bytes,
}

impl HexCoding {
    /// Bytes held beyond the body: the copy of the bytes coded, and each chunk's end and
    /// CRC.
    pub fn size(&self) -> usize {
        self.bytes.len() + 12 * self.ends.len()
    }
}

impl std::fmt::Debug for HexCoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HexCoding")
            .field("bytes", &self.bytes.len())
            .field("chunks", &self.ends.len())
            .finish()
    }
}

/// `prefix`, the lowercase hex of `bytes`, then `suffix` (a filter's JSON document or
/// hex form) as a gzip member, as [`hex`] codes that text, without the hex ever being
/// written out: each byte of `bytes` is coded as its two digits by one lookup, and the
/// text's CRC is made from each chunk's, taken over its hex made in cache. `None` where
/// [`hex`] would give none: too few digits, or digits too skewed.
///
/// Given `before`, the coding of an earlier version of the same filter, the chunks of
/// `bytes` as they were then are not coded again: their codes are copied, bit for bit,
/// from its body, and their CRCs kept, provided the code fitted to `bytes` now is the
/// one used then. The body is the same either way; only the work differs.
pub fn hex_of(
    prefix: &[u8],
    bytes: &[u8],
    suffix: &[u8],
    before: Option<HexCoding>,
) -> Option<(Bytes, HexCoding)> {
    if bytes.len() * 2 < MIN_RUN {
        return None;
    }
    let code = DigitCode::fit(&nibble_counts(bytes))?;
    let before =
        before.filter(|b| b.bytes.len() == bytes.len() && b.code.lit_codes == code.lit_codes);
    let mut out = BitWriter::with_capacity(
        bytes.len() + bytes.len() / 8 + prefix.len() + suffix.len() + 1024,
    );
    header(&mut out);
    stored_blocks(&mut out, prefix, false);
    code.start_block(&mut out, suffix.is_empty());
    let start = out.bit_len();
    let chunks = Chunks::code(&mut out, bytes, &code.byte_table(), before);
    code.end_block(&mut out);
    if !suffix.is_empty() {
        stored_blocks(&mut out, suffix, true);
    }
    // The text's CRC from the chunks' own: the prefix's, each chunk's appended
    // ([`after_chunk`]), then the suffix's.
    let mut crc = crc32fast::hash(prefix);
    let whole = bytes.len() / CHUNK;
    for &chunk_crc in &chunks.crcs[..whole] {
        crc = after_chunk(crc) ^ chunk_crc;
    }
    let mut crc = crc32fast::Hasher::new_with_initial_len(crc, 0);
    if let Some(&last) = chunks.crcs.get(whole) {
        let len = 2 * (bytes.len() - whole * CHUNK) as u64;
        crc.combine(&crc32fast::Hasher::new_with_initial_len(last, len));
    }
    crc.update(suffix);
    let len = prefix.len() + 2 * bytes.len() + suffix.len();
    let body = Bytes::from(trailer_of(out, crc.finalize(), len));
    let coding = HexCoding {
        code,
        bytes: chunks.bytes,
        start,
        ends: chunks.ends,
        crcs: chunks.crcs,
        body: body.clone(),
    };
    Some((body, coding))
}

/// The codes of a filter's bytes, chunk by chunk, as [`HexCoding`] keeps them.
struct Chunks {
    bytes: Vec<u8>,
    ends: Vec<u64>,
    crcs: Vec<u32>,
}

impl Chunks {
    /// Codes `bytes` into `out` by `table`: every chunk, or, given the coding `before`
    /// of as many bytes by the same code, only the chunks that differ from its bytes,
    /// the codes of each run of the others copied from its body at once.
    fn code(
        out: &mut BitWriter,
        bytes: &[u8],
        table: &[u64; 256],
        before: Option<HexCoding>,
    ) -> Chunks {
        let start = out.bit_len();
        let mut digits = Vec::with_capacity(2 * CHUNK);
        let mut hex_crc = |chunk: &[u8]| {
            digits.clear();
            crate::bloom::hex_into(chunk, &mut digits);
            crc32fast::hash(&digits)
        };
        let Some(before) = before else {
            let n = bytes.len().div_ceil(CHUNK);
            let (mut ends, mut crcs) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for chunk in bytes.chunks(CHUNK) {
                out.codes(chunk, table);
                ends.push(out.bit_len() - start);
                crcs.push(hex_crc(chunk));
            }
            let bytes = bytes.to_vec();
            return Chunks { bytes, ends, crcs };
        };
        let (mut kept, mut crcs) = (before.bytes, before.crcs);
        let mut ends = Vec::with_capacity(before.ends.len());
        // The run of unchanged chunks being passed: where its codes start in the body
        // before, and where they start now.
        let mut run: Option<(u64, u64)> = None;
        let mut was_end = 0;
        let pairs = bytes.chunks(CHUNK).zip(kept.chunks_mut(CHUNK));
        for (i, (chunk, was)) in pairs.enumerate() {
            let was_start = was_end;
            was_end = before.ends[i];
            if chunk == was {
                let now = out.bit_len() - start;
                let (run_was, run_now) = *run.get_or_insert((was_start, now));
                ends.push(run_now + was_end - run_was);
                continue;
            }
            if let Some((run_was, _)) = run.take() {
                out.copy_bits(&before.body, before.start + run_was, was_start - run_was);
            }
            out.codes(chunk, table);
            ends.push(out.bit_len() - start);
            was.copy_from_slice(chunk);
            crcs[i] = hex_crc(chunk);
        }
        if let Some((run_was, _)) = run {
            out.copy_bits(&before.body, before.start + run_was, was_end - run_was);
        }
        Chunks {
            bytes: kept,
            ends,
            crcs,
        }
    }
}

/// The CRC-32 of text of CRC `crc` followed by a whole chunk's hex (`2 * CHUNK` bytes)
/// of CRC 0; XOR-ed with the chunk's own CRC, that of the two texts one after the other
/// (the identity zlib's `crc32_combine` rests on). The map is linear in `crc`, so it is
/// a table per byte of it, made once from `crc32fast`'s own combine.
fn after_chunk(crc: u32) -> u32 {
    static TABLES: std::sync::OnceLock<[[u32; 256]; 4]> = std::sync::OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let shifted = |value: u32| {
            let mut h = crc32fast::Hasher::new_with_initial_len(value, 0);
            h.combine(&crc32fast::Hasher::new_with_initial_len(
                0,
                2 * CHUNK as u64,
            ));
            h.finalize()
        };
        std::array::from_fn(|k| std::array::from_fn(|b| shifted((b as u32) << (8 * k))))
    });
    crc.to_le_bytes()
        .iter()
        .zip(tables)
        .fold(0, |acc, (&b, table)| acc ^ table[usize::from(b)])
}

/// The member's header: magic, deflate, no flags, no mtime, no extra flags, OS unknown.
fn header(out: &mut BitWriter) {
    out.bytes(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
}

/// The member's trailer (the CRC and length of `data`, the uncompressed input) after
/// the blocks written to `out`.
fn trailer(out: BitWriter, data: &[u8]) -> Vec<u8> {
    trailer_of(out, crc32fast::hash(data), data.len())
}

/// The trailer of an uncompressed input of CRC `crc` and length `len`.
fn trailer_of(mut out: BitWriter, crc: u32, len: usize) -> Vec<u8> {
    out.align();
    out.bytes(&crc.to_le_bytes());
    out.bytes(&(len as u32).to_le_bytes());
    out.finish()
}

/// The maximal runs of lowercase hex digits at least [`MIN_RUN`] long.
fn hex_runs(data: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if !is_hex(data[i]) {
            i += 1;
            continue;
        }
        let start = i;
        i += hex_prefix(&data[i..]);
        if i - start >= MIN_RUN {
            runs.push(start..i);
        }
    }
    runs
}

/// How many bytes `data` starts with that are hex digits: 32 at a time while whole
/// chunks are (without a branch per byte), then one by one.
fn hex_prefix(data: &[u8]) -> usize {
    let whole = data
        .chunks_exact(32)
        .take_while(|chunk| chunk.iter().fold(true, |all, &b| all & is_hex(b)))
        .count()
        * 32;
    whole + data[whole..].iter().take_while(|&&b| is_hex(b)).count()
}

#[inline(always)]
fn is_hex(b: u8) -> bool {
    (b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6)
}

/// `bytes` as stored blocks (none when empty, unless it must carry the final bit).
fn stored_blocks(out: &mut BitWriter, bytes: &[u8], last: bool) {
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

/// One dynamic-Huffman block of the hex digits `run`, literals only.
fn huffman_block(out: &mut BitWriter, run: &[u8], last: bool) -> Option<()> {
    let counts = sampled_counts(run);
    let code = DigitCode::fit(&DIGITS.map(|b| counts[usize::from(b)]))?;
    code.start_block(out, last);
    out.pairs(run, &code.pair_table());
    if let [last] = run.chunks_exact(2).remainder() {
        let (code, len) = code.lit_codes[usize::from(*last)];
        out.bits(u64::from(code), u32::from(len));
    }
    code.end_block(out);
    Some(())
}

/// A literal-only deflate code for hex digits, fitted to their counts, with the
/// block header that describes it.
struct DigitCode {
    /// Each literal/length symbol's code, bit-reversed for writing, and its length.
    lit_codes: [(u16, u8); END_OF_BLOCK + 1],
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
    fn fit(counts: &[u64; 16]) -> Option<DigitCode> {
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
    fn start_block(&self, out: &mut BitWriter, last: bool) {
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

    fn end_block(&self, out: &mut BitWriter) {
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
    fn pair_table(&self) -> Vec<u64> {
        let mut pairs = vec![0u64; 1 << 16];
        for &a in DIGITS {
            for &b in DIGITS {
                pairs[usize::from(u16::from_le_bytes([a, b]))] = self.two(a, b);
            }
        }
        pairs
    }

    /// The codes of a byte's two hex digits (high nibble first), by the byte.
    fn byte_table(&self) -> [u64; 256] {
        std::array::from_fn(|byte| self.two(DIGITS[byte >> 4], DIGITS[byte & 15]))
    }
}

/// How often each hex digit occurs in the hex of `bytes` (by digit value), counted in
/// a [`sample`] of it, as [`sampled_counts`] counts the digits of text.
fn nibble_counts(bytes: &[u8]) -> [u64; 16] {
    let mut counts = [0u64; 16];
    for (byte, &n) in sampled_counts(bytes).iter().enumerate() {
        counts[byte >> 4] += n;
        counts[byte & 15] += n;
    }
    counts
}

/// About how often each byte value occurs in `data`, counted in a [`sample`] of it (a
/// digit not seen still gets a code).
fn sampled_counts(data: &[u8]) -> [u64; 256] {
    let mut lanes = [[0u64; 256]; 4];
    for block in sample(data) {
        // Four lanes, so a run of one byte does not serialise on one counter.
        let mut quads = block.chunks_exact(4);
        for q in &mut quads {
            lanes[0][usize::from(q[0])] += 1;
            lanes[1][usize::from(q[1])] += 1;
            lanes[2][usize::from(q[2])] += 1;
            lanes[3][usize::from(q[3])] += 1;
        }
        for &b in quads.remainder() {
            lanes[0][usize::from(b)] += 1;
        }
    }
    let mut total = [0u64; 256];
    for lane in &lanes {
        for (t, c) in total.iter_mut().zip(lane) {
            *t += c;
        }
    }
    total
}

/// The blocks of `data` its figures are taken from: every eighth block of 4 KiB once it
/// is longer than 256 KiB, else all of it. A filter's hash spreads its bits evenly, so
/// an eighth of a large one tells its fill and its digits' counts as well as all of it.
fn sample(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    const BLOCK: usize = 4096;
    let step = if data.len() > 64 * BLOCK { 8 } else { 1 };
    data.chunks(BLOCK).step_by(step)
}

/// Huffman code lengths for symbols of the given (positive) weights, or `None` when
/// the longest would exceed `limit`. At least two symbols.
fn huffman_lengths(weights: &[u64], limit: u8) -> Option<Vec<u8>> {
    let n = weights.len();
    if n < 2 {
        return Some(vec![1; n]);
    }
    // Nodes 0..n are the symbols; each merge adds one, remembering its parent.
    let mut weight: Vec<u64> = weights.to_vec();
    let mut parent = vec![usize::MAX; 2 * n - 1];
    let mut live: Vec<usize> = (0..n).collect();
    while live.len() > 1 {
        live.sort_unstable_by_key(|&i| std::cmp::Reverse((weight[i], i)));
        let a = live.pop().expect("two live nodes");
        let b = live.pop().expect("two live nodes");
        let node = weight.len();
        weight.push(weight[a] + weight[b]);
        parent[a] = node;
        parent[b] = node;
        live.push(node);
    }
    let mut lens = Vec::with_capacity(n);
    for symbol in 0..n {
        let (mut depth, mut at) = (0u8, symbol);
        while parent[at] != usize::MAX {
            depth += 1;
            at = parent[at];
        }
        if depth > limit {
            return None;
        }
        lens.push(depth);
    }
    Some(lens)
}

/// Canonical codes for code lengths (RFC 1951 3.2.2), each bit-reversed so it can be
/// written least significant bit first, with its length.
fn canonical_codes<const N: usize>(lens: &[u8; N]) -> [(u16, u8); N] {
    let mut count = [0u16; 16];
    for &len in lens {
        count[usize::from(len)] += 1;
    }
    count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    let mut codes = [(0u16, 0u8); N];
    for (symbol, &len) in lens.iter().enumerate() {
        if len > 0 {
            let c = next[usize::from(len)];
            next[usize::from(len)] += 1;
            codes[symbol] = (c.reverse_bits() >> (16 - len), len);
        }
    }
    codes
}

/// Code lengths as the code-length alphabet sends them: runs of zeros as 17 (3–10) or
/// 18 (11–138) with their extra bits, every other length as itself.
fn run_lengths(lens: &[u8]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lens.len() {
        if lens[i] != 0 {
            out.push((lens[i], 0));
            i += 1;
            continue;
        }
        let zeros = lens[i..].iter().take_while(|&&l| l == 0).count();
        let mut left = zeros;
        while left > 0 {
            match left {
                11.. => {
                    let n = left.min(138);
                    out.push((18, (n - 11) as u8));
                    left -= n;
                }
                3..=10 => {
                    out.push((17, (left - 3) as u8));
                    left = 0;
                }
                _ => {
                    out.push((0, 0));
                    left -= 1;
                }
            }
        }
        i += zeros;
    }
    out
}

/// Bits written least significant first, as deflate packs them.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    held: u32,
}

impl BitWriter {
    fn with_capacity(capacity: usize) -> BitWriter {
        BitWriter {
            out: Vec::with_capacity(capacity),
            acc: 0,
            held: 0,
        }
    }

    /// The low `n` (at most 32) bits of `value`.
    #[inline(always)]
    fn bits(&mut self, value: u64, n: u32) {
        self.acc |= value << self.held;
        self.held += n;
        if self.held >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.held -= 32;
        }
    }

    /// Each whole pair of bytes of `data` as its codes in `pairs` (indexed by the pair
    /// read little-endian); an odd last byte is left to the caller.
    fn pairs(&mut self, data: &[u8], pairs: &[u64]) {
        self.coded(
            data.chunks_exact(2)
                .map(|pair| pairs[usize::from(u16::from_le_bytes([pair[0], pair[1]]))]),
        );
    }

    /// Each byte of `data` as its codes in `table`.
    fn codes(&mut self, data: &[u8], table: &[u64; 256]) {
        self.coded(data.iter().map(|&b| table[usize::from(b)]));
    }

    /// Entries of codes (in the low 32 bits, their length, at most 30, above), held in
    /// a local word flushed 32 bits at a time. Tried on a union's JSON and not kept: a
    /// branch-free variant (the whole word stored after each entry, the output advanced
    /// by the bytes completed) was 15% slower, its chain of dependent operations per
    /// entry being longer; one flush test per three bytes gained 3%.
    #[inline(always)]
    fn coded(&mut self, entries: impl Iterator<Item = u64>) {
        let (mut acc, mut held) = (self.acc, self.held);
        for entry in entries {
            acc |= (entry & 0xffff_ffff) << held;
            held += (entry >> 32) as u32;
            // At most 31 + 30 bits held: flush whole 32-bit words.
            if held >= 32 {
                self.out.extend_from_slice(&(acc as u32).to_le_bytes());
                acc >>= 32;
                held -= 32;
            }
        }
        self.acc = acc;
        self.held = held;
    }

    /// Bits written so far.
    fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.held)
    }

    /// `len` bits of `src` (bits packed least significant first) from bit `from`: 64 at
    /// a time put after the (at most seven) bits held, then the rest.
    fn copy_bits(&mut self, src: &[u8], from: u64, len: u64) {
        // The 64 bits of `src` from `bit`, read from the 16 bytes that hold them (zeros
        // past its end).
        let word_at = |bit: u64| {
            let byte = (bit / 8) as usize;
            let window = match src.get(byte..byte + 16) {
                Some(window) => window.try_into().expect("16 bytes"),
                None => {
                    let mut window = [0u8; 16];
                    let rest = src.get(byte..).unwrap_or_default();
                    window[..rest.len()].copy_from_slice(rest);
                    window
                }
            };
            (u128::from_le_bytes(window) >> (bit % 8)) as u64
        };
        while self.held >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.held -= 8;
        }
        let (mut at, end) = (from, from + len);
        let mut acc = u128::from(self.acc);
        while end - at >= 64 {
            acc |= u128::from(word_at(at)) << self.held;
            self.out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            at += 64;
        }
        self.acc = acc as u64;
        while at < end {
            let n = (end - at).min(32) as u32;
            self.bits(word_at(at) & ((1 << n) - 1), n);
            at += u64::from(n);
        }
    }

    /// Pads with zero bits to a byte boundary, writing out every whole byte held.
    fn align(&mut self) {
        let bytes = self.held.div_ceil(8);
        self.out
            .extend_from_slice(&self.acc.to_le_bytes()[..bytes as usize]);
        self.acc = 0;
        self.held = 0;
    }

    /// Whole bytes; the writer must be at a byte boundary.
    fn bytes(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.held, 0);
        self.out.extend_from_slice(bytes);
    }

    fn finish(mut self) -> Vec<u8> {
        self.align();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use proptest::prelude::*;
    use std::io::Read;

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(gz)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    /// Hex of `n` pseudo-random bytes where each bit is set with probability `fill`.
    fn hex_of_fill(n: usize, fill: f64, seed: u64) -> Vec<u8> {
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

    #[test]
    fn a_json_document_round_trips_at_half_its_size() {
        let digits = String::from_utf8(hex_of_fill(200_000, 0.5, 7)).unwrap();
        let json = format!("{{\"v\":1,\"m\":1600000,\"filter\":\"{digits}\",\"count\":3}}");
        let gz = hex(json.as_bytes()).expect("a long hex run");
        assert_eq!(gunzip(&gz), json.as_bytes());
        // 16 digits at a fill of one half: about 4.06 bits each.
        assert!(
            gz.len() < json.len() * 52 / 100,
            "{} of {}",
            gz.len(),
            json.len()
        );
    }

    #[test]
    fn filters_near_half_full_round_trip_at_about_half_their_hex() {
        for fill in [0.3, 0.4, 0.5, 0.6, 0.7] {
            let text = hex_of_fill(50_000, fill, 3);
            let gz = hex(&text).expect("digits near uniform");
            assert_eq!(gunzip(&gz), text, "fill {fill}");
            assert!(
                gz.len() < text.len() * 52 / 100,
                "fill {fill}: {}",
                gz.len()
            );
        }
    }

    #[test]
    fn nearly_empty_or_full_filters_are_left_to_deflate() {
        for fill in [0.0, 0.02, 0.2, 0.8, 0.95, 1.0] {
            assert!(hex(&hex_of_fill(50_000, fill, 3)).is_none(), "fill {fill}");
        }
    }

    #[test]
    fn runs_at_either_end_and_between_other_bytes_round_trip() {
        let mut framed = b"{\"filter\":\"".to_vec();
        framed.extend(hex_of_fill(5_000, 0.5, 1));
        assert_eq!(gunzip(&hex(&framed).unwrap()), framed);
        let mut two = hex_of_fill(3_000, 0.5, 2);
        two.extend_from_slice(b"\", \"other\": \"");
        two.extend(hex_of_fill(3_000, 0.4, 3));
        two.extend(vec![b'x'; 140_000]); // past a stored block's 65,535 bytes
        assert_eq!(gunzip(&hex(&two).unwrap()), two);
    }

    #[test]
    fn text_without_a_long_hex_run_is_left_to_deflate() {
        assert!(hex(b"").is_none());
        assert!(hex(&vec![b'g'; 100_000]).is_none());
        assert!(hex(&hex_of_fill(MIN_RUN / 2 - 1, 0.5, 1)).is_none());
    }

    /// Pseudo-random bytes with each bit set with probability `fill`.
    fn bytes_of_fill(n: usize, fill: f64, seed: u64) -> Vec<u8> {
        crate::bloom::from_hex(std::str::from_utf8(&hex_of_fill(n, fill, seed)).unwrap()).unwrap()
    }

    #[test]
    fn text_around_bytes_coded_as_their_hex_round_trips_as_hex_codes_it() {
        let bytes = bytes_of_fill(200_000, 0.5, 9);
        let (before, after) = (
            b"{\"v\":1,\"filter\":\"".as_slice(),
            b"\",\"count\":3}".as_slice(),
        );
        let (gz, _) = hex_of(before, &bytes, after, None).expect("digits near uniform");
        let text = [before, crate::bloom::to_hex(&bytes).as_bytes(), after].concat();
        assert_eq!(gunzip(&gz), text);
        let whole = hex(&text).unwrap();
        assert!(
            gz.len() <= whole.len() + 64,
            "{} against {}",
            gz.len(),
            whole.len()
        );
        // The hex form alone: no text around it, the coded block the last.
        assert_eq!(
            gunzip(&hex_of(&[], &bytes, &[], None).unwrap().0),
            text[before.len()..text.len() - after.len()]
        );
    }

    #[test]
    fn bytes_too_few_or_too_skewed_for_a_digit_code_are_left_to_deflate() {
        assert!(hex_of(b"{", &bytes_of_fill(MIN_RUN / 2 - 1, 0.5, 1), b"}", None).is_none());
        for fill in [0.0, 0.02, 0.2, 0.8, 1.0] {
            assert!(
                hex_of(&[], &bytes_of_fill(50_000, fill, 3), &[], None).is_none(),
                "fill {fill}"
            );
        }
    }

    /// `bytes` with the byte at each of `at` (wrapped to its length) replaced.
    fn changed(bytes: &[u8], at: &[(usize, u8)]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for &(i, b) in at {
            let i = i % out.len();
            out[i] = b;
        }
        out
    }

    /// A version coded from the one before equals a fresh coding of it: body and chunk
    /// ends; and it decompresses to its text.
    fn next_equals_fresh(
        before: HexCoding,
        head: &[u8],
        bytes: &[u8],
        tail: &[u8],
    ) -> (HexCoding, bool) {
        let same_code = before.bytes.len() == bytes.len()
            && DigitCode::fit(&nibble_counts(bytes)).map(|c| c.lit_codes)
                == Some(before.code.lit_codes);
        let (next, coding) = hex_of(head, bytes, tail, Some(before)).expect("a code");
        let (fresh, fresh_coding) = hex_of(head, bytes, tail, None).expect("a code");
        assert!(next == fresh, "the same body as a fresh coding");
        assert_eq!(coding.ends, fresh_coding.ends);
        assert_eq!(coding.bytes, bytes);
        let text = [head, crate::bloom::to_hex(bytes).as_bytes(), tail].concat();
        assert!(gunzip(&next) == text);
        (coding, same_code)
    }

    #[test]
    fn a_version_codes_again_only_the_chunks_that_changed_and_gives_the_same_body() {
        let bytes = bytes_of_fill(300_000, 0.5, 11);
        let (head, tail) = (b"{\"count\":9,\"filter\":\"".as_slice(), b"\"}".as_slice());
        let (_, mut coding) = hex_of(head, &bytes, tail, None).unwrap();
        let mut now = bytes;
        // Changes at a chunk's first and last byte, in the short last chunk, and none.
        let steps: [&[(usize, u8)]; 4] = [
            &[(0, 0xff), (CHUNK - 1, 0), (CHUNK, 0x5a), (123_457, 0x11)],
            &[(300_000 - 1, 0x80), (300_000 - 300_000 % CHUNK, 0x01)],
            &[],
            &[(7 * CHUNK + 3, 0x33), (250_000, 0xc4), (250_001, 0x4c)],
        ];
        for (n, step) in steps.into_iter().enumerate() {
            now = changed(&now, step);
            // The count in the text before the hex changes with each version too.
            let head = format!("{{\"count\":{},\"filter\":\"", 10 + n * 1000);
            let (next, same_code) = next_equals_fresh(coding, head.as_bytes(), &now, tail);
            assert!(same_code, "a few bytes leave the code as it was");
            coding = next;
        }
    }

    #[test]
    fn a_coding_of_other_bytes_or_another_code_is_not_copied_from() {
        let bytes = bytes_of_fill(40_000, 0.5, 5);
        let (_, shorter) = hex_of(&[], &bytes[..30_000], &[], None).unwrap();
        let (_, same_code) = next_equals_fresh(shorter, b"[", &bytes, b"]");
        assert!(!same_code);
        // Bytes whose digits are far from those of the coding before: another code.
        let (_, half) = hex_of(&[], &bytes, &[], None).unwrap();
        let skewed = bytes_of_fill(40_000, 0.3, 5);
        let (_, same_code) = next_equals_fresh(half, &[], &skewed, &[]);
        assert!(!same_code);
    }

    #[test]
    fn a_crc_after_a_chunk_is_the_crc_of_both_texts() {
        let chunk: Vec<u8> = (0..2 * CHUNK).map(|i| (i * 31 % 251) as u8).collect();
        for first in [&b""[..], b"a", b"{\"count\":1,\"filter\":\""] {
            let whole = [first, &chunk[..]].concat();
            assert_eq!(
                after_chunk(crc32fast::hash(first)) ^ crc32fast::hash(&chunk),
                crc32fast::hash(&whole)
            );
        }
    }

    #[test]
    fn bits_copied_at_any_offset_are_the_bits_written() {
        let mut src = BitWriter::with_capacity(64);
        let values: Vec<(u64, u32)> = (0..40u64)
            .map(|i| ((i * 2_654_435_761) & 0x1ff_ffff, 25))
            .collect();
        for &(v, n) in &values {
            src.bits(v, n);
        }
        let src = src.finish();
        for lead in [0, 1, 7, 31] {
            for (from, len) in [(0, 1000), (3, 31), (25, 64), (999, 1), (5, 0), (960, 40)] {
                let mut out = BitWriter::with_capacity(256);
                out.bits(0x5555_5555 & ((1 << lead) - 1), lead);
                out.copy_bits(&src, from, len);
                let got = out.finish();
                for i in 0..len {
                    let bit = |b: &[u8], i: u64| (b[(i / 8) as usize] >> (i % 8)) & 1;
                    assert_eq!(
                        bit(&got, u64::from(lead) + i),
                        bit(&src, from + i),
                        "{lead} {from} {len} {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn huffman_lengths_form_complete_codes() {
        for weights in [
            vec![1, 1],
            vec![5, 1, 1],
            vec![1; 17],
            vec![1000, 1, 2, 3, 4],
        ] {
            let lens = huffman_lengths(&weights, 15).unwrap();
            let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(i32::from(l))).sum();
            assert!((kraft - 1.0).abs() < 1e-12, "{weights:?} -> {lens:?}");
        }
        // Fibonacci weights make the deepest tree: too deep for a limit of 7.
        let fib = [1u64, 1, 2, 3, 5, 8, 13, 21, 34, 55];
        assert!(huffman_lengths(&fib, 7).is_none());
        assert!(huffman_lengths(&fib, 15).is_some());
    }

    proptest! {
        #[test]
        fn any_text_round_trips(
            parts in proptest::collection::vec((0usize..9000, 0u8..3, any::<u64>()), 1..5)
        ) {
            let mut data = Vec::new();
            for (len, kind, seed) in parts {
                match kind {
                    0 => data.extend(hex_of_fill(len / 2, (seed % 100) as f64 / 100.0, seed)),
                    1 => data.extend((0..len).map(|i| (seed as usize + i * 7) as u8)),
                    _ => data.extend(std::iter::repeat_n(b'0', len)),
                }
            }
            if let Some(gz) = hex(&data) {
                prop_assert_eq!(gunzip(&gz), data);
            }
        }

        #[test]
        fn any_bytes_between_any_text_round_trip_as_hex(
            before in proptest::collection::vec(any::<u8>(), 0..200),
            len in 0usize..20_000,
            fill in 0.25f64..0.75,
            seed in any::<u64>(),
            after in proptest::collection::vec(any::<u8>(), 0..70_000),
        ) {
            let bytes = bytes_of_fill(len, fill, seed);
            if let Some((gz, _)) = hex_of(&before, &bytes, &after, None) {
                let text = [&before[..], crate::bloom::to_hex(&bytes).as_bytes(), &after[..]].concat();
                prop_assert_eq!(gunzip(&gz), text);
            }
        }

        #[test]
        fn versions_coded_from_the_one_before_equal_fresh_codings(
            len in 2_048usize..40_000,
            seed in any::<u64>(),
            versions in proptest::collection::vec(
                (proptest::collection::vec((any::<usize>(), any::<u8>()), 0..40), 0usize..300),
                1..5,
            ),
        ) {
            let mut now = bytes_of_fill(len, 0.5, seed);
            let tail = b"\"}".as_slice();
            let (_, mut coding) = hex_of(b"{", &now, tail, None).expect("near uniform");
            for (at, head_len) in versions {
                now = changed(&now, &at);
                let head = vec![b'{'; head_len];
                coding = next_equals_fresh(coding, &head, &now, tail).0;
            }
        }
    }
}
