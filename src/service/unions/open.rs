//! Unions that end in the open hour (`since`, today), each with the open hour's version
//! it was built from, so pollers asking for the same range between two ingests share one
//! build; and beside each, what its rendering left for rendering the next version (the
//! coding of a gzip JSON or hex body, see `render::gz`), which the next renderer takes.
//! Bounded in bytes (a quarter of `cache_bytes`, the codings counted) and in entries;
//! the least recently used goes first, and unions of an earlier open hour go as soon as
//! the hour turns (nobody can ask for them again).

use crate::render::{Encodings, HexCoding, Rendered, Repr};
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
    /// What rendering `value` left for the next version's renderer, until taken.
    coding: Option<HexCoding>,
    /// Bytes counted for this entry: the rendering's and its coding's as kept (still
    /// counted once the coding is taken, so the accounting never changes).
    size: usize,
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

    /// What the rendering of `key` kept now (whatever it shows) left for rendering the
    /// next version, taken: once (not counted as a use).
    pub fn take_coding(&mut self, key: &OpenKey) -> Option<HexCoding> {
        self.entries.get_mut(key)?.coding.take()
    }

    /// Keeps `value` showing `stamp`, with what it left for the next version.
    pub fn insert(
        &mut self,
        key: OpenKey,
        stamp: OpenStamp,
        value: Arc<Rendered>,
        coding: Option<HexCoding>,
    ) {
        let size = value.size() + coding.as_ref().map_or(0, HexCoding::size);
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
                coding,
                size,
                last_used: self.tick,
            },
        );
    }

    fn remove(&mut self, key: &OpenKey) {
        if let Some(gone) = self.entries.remove(key) {
            self.bytes -= gone.size;
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
    use crate::render::{render, render_next, Effort};
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
        unions.insert(key(1, 5), (5, 1), one.clone(), None);
        unions.insert(key(2, 5), (5, 1), one.clone(), None);
        assert!(unions.get(&key(1, 5), (5, 1)).is_some());
        unions.insert(key(3, 5), (5, 1), one.clone(), None);
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
        unions.insert(key(1, 5), (5, 3), rendered(10), None);
        assert!(unions.get(&key(1, 5), (5, 4)).is_none());
        assert!(unions.get(&key(1, 5), (5, 3)).is_some());
        unions.insert(key(2, 6), (6, 1), rendered(10), None);
        assert_eq!(unions.usage().0, 1, "the earlier hour's unions went");
    }

    #[test]
    fn each_encoding_of_a_union_is_kept_on_its_own() {
        let mut unions = OpenUnions::new(1 << 20);
        let gzip = ((1, 5, Repr::Bin), Encodings::Gzip);
        unions.insert(gzip, (5, 3), rendered(10), None);
        assert!(unions
            .get(&((1, 5, Repr::Bin), Encodings::Identity), (5, 3))
            .is_none());
        assert!(unions.get(&gzip, (5, 3)).is_some());
    }

    #[test]
    fn what_a_version_left_for_the_next_is_taken_once_and_stays_counted() {
        let mut f = Filter::with_capacity(20_000, 0.01).unwrap();
        for i in 0..20_000 {
            f.insert(&format!("id-{i}"));
        }
        let meta = Meta::range("a".into(), "b".into(), false, 20_000);
        let gzip = ((1, 5, Repr::Hex), Encodings::Gzip);
        let (first, coding) =
            render_next(&meta, &f, Repr::Hex, Effort::Fast, Encodings::Gzip, None);
        let coding = coding.expect("a gzip hex body alone leaves its coding");
        let (first, kept) = (Arc::new(first), coding.size());
        assert!(kept > 0);
        let mut unions = OpenUnions::new(1 << 24);
        unions.insert(gzip, (5, 3), first.clone(), Some(coding));
        assert_eq!(unions.usage().1, first.size() + kept, "its coding counted");
        assert!(unions.take_coding(&gzip).is_some());
        assert!(unions.take_coding(&gzip).is_none(), "taken once");
        assert_eq!(
            unions.usage().1,
            first.size() + kept,
            "still counted once taken"
        );
        unions.insert(gzip, (5, 4), rendered(10), None);
        assert_eq!(unions.usage().1, rendered(10).size(), "gone with its entry");
    }
}
