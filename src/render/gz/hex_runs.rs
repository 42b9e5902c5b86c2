//! Text that is mostly long runs of hex digits (a filter's JSON or hex form), as
//! [`hex()`] codes it: each run of at least [`MIN_RUN`] digits one dynamic-Huffman block
//! of a code fitted to its own digits, the text around the runs in stored blocks.

use super::bit_writer::BitWriter;
use super::digit_code::{DigitCode, DIGITS};
use super::member::{header, trailer};
use super::sampling::sampled_counts;
use super::stored_blocks::stored_blocks;

/// Hex runs shorter than this go in stored blocks: a block's code takes a few dozen bytes
/// to describe.
pub(super) const MIN_RUN: usize = 4096;

/// `data` as a gzip member, or `None` when it holds no hex run long enough to gain, or
/// a run's digits are skewed: one digit more than a quarter of them, as in a filter
/// far below or above half full. A code spends at least a bit per digit, where
/// deflate's matcher shrinks the long runs of one digit of such a filter far more.
pub(in crate::render) fn hex(data: &[u8]) -> Option<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{gunzip, hex_of_fill};
    use super::*;
    use proptest::prelude::*;

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
    }
}
