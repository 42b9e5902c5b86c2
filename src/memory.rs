//! Handing memory the process no longer uses back to the OS, and what it holds.
//!
//! The binary allocates with mimalloc, which returns freed pages to the OS only after a
//! delay (ten seconds for its arenas, where large blocks live) and only when the thread
//! that freed them allocates again. After a large transient, such as the batch of keys
//! an open hour is loaded from at start, the RSS would then stay at the transient's peak
//! on a quiet server. SQLite allocates with the C library's `malloc` (its page caches and
//! the buffers blobs are read into), which keeps freed memory in its arenas likewise.
//!
//! The server also runs without transparent huge pages ([`forgo_huge_pages`]): what it
//! hands back would otherwise come back on its own within a minute.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys read at once past which [`release_freed`] is worth its cost (a walk of the heap).
pub const LARGE_BATCH: usize = 1 << 16;

/// How long an idle blocking-pool thread waits for work before it exits (tokio's default
/// is ten seconds): each holds the blocks other threads free for it until it allocates
/// again or exits, so the server keeps them short-lived (`main`).
pub const IDLE_THREAD_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// When to release a second time after a large transient: a block freed by a thread
/// other than the one that allocated it waits for its owner, and an idle blocking-pool
/// thread (where the store reads) exits, handing its pages back, after
/// [`IDLE_THREAD_KEEP_ALIVE`]. Measured at 1M keys loaded: the second pass returns 5 MiB
/// the first cannot.
pub const SETTLE: Duration = Duration::from_secs(IDLE_THREAD_KEEP_ALIVE.as_secs() + 1);

/// Returns freed memory to the OS now: mimalloc's (the calling thread's heap, abandoned
/// pages and every arena's pending purges) and, with glibc, the C library's arenas.
/// Harmless when another allocator is in use: mimalloc's own heap is then empty.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any
    // time; `force` only makes it return memory eagerly.
    unsafe { libmimalloc_sys::mi_collect(true) }
    // SAFETY: `malloc_trim` takes no pointers and is thread-safe (it locks each arena).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Keeps both allocators from holding what the server frees, so that what its memory
/// budget does not hold is handed back at once (`benches/harness/memory.sh`, in
/// docs/BENCHMARKS.md, "One memory budget"):
/// - mimalloc purges a freed page at once (its default waits 10 ms, and then only
///   when the thread that freed it allocates again: a blocking-pool thread that built a
///   union and went idle kept what the build freed);
/// - glibc's allocator (SQLite's: its page caches and the buffers blobs are read into)
///   maps blocks of more than [`OWN_PAGES`] on their own and unmaps them when freed (it
///   would raise that threshold to the largest block freed, up to 32 MiB, and keep such
///   blocks in its arenas), in two arenas rather than eight per core; the server's own
///   blocks that large go there too ([`Allocator`]).
///
/// Called first thing in `main`, before any thread allocates. A block one thread frees
/// for another still waits for its owner to allocate again or exit: `main` keeps the
/// blocking pool small and its idle threads short-lived for that.
pub fn hold_no_freed_memory() {
    /// `mi_option_purge_delay` in mimalloc 2's `mi_option_t` (not exported by the
    /// binding).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: `mi_option_set` takes no pointers; options may be set at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointers and runs before other threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, (OWN_PAGES + 1) as libc::c_int);
        libc::mallopt(libc::M_MMAP_MAX, OWN_PAGES_MAX);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Freed bytes the C library's allocator keeps in its arenas for reuse: glibc's
/// `mallinfo2().fordblks`, chunks among live ones (SQLite's, mostly) that
/// [`release_freed`] cannot hand back; 0 where the C library is not glibc. An upper bound
/// of what they hold resident: pages a trim handed back from inside a large free chunk
/// still count. mimalloc keeps next to nothing freed ([`hold_no_freed_memory`]).
pub fn c_heap_free() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallinfo2` takes no pointers and is thread-safe (it locks each arena
        // in turn); it returns its figures by value.
        let info = unsafe { libc::mallinfo2() };
        info.fordblks as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        0
    }
}

/// What the process holds in memory now (`/proc/self/status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// Its resident set (`VmRSS`), file-backed pages (the binary's code) included.
    pub bytes: u64,
    /// Its anonymous resident pages (`RssAnon`): its heaps and stacks.
    pub anonymous: u64,
}

/// The process's resident memory now; `None` where `/proc/self/status` does not say.
pub fn resident() -> Option<Resident> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some(Resident {
        bytes: field("VmRSS:")?,
        anonymous: field("RssAnon:")?,
    })
}

