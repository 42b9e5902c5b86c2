//! The exact false-positive rate of a built filter: the share of all `(h1, h2)` whose
//! probes find every bit set, summed residue by residue.
//!
//! For a step `r = h2 mod m`, the starts `a = h1 mod m` whose k probes are all set are
//! the set bits of `C_r = AND_{i<k} rot(B, i r)`, where `rot(B, s)[a] = B[(a + s) mod m]`;
//! `C_r` takes `ceil(log2 k)` rotations by doubling the run it covers. Each residue `x`
//! is hit by `q + [x < s]` of the 2^32 values of a half (`2^32 = q m + s`), so the rate
//! is `Σ_r (q + [r < s]) (q |C_r| + |C_r ∩ [0, s)|) / 2^64`, exactly. Step `m - r` walks
//! step `r`'s progressions backwards (`C_{m-r}` is `C_r` rotated by `(k-1) r`), so half
//! the steps are read off the other half.

use crate::bloom::Params;

/// The exact rate of the filter whose bits are `words` (bit `j` in word `j / 64`).
pub(crate) fn exact(words: &[u64], params: Params) -> f64 {
    let (m, k) = (params.m, params.k);
    let two32 = 1u64 << 32;
    let (q, s) = (two32 / u64::from(m), (two32 % u64::from(m)) as u32);
    let weight = |x: u32| u128::from(q + u64::from(x < s));
    let mut all = vec![0u64; words.len()];
    let mut turned = vec![0u64; words.len()];
    let mut total: u128 = 0;
    for r in 0..=m / 2 {
        all.copy_from_slice(words);
        let mut covered = 1u32;
        while covered < k {
            let add = covered.min(k - covered);
            let shift = (u64::from(add) * u64::from(r) % u64::from(m)) as u32;
            rotate(&all, m, shift, &mut turned);
            let mut any = 0;
            for (x, y) in all.iter_mut().zip(&turned) {
                *x &= *y;
                any |= *x;
            }
            covered += add;
            if any == 0 {
                break;
            }
        }
        let ones = u128::from(ones_in(&all, m, 0, m));
        let starts = |from: u32| u128::from(q) * ones + u128::from(ones_in(&all, m, from, s));
        total += weight(r) * starts(0);
        let back = m - r;
        if back != r && back != m {
            // C_{m-r}[a] = C_r[a - (k-1) r]: its low starts are C_r's from (k-1)(m - r).
            let from = (u64::from(k - 1) * u64::from(back) % u64::from(m)) as u32;
            total += weight(back) * starts(from);
        }
    }
    total as f64 / (two32 as f64 * two32 as f64)
}

/// `out[a] = src[(a + shift) mod m]` for `a < m`; bits of `out` past `m` are zero.
fn rotate(src: &[u64], m: u32, shift: u32, out: &mut [u64]) {
    for (w, word) in out.iter_mut().enumerate() {
        let at = w as u32 * 64;
        let len = (m - at).min(64);
        *word = cyclic_bits(src, m, (at + shift) % m, len);
    }
}

/// `len <= 64` bits of the cyclic `m`-bit array from `start`, bit 0 first.
fn cyclic_bits(src: &[u64], m: u32, start: u32, len: u32) -> u64 {
    let first = (m - start).min(len);
    let mut bits = bits_at(src, start, first);
    if first < len {
        bits |= bits_at(src, 0, len - first) << first;
    }
    bits
}

/// `len <= 64` bits from `start`, within the array.
fn bits_at(src: &[u64], start: u32, len: u32) -> u64 {
    if len == 0 {
        return 0;
    }
    let (word, offset) = ((start / 64) as usize, start % 64);
    let mut bits = src[word] >> offset;
    if offset + len > 64 {
        bits |= src[word + 1] << (64 - offset);
    }
    if len < 64 {
        bits &= (1u64 << len) - 1;
    }
    bits
}

/// Set bits among the `len` bits from `start`, cyclically in `m`.
fn ones_in(src: &[u64], m: u32, start: u32, len: u32) -> u32 {
    let mut ones = 0;
    let mut done = 0;
    while done < len {
        let take = (len - done).min(64);
        ones += cyclic_bits(src, m, (start + done) % m, take).count_ones();
        done += take;
    }
    ones
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::{Filter, Key};

    /// The rate by definition: every pair of residues, weighted by how many of the 2^32
    /// values of each half land on it.
    fn rate_by_definition(filter: &Filter) -> f64 {
        let (m, k) = (filter.m(), filter.k());
        let bytes = filter.to_bytes();
        let set = |j: u64| bytes[(j / 8) as usize] & (1 << (j % 8)) != 0;
        let two32 = 1u64 << 32;
        let (q, s) = (two32 / u64::from(m), two32 % u64::from(m));
        let weight = |x: u64| (q + u64::from(x < s)) as f64 / two32 as f64;
        let mut rate = 0.0;
        for r in 0..u64::from(m) {
            for a in 0..u64::from(m) {
                if (0..u64::from(k)).all(|i| set((a + i * r) % u64::from(m))) {
                    rate += weight(r) * weight(a);
                }
            }
        }
        rate
    }

    #[test]
    fn the_exact_rate_is_the_rate_by_definition_at_small_sizes() {
        for (m, k, n) in [
            (8, 1, 1),
            (10, 7, 1),
            (10, 7, 3),
            (11, 3, 2),
            (20, 7, 2),
            (64, 4, 9),
            (65, 64, 2),
            (97, 5, 12),
            (130, 6, 20),
            (200, 3, 70),
        ] {
            let keys: Vec<Key> = (0..n).map(|i| Key::of(&format!("{m}-{k}-{i}"))).collect();
            let filter = Filter::from_keys(Params { m, k }, &keys);
            let want = rate_by_definition(&filter);
            let got = exact(filter.words(), filter.params());
            assert!(
                (got - want).abs() <= want * 1e-12,
                "m {m} k {k} n {n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn an_empty_filter_has_rate_zero_and_a_full_one_rate_one() {
        let params = Params { m: 101, k: 5 };
        assert_eq!(exact(Filter::new(params).words(), params), 0.0);
        let words = [u64::MAX, (1 << 37) - 1];
        assert_eq!(exact(&words, params), 1.0);
    }

    #[test]
    fn rotate_reads_each_bit_from_shift_places_on_cyclically() {
        let m = 150;
        let src: Vec<u64> = vec![0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 0x3f_ffff];
        let bit = |words: &[u64], j: u32| words[(j / 64) as usize] >> (j % 64) & 1;
        for shift in [0, 1, 63, 64, 65, 100, 149] {
            let mut out = vec![0; 3];
            rotate(&src, m, shift, &mut out);
            for a in 0..m {
                assert_eq!(
                    bit(&out, a),
                    bit(&src, (a + shift) % m),
                    "shift {shift} a {a}"
                );
            }
            assert_eq!(out[2] >> (m - 128), 0, "nothing past m");
        }
    }
}
