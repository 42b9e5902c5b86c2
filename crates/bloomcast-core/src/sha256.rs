//! SHA-256 of two messages at once.
//!
//! The JSON form of a large filter needs two SHA-256 hashes: its `digest` field, of the
//! filter's bytes, and its `Repr-Digest`, of the whole body (twice as long, as hex). With
//! the SHA extensions (SHA-NI), the 64 rounds of one block are a chain of dependent
//! instructions, so one message is hashed at that chain's latency while the unit could
//! take more: two independent messages fed block for block, interleaved, hash at about
//! 1.7 times the bytes per second of one on the machine of docs/BENCHMARKS.md
//! ("Unions"). [`update_both`] does that where the CPU has SHA-NI; elsewhere, and
//! for the blocks of one message alone, blocks go to `sha2`'s own compression function,
//! so every hash here is `sha2`'s bit for bit.

use sha2::digest::generic_array::{typenum::U64, GenericArray};

const BLOCK: usize = 64;

/// A SHA-256 computation fed in pieces: `sha2::Sha256`'s, with access to whole blocks
/// for [`update_both`].
#[derive(Clone)]
pub struct Sha256 {
    state: [u32; 8],
    /// The bytes of a block not yet complete.
    pending: [u8; BLOCK],
    pending_len: usize,
    /// Bytes fed so far.
    len: u64,
}

impl Default for Sha256 {
    fn default() -> Sha256 {
        Sha256::new()
    }
}

impl Sha256 {
    pub fn new() -> Sha256 {
        Sha256 {
            state: [
                0x6a09_e667,
                0xbb67_ae85,
                0x3c6e_f372,
                0xa54f_f53a,
                0x510e_527f,
                0x9b05_688c,
                0x1f83_d9ab,
                0x5be0_cd19,
            ],
            pending: [0; BLOCK],
            pending_len: 0,
            len: 0,
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        let rest = self.start(data);
        self.blocks_then_pending(rest);
    }

    /// The digest of everything fed.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.len.wrapping_mul(8);
        let mut tail = [0u8; 2 * BLOCK];
        let n = self.pending_len;
        tail[..n].copy_from_slice(&self.pending[..n]);
        tail[n] = 0x80;
        let total = if n < BLOCK - 8 { BLOCK } else { 2 * BLOCK };
        tail[total - 8..total].copy_from_slice(&bits.to_be_bytes());
        compress(&mut self.state, &tail[..total]);
        let mut out = [0u8; 32];
        for (word, bytes) in self.state.iter().zip(out.chunks_exact_mut(4)) {
            bytes.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// Counts `data` in and completes a pending block from it; returns the rest, which
    /// starts on a block boundary (or is empty, the block still pending).
    fn start<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        self.len += data.len() as u64;
        if self.pending_len == 0 {
            return data;
        }
        let take = (BLOCK - self.pending_len).min(data.len());
        self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&data[..take]);
        self.pending_len += take;
        if self.pending_len == BLOCK {
            let block = self.pending;
            compress(&mut self.state, &block);
            self.pending_len = 0;
        }
        &data[take..]
    }

