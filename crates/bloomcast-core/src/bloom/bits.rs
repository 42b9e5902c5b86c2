//! The bit array under both filter layouts (plain and partitioned): bits in `u64`
//! words, bit j at word j / 64, bit j % 64. One place for setting, testing and
//! combining, so the two layouts differ only in where a key's bits go.

use super::{FilterError, HashScheme, Params};

/// Sets bit `pos`; returns 1 if it was clear (for the set-bit count), else 0.
#[inline]
pub(super) fn set(words: &mut [u64], pos: u32) -> u64 {
    let word = &mut words[(pos >> 6) as usize];
    let bit = 1u64 << (pos & 63);
    let newly = u64::from(*word & bit == 0);
    *word |= bit;
    newly
}

/// Whether bit `pos` is set.
#[inline]
pub(super) fn get(words: &[u64], pos: u32) -> bool {
    words[(pos >> 6) as usize] & (1u64 << (pos & 63)) != 0
}

/// Applies `op` word by word (`a = op(a, b)`); returns the set bits afterwards.
pub(super) fn combine(words: &mut [u64], other: &[u64], op: impl Fn(u64, u64) -> u64) -> u64 {
    let mut ones = 0;
    for (a, b) in words.iter_mut().zip(other) {
        *a = op(*a, *b);
        ones += u64::from(a.count_ones());
    }
    ones
}

/// Filters combine only with equal m, k and hash.
///
/// # Errors
/// [`FilterError::Incompatible`] naming both shapes.
pub(super) fn same_shape(
    (params, hash): (Params, HashScheme),
    (other_params, other_hash): (Params, HashScheme),
) -> Result<(), FilterError> {
    if params != other_params || hash != other_hash {
        return Err(FilterError::Incompatible {
            left: (params.m, params.k, hash.name()),
            right: (other_params.m, other_params.k, other_hash.name()),
        });
    }
    Ok(())
}

/// A solution's bytes as little-endian `u64` words (the last one zero-padded), then
/// `zero_words` zero words, so that every window a query reads lies inside: how the
/// ribbon and exact bodies are read back.
pub(crate) fn le_words(bytes: &[u8], zero_words: usize) -> Vec<u64> {
    let mut words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    words.resize(words.len() + zero_words, 0);
    words
}
