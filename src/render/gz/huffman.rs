//! Huffman code construction for deflate's dynamic blocks (RFC 1951 3.2.2, 3.2.7):
//! code lengths from weights within a depth limit, canonical codes from lengths, and
//! code lengths as the code-length alphabet sends them.

/// Huffman code lengths for symbols of the given (positive) weights, or `None` when
/// the longest would exceed `limit`. At least two symbols.
pub(super) fn huffman_lengths(weights: &[u64], limit: u8) -> Option<Vec<u8>> {
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
pub(super) fn canonical_codes<const N: usize>(lens: &[u8; N]) -> [(u16, u8); N] {
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
pub(super) fn run_lengths(lens: &[u8]) -> Vec<(u8, u8)> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
