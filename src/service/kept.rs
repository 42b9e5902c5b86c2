//! Everything the service keeps in memory to answer again without rebuilding, in one
//! cache within one byte budget: rendered closed hours and complete unions (and their
//! compact forms), open unions with what their rendering left for the next version,
//! built union filters, decoded filters for `/history`, and sealed hours' sorted keys.
//!
//! It is a `quick_cache` weighed in bytes: one eviction policy (what is read often and
//! lately stays; an entry read once goes before one read again) and one accounting for
//! every part, each part's bytes counted on demand for operators ([`Kept::usage`]). Of
//! one shard, so that one entry of nearly the whole budget is still kept (a sharded
//! cache refuses an entry larger than its shard's part). An entry heavier than the
//! whole budget is not kept at all. `benches/caches.rs` measures a lookup of it against
//! the hand-written map it replaced (docs/BENCHMARKS.md).
//!
//! Lock order: the cache's own lock is a leaf, held only inside its calls.

use super::cache::{CacheKey, CompactKey};
use super::unions::{BuiltUnion, OpenKey, OpenStamp};
use crate::bloom::{Filter, Key};
use crate::hour::Hour;
use crate::render::{HexCoding, Rendered};
use quick_cache::sync::Cache;
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// What an entry is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Slot {
    /// A closed hour's or a complete union's rendering.
    Rendering(CacheKey),
    /// A closed hour's or a past day's compact (ribbon) rendering.
    Compact(CompactKey),
    /// The newest rendering of a union ending in the open hour, in one encoding.
    OpenUnion(OpenKey),
    /// The newest union filter built for a range.
    Built((i64, i64)),
    /// A complete hour's filter, decoded (for `/history`).
    Decoded(Hour),
    /// A sealed hour's sorted keys (for the exact count of a union carried forward).
    SealedKeys(Hour),
    /// The exact rendering of a sealed hour or of a range of them, by first and last
    /// hour index (docs/PROTOCOL.md section 14).
    Exact((i64, i64)),
}

/// An open union's rendering, the version of the open hour it shows, and what its
/// rendering left for rendering the next version (taken once, still counted).
pub(super) struct OpenUnion {
    pub stamp: OpenStamp,
    pub rendered: Arc<Rendered>,
    pub coding: Mutex<Option<HexCoding>>,
    /// The version before, whose memory the next version is rendered over: by then no
    /// response still sends it.
    pub previous: Mutex<Option<Arc<Rendered>>>,
    bytes: u64,
}

impl OpenUnion {
    pub fn new(
        stamp: OpenStamp,
        rendered: Arc<Rendered>,
        coding: Option<HexCoding>,
        previous: Option<Arc<Rendered>>,
    ) -> Self {
        let bytes = (rendered.size()
            + coding.as_ref().map_or(0, HexCoding::size)
            + previous.as_ref().map_or(0, |p| p.size())) as u64;
        OpenUnion {
            stamp,
            rendered,
            coding: Mutex::new(coding),
            previous: Mutex::new(previous),
            bytes,
        }
    }
}

/// An entry.
#[derive(Clone)]
pub(super) enum Value {
    Rendering(Arc<Rendered>),
    OpenUnion(Arc<OpenUnion>),
    Built(Arc<BuiltUnion>),
    Decoded(Arc<Filter>),
    Keys(Arc<Vec<Key>>),
}

impl Value {
    /// The bytes it holds (never 0: the cache never evicts what weighs nothing).
    fn bytes(&self) -> u64 {
        let bytes = match self {
            Value::Rendering(r) => r.size() as u64,
            Value::OpenUnion(u) => u.bytes,
            Value::Built(b) => u64::from(b.filter.m()).div_ceil(8),
            Value::Decoded(f) => u64::from(f.m()).div_ceil(8),
            Value::Keys(k) => (k.capacity() * std::mem::size_of::<Key>()) as u64,
        };
        bytes.max(1)
    }
}

#[derive(Clone)]
struct Bytes;

impl quick_cache::Weighter<Slot, Value> for Bytes {
    fn weight(&self, _: &Slot, value: &Value) -> u64 {
        value.bytes()
    }
}

/// The bytes each part holds now, of the one budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KeptUsage {
    /// Rendered closed hours, complete unions and their compact forms.
    pub renderings: u64,
    /// Unions ending in the open hour, with the codings their next version is coded
    /// against.
    pub open_unions: u64,
    /// Union filters built, kept for their other representations and to carry forward.
    pub built_unions: u64,
    /// Complete hours' filters decoded for `/history`.
    pub history: u64,
    /// Sealed hours' sorted keys.
    pub sealed_keys: u64,
    /// Entries of every part.
    pub entries: u64,
    /// Entries of open unions (one per union, representation and encoding asked for).
    pub open_union_entries: u64,
}

