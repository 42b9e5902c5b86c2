//! A body's gzip form: which coder each representation gets at each effort, the
//! hand-written one (`gz`) where it beats deflate on a filter's bodies, flate2's
//! deflate where it does not.

use super::{gz, Repr};
use flate2::{write::GzEncoder, Compression};
use std::io::Write;

/// How fast to compress: closed hours are compressed once, so they get the best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    Fast,
    Best,
}

pub(crate) fn gzip(data: &[u8], repr: Repr, effort: Effort) -> Vec<u8> {
    // The hex forms are a long run of 16 symbols, near uniform at a filter's usual fill:
    // coded by their counts alone (`gz::hex`), smaller than deflate at any level and in
    // about 5 ms for a 10.4 MB union's JSON, where deflate took 158 ms at its fastest
    // level and about 1 s at its best.
    if matches!(repr, Repr::Json | Repr::Hex) {
        if let Some(gz) = gz::hex(data) {
            return gz;
        }
    }
    // The raw bits of a filter near half full are as good as random (`gz::bits`), where
    // the best deflate took 320 ms on a 10.4 MB union to reach 100.02%.
    if repr == Repr::Bin && effort == Effort::Best {
        if let Some(gz) = gz::bits(data) {
            return gz;
        }
    }
    let level = match (repr, effort) {
        // A filter's bits are close to random at its fill, so deflate gains nothing on
        // the raw form (measured: 100.03% of the input at the fastest level, in 0.28 s for
        // an 11.5 MB union). Content that changes is therefore only framed as gzip.
        (Repr::Bin, Effort::Fast) => return gz::stored(data),
        (_, Effort::Fast) => Compression::fast(),
        (_, Effort::Best) => Compression::best(),
    };
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 2 + 64), level);
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{half_full, sample};
    use super::super::render;
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn gzip_decompresses_to_the_identity_bytes() {
        let (meta, f) = sample(true);
        for repr in Repr::ALL {
            for effort in [Effort::Best, Effort::Fast] {
                let r = render(&meta, &f, repr, effort);
                let mut out = Vec::new();
                GzDecoder::new(&r.gzip[..]).read_to_end(&mut out).unwrap();
                assert_eq!(out, r.identity.to_vec(), "{repr:?} {effort:?}");
            }
        }
    }

    #[test]
    fn the_raw_form_of_changing_content_is_stored_not_deflated() {
        let (meta, f) = sample(false);
        let r = render(&meta, &f, Repr::Bin, Effort::Fast);
        // Stored blocks: the bytes plus the gzip frame and 5 bytes per 64 KiB block.
        assert!(r.gzip.len() > r.identity.len());
        assert!(r.gzip.len() <= r.identity.len() + 64 + 5 * r.identity.len().div_ceil(65535));
    }

    fn deflated(data: &[u8], level: Compression) -> usize {
        let mut enc = GzEncoder::new(Vec::new(), level);
        enc.write_all(data).unwrap();
        enc.finish().unwrap().len()
    }

    #[test]
    fn the_hex_forms_of_a_half_full_filter_are_coded_smaller_than_deflate_at_any_effort() {
        let (meta, f) = half_full();
        for repr in [Repr::Json, Repr::Hex] {
            for effort in [Effort::Fast, Effort::Best] {
                let r = render(&meta, &f, repr, effort);
                let mut out = Vec::new();
                GzDecoder::new(&r.gzip[..]).read_to_end(&mut out).unwrap();
                assert_eq!(out, r.identity);
                assert!(r.gzip.len() < r.identity.len() * 52 / 100);
                assert!(r.gzip.len() < deflated(&r.identity, Compression::best()));
            }
        }
    }

    #[test]
    fn raw_bits_near_half_full_are_stored_and_sparse_ones_deflated() {
        let (meta, f) = half_full();
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert!(r.gzip.len() > r.identity.len(), "stored blocks");
        // One ID in a filter sized for 100: nearly all zero bits, which deflate shrinks.
        let (meta, f) = sample(true);
        let r = render(&meta, &f, Repr::Bin, Effort::Best);
        assert!(r.gzip.len() < r.identity.len());
    }
}
