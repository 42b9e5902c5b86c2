//! What each derived body of a closed range was when first served: the SHA-256 of its
//! bytes, recorded once (the first record of a range and form stays, whichever node
//! makes it) and pruned with the range's first hour.
//!
//! A derived body (an exact body, a ribbon at some precision, a day's union) is built
//! again whenever it is not kept: after a restart, an eviction, on another node. The
//! record is what makes it immutable for real: a rebuild whose bytes differ (the keys
//! it was built from were damaged since, or a builder changed) is refused as corrupt
//! instead of served under the same URL. See docs/PROTOCOL.md, "What damage to the store
//! gets".

use crate::chain::Hash;
use crate::hour::Hour;

/// The name a form is recorded under: its kind and the parameters that pick its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormName {
    /// An hour's exact body (PROTOCOL section 14).
    Exact,
    /// A version 1 ribbon body of `r` bits a key (section 12).
    Ribbon { r: u32 },
    /// A version 2 ribbon body of a grade (its code).
    Ribbon2 { grade: u32 },
    /// An hour's paged body of a version 2 grade (its code), unsigned: its pages'
    /// signatures are made from these bytes and the key, the same on every node.
    Pages { grade: u32 },
    /// A union's Bloom filter bytes (a day's `.bin`).
    Bloom,
    /// A sealed hour's keys as the store returns them, recorded once they were vouched
    /// for by its sealed filter (`service::vouch`): a later read of the same keys is
    /// checked against the digest instead of rebuilding the filter again.
    Keys,
}

impl std::fmt::Display for FormName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormName::Exact => f.write_str("exact"),
            FormName::Ribbon { r } => write!(f, "ribbon;r={r}"),
            FormName::Ribbon2 { grade } => write!(f, "ribbon2;grade={grade}"),
            FormName::Pages { grade } => write!(f, "pages;grade={grade}"),
            FormName::Bloom => f.write_str("bloom"),
            FormName::Keys => f.write_str("keys"),
        }
    }
}

/// A derived body's record: the range it covers, its form and its bytes' SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormRecord {
    pub from: Hour,
    pub to: Hour,
    pub form: FormName,
    pub digest: Hash,
}

impl FormRecord {
    /// The digest as read back: 32 bytes.
    ///
    /// # Errors
    /// [`super::StoreError::Corrupt`] naming the range.
    pub fn digest_of_row(&self, stored: &[u8]) -> super::Result<Hash> {
        Hash::try_from(stored).map_err(|_| {
            super::StoreError::Corrupt(format!(
                "the record of the {} form of {}..{} is not a 32-byte digest",
                self.form, self.from, self.to
            ))
        })
    }
}
