//! The bit writer the coder writes every member with: bits packed least significant
//! first, as deflate packs them, with the bulk paths it needs (codes looked up a byte
//! or a pair of bytes at a time, and bits copied from an earlier member).

/// Bits written least significant first, as deflate packs them.
pub(super) struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    held: u32,
}

impl BitWriter {
    /// An empty writer over `spare`'s memory (its contents dropped), room for `capacity`.
    pub(super) fn over(mut spare: Vec<u8>, capacity: usize) -> BitWriter {
        spare.clear();
        spare.reserve_exact(capacity);
        BitWriter {
            out: spare,
            acc: 0,
            held: 0,
        }
    }

    pub(super) fn with_capacity(capacity: usize) -> BitWriter {
        BitWriter::over(Vec::new(), capacity)
    }

    /// The low `n` (at most 32) bits of `value`.
    #[inline(always)]
    pub(super) fn bits(&mut self, value: u64, n: u32) {
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
    pub(super) fn pairs(&mut self, data: &[u8], pairs: &[u64]) {
        self.coded(
            data.chunks_exact(2)
                .map(|pair| pairs[usize::from(u16::from_le_bytes([pair[0], pair[1]]))]),
        );
    }

    /// Each byte of `data` as its codes in `table`.
    pub(super) fn codes(&mut self, data: &[u8], table: &[u64; 256]) {
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
    pub(super) fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.held)
    }

    /// `len` bits of `src` (bits packed least significant first) from bit `from`: 64 at
    /// a time put after the (at most seven) bits held, then the rest.
    pub(super) fn copy_bits(&mut self, src: &[u8], from: u64, len: u64) {
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
    pub(super) fn align(&mut self) {
        let bytes = self.held.div_ceil(8);
        self.out
            .extend_from_slice(&self.acc.to_le_bytes()[..bytes as usize]);
        self.acc = 0;
        self.held = 0;
    }

    /// Whole bytes; the writer must be at a byte boundary.
    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.held, 0);
        self.out.extend_from_slice(bytes);
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.align();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
