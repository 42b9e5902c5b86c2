//! The SDK's side of open-hour deltas (RFC 9842): the last version of each open
//! resource the server offered as a dictionary (`Use-As-Dictionary`), by path.
//!
//! A request of that path then sends `Available-Dictionary` and `Accept-Encoding: dcz,
//! gzip`; a `dcz` answer is decoded with the kept bytes. A complete filter drops its
//! path's dictionary: it never changes again.

use crate::dcz;
use base64::Engine as _;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Open resources followed at once; past this the oldest goes.
const PATHS: usize = 16;

/// A version kept as a dictionary: its identity bytes and their SHA-256.
#[derive(Debug)]
pub(crate) struct Dictionary {
    pub sha256: [u8; 32],
    pub bytes: Vec<u8>,
}

impl Dictionary {
    pub(crate) fn new(bytes: Vec<u8>) -> Dictionary {
        Dictionary {
            sha256: dcz::sha256(&bytes),
            bytes,
        }
    }

    /// The `Available-Dictionary` value naming it: `:BASE64(SHA-256):`.
    pub(crate) fn offer(&self) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(self.sha256);
        format!(":{b64}:")
    }
}

/// Dictionaries by path, and the paths in insertion order (the oldest goes first).
type ByPath = (HashMap<String, Arc<Dictionary>>, VecDeque<String>);

#[derive(Debug, Default)]
pub(crate) struct Dictionaries {
    inner: Mutex<ByPath>,
}

impl Dictionaries {
    fn lock(&self) -> std::sync::MutexGuard<'_, ByPath> {
        crate::sync::lock(&self.inner)
    }

    pub(crate) fn get(&self, path: &str) -> Option<Arc<Dictionary>> {
        self.lock().0.get(path).cloned()
    }

    pub(crate) fn put(&self, path: &str, dictionary: Dictionary) {
        let mut inner = self.lock();
        let (map, order) = &mut *inner;
        if map.insert(path.to_owned(), Arc::new(dictionary)).is_none() {
            order.push_back(path.to_owned());
        }
        while map.len() > PATHS {
            let Some(oldest) = order.pop_front() else {
                break;
            };
            map.remove(&oldest);
        }
    }

    pub(crate) fn remove(&self, path: &str) {
        let mut inner = self.lock();
        let (map, order) = &mut *inner;
        if map.remove(path).is_some() {
            order.retain(|p| p != path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_name_the_bytes_and_the_oldest_path_goes_first() {
        let d = Dictionary::new(b"abc".to_vec());
        // SHA-256("abc"), base64.
        assert_eq!(d.offer(), ":ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:");
        let all = Dictionaries::default();
        for i in 0..=PATHS {
            all.put(&format!("/{i}"), Dictionary::new(vec![i as u8]));
        }
        assert!(all.get("/0").is_none());
        assert_eq!(all.get("/1").unwrap().bytes, [1]);
        all.remove("/1");
        assert!(all.get("/1").is_none());
    }
}