/// The one cache.
pub(super) struct Kept {
    cache: Cache<Slot, Value, Bytes>,
    budget: u64,
}

impl Kept {
    pub fn new(budget: usize) -> Kept {
        let budget = (budget as u64).max(1);
        let options = quick_cache::OptionsBuilder::new()
            .shards(1)
            // A hint for its tables, not a bound.
            .estimated_items_capacity(4096)
            .weight_capacity(budget)
            .build()
            .expect("a positive budget and estimate");
        Kept {
            cache: Cache::with_options(options, Bytes, Default::default(), Default::default()),
            budget,
        }
    }

    pub fn get(&self, slot: &Slot) -> Option<Value> {
        self.cache.get(slot)
    }

    /// Keeps `value` unless it alone weighs more than the budget.
    pub fn insert(&self, slot: Slot, value: Value) {
        if value.bytes() <= self.budget {
            self.cache.insert(slot, value);
        }
    }

    pub fn remove_if(&self, slot: &Slot, f: impl FnOnce(&Value) -> bool) -> Option<Value> {
        self.cache.remove_if(slot, f).map(|(_, v)| v)
    }

    /// Keeps only the entries `f` says to.
    pub fn retain(&self, f: impl Fn(&Slot, &Value) -> bool) {
        self.cache.retain(f);
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// What each part holds now (one pass over the entries).
    pub fn usage(&self) -> KeptUsage {
        let mut usage = KeptUsage::default();
        for (_, value) in self.cache.iter() {
            let bytes = value.bytes();
            let part = match value {
                Value::Rendering(_) => &mut usage.renderings,
                Value::OpenUnion(_) => &mut usage.open_unions,
                Value::Built(_) => &mut usage.built_unions,
                Value::Decoded(_) => &mut usage.history,
                Value::Keys(_) => &mut usage.sealed_keys,
            };
            *part += bytes;
            usage.entries += 1;
            if let Value::OpenUnion(_) = value {
                usage.open_union_entries += 1;
            }
        }
        usage
    }

    /// Bytes held now, every part together.
    pub fn bytes(&self) -> u64 {
        self.cache.weight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Value {
        Value::Keys(Arc::new((0..n).map(|i| Key::of(&i.to_string())).collect()))
    }

    fn hour(i: i64) -> Hour {
        Hour::from_index(400_000 + i)
    }

    #[test]
    fn every_part_shares_one_budget_and_is_counted_apart() {
        let kept = Kept::new(100 * 8 * 3);
        kept.insert(Slot::SealedKeys(hour(1)), keys(100));
        let filter = Arc::new(Filter::with_capacity(100, 0.01).unwrap());
        kept.insert(Slot::Decoded(hour(1)), Value::Decoded(filter));
        let usage = kept.usage();
        assert_eq!(usage.sealed_keys, 800);
        // 997 bits (the rule's size for 100 IDs): 125 bytes.
        assert_eq!(usage.history, 125);
        assert_eq!(usage.entries, 2);
        assert_eq!(kept.bytes(), 925);
    }

    #[test]
    fn the_budget_holds_whatever_is_inserted_and_an_entry_over_it_is_not_kept() {
        let kept = Kept::new(100 * 8 * 3);
        for i in 0..20 {
            kept.insert(Slot::SealedKeys(hour(i)), keys(100));
            assert!(kept.bytes() <= kept.budget(), "{} after {i}", kept.bytes());
        }
        kept.insert(Slot::SealedKeys(hour(99)), keys(1000));
        assert!(kept.get(&Slot::SealedKeys(hour(99))).is_none());
        assert!(kept.bytes() <= kept.budget());
    }

    #[test]
    fn an_entry_read_again_outlives_ones_read_once() {
        let kept = Kept::new(100 * 8 * 3);
        kept.insert(Slot::SealedKeys(hour(0)), keys(100));
        for _ in 0..3 {
            assert!(kept.get(&Slot::SealedKeys(hour(0))).is_some());
        }
        for i in 1..10 {
            kept.insert(Slot::SealedKeys(hour(i)), keys(100));
        }
        assert!(kept.get(&Slot::SealedKeys(hour(0))).is_some());
    }
}
