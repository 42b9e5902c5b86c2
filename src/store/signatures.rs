//! What the store keeps of signing: the registry of every key the service has signed
//! with (the hours each covers), and each sealed hour's signature, written once and
//! kept with its link, so a published signature never changes (see
//! `docs/PROTOCOL.md`, "Keys that rotate").

use super::{Result, StoreError};
use crate::chain::{KeyId, KeyList, ListedKey, PublicKey, Succession};
use crate::hour::Hour;

/// One sealed hour's signature as stored: first write wins, never changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourSignature {
    pub hour: Hour,
    /// The id of the key that made it (registered for the hour when it was made).
    pub key_id: KeyId,
    pub signature: [u8; 64],
}

impl HourSignature {
    /// A row as read back: an 8-byte key id and a 64-byte signature.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour.
    pub fn from_row(hour: Hour, key_id: &[u8], signature: &[u8]) -> Result<HourSignature> {
        let corrupt = || StoreError::Corrupt(format!("the signature row of hour {hour}"));
        Ok(HourSignature {
            hour,
            key_id: KeyId(key_id.try_into().map_err(|_| corrupt())?),
            signature: signature.try_into().map_err(|_| corrupt())?,
        })
    }
}

/// A registry row as read back: the public key, its first hour and its last, if retired,
/// and the signatures of its succession (its predecessor's vouch, its acknowledgement).
///
/// # Errors
/// [`StoreError::Corrupt`] when the bytes are not a public key or a signature.
pub fn key_from_row(
    key: &[u8],
    first: i64,
    last: Option<i64>,
    vouch: Option<&[u8]>,
    ack: Option<&[u8]>,
) -> Result<ListedKey> {
    let corrupt = || StoreError::Corrupt("a signing key row is not a public key".into());
    let bytes: [u8; 32] = key.try_into().map_err(|_| corrupt())?;
    let public_key = PublicKey::from_bytes(&bytes).map_err(|_| corrupt())?;
    let signature = |s: Option<&[u8]>| -> Result<Option<[u8; 64]>> {
        s.map(|s| {
            s.try_into().map_err(|_| {
                StoreError::Corrupt(format!(
                    "a succession signature of key {} is not 64 bytes",
                    public_key.id()
                ))
            })
        })
        .transpose()
    };
    Ok(ListedKey {
        public_key,
        first_hour: Hour::from_index(first),
        last_hour: last.map(Hour::from_index),
        succession: Succession {
            vouch: signature(vouch)?,
            ack: signature(ack)?,
        },
    })
}

/// The registry's rows as a checked [`KeyList`].
///
/// # Errors
/// [`StoreError::Corrupt`] when the rows break the list's rules.
pub fn key_list(rows: Vec<ListedKey>) -> Result<KeyList> {
    KeyList::new(rows).map_err(|e| StoreError::Corrupt(format!("the signing key registry: {e}")))
}
