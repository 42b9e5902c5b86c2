//! Figures of a body taken from a sample of it: how often each byte occurs, and each
//! hex digit in the hex of a filter's bytes. They fit a digit code, and tell how full a
//! filter is.

/// How often each hex digit occurs in the hex of `bytes` (by digit value), counted in
/// a [`sample`] of it, as [`sampled_counts`] counts the digits of text.
pub(super) fn nibble_counts(bytes: &[u8]) -> [u64; 16] {
    let mut counts = [0u64; 16];
    for (byte, &n) in sampled_counts(bytes).iter().enumerate() {
        counts[byte >> 4] += n;
        counts[byte & 15] += n;
    }
    counts
}

/// About how often each byte value occurs in `data`, counted in a [`sample`] of it (a
/// digit not seen still gets a code).
pub(super) fn sampled_counts(data: &[u8]) -> [u64; 256] {
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
pub(super) fn sample(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    const BLOCK: usize = 4096;
    let step = if data.len() > 64 * BLOCK { 8 } else { 1 };
    data.chunks(BLOCK).step_by(step)
}
