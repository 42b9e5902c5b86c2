//! Handing memory the process no longer uses back to the OS.
//!
//! The binary allocates with mimalloc, which returns freed pages to the OS only after a
//! delay (ten seconds for its arenas, where large blocks live) and only when the thread
//! that freed them allocates again. After a large transient, such as the batch of keys
//! an open hour is loaded from at start, the RSS would then stay at the transient's peak
//! on a quiet server.

// mimalloc's native library is linked through this crate.
extern crate mimalloc;

extern "C" {
    fn mi_collect(force: bool);
}

/// Keys read at once past which [`release_freed`] is worth its cost (a walk of the heap).
pub const LARGE_BATCH: usize = 1 << 16;

/// Returns freed memory to the OS now. Harmless when another allocator is in use:
/// mimalloc's own heap is then empty.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any
    // time; `force` only makes it return memory eagerly.
    unsafe { mi_collect(true) }
}