/// Turns transparent huge pages off for this process (Linux; elsewhere a no-op).
/// Returns whether they are off.
///
/// mimalloc asks for huge pages on its arena (`madvise(MADV_HUGEPAGE)`). Pages it hands
/// back inside a huge page's 2 MiB then do not stay handed back: the kernel's
/// `khugepaged` collapses any such range with a single page in use back into a whole
/// huge page (its default `max_ptes_none` is 511 of 512). Measured with an open hour of
/// 1M keys: RSS fell to 39.8 MiB at the release after the load, then climbed back to
/// 44.9 MiB within 45 s; with huge pages off it stays at 27 MiB (docs/BENCHMARKS.md,
/// "Open hour memory"). What it could cost is the huge pages' TLB reach for random
/// access to large filters; `union_of` over 9.6M keys measured the same without them
/// (236–240 ms against 242 ms, interleaved, same docs section).
pub fn forgo_huge_pages() -> bool {
    #[cfg(target_os = "linux")]
    {
        let (on, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
        // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes no pointers; it sets a
        // flag of the process's memory map, which the kernel checks at each fault. The
        // variadic arguments are passed as the `unsigned long` the kernel reads.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, on, unused, unused, unused) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Releases what a large transient left freed (the pieces of keys a load read from the
/// store, the working memory of builds once none is running): at once on the blocking
/// pool, where the thread that allocated those pieces most likely runs (the pool hands
/// new work to the thread that just went idle, and a block freed by another thread is
/// returned only by its owner), at most once a second; then again once every
/// thread has settled ([`SETTLE`]). Does nothing outside a tokio runtime.
pub fn release_after_transient() {
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    let due = {
        let mut last = crate::sync::lock(&RELEASED_AT);
        let due = last.is_none_or(|at| at.elapsed() >= RELEASE_EVERY);
        if due {
            *last = Some(Instant::now());
        }
        due
    };
    if due {
        tokio::task::spawn_blocking(release_freed);
    }
    // At most one settled release pending: large pages may come every refresh in
    // cluster mode, and one pass every SETTLE is enough to keep up with them.
    if SETTLING.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async {
        tokio::time::sleep(SETTLE).await;
        SETTLING.store(false, Ordering::Release);
        release_freed();
    });
}

/// At most one immediate release in this long: a release walks both allocators' free
/// lists (well under a millisecond at the sizes the budget allows), and under many
/// builds a second would find little the first left.
const RELEASE_EVERY: Duration = Duration::from_secs(1);

/// When the last immediate release was asked.
static RELEASED_AT: Mutex<Option<Instant>> = Mutex::new(None);

/// Whether a settled release is pending.
static SETTLING: AtomicBool = AtomicBool::new(false);

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[cfg(target_env = "gnu")]
    #[test]
    fn what_the_c_heap_keeps_freed_is_counted() {
        // Every other block freed: the freed ones cannot merge with their neighbours, so
        // the arena keeps them for reuse rather than handing them back. The figure is the
        // whole process's: a trim by another test's thread in between can hide the
        // growth, so a few tries, of which one must show it.
        let mut seen = Vec::new();
        for _ in 0..10 {
            let blocks: Vec<*mut libc::c_void> = (0..1000)
                // SAFETY: `malloc` of a small size; every block is freed below.
                .map(|_| unsafe { libc::malloc(1000) })
                .collect();
            assert!(blocks.iter().all(|b| !b.is_null()));
            let before = c_heap_free();
            for block in blocks.iter().step_by(2) {
                // SAFETY: each block came from `malloc` above and is freed once.
                unsafe { libc::free(*block) }
            }
            let after = c_heap_free();
            for block in blocks.iter().skip(1).step_by(2) {
                // SAFETY: the other half, each freed once.
                unsafe { libc::free(*block) }
            }
            if after >= before + 400_000 {
                return;
            }
            seen.push((before, after));
        }
        panic!("500 freed blocks of 1,000 bytes never showed: {seen:?}");
    }

    #[test]
    fn huge_pages_are_off_for_the_process_once_forgone() {
        assert!(forgo_huge_pages());
        let unused: libc::c_ulong = 0;
        // SAFETY: `prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0)` takes no pointers and only
        // reads the flag set above.
        let flag = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, unused, unused, unused, unused) };
        assert_eq!(flag, 1);
    }
}

/// Blocks of more than this many bytes are mapped on their own, and unmapped when freed
/// ([`Allocator`]). Under `benches/harness/memory.sh`'s quick run at `cache_bytes`
/// 32 MiB (docs/BENCHMARKS.md "One memory budget"), the peak RSS fell as the threshold
/// did: 56.2 MiB from 64 KiB, 51.5 from 32, 47.7 from 16, 46.7 from 8 KiB, 47.0 above
/// it (one run each, the same binary). 8 KiB itself is a connection's two buffers
/// (hyper's first read buffer and its write buffer): mapping those costs four system
/// calls per connection, so they stay mimalloc's.
pub const OWN_PAGES: usize = 8 << 10;

