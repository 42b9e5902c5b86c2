//! A filter's bytes coded as the hex text that holds them ([`hex_of`]), the hex never
//! written out; and each new version of the filter coded from the one before
//! ([`HexCoding`]), only the chunks that changed coded again.

use super::bit_writer::BitWriter;
use super::digit_code::DigitCode;
use super::hex_runs::MIN_RUN;
use super::member::{header, trailer_of};
use super::sampling::nibble_counts;
use super::stored_blocks::stored_blocks;
use bytes::Bytes;

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
/// hex form) as a gzip member, as `gz::hex` codes that text, without the hex ever being
/// written out: each byte of `bytes` is coded as its two digits by one lookup, and the
/// text's CRC is made from each chunk's, taken over its hex made in cache. `None` where
/// `gz::hex` would give none: too few digits, or digits too skewed.
///
/// Given `before`, the coding of an earlier version of the same filter, the chunks of
/// `bytes` as they were then are not coded again: their codes are copied, bit for bit,
/// from its body, and their CRCs kept, provided the code fitted to `bytes` now is the
/// one used then. The body is the same either way; only the work differs. It is written
/// over `spare`'s memory (an older body nothing holds any more; its contents are
/// dropped), so that version after version does not fault in fresh pages.
pub fn hex_of(
    prefix: &[u8],
    bytes: &[u8],
    suffix: &[u8],
    before: Option<HexCoding>,
    spare: Vec<u8>,
) -> Option<(Bytes, HexCoding)> {
    if bytes.len() * 2 < MIN_RUN {
        return None;
    }
    let code = DigitCode::fit(&nibble_counts(bytes))?;
    let before =
        before.filter(|b| b.bytes.len() == bytes.len() && b.code.lit_codes == code.lit_codes);
    let mut out = BitWriter::over(
        spare,
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
    let body = crate::render::rendered::kept(trailer_of(out, crc.finalize(), len));
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{bytes_of_fill, gunzip};
    use super::super::hex_runs::hex;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn text_around_bytes_coded_as_their_hex_round_trips_as_hex_codes_it() {
        let bytes = bytes_of_fill(200_000, 0.5, 9);
        let (before, after) = (
            b"{\"v\":1,\"filter\":\"".as_slice(),
            b"\",\"count\":3}".as_slice(),
        );
        let (gz, _) = hex_of(before, &bytes, after, None, Vec::new()).expect("digits near uniform");
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
            gunzip(&hex_of(&[], &bytes, &[], None, Vec::new()).unwrap().0),
            text[before.len()..text.len() - after.len()]
        );
    }

    #[test]
    fn bytes_too_few_or_too_skewed_for_a_digit_code_are_left_to_deflate() {
        assert!(hex_of(
            b"{",
            &bytes_of_fill(MIN_RUN / 2 - 1, 0.5, 1),
            b"}",
            None,
            Vec::new()
        )
        .is_none());
        for fill in [0.0, 0.02, 0.2, 0.8, 1.0] {
            assert!(
                hex_of(&[], &bytes_of_fill(50_000, fill, 3), &[], None, Vec::new()).is_none(),
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
        let (next, coding) = hex_of(head, bytes, tail, Some(before), Vec::new()).expect("a code");
        let (fresh, fresh_coding) = hex_of(head, bytes, tail, None, Vec::new()).expect("a code");
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
        let (_, mut coding) = hex_of(head, &bytes, tail, None, Vec::new()).unwrap();
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
        let (_, shorter) = hex_of(&[], &bytes[..30_000], &[], None, Vec::new()).unwrap();
        let (_, same_code) = next_equals_fresh(shorter, b"[", &bytes, b"]");
        assert!(!same_code);
        // Bytes whose digits are far from those of the coding before: another code.
        let (_, half) = hex_of(&[], &bytes, &[], None, Vec::new()).unwrap();
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

    proptest! {
        #[test]
        fn any_bytes_between_any_text_round_trip_as_hex(
            before in proptest::collection::vec(any::<u8>(), 0..200),
            len in 0usize..20_000,
            fill in 0.25f64..0.75,
            seed in any::<u64>(),
            after in proptest::collection::vec(any::<u8>(), 0..70_000),
        ) {
            let bytes = bytes_of_fill(len, fill, seed);
            if let Some((gz, _)) = hex_of(&before, &bytes, &after, None, Vec::new()) {
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
            let (_, mut coding) = hex_of(b"{", &now, tail, None, Vec::new()).expect("near uniform");
            for (at, head_len) in versions {
                now = changed(&now, &at);
                let head = vec![b'{'; head_len];
                coding = next_equals_fresh(coding, &head, &now, tail).0;
            }
        }
    }
}
