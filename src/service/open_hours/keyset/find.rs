//! Finding a key in a sorted run by interpolation.
//!
//! Keys are SHA-1 prefixes, uniform over `u64`, so a key's place in its run is guessed
//! from its value, the guess corrected once from the key found there, and the key found
//! from there in a few probes; keys that are not uniform (tests) are still found exactly,
//! only with more probes.

/// Whether the sorted `run` (keys of one shard of the top `bits` bits) holds `key`:
/// starts where a uniform key would sit, moves by as many places as uniform keys would
/// lie between the key found there and `key`, gallops outwards to bracket it, then
/// searches the bracket.
pub(super) fn find(run: &[u64], key: u64, bits: u32) -> bool {
    let n = run.len();
    if n == 0 {
        return false;
    }
    // How many of the run's keys lie, when uniform, in a span `d` of its shard's values
    // (below the shard's width, 2^(64 - bits), as every span between keys of one shard is).
    let expect = |d: u64| ((u128::from(d << bits) * n as u128) >> 64) as usize;
    let first = expect(key);
    let guess = match run[first].cmp(&key) {
        std::cmp::Ordering::Equal => return true,
        std::cmp::Ordering::Less => (first + expect(key - run[first])).min(n - 1),
        std::cmp::Ordering::Greater => first - expect(run[first] - key).min(first),
    };
    let (lo, hi) = if run[guess] < key {
        let (mut lo, mut step) = (guess + 1, 1);
        loop {
            let probe = guess + step;
            if probe >= n {
                break (lo, n);
            }
            if run[probe] >= key {
                break (lo, probe + 1);
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        let (mut hi, mut step) = (guess + 1, 1);
        loop {
            if step > guess {
                break (0, hi);
            }
            let probe = guess - step;
            if run[probe] < key {
                break (probe + 1, hi);
            }
            hi = probe + 1;
            step *= 2;
        }
    };
    run[lo..hi].binary_search(&key).is_ok()
}

#[cfg(test)]
mod tests {
    use super::super::MAX_SHARD_BITS;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_agrees_with_binary_search(
            keys in prop::collection::vec(any::<u64>(), 0..300),
            key in any::<u64>(),
            bits in 0u32..=MAX_SHARD_BITS,
            shard in any::<u64>(),
        ) {
            // Keys of one shard: its top `bits` bits, the rest from the keys.
            let top = if bits == 0 { 0 } else { shard << (64 - bits) };
            let low = |k: u64| if bits == 0 { k } else { top | (k >> bits) };
            let mut run: Vec<u64> = keys.iter().map(|&k| low(k)).collect();
            run.sort_unstable();
            run.dedup();
            let key = low(key);
            prop_assert_eq!(find(&run, key, bits), run.binary_search(&key).is_ok());
            for &k in &run {
                prop_assert!(find(&run, k, bits));
            }
        }
    }
}