/// At most this many blocks mapped on their own at once (glibc's `M_MMAP_MAX`); past it,
/// glibc serves large blocks from its arenas. Each mapping is one of the kernel's
/// memory areas, of which a process has 65,530 by default (`vm.max_map_count`), and
/// mimalloc needs some too: a budget of 512 MiB filled with blocks just over
/// [`OWN_PAGES`] would otherwise ask for 64,000.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const OWN_PAGES_MAX: libc::c_int = 32_768;

/// The server's allocator: mimalloc for blocks up to [`OWN_PAGES`] (a request's many
/// small ones), the C library's `malloc` for larger ones, which it maps on their own and
/// unmaps when freed ([`hold_no_freed_memory`]; `realloc` moves them with `mremap`).
///
/// Why: mimalloc serves every block under 512 KiB from pages it shares between blocks
/// of a size class (up to 4 MiB each), and hands a page back only once all of its blocks
/// are freed. The one cache holds renderings, ribbons and filters of tens to hundreds of
/// KiB, evicted in any order while new ones are made, so its pages stay resident for
/// one live block among dead ones: under `benches/harness/memory.sh` (cache_bytes
/// 32 MiB) the RSS climbed through the mix while what the budget held stayed level, and
/// 5 s after it stayed 20 MiB over the budget's bytes and the empty server
/// (docs/BENCHMARKS.md, "One memory budget"). A block with pages of its own goes back
/// whole when freed.
///
/// Elsewhere than Linux with glibc (whose `malloc` the threshold is set on), every block
/// goes to mimalloc.
pub struct Allocator;

/// Whether a block of `layout` is the C library's (`malloc` aligns to 16 bytes).
#[inline]
fn own_pages(layout: &Layout) -> bool {
    cfg!(all(target_os = "linux", target_env = "gnu"))
        && layout.size() > OWN_PAGES
        && layout.align() <= 16
}

// SAFETY: each block is freed and resized by the allocator that made it: which one is a
// function of its layout's size and alignment, which the caller passes unchanged to
// `dealloc` and `realloc` (GlobalAlloc's contract); a resize across the threshold moves
// the block from one to the other.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if own_pages(&layout) {
            // SAFETY: a plain `malloc` of a nonzero size.
            unsafe { libc::malloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if own_pages(&layout) {
            // SAFETY: a plain `calloc` of a nonzero size.
            unsafe { libc::calloc(1, layout.size()).cast() }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if own_pages(&layout) {
            // SAFETY: `ptr` came from `malloc` (same layout, so same choice).
            unsafe { libc::free(ptr.cast()) }
        } else {
            // SAFETY: `ptr` came from mimalloc with this layout.
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc::realloc's caller guarantees the new size, rounded up to
        // the alignment, does not overflow.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (own_pages(&layout), own_pages(&new)) {
            // SAFETY: `ptr` came from `malloc`; the new size is nonzero.
            (true, true) => unsafe { libc::realloc(ptr.cast(), new_size).cast() },
            // SAFETY: `ptr` came from mimalloc with `layout`.
            (false, false) => unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) },
            // Across the threshold: a new block from the other allocator.
            _ => {
                // SAFETY: `new` is a valid nonzero layout (the caller's guarantee).
                let moved = unsafe { self.alloc(new) };
                if !moved.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and are
                    // distinct; `ptr` is freed by the allocator that made it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                moved
            }
        }
    }
}

/// The lib's tests allocate through [`counting::Counting`]: what a thread holds, counted
/// per thread, so a test measures what its own code allocates while others run.
#[cfg(test)]
pub(crate) mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<isize> = const { Cell::new(0) };
    }

    /// The system allocator, counting what each thread holds.
    pub struct Counting;

    #[global_allocator]
    static COUNTING: Counting = Counting;

    // SAFETY: every call is the system allocator's, beside a per-thread count that
    // allocates nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count(layout.size().cast_signed());
            System.alloc(layout)
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count(layout.size().cast_signed());
            System.alloc_zeroed(layout)
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            count(-layout.size().cast_signed());
            System.dealloc(ptr, layout);
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count(new_size.cast_signed() - layout.size().cast_signed());
            System.realloc(ptr, layout, new_size)
        }
    }

    fn count(bytes: isize) {
        // Gone at thread exit: nothing to count into then.
        let _ = HELD.try_with(|held| held.set(held.get() + bytes));
    }

    /// What this thread holds now, of what it allocated through the global allocator.
    pub(crate) fn held() -> isize {
        HELD.with(Cell::get)
    }
}
