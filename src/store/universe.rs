//! The publisher's universe of IDs (as keys), from which exact bodies are built
//! (docs/PROTOCOL.md section 14): what the store says of it, and how its rows are
//! checked when read back.
//!
//! Each universe row carries a checksum over its key and the hour it joined (see
//! [`universe_checksum`]), so a flipped bit or a moved `added` hour fails on its own.
//! Rows deleted (or moved out of range) pass that check; they are caught by the
//! *tally*: the store keeps, per hour keys joined in, their count and the wrapping sum
//! of their values, written in the transaction that adds them, and records the
//! universe's tally as it stood at each seal with the sealed hour. The keys read back
//! for an hour must add up to what its seal recorded.

use super::rows::checksum;
use super::{Result, StoreError};
use crate::bloom::Key;
use crate::hour::Hour;

/// The universe as stored: its distinct keys and the first hour it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniverseInfo {
    pub count: u64,
    /// The hour open when the universe was created: the first with an exact body.
    pub since: Hour,
}

/// What adding a batch to the universe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniverseAdded {
    /// Recorded; the universe now holds `count` distinct keys.
    Added { count: u64 },
    /// Refused whole: it would take the universe past its limit; `count` is unchanged.
    Full { count: u64 },
}

/// A set of keys summed up: how many, and the wrapping sum of their 64-bit values.
/// Keys are SHA-1 bits, so any key deleted, added or swapped for another changes the
/// sum but with probability 2^-64; it is order-free, so it is kept up to date as keys
/// join, one hour's row at a time, and added up over hours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub sum: u64,
}

impl Tally {
    /// The tally of `keys`.
    pub fn of<'a>(keys: impl IntoIterator<Item = &'a Key>) -> Tally {
        let mut tally = Tally::default();
        for key in keys {
            tally.add(*key);
        }
        tally
    }

    pub fn add(&mut self, key: Key) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(key.to_u64());
    }

    /// The tally of both sets (disjoint).
    pub fn plus(self, other: Tally) -> Tally {
        Tally {
            count: self.count + other.count,
            sum: self.sum.wrapping_add(other.sum),
        }
    }

    /// A tally as stored: two integers (the sum as two's complement).
    pub fn from_row(count: i64, sum: i64) -> Tally {
        Tally {
            count: count.max(0) as u64,
            sum: sum as u64,
        }
    }

    /// The sum as stored.
    pub fn stored_sum(self) -> i64 {
        self.sum as i64
    }
}

/// The checksum of a universe row: kind `u`, the hour the key joined in, then the key's
/// 8 bytes (see [`super::batch_checksum`] for the scheme).
pub fn universe_checksum(added: Hour, key: Key) -> i64 {
    checksum(b'u', added, &[&key.to_bytes()])
}

/// Verifies one universe row as read back.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the key's hour. `None` is a row written before
/// checksums existed (PostgreSQL only), accepted as is.
pub fn verify_universe_row(added: Hour, key: Key, stored: Option<i64>) -> Result<()> {
    match stored {
        Some(stored) if stored != universe_checksum(added, key) => Err(StoreError::Corrupt(
            format!("a universe row (joined in {added}) fails its checksum"),
        )),
        _ => Ok(()),
    }
}

/// Checks the keys read for the universe as it stood when `through` was sealed against
/// what the seal recorded of it.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the hour when there is no record (it was deleted) or
/// the keys do not add up to it (rows deleted, or moved to another hour).
pub fn check_universe(through: Hour, read: Tally, recorded: Option<Tally>) -> Result<()> {
    match recorded {
        Some(recorded) if recorded == read => Ok(()),
        Some(recorded) => Err(StoreError::Corrupt(format!(
            "the universe as it stood when {through} was sealed held {} keys (sum {:016x}), \
             but {} keys (sum {:016x}) are stored for it: universe rows were deleted, added \
             or moved",
            recorded.count, recorded.sum, read.count, read.sum
        ))),
        None => Err(StoreError::Corrupt(format!(
            "no record of the universe as it stood when {through} was sealed: it was deleted"
        ))),
    }
}

/// The message of a universe whose first hour is missing though it has rows.
pub fn missing_since() -> StoreError {
    StoreError::Corrupt(
        "the universe's first hour (universe_since) is missing, but universe rows or exact \
         bodies are stored: the record was deleted"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u64) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("id-{i}"))).collect()
    }

    #[test]
    fn a_tally_is_order_free_and_adds_up_over_parts() {
        let ks = keys(100);
        let whole = Tally::of(&ks);
        let mut reversed = ks.clone();
        reversed.reverse();
        assert_eq!(Tally::of(&reversed), whole);
        assert_eq!(Tally::of(&ks[..40]).plus(Tally::of(&ks[40..])), whole);
        assert_eq!(Tally::from_row(100, whole.stored_sum()), whole);
    }

    #[test]
    fn one_key_deleted_or_swapped_changes_the_tally() {
        let ks = keys(100);
        let whole = Tally::of(&ks);
        assert_ne!(Tally::of(&ks[1..]), whole);
        let mut swapped = ks.clone();
        swapped[7] = Key::of("someone else");
        let read = Tally::of(&swapped);
        assert_eq!(read.count, whole.count);
        assert!(check_universe(Hour::from_index(1), read, Some(whole)).is_err());
        assert!(check_universe(Hour::from_index(1), whole, None).is_err());
        assert!(check_universe(Hour::from_index(1), whole, Some(whole)).is_ok());
    }

    #[test]
    fn a_universe_row_moved_to_another_hour_fails_its_checksum() {
        let key = Key::of("user:1");
        let h = Hour::from_index(100);
        let sum = universe_checksum(h, key);
        assert!(verify_universe_row(h, key, Some(sum)).is_ok());
        assert!(verify_universe_row(Hour::from_index(200), key, Some(sum)).is_err());
        assert!(verify_universe_row(h, Key::of("user:2"), Some(sum)).is_err());
        assert!(verify_universe_row(h, key, None).is_ok());
    }
}
