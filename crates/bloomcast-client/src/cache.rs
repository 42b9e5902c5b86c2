//! The SDK's validator cache: what the client fetched, by path, with its ETag.
//!
//! A complete filter never changes, so it is answered from here without asking the
//! server again; an open one is revalidated with `If-None-Match` and a 304 reuses the
//! cached copy. That is what makes hourly polling nearly free.

use super::Fetched;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// A bounded map from request path to the last filter fetched there.
#[derive(Debug)]
pub(crate) struct EtagCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, Arc<Fetched>>,
    /// Insertion order, for evicting the oldest entry when full.
    order: VecDeque<String>,
}

impl EtagCache {
    pub(crate) fn new(capacity: usize) -> EtagCache {
        EtagCache {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<Arc<Fetched>> {
        self.lock().map.get(path).cloned()
    }

    pub(crate) fn put(&self, path: &str, fetched: Arc<Fetched>) {
        if self.capacity == 0 || fetched.etag.is_none() {
            return;
        }
        let mut inner = self.lock();
        if inner.map.insert(path.to_owned(), fetched).is_none() {
            inner.order.push_back(path.to_owned());
        }
        while inner.map.len() > self.capacity {
            match inner.order.pop_front() {
                Some(oldest) => {
                    inner.map.remove(&oldest);
                }
                None => break,
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;
    use crate::wire::Meta;

    fn fetched(etag: Option<&str>) -> Arc<Fetched> {
        Arc::new(Fetched {
            meta: Meta::hour("2008-09-03T13:00:00Z".into(), true, 0),
            filter: Filter::with_capacity(10, 0.01).unwrap(),
            etag: etag.map(str::to_owned),
        })
    }

    #[test]
    fn the_oldest_entry_goes_first_when_full() {
        let cache = EtagCache::new(2);
        cache.put("/a", fetched(Some("\"1\"")));
        cache.put("/b", fetched(Some("\"2\"")));
        cache.put("/a", fetched(Some("\"3\"")));
        cache.put("/c", fetched(Some("\"4\"")));
        assert!(cache.get("/a").is_none());
        assert_eq!(cache.get("/b").unwrap().etag.as_deref(), Some("\"2\""));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn responses_without_a_validator_are_not_kept() {
        let cache = EtagCache::new(4);
        cache.put("/a", fetched(None));
        assert!(cache.get("/a").is_none());
    }
}
