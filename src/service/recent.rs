//! Each worker thread's closed hours served lately, in front of the one cache on the
//! read path: a poll of a closed hour then reads nothing another core writes. The one
//! cache's lookup takes its shard's lock and a clone of the rendering's `Arc`, two
//! writes to lines every core shares, which cost two cores polling one hour 4–5x the
//! lookup of one (`cargo bench --bench caches`, `hit/*/2_same`).
//!
//! A closed hour's rendering never changes, so what a thread holds is never stale; an
//! hour past retention is refused before this is looked at. Per thread at most
//! [`RECENT`] renderings within half the thread's part of the memory budget
//! (`Split::responses_per_thread`; the prepared responses have the other half); past
//! either, the thread starts over. Bytes held by every thread are counted for `/stats`.

use super::cache::CacheKey;
use crate::render::Rendered;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Renderings a thread holds at most.
const RECENT: usize = 64;

/// Bytes every thread holds now.
static HELD: AtomicU64 = AtomicU64::new(0);

/// One thread's renderings, by service (its id: tests run many in one process) and key.
#[derive(Default)]
struct Recent {
    by_key: FxHashMap<(u64, CacheKey), Arc<Rendered>>,
    bytes: usize,
}

impl Drop for Recent {
    fn drop(&mut self) {
        HELD.fetch_sub(self.bytes as u64, Ordering::Relaxed);
    }
}

thread_local! {
    static THREAD: RefCell<Recent> = RefCell::new(Recent::default());
}

/// Calls `f` with the rendering of `key` this thread holds for service `service`, if any.
pub(super) fn with<R>(
    service: u64,
    key: &CacheKey,
    f: impl FnOnce(&Arc<Rendered>) -> R,
) -> Option<R> {
    THREAD.with(|recent| recent.borrow().by_key.get(&(service, *key)).map(f))
}

/// Holds `rendered` as this thread's rendering of `key`, within `budget` bytes.
pub(super) fn keep(service: u64, key: CacheKey, rendered: &Arc<Rendered>, budget: usize) {
    let size = rendered.size();
    if size > budget {
        return;
    }
    THREAD.with(|recent| {
        let recent = &mut *recent.borrow_mut();
        if recent.by_key.len() >= RECENT || recent.bytes + size > budget {
            recent.by_key.clear();
            HELD.fetch_sub(recent.bytes as u64, Ordering::Relaxed);
            recent.bytes = 0;
        }
        if let Some(old) = recent.by_key.insert((service, key), rendered.clone()) {
            recent.bytes -= old.size();
            HELD.fetch_sub(old.size() as u64, Ordering::Relaxed);
        }
        recent.bytes += size;
        HELD.fetch_add(size as u64, Ordering::Relaxed);
    });
}

/// Bytes every thread holds now.
pub(super) fn held_bytes() -> u64 {
    HELD.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;
    use crate::render::{render, Effort, Repr};
    use crate::wire::Meta;

    fn rendered() -> Arc<Rendered> {
        let f = Filter::with_capacity(10, 0.01).unwrap();
        let meta = Meta::hour("h".into(), true, 0);
        Arc::new(render(&meta, &f, Repr::Hex, Effort::Fast))
    }

    #[test]
    fn a_thread_holds_its_renderings_by_service_within_its_budget() {
        std::thread::spawn(|| {
            let r = rendered();
            let key = (1, 1, Repr::Hex);
            keep(7, key, &r, 10 * r.size());
            assert!(with(7, &key, |got| Arc::ptr_eq(got, &r)).unwrap());
            assert!(with(8, &key, |_| ()).is_none(), "another service's");
            assert!(held_bytes() >= r.size() as u64);
            for i in 2..20 {
                keep(7, (i, i, Repr::Hex), &r, 10 * r.size());
            }
            let held = (1..20)
                .filter(|&i| with(7, &(i, i, Repr::Hex), |_| ()).is_some())
                .count();
            assert!((1..=10).contains(&held), "{held} held within the budget");
            keep(7, (99, 99, Repr::Hex), &r, r.size() - 1);
            assert!(
                with(7, &(99, 99, Repr::Hex), |_| ()).is_none(),
                "over it alone"
            );
        })
        .join()
        .unwrap();
    }
}
