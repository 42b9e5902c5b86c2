//! Which key verifies which hour: the publisher's list of keys (`keys` in
//! `/.well-known/bloomcast.json`), trusted as the client was told to trust it.
//!
//! - With a key given ([`crate::ClientBuilder::pubkey`]) the list is trusted only from
//!   that key (PROTOCOL.md section 11, "Trust"): the keys it vouched for (forward, each
//!   by the one before) and those that acknowledged it (back); an hour listed under any
//!   other key is refused, naming that key, and a list that does not name the key given
//!   is refused. From a server or mirror with no well-known document, every hour is
//!   verified against the key given alone.
//! - With pinning, the list is pinned in the cache directory on first use
//!   (`<dir>/<server>/keys.json`: `{"keys": [...], "verified_through": hour}`, the
//!   newest hour verified so far); a later list is accepted only if it extends the
//!   pinned one ([`KeyList::extends`]): a key added for hours already covered, or the
//!   current key retired before an hour verified under it (a forged document), is
//!   refused. A `pubkey` file pinned by an earlier version is taken as a key given.
//!
//! The list is read once, and again only when an hour it does not cover is verified
//! (the publisher rotated its key since).

use super::{Client, ClientError, Result};
use crate::chain::{self, ChainError, KeyId, KeyList, ListedKey, PublicKey, Succession, Trusted};
use crate::hour::Hour;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The keys this client verifies with: the publisher's list and, with a key given, the
/// run of it trusted from that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    list: KeyList,
    /// `None` under trust on first use (the pinned list is what is trusted).
    trusted: Option<Trusted>,
}

impl Keys {
    /// The key listed for `hour`, if any.
    pub(crate) fn for_hour(&self, hour: Hour) -> Option<&ListedKey> {
        self.list.for_hour(hour)
    }

    /// The key to verify `hour`'s signature with, given the id its field names.
    ///
    /// # Errors
    /// [`ChainError::OtherKey`] when the key listed for the hour is not trusted (naming
    /// it), when none is listed, or when the field names another key.
    pub(crate) fn key_for(
        &self,
        hour: Hour,
        named: Option<KeyId>,
    ) -> Result<PublicKey, ChainError> {
        if let Some(trusted) = &self.trusted {
            trusted.key_for(hour)?;
        }
        self.list.key_for(hour, named)
    }
}

impl Client {
    /// The keys to verify `hour` with (any hour with `None`): the list read before if it
    /// covers the hour, else the publisher's list read again and checked. `None` when
    /// not verifying (no key given, no pinning, or a server that does not sign).
    ///
    /// # Errors
    /// [`ClientError::Unverified`] when the list is refused; transport errors.
    pub(super) async fn keys(&self, hour: Option<Hour>) -> Result<Option<Arc<Keys>>> {
        self.read_keys(hour).await.map_err(|e| match (e, hour) {
            // A refused list refuses the hour being verified: say which.
            (ClientError::Unverified(e @ ChainError::BadKeyList(_)), Some(h)) => {
                ClientError::Unverified(ChainError::OtherKey {
                    hour: h.rfc3339(),
                    detail: e.to_string(),
                })
            }
            (e, _) => e,
        })
    }

    async fn read_keys(&self, hour: Option<Hour>) -> Result<Option<Arc<Keys>>> {
        let mut known = self.keyring.lock().await;
        if let Some(list) = known.as_ref() {
            if hour.is_none_or(|h| list.for_hour(h).is_some()) {
                return Ok(Some(list.clone()));
            }
        }
        let pin = self.pin_dir().map(|dir| dir.join("keys.json"));
        let (pinned, mark) = match &pin {
            Some(file) => read_pinned(file)?,
            None => (None, None),
        };
        if let Some(mark) = mark {
            self.pin_mark.fetch_max(mark.index(), Ordering::Relaxed);
        }
        let anchor = self.pubkey.or(match &self.pin_dir() {
            Some(dir) if pinned.is_none() => read_legacy(&dir.join("pubkey"))?,
            _ => None,
        });
        if anchor.is_none() && pin.is_none() {
            return Ok(None);
        }
        let Some(listed) = self.listed_keys().await? else {
            // No list published: the key given alone, or nothing to check at all.
            let list = match (anchor, pinned) {
                (Some(key), _) => KeyList::single(key),
                (None, Some(pinned)) => pinned,
                (None, None) => return Ok(None),
            };
            let trusted = anchor.map(|key| list.trusted_from(&key)).transpose()?;
            return Ok(Some(Arc::new(Keys { list, trusted })));
        };
        // With a key given, only what it signed or vouched for is trusted; a list that
        // does not name it is refused.
        let trusted = anchor.map(|key| listed.trusted_from(&key)).transpose()?;
        if let Some(pinned) = &pinned {
            listed.extends(pinned, self.newest_verified())?;
        }
        if let Some(file) = &pin {
            if pinned.as_ref() != Some(&listed) {
                write_pinned(file, &listed, self.newest_verified());
            }
        }
        let keys = Arc::new(Keys {
            list: listed,
            trusted,
        });
        *known = Some(keys.clone());
        Ok(Some(keys))
    }

