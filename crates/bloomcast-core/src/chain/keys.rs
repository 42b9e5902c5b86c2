//! Keys that rotate (pure): a key's id, the `Bloom-Signature` field that names it, and
//! the list of every key a publisher has signed with, each covering a range of hours.
//!
//! - `key_id(key) = SHA-256(key's 32 bytes)[..8]`, written as 16 lowercase hex digits.
//! - `Bloom-Signature: <128 hex>; keyid="<16 hex>"`; a bare signature names no key (the
//!   one covering the hour).
//! - The list is ordered by first hour; ranges never overlap; only the newest key may
//!   be open (no last hour). An hour verifies only under the key listed for it.
//! - A list pinned earlier is extended, never rewritten: the same keys with the same
//!   first hours, an open key possibly retired, new keys after them.

use super::{hex, parse_hex, ChainError, PublicKey};
use crate::hour::Hour;
use sha2::{Digest as _, Sha256};

/// A key's id: the first 8 bytes of SHA-256 of its 32 public-key bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub [u8; 8]);

impl KeyId {
    /// The id of `key`.
    pub fn of(key: &PublicKey) -> KeyId {
        let sum = Sha256::digest(key.0.as_bytes());
        let mut id = [0; 8];
        id.copy_from_slice(&sum[..8]);
        KeyId(id)
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl std::fmt::Debug for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl std::str::FromStr for KeyId {
    type Err = ChainError;

    fn from_str(s: &str) -> Result<KeyId, ChainError> {
        parse_hex::<8>(s)
            .map(KeyId)
            .ok_or_else(|| ChainError::BadKeyList(format!("{s:?} is not a key id (16 hex digits)")))
    }
}

impl PublicKey {
    /// This key's [`KeyId`].
    pub fn id(&self) -> KeyId {
        KeyId::of(self)
    }
}

/// The value of a `Bloom-Signature` field: the signature and the id of the key that
/// made it, if named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureField {
    /// The Ed25519 signature.
    pub signature: [u8; 64],
    /// `None` for a bare signature (made by the key listed for the hour).
    pub key_id: Option<KeyId>,
}

impl SignatureField {
    /// Parses leniently: the signature first, then `;`-separated parameters, of which
    /// `keyid` (quoted or not) is read and any other ignored. `None` when the signature
    /// is not 128 hex digits or `keyid` is not 16.
    pub fn parse(value: &str) -> Option<SignatureField> {
        let mut parts = value.split(';');
        let signature = parse_hex::<64>(parts.next()?)?;
        let mut key_id = None;
        for param in parts {
            let Some((name, v)) = param.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("keyid") {
                let v = v.trim();
                let v = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(v);
                key_id = Some(KeyId(parse_hex::<8>(v)?));
            }
        }
        Some(SignatureField { signature, key_id })
    }
}

impl std::fmt::Display for SignatureField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex(&self.signature))?;
        if let Some(id) = self.key_id {
            write!(f, "; keyid=\"{id}\"")?;
        }
        Ok(())
    }
}

/// One key of a publisher's list: the hours it signs, `first..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedKey {
    /// The key.
    pub public_key: PublicKey,
    /// The first hour it signs.
    pub first_hour: Hour,
    /// `None` while the key is current.
    pub last_hour: Option<Hour>,
    /// Its predecessor's vouch for it and its acknowledgement of the predecessor (both
    /// `None` for the first key, and for keys listed before successions were signed).
    pub succession: super::Succession,
}

impl ListedKey {
    /// Its key id.
    pub fn id(&self) -> KeyId {
        self.public_key.id()
    }

    /// Whether this key signs `hour`.
    pub fn covers(&self, hour: Hour) -> bool {
        hour >= self.first_hour && self.last_hour.is_none_or(|last| hour <= last)
    }
}

/// Every key a publisher has signed with, oldest first (see the module's rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyList(Vec<ListedKey>);

