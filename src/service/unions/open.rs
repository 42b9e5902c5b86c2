//! Unions that end in the open hour (`since`, today), each with the open hour's version
//! it was built from, so pollers asking for the same range between two ingests share one
//! build. Bounded in bytes (a quarter of `cache_bytes`) and in entries; the least
//! recently used goes first, and unions of an earlier open hour go as soon as the hour
//! turns (nobody can ask for them again).

use crate::render::{Encodings, Rendered, Repr};
use std::collections::HashMap;
use std::sync::Arc;

/// `(first hour index, last hour index, representation)`.
pub(in crate::service) type UnionKey = (i64, i64, Repr);
/// An open union's rendering: its union and the encoding it holds (each version of an
/// open union is rendered in the encodings its pollers ask for, each on its own).
pub(in crate::service) type OpenKey = (UnionKey, Encodings);
/// The open hour (index) and its content version.
pub(in crate::service) type OpenStamp = (i64, u64);
/// Open unions kept at most, whatever their size.
pub(super) const OPEN_UNIONS: usize = 64;

struct Entry {
    stamp: OpenStamp,
    value: Arc<Rendered>,
    last_used: u64,
}

/// The open unions; guarded by their owner's mutex (`Unions::open`).
pub(super) struct OpenUnions {
    entries: HashMap<OpenKey, Entry>,
    bytes: usize,
    budget: usize,
    tick: u64,
}

impl OpenUnions {
    pub fn new(budget: usize) -> OpenUnions {
        OpenUnions {
            entries: HashMap::new(),
            bytes: 0,
            budget,
            tick: 0,
        }
    }

    /// The union of `key` if it shows at least `wanted` (same open hour, version not
    /// older: versions only grow).
    pub fn get(&mut self, key: &OpenKey, wanted: OpenStamp) -> Option<Arc<Rendered>> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(key)?;
        if entry.stamp.0 != wanted.0 || entry.stamp.1 < wanted.1 {
            return None;
        }
        entry.last_used = tick;
        Some(entry.value.clone())
    }

    /// The union of `key` kept now, whatever it shows (not counted as a use).
    pub fn latest(&self, key: &OpenKey) -> Option<Arc<Rendered>> {
        self.entries.get(key).map(|entry| entry.value.clone())
    }

    pub fn insert(&mut self, key: OpenKey, stamp: OpenStamp, value: Arc<Rendered>) {
        let size = value.size();
        if size > self.budget {
            return;
        }
        // Unions from earlier open hours can never be asked for again.
        let stale: Vec<OpenKey> = self
            .entries
            .iter()
            .filter(|(_, e)| e.stamp.0 != stamp.0)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            self.remove(&k);
        }
        self.remove(&key);
        while !self.entries.is_empty()
            && (self.bytes + size > self.budget || self.entries.len() >= OPEN_UNIONS)
        {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.remove(&k);
            }
        }
        self.tick += 1;
        self.bytes += size;
        self.entries.insert(
            key,
            Entry {
                stamp,
                value,
                last_used: self.tick,
            },
        );
    }

    fn remove(&mut self, key: &OpenKey) {
        if let Some(gone) = self.entries.remove(key) {
            self.bytes -= gone.value.size();
        }
    }

    /// `(entries, bytes)` held now.
    pub fn usage(&self) -> (usize, usize) {
        (self.entries.len(), self.bytes)
    }

    pub fn budget(&self) -> usize {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;
    use crate::render::{render, Effort};
    use crate::wire::Meta;

    fn key(from: i64, to: i64) -> OpenKey {
        ((from, to, Repr::Bin), Encodings::Both)
    }

    fn rendered(n: u64) -> Arc<Rendered> {
        let f = Filter::with_capacity(n, 0.01).unwrap();
        Arc::new(render(
            &Meta::hour("h".into(), false, 0),
            &f,
            Repr::Bin,
            Effort::Fast,
        ))
    }

    #[test]
    fn bytes_stay_within_the_budget_and_the_least_recently_used_goes_first() {
        let one = rendered(10_000);
        let mut unions = OpenUnions::new(one.size() * 2);
        unions.insert(key(1, 5), (5, 1), one.clone());
        unions.insert(key(2, 5), (5, 1), one.clone());
        assert!(unions.get(&key(1, 5), (5, 1)).is_some());
        unions.insert(key(3, 5), (5, 1), one.clone());
        assert!(
            unions.get(&key(2, 5), (5, 1)).is_none(),
            "2 was least recently used"
        );
        assert!(unions.get(&key(1, 5), (5, 1)).is_some());
        assert!(unions.usage().1 <= unions.budget());
    }

    #[test]
    fn a_union_older_than_wanted_or_of_another_hour_is_not_served() {
        let mut unions = OpenUnions::new(1 << 20);
        unions.insert(key(1, 5), (5, 3), rendered(10));
        assert!(unions.get(&key(1, 5), (5, 4)).is_none());
        assert!(unions.get(&key(1, 5), (5, 3)).is_some());
        unions.insert(key(2, 6), (6, 1), rendered(10));
        assert_eq!(unions.usage().0, 1, "the earlier hour's unions went");
    }

    #[test]
    fn each_encoding_of_a_union_is_kept_on_its_own() {
        let mut unions = OpenUnions::new(1 << 20);
        let gzip = ((1, 5, Repr::Bin), Encodings::Gzip);
        unions.insert(gzip, (5, 3), rendered(10));
        assert!(unions
            .get(&((1, 5, Repr::Bin), Encodings::Identity), (5, 3))
            .is_none());
        assert!(unions.get(&gzip, (5, 3)).is_some());
    }
}