    /// The newest hour this client verified, here or (pinned) in an earlier process.
    fn newest_verified(&self) -> Option<Hour> {
        let here = crate::sync::lock(&self.verified).keys().max().copied();
        let pinned = Some(self.pin_mark.load(Ordering::Relaxed)).filter(|&m| m != i64::MIN);
        here.max(pinned).map(Hour::from_index)
    }

    /// `hour` verified: with pinning, the pin records it when it is the newest.
    pub(super) async fn note_verified(&self, hour: Hour) {
        let Some(file) = self.pin_dir().map(|dir| dir.join("keys.json")) else {
            return;
        };
        if self.pin_mark.fetch_max(hour.index(), Ordering::Relaxed) >= hour.index() {
            return;
        }
        if let Some(keys) = self.keyring.lock().await.as_ref() {
            write_pinned(&file, &keys.list, Some(hour));
        }
    }

    /// `<cache dir>/<server>` when pinning is on.
    fn pin_dir(&self) -> Option<std::path::PathBuf> {
        let dir = self.cache_dir.as_deref().filter(|_| self.pin)?;
        Some(self.server_dir(dir))
    }

    /// The server's list of keys: its `keys`, else its `public_key` alone (a server
    /// before keys rotated); `None` without a document or a key in it.
    async fn listed_keys(&self) -> Result<Option<KeyList>> {
        let response = self.send(self.get("/.well-known/bloomcast.json")).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = super::fetch::check(response).await?;
        let body = self.body(response, None).await?;
        let doc: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("/.well-known/bloomcast.json: {e}")))?;
        match (&doc["keys"], doc["public_key"].as_str()) {
            (serde_json::Value::Array(keys), _) if !keys.is_empty() => {
                Ok(Some(parse_key_list(&doc["keys"])?))
            }
            (_, Some(key)) => Ok(Some(KeyList::single(key.parse()?))),
            _ => Ok(None),
        }
    }
}

/// A list in the well-known document's shape: `[{"id", "public_key", "first_hour",
/// "last_hour"}]`, each id checked against its key.
///
/// # Errors
/// [`ChainError::BadKeyList`] saying what is wrong.
pub fn parse_key_list(value: &serde_json::Value) -> Result<KeyList, ChainError> {
    let bad = |what: String| ChainError::BadKeyList(what);
    let entries = value
        .as_array()
        .ok_or_else(|| bad("keys is not a list".into()))?;
    let mut keys = Vec::with_capacity(entries.len());
    for e in entries {
        let text = |field: &str| {
            e[field]
                .as_str()
                .ok_or_else(|| bad(format!("a key has no {field}")))
        };
        let hour =
            |s: &str| Hour::parse_flexible(s).map_err(|_| bad(format!("{s:?} is not an hour")));
        let public_key: PublicKey = text("public_key")?.parse()?;
        if text("id")? != public_key.id().to_string() {
            return Err(bad(format!(
                "the id of key {public_key} is not {}",
                public_key.id()
            )));
        }
        let last_hour = match &e["last_hour"] {
            serde_json::Value::Null => None,
            v => Some(hour(
                v.as_str()
                    .ok_or_else(|| bad("last_hour is not an hour".into()))?,
            )?),
        };
        // Absent (a service older than successions), null or 128 hex digits.
        let signature = |field: &str| -> Result<Option<[u8; 64]>, ChainError> {
            match &e[field] {
                serde_json::Value::Null => Ok(None),
                v => v
                    .as_str()
                    .and_then(chain::parse_hex::<64>)
                    .map(Some)
                    .ok_or_else(|| bad(format!("a key's {field} is not a signature"))),
            }
        };
        keys.push(ListedKey {
            public_key,
            first_hour: hour(text("first_hour")?)?,
            last_hour,
            succession: Succession {
                vouch: signature("vouch")?,
                ack: signature("ack")?,
            },
        });
    }
    KeyList::new(keys)
}

