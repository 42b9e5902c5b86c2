//! A cache prefetch hint for the filter build: the one `unsafe` block of the filter math.
#![allow(unsafe_code)]

/// Asks the CPU to bring the cache line of bit `pos` in; a no-op off x86-64.
#[inline(always)]
pub(super) fn prefetch(words: &[u64], pos: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        let ptr = words[(pos >> 6) as usize..].as_ptr();
        // SAFETY: a prefetch reads nothing architecturally and never faults; the
        // pointer is in bounds anyway (the slice index above is checked).
        unsafe {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(ptr.cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (words, pos);
}
