//! The filter's body in wire order (`ceil(m/8)` bytes, bit `j` in byte `j/8` under
//! mask `1 << (j % 8)`): read in place or copied out, and assembled back from wire
//! parts with every check decoding must make.

use super::Filter;
use crate::bloom::hash::Modulus;
use crate::bloom::{FilterError, HashScheme, Params};
use std::borrow::Cow;

impl Filter {
    /// Assembles a filter from wire parts, validating everything `decode` must.
    pub(crate) fn from_le_bytes(
        params: Params,
        hash: HashScheme,
        bytes: &[u8],
    ) -> Result<Filter, FilterError> {
        let expected = params.byte_len();
        if bytes.len() != expected {
            return Err(FilterError::WrongLength {
                m: params.m,
                expected,
                actual: bytes.len(),
            });
        }
        let mut words = vec![0u64; (params.m as usize).div_ceil(64)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(buf);
        }
        let tail = params.m % 64;
        if tail != 0 {
            let last = words[words.len() - 1];
            if last >> tail != 0 {
                return Err(FilterError::BitsPastM { m: params.m });
            }
        }
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        Ok(Filter {
            params,
            hash,
            words,
            ones,
            modulus: Modulus::new(params.m),
            sizing: crate::bloom::Sizing::Probes,
        })
    }

    /// [`Filter::to_bytes`] without a copy where the words' memory is already in wire
    /// order (little-endian targets): what is hashed and hex-coded for each new version
    /// of an open union is then read in place, not copied to fresh pages first.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        #[cfg(target_endian = "little")]
        {
            use zerocopy::IntoBytes;
            Cow::Borrowed(&self.words.as_bytes()[..self.params.byte_len()])
        }
        #[cfg(not(target_endian = "little"))]
        {
            Cow::Owned(self.to_bytes())
        }
    }

    /// The filter body in wire order: `ceil(m/8)` bytes, bit `j` in byte `j/8`
    /// under mask `1 << (j % 8)`.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_in(Vec::new())
    }

    /// As [`Filter::to_bytes`], written over `out`'s memory (its contents are dropped):
    /// a caller that renders version after version of one filter reuses one body's pages
    /// instead of faulting in fresh ones each time.
    pub fn to_bytes_in(&self, mut out: Vec<u8>) -> Vec<u8> {
        out.clear();
        out.reserve_exact(self.params.byte_len());
        for word in &self.words {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.truncate(self.params.byte_len());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(m: u32, k: u32) -> Params {
        Params { m, k }
    }

    #[test]
    fn the_bytes_read_in_place_are_the_wire_bytes_at_any_m() {
        for m in [1, 7, 8, 63, 64, 65, 1000, 4099] {
            let mut f = Filter::new(params(m, 3));
            for i in 0..m / 4 {
                f.insert(&i.to_string());
            }
            assert_eq!(f.bytes(), f.to_bytes(), "m = {m}");
            assert_eq!(f.bytes().len(), f.params.byte_len(), "m = {m}");
        }
    }
}