impl KeyList {
    /// A list, checked: ordered by first hour, each range non-empty and before the next
    /// key's first hour, only the newest open, no key twice.
    ///
    /// # Errors
    /// [`ChainError::BadKeyList`] saying which rule fails.
    pub fn new(keys: Vec<ListedKey>) -> Result<KeyList, ChainError> {
        let bad = |what: String| Err(ChainError::BadKeyList(what));
        for (i, key) in keys.iter().enumerate() {
            if key.last_hour.is_some_and(|last| last < key.first_hour) {
                return bad(format!("key {} ends before it starts", key.id()));
            }
            if keys[..i].iter().any(|k| k.id() == key.id()) {
                return bad(format!("key {} is listed twice", key.id()));
            }
            let Some(next) = keys.get(i + 1) else {
                continue;
            };
            match key.last_hour {
                None => return bad(format!("key {} is open but not the newest", key.id())),
                Some(last) if last >= next.first_hour => {
                    return bad(format!(
                        "keys {} and {} overlap or are out of order",
                        key.id(),
                        next.id()
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(KeyList(keys))
    }

    /// One key for every hour: a key given on its own, with no list.
    pub fn single(key: PublicKey) -> KeyList {
        KeyList(vec![ListedKey {
            public_key: key,
            first_hour: Hour::from_index(i64::MIN),
            last_hour: None,
            succession: super::Succession::default(),
        }])
    }

    /// The keys, oldest first.
    pub fn keys(&self) -> &[ListedKey] {
        &self.0
    }

    /// The key listed for `hour`, if any.
    pub fn for_hour(&self, hour: Hour) -> Option<&ListedKey> {
        self.0.iter().find(|k| k.covers(hour))
    }

    /// The key to verify `hour`'s signature with, given the id its field names.
    ///
    /// # Errors
    /// [`ChainError::OtherKey`] when no key is listed for the hour, or the field names
    /// a key other than the one listed for it.
    pub fn key_for(&self, hour: Hour, named: Option<KeyId>) -> Result<PublicKey, ChainError> {
        let other = |detail: String| ChainError::OtherKey {
            hour: hour.rfc3339(),
            detail,
        };
        let listed = self
            .for_hour(hour)
            .ok_or_else(|| other("no key is listed for this hour".into()))?;
        match named {
            Some(id) if id != listed.id() => {
                let whose = if self.0.iter().any(|k| k.id() == id) {
                    "a key listed for other hours"
                } else {
                    "a key that is not listed"
                };
                Err(other(format!(
                    "signed by key {id}, {whose}; the key listed for it is {}",
                    listed.id()
                )))
            }
            _ => Ok(listed.public_key),
        }
    }

    /// Whether this list may replace `pinned`: every pinned key again, same key and
    /// first hour, an open one possibly retired (a retired one unchanged), and any new
    /// key after them (which [`KeyList::new`] already ordered). `verified`, the newest
    /// hour the client verified, keeps an open key from being retired before it.
    ///
    /// # Errors
    /// [`ChainError::BadKeyList`] naming the first pinned key rewritten or missing.
    pub fn extends(&self, pinned: &KeyList, verified: Option<Hour>) -> Result<(), ChainError> {
        for (i, old) in pinned.0.iter().enumerate() {
            let refused = |what: &str| {
                Err(ChainError::BadKeyList(format!(
                    "the key list does not extend the one pinned: key {} (from {}) {what}",
                    old.id(),
                    old.first_hour.rfc3339()
                )))
            };
            let Some(new) = self.0.get(i) else {
                return refused("is missing");
            };
            if new.public_key != old.public_key || new.first_hour != old.first_hour {
                return refused("is replaced or moved");
            }
            if old.last_hour.is_some() && new.last_hour != old.last_hour {
                return refused("had its last hour changed");
            }
            let retired_early = |last: Hour| verified.is_some_and(|v| old.covers(v) && last < v);
            if old.last_hour.is_none() && new.last_hour.is_some_and(retired_early) {
                return refused("is retired before an hour verified under it");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Signer;
    use super::*;

    fn key(seed: u8) -> PublicKey {
        Signer::from_seed(&[seed; 32]).public_key()
    }

    fn listed(seed: u8, first: i64, last: Option<i64>) -> ListedKey {
        ListedKey {
            public_key: key(seed),
            first_hour: Hour::from_index(first),
            last_hour: last.map(Hour::from_index),
            succession: super::super::Succession::default(),
        }
    }

    #[test]
    fn a_key_id_is_the_first_8_bytes_of_the_keys_sha_256() {
        // RFC 8032 test 1's public key; the id computed apart with Python's hashlib.
        let rfc: PublicKey = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
            .parse()
            .unwrap();
        assert_eq!(rfc.id().to_string(), "21fe31dfa154a261");
        assert_eq!("21fe31dfa154a261".parse::<KeyId>(), Ok(rfc.id()));
        assert!("21fe31dfa154a26".parse::<KeyId>().is_err());
    }

    #[test]
    fn a_signature_field_names_its_key_and_a_bare_one_still_parses() {
        let sig = [0xab; 64];
        let field = SignatureField {
            signature: sig,
            key_id: Some(KeyId([1; 8])),
        };
        let text = field.to_string();
        assert_eq!(text, format!("{}; keyid=\"0101010101010101\"", hex(&sig)));
        assert_eq!(SignatureField::parse(&text), Some(field));
        let loose = format!("{} ;foo=bar; KEYID=0101010101010101 ", hex(&sig));
        assert_eq!(SignatureField::parse(&loose), Some(field));
        let bare = SignatureField::parse(&hex(&sig)).unwrap();
        assert_eq!(bare.key_id, None);
        assert_eq!(
            SignatureField::parse(&format!("{}; keyid=\"01\"", hex(&sig))),
            None
        );
        assert_eq!(
            SignatureField::parse("abcd; keyid=\"0101010101010101\""),
            None
        );
    }

    #[test]
    fn a_list_must_be_ordered_non_overlapping_and_open_only_at_its_end() {
        assert!(KeyList::new(vec![listed(1, 0, Some(9)), listed(2, 10, None)]).is_ok());
        for bad in [
            vec![listed(1, 0, None), listed(2, 10, None)],
            vec![listed(1, 0, Some(10)), listed(2, 10, None)],
            vec![listed(1, 5, Some(4))],
            vec![listed(1, 0, Some(3)), listed(1, 4, None)],
        ] {
            assert!(
                matches!(KeyList::new(bad.clone()), Err(ChainError::BadKeyList(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_hour_verifies_only_under_the_key_listed_for_it() {
        let list = KeyList::new(vec![listed(1, 0, Some(9)), listed(2, 10, None)]).unwrap();
        let (h5, h10) = (Hour::from_index(5), Hour::from_index(10));
        assert_eq!(list.key_for(h5, None), Ok(key(1)));
        assert_eq!(list.key_for(h10, Some(key(2).id())), Ok(key(2)));
        let err = list.key_for(h5, Some(key(2).id())).unwrap_err();
        assert!(err.to_string().contains("listed for other hours"), "{err}");
        assert!(
            list.key_for(Hour::from_index(-1), None).is_err(),
            "before any key"
        );
        assert!(list.key_for(h5, Some(key(3).id())).is_err(), "unlisted");
    }

    #[test]
    fn a_list_extends_a_pinned_one_only_by_retiring_its_open_key_and_adding_after() {
        let pinned = KeyList::new(vec![listed(1, 0, Some(9)), listed(2, 10, None)]).unwrap();
        let rotated = KeyList::new(vec![
            listed(1, 0, Some(9)),
            listed(2, 10, Some(20)),
            listed(3, 21, None),
        ])
        .unwrap();
        assert_eq!(rotated.extends(&pinned, Some(Hour::from_index(20))), Ok(()));
        assert_eq!(pinned.extends(&pinned, None), Ok(()));
        let forged = KeyList::new(vec![
            listed(1, 0, Some(4)),
            listed(9, 5, Some(9)),
            listed(2, 10, None),
        ])
        .unwrap();
        assert!(
            forged.extends(&pinned, None).is_err(),
            "a key for old hours"
        );
        let moved = KeyList::new(vec![listed(1, 0, Some(9)), listed(2, 11, None)]).unwrap();
        assert!(moved.extends(&pinned, None).is_err(), "a first hour moved");
        assert!(pinned.extends(&rotated, None).is_err(), "a key dropped");
        let early = rotated.extends(&pinned, Some(Hour::from_index(21)));
        assert!(
            early.is_err(),
            "key 2 retired before hour 21, verified under it"
        );
    }
}