/// The list as the well-known document writes it.
pub fn key_list_json(list: &KeyList) -> serde_json::Value {
    list.keys()
        .iter()
        .map(|k| {
            let hex = |s: &Option<[u8; 64]>| s.as_ref().map(|s| chain::hex(s));
            serde_json::json!({
                "id": k.id().to_string(),
                "public_key": k.public_key.to_string(),
                "first_hour": k.first_hour.rfc3339(),
                "last_hour": k.last_hour.map(Hour::rfc3339),
                "vouch": hex(&k.succession.vouch),
                "ack": hex(&k.succession.ack),
            })
        })
        .collect()
}

/// The pinned list and the newest hour verified under it.
fn read_pinned(file: &std::path::Path) -> Result<(Option<KeyList>, Option<Hour>)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok((None, None));
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ClientError::Unverified(ChainError::BadKeyList(format!(
            "the pinned list {} is not JSON: {e}",
            file.display()
        )))
    })?;
    let mark = value["verified_through"]
        .as_str()
        .and_then(|h| Hour::parse_flexible(h).ok());
    Ok((Some(parse_key_list(&value["keys"])?), mark))
}

fn read_legacy(file: &std::path::Path) -> Result<Option<PublicKey>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text.trim().parse()?)),
        Err(_) => Ok(None),
    }
}

fn write_pinned(file: &std::path::Path, list: &KeyList, verified: Option<Hour>) {
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let pin = serde_json::json!({
        "keys": key_list_json(list),
        "verified_through": verified.map(Hour::rfc3339),
    });
    let text = format!("{pin:#}\n");
    if let Err(e) = std::fs::write(file, text) {
        tracing::warn!(file = %file.display(), error = %e, "cannot pin the server's keys");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Signer;

    #[test]
    fn a_list_round_trips_through_the_documents_json_and_a_wrong_id_is_refused() {
        let (old, new) = (Signer::from_seed(&[7; 32]), Signer::from_seed(&[8; 32]));
        let first = Hour::from_index(10);
        let list = KeyList::new(vec![
            ListedKey {
                public_key: old.public_key(),
                first_hour: Hour::from_index(0),
                last_hour: Some(Hour::from_index(9)),
                succession: Succession::default(),
            },
            ListedKey {
                public_key: new.public_key(),
                first_hour: first,
                last_hour: None,
                succession: Succession {
                    vouch: Some(old.vouch(&new.public_key(), first)),
                    ack: Some(new.acknowledge(&old.public_key(), first)),
                },
            },
        ])
        .unwrap();
        let json = key_list_json(&list);
        assert_eq!(json[1]["last_hour"], serde_json::Value::Null);
        assert_eq!(json[0]["vouch"], serde_json::Value::Null);
        assert_eq!(parse_key_list(&json), Ok(list.clone()));
        // A service older than successions lists neither: read as none.
        let mut older = json.clone();
        for key in older.as_array_mut().unwrap() {
            let key = key.as_object_mut().unwrap();
            key.remove("vouch");
            key.remove("ack");
        }
        let plain = parse_key_list(&older).unwrap();
        assert!(plain
            .keys()
            .iter()
            .all(|k| k.succession == Succession::default()));
        let json = key_list_json(&KeyList::new(vec![list.keys()[1]]).unwrap());
        let mut wrong = json.clone();
        wrong[0]["id"] = "0000000000000000".into();
        assert!(matches!(
            parse_key_list(&wrong),
            Err(ChainError::BadKeyList(_))
        ));
        let mut bad_hour = json;
        bad_hour[0]["first_hour"] = "yesterday".into();
        assert!(parse_key_list(&bad_hour).is_err());
    }
}