    /// Hashes the whole blocks of `data` (counted already; [`Sha256::start`]'s rest, so
    /// nothing is pending unless it is empty) and keeps the rest pending.
    fn blocks_then_pending(&mut self, data: &[u8]) {
        if data.is_empty() {
            return; // what is pending (if anything) stays
        }
        debug_assert_eq!(self.pending_len, 0);
        let whole = data.len() / BLOCK * BLOCK;
        compress(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }
}

/// Feeds `a_data` to `a` and `b_data` to `b`: the same as `a.update(a_data)` then
/// `b.update(b_data)`, with the two messages' blocks hashed in step while both have
/// them, where the CPU has SHA-NI.
pub fn update_both(a: &mut Sha256, a_data: &[u8], b: &mut Sha256, b_data: &[u8]) {
    let a_rest = a.start(a_data);
    let b_rest = b.start(b_data);
    let mut together = 0;
    if a.pending_len == 0 && b.pending_len == 0 {
        together = a_rest.len().min(b_rest.len()) / BLOCK * BLOCK;
        if !lanes::two(
            &mut a.state,
            &a_rest[..together],
            &mut b.state,
            &b_rest[..together],
        ) {
            together = 0;
        }
    }
    a.blocks_then_pending(&a_rest[together..]);
    b.blocks_then_pending(&b_rest[together..]);
}

/// `sha2`'s compression of whole blocks.
#[allow(unsafe_code)]
fn compress(state: &mut [u32; 8], blocks: &[u8]) {
    debug_assert_eq!(blocks.len() % BLOCK, 0);
    // SAFETY: `GenericArray<u8, U64>` is `#[repr(transparent)]` over `[u8; 64]` (align 1),
    // and `blocks` holds exactly `blocks.len() / 64` of them.
    let blocks: &[GenericArray<u8, U64>] =
        unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast(), blocks.len() / BLOCK) };
    sha2::compress256(state, blocks);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod lanes {
    use super::BLOCK;
    use std::arch::x86_64::*;

    /// The round constants, four per 128-bit load.
    static K: [u32; 64] = [
        0x428a_2f98,
        0x7137_4491,
        0xb5c0_fbcf,
        0xe9b5_dba5,
        0x3956_c25b,
        0x59f1_11f1,
        0x923f_82a4,
        0xab1c_5ed5,
        0xd807_aa98,
        0x1283_5b01,
        0x2431_85be,
        0x550c_7dc3,
        0x72be_5d74,
        0x80de_b1fe,
        0x9bdc_06a7,
        0xc19b_f174,
        0xe49b_69c1,
        0xefbe_4786,
        0x0fc1_9dc6,
        0x240c_a1cc,
        0x2de9_2c6f,
        0x4a74_84aa,
        0x5cb0_a9dc,
        0x76f9_88da,
        0x983e_5152,
        0xa831_c66d,
        0xb003_27c8,
        0xbf59_7fc7,
        0xc6e0_0bf3,
        0xd5a7_9147,
        0x06ca_6351,
        0x1429_2967,
        0x27b7_0a85,
        0x2e1b_2138,
        0x4d2c_6dfc,
        0x5338_0d13,
        0x650a_7354,
        0x766a_0abb,
        0x81c2_c92e,
        0x9272_2c85,
        0xa2bf_e8a1,
        0xa81a_664b,
        0xc24b_8b70,
        0xc76c_51a3,
        0xd192_e819,
        0xd699_0624,
        0xf40e_3585,
        0x106a_a070,
        0x19a4_c116,
        0x1e37_6c08,
        0x2748_774c,
        0x34b0_bcb5,
        0x391c_0cb3,
        0x4ed8_aa4a,
        0x5b9c_ca4f,
        0x682e_6ff3,
        0x748f_82ee,
        0x78a5_636f,
        0x84c8_7814,
        0x8cc7_0208,
        0x90be_fffa,
        0xa450_6ceb,
        0xbef9_a3f7,
        0xc671_78f2,
    ];

    /// Hashes the blocks of `a` into `sa` and those of `b` into `sb` (equal lengths,
    /// whole blocks), interleaved; false, having done nothing, without SHA-NI.
    pub(super) fn two(sa: &mut [u32; 8], a: &[u8], sb: &mut [u32; 8], b: &[u8]) -> bool {
        debug_assert!(a.len() == b.len() && a.len() % BLOCK == 0);
        if !(is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse2")
            && is_x86_feature_detected!("ssse3")
            && is_x86_feature_detected!("sse4.1"))
        {
            return false;
        }
        // SAFETY: the CPU has every feature `two_ni` is compiled for (checked above).
        unsafe { two_ni(sa, a, sb, b) };
        true
    }

    /// The state in the register order the SHA-NI rounds use: (ABEF, CDGH).
    #[derive(Clone, Copy)]
    struct Lane {
        abef: __m128i,
        cdgh: __m128i,
    }

    macro_rules! schedule {
        ($v0:expr, $v1:expr, $v2:expr, $v3:expr) => {
            _mm_sha256msg2_epu32(
                _mm_add_epi32(_mm_sha256msg1_epu32($v0, $v1), _mm_alignr_epi8($v3, $v2, 4)),
                $v3,
            )
        };
    }

    macro_rules! rounds4 {
        ($lane:ident, $w:expr, $i:expr) => {
            // SAFETY (of the load): `K` holds 64 words; `$i` is below 16.
            let t = _mm_add_epi32($w, _mm_loadu_si128(K.as_ptr().add(4 * $i).cast()));
            $lane.cdgh = _mm_sha256rnds2_epu32($lane.cdgh, $lane.abef, t);
            $lane.abef = _mm_sha256rnds2_epu32($lane.abef, $lane.cdgh, _mm_shuffle_epi32(t, 0x0E));
        };
    }

    /// SAFETY: the CPU must have SHA, SSE2, SSSE3 and SSE4.1 (only [`two_ni`] calls it).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn load(state: &[u32; 8]) -> Lane {
        // SAFETY: the caller has the target features (this fn's contract); `state` holds 8 words, two unaligned 16-byte loads in bounds.
        unsafe {
            let p: *const __m128i = state.as_ptr().cast();
            let dcba = _mm_loadu_si128(p);
            let efgh = _mm_shuffle_epi32(_mm_loadu_si128(p.add(1)), 0x1B);
            let cdab = _mm_shuffle_epi32(dcba, 0xB1);
            Lane {
                abef: _mm_alignr_epi8(cdab, efgh, 8),
                cdgh: _mm_blend_epi16(efgh, cdab, 0xF0),
            }
        }
    }

    /// SAFETY: the CPU must have SHA, SSE2, SSSE3 and SSE4.1 (only [`two_ni`] calls it).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn store(lane: Lane, state: &mut [u32; 8]) {
        // SAFETY: the caller has the target features (this fn's contract); `state` holds 8 words, two unaligned 16-byte stores in bounds.
        unsafe {
            let feba = _mm_shuffle_epi32(lane.abef, 0x1B);
            let dchg = _mm_shuffle_epi32(lane.cdgh, 0xB1);
            let p: *mut __m128i = state.as_mut_ptr().cast();
            _mm_storeu_si128(p, _mm_blend_epi16(feba, dchg, 0xF0));
            _mm_storeu_si128(p.add(1), _mm_alignr_epi8(dchg, feba, 8));
        }
    }

    /// SAFETY: the CPU must have SHA, SSE2, SSSE3 and SSE4.1; `a` and `b` whole blocks
    /// of equal length.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    unsafe fn two_ni(sa: &mut [u32; 8], a: &[u8], sb: &mut [u32; 8], b: &[u8]) {
        // SAFETY: the caller has the target features (this fn's contract); every load reads 16 bytes inside a 64-byte block of `a` or `b`, or inside `K` (64 words, index below 64).
        unsafe {
            let mask = _mm_set_epi64x(0x0C0D_0E0F_0809_0A0B, 0x0405_0607_0001_0203);
            let (mut la, mut lb) = (load(sa), load(sb));
            for (block_a, block_b) in a.chunks_exact(BLOCK).zip(b.chunks_exact(BLOCK)) {
                let (was_a, was_b) = (la, lb);
                let pa: *const __m128i = block_a.as_ptr().cast();
                let pb: *const __m128i = block_b.as_ptr().cast();
                let mut la_w0 = _mm_shuffle_epi8(_mm_loadu_si128(pa.add(0)), mask);
                let mut la_w1 = _mm_shuffle_epi8(_mm_loadu_si128(pa.add(1)), mask);
                let mut la_w2 = _mm_shuffle_epi8(_mm_loadu_si128(pa.add(2)), mask);
                let mut la_w3 = _mm_shuffle_epi8(_mm_loadu_si128(pa.add(3)), mask);
                let mut lb_w0 = _mm_shuffle_epi8(_mm_loadu_si128(pb.add(0)), mask);
                let mut lb_w1 = _mm_shuffle_epi8(_mm_loadu_si128(pb.add(1)), mask);
                let mut lb_w2 = _mm_shuffle_epi8(_mm_loadu_si128(pb.add(2)), mask);
                let mut lb_w3 = _mm_shuffle_epi8(_mm_loadu_si128(pb.add(3)), mask);
                rounds4!(la, la_w0, 0);
                rounds4!(lb, lb_w0, 0);
                rounds4!(la, la_w1, 1);
                rounds4!(lb, lb_w1, 1);
                rounds4!(la, la_w2, 2);
                rounds4!(lb, lb_w2, 2);
                rounds4!(la, la_w3, 3);
                rounds4!(lb, lb_w3, 3);
                la_w0 = schedule!(la_w0, la_w1, la_w2, la_w3);
                rounds4!(la, la_w0, 4);
                lb_w0 = schedule!(lb_w0, lb_w1, lb_w2, lb_w3);
                rounds4!(lb, lb_w0, 4);
                la_w1 = schedule!(la_w1, la_w2, la_w3, la_w0);
                rounds4!(la, la_w1, 5);
                lb_w1 = schedule!(lb_w1, lb_w2, lb_w3, lb_w0);
                rounds4!(lb, lb_w1, 5);
                la_w2 = schedule!(la_w2, la_w3, la_w0, la_w1);
                rounds4!(la, la_w2, 6);
                lb_w2 = schedule!(lb_w2, lb_w3, lb_w0, lb_w1);
                rounds4!(lb, lb_w2, 6);
                la_w3 = schedule!(la_w3, la_w0, la_w1, la_w2);
                rounds4!(la, la_w3, 7);
                lb_w3 = schedule!(lb_w3, lb_w0, lb_w1, lb_w2);
                rounds4!(lb, lb_w3, 7);
                la_w0 = schedule!(la_w0, la_w1, la_w2, la_w3);
                rounds4!(la, la_w0, 8);
                lb_w0 = schedule!(lb_w0, lb_w1, lb_w2, lb_w3);
                rounds4!(lb, lb_w0, 8);
                la_w1 = schedule!(la_w1, la_w2, la_w3, la_w0);
                rounds4!(la, la_w1, 9);
                lb_w1 = schedule!(lb_w1, lb_w2, lb_w3, lb_w0);
                rounds4!(lb, lb_w1, 9);
                la_w2 = schedule!(la_w2, la_w3, la_w0, la_w1);
                rounds4!(la, la_w2, 10);
                lb_w2 = schedule!(lb_w2, lb_w3, lb_w0, lb_w1);
                rounds4!(lb, lb_w2, 10);
                la_w3 = schedule!(la_w3, la_w0, la_w1, la_w2);
                rounds4!(la, la_w3, 11);
                lb_w3 = schedule!(lb_w3, lb_w0, lb_w1, lb_w2);
                rounds4!(lb, lb_w3, 11);
                la_w0 = schedule!(la_w0, la_w1, la_w2, la_w3);
                rounds4!(la, la_w0, 12);
                lb_w0 = schedule!(lb_w0, lb_w1, lb_w2, lb_w3);
                rounds4!(lb, lb_w0, 12);
                la_w1 = schedule!(la_w1, la_w2, la_w3, la_w0);
                rounds4!(la, la_w1, 13);
                lb_w1 = schedule!(lb_w1, lb_w2, lb_w3, lb_w0);
                rounds4!(lb, lb_w1, 13);
                la_w2 = schedule!(la_w2, la_w3, la_w0, la_w1);
                rounds4!(la, la_w2, 14);
                lb_w2 = schedule!(lb_w2, lb_w3, lb_w0, lb_w1);
                rounds4!(lb, lb_w2, 14);
                la_w3 = schedule!(la_w3, la_w0, la_w1, la_w2);
                rounds4!(la, la_w3, 15);
                lb_w3 = schedule!(lb_w3, lb_w0, lb_w1, lb_w2);
                rounds4!(lb, lb_w3, 15);
                la.abef = _mm_add_epi32(la.abef, was_a.abef);
                la.cdgh = _mm_add_epi32(la.cdgh, was_a.cdgh);
                lb.abef = _mm_add_epi32(lb.abef, was_b.abef);
                lb.cdgh = _mm_add_epi32(lb.cdgh, was_b.cdgh);
            }
            store(la, sa);
            store(lb, sb);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod lanes {
    /// No interleaved lanes here: the caller hashes each message alone.
    pub(super) fn two(_: &mut [u32; 8], _: &[u8], _: &mut [u32; 8], _: &[u8]) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::Digest;

    fn sha2_of(data: &[u8]) -> [u8; 32] {
        sha2::Sha256::digest(data).into()
    }

    #[test]
    fn known_answers() {
        assert_eq!(
            crate::chain::hex(&Sha256::new().finish()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut h = Sha256::new();
        h.update(b"abc");
        assert_eq!(
            crate::chain::hex(&h.finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_length_around_the_padding_boundaries_is_sha2s() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 + 7) as u8).collect();
        for n in 0..data.len() {
            let mut h = Sha256::new();
            h.update(&data[..n]);
            assert_eq!(h.finish(), sha2_of(&data[..n]), "length {n}");
        }
    }

    #[test]
    fn two_long_messages_in_step_are_each_sha2s() {
        let a: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let b: Vec<u8> = (0..250_001u32).map(|i| (i * 13 + 1) as u8).collect();
        let (mut ha, mut hb) = (Sha256::new(), Sha256::new());
        update_both(&mut ha, &a, &mut hb, &b);
        assert_eq!(ha.finish(), sha2_of(&a));
        assert_eq!(hb.finish(), sha2_of(&b));
    }

    proptest! {
        #[test]
        fn any_pieces_fed_in_any_mix_give_sha2s_digests(
            pieces in prop::collection::vec(
                (prop::collection::vec(any::<u8>(), 0..300), prop::collection::vec(any::<u8>(), 0..300), any::<bool>()),
                0..12,
            ),
        ) {
            let (mut ha, mut hb) = (Sha256::new(), Sha256::new());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (pa, pb, both) in &pieces {
                if *both {
                    update_both(&mut ha, pa, &mut hb, pb);
                } else {
                    ha.update(pa);
                    hb.update(pb);
                }
                a.extend_from_slice(pa);
                b.extend_from_slice(pb);
            }
            prop_assert_eq!(ha.finish(), sha2_of(&a));
            prop_assert_eq!(hb.finish(), sha2_of(&b));
        }
    }
}
