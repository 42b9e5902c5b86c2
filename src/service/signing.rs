//! Signing sealed hours with keys that rotate. The registry of keys lives in the store
//! (shared by cluster nodes, first writer wins); this node's key is registered at start,
//! from the first hour not yet sealed. Each hour is signed once, by the key registered
//! for it, and only if this node holds that key; the signature is stored with the hour's
//! link and served as stored, so it never changes once published.

use super::parts::Signing;
use super::{Result, Service, ServiceError, MAX_CHAIN_PAGE};
use crate::chain::{KeyList, SignatureField, Signer, Succession};
use crate::hour::Hour;
use crate::store::{key_list, ChainLink, HourSignature, Store, StoreError};
use std::collections::HashSet;
use std::sync::Arc;

/// Tries at registering this node's key while other nodes register theirs.
const REGISTER_TRIES: usize = 3;

impl Service {
    /// Registers this node's key, unless registered already (see [`register_key`]). A key
    /// registered and since retired signs nothing new.
    ///
    /// # Errors
    /// Store failures; a registry that fails its checks.
    pub(super) async fn register_signer(&self) -> Result<()> {
        let Some(signer) = &self.tuning.signer else {
            return Ok(());
        };
        let list = register_key(self.store.as_ref(), self.genesis, signer, None, true).await?;
        self.sealer.keep_keys(Arc::new(list));
        Ok(())
    }

    /// Signs, once, every linked hour left without a signature (hours sealed before
    /// signatures were stored) that this node's key is registered for, so that they stay
    /// signable after the key is rotated away; returns how many it signed.
    ///
    /// # Errors
    /// Store failures; a link row that fails verification.
    pub(super) async fn sign_unsigned(&self) -> Result<usize> {
        let Some(signer) = &self.tuning.signer else {
            return Ok(0);
        };
        let ours = signer.public_key();
        let list = self.fresh_keys().await?;
        let Some(mine) = list.keys().iter().find(|k| k.public_key == ours).copied() else {
            return Ok(0);
        };
        let (mut from, mut signed) = (mine.first_hour, 0);
        loop {
            let links = self.store.links(from, MAX_CHAIN_PAGE).await?;
            let Some(last) = links.last().map(|l| l.hour) else {
                break;
            };
            let stored: HashSet<Hour> = self
                .store
                .signatures(from, last)
                .await?
                .iter()
                .map(|s| s.hour)
                .collect();
            for link in &links {
                if mine.covers(link.hour)
                    && !stored.contains(&link.hour)
                    && self.signature(link).await?.is_some()
                {
                    signed += 1;
                }
            }
            if links.len() < MAX_CHAIN_PAGE || mine.last_hour.is_some_and(|l| last >= l) {
                break;
            }
            from = last.next();
        }
        if signed > 0 {
            tracing::info!(signed, key_id = %ours.id(), "signed the hours sealed before signatures were stored");
        }
        Ok(signed)
    }

    async fn fresh_keys(&self) -> Result<Arc<KeyList>> {
        let list = Arc::new(key_list(self.store.signing_keys().await?)?);
        self.sealer.keep_keys(list.clone());
        Ok(list)
    }

    /// A link's signature: the one stored (verified against the key registered for the
    /// hour), else one made now if this node holds that key, stored, and read back.
    /// `None` when the hour has none this node can serve.
    ///
    /// # Errors
    /// Store failures.
    pub(super) async fn signature(&self, link: &ChainLink) -> Result<Option<SignatureField>> {
        if let Some(field) = self.sealer.signature(link.hour, &link.header) {
            return Ok(Some(field));
        }
        let stored = self.store.signatures(link.hour, link.hour).await?.pop();
        self.signature_given(link, stored).await
    }

    /// As [`Service::signature`], with the hour's stored signature already read.
    pub(super) async fn signature_given(
        &self,
        link: &ChainLink,
        stored: Option<HourSignature>,
    ) -> Result<Option<SignatureField>> {
        if let Some(field) = self.sealer.signature(link.hour, &link.header) {
            return Ok(Some(field));
        }
        let stored = match stored {
            Some(s) => Some(s),
            None => self.sign_once(link).await?,
        };
        let Some(s) = stored else {
            return Ok(None);
        };
        let listed = match self.sealer.keys().key_for(link.hour, Some(s.key_id)) {
            Ok(key) => Ok(key),
            // Registered since this node last read the registry?
            Err(_) => self.fresh_keys().await?.key_for(link.hour, Some(s.key_id)),
        };
        let verified = listed.and_then(|key| {
            key.verify(
                &link.hour.rfc3339(),
                link.hour.index(),
                &link.header,
                &s.signature,
            )
        });
        if let Err(e) = verified {
            // Served unsigned (clients that verify refuse it), never with a bad signature.
            let e = StoreError::Corrupt(format!("the stored signature: {e}"));
            self.note_corrupt(link.hour, &e);
            return Ok(None);
        }
        let field = SignatureField {
            signature: s.signature,
            key_id: Some(s.key_id),
        };
        self.sealer.keep_signature(link.hour, link.header, field);
        Ok(Some(field))
    }

    /// Signs `link` if this node holds the key registered for its hour, and stores the
    /// signature unless one was stored first; the stored one.
    async fn sign_once(&self, link: &ChainLink) -> Result<Option<HourSignature>> {
        let Some(signer) = &self.tuning.signer else {
            return Ok(None);
        };
        let ours = signer.public_key();
        // A retired key's hours never change hands: no need to ask the store.
        let known = self.sealer.keys().for_hour(link.hour).copied();
        if known.is_some_and(|k| k.last_hour.is_some() && k.public_key != ours) {
            return Ok(None);
        }
        let list = self.fresh_keys().await?;
        if list.for_hour(link.hour).map(|k| k.public_key) != Some(ours) {
            return Ok(None);
        }
        let signature = HourSignature {
            hour: link.hour,
            key_id: ours.id(),
            signature: signer.sign(link.hour.index(), &link.header),
        };
        self.store.put_signature(&signature, &ours).await?;
        Ok(self.store.signatures(link.hour, link.hour).await?.pop())
    }
}

/// Registers `ours` in the store's key registry, unless registered already: from the
/// hour after the newest sealed one (the first key: from the first hour of the chain,
/// which it signs), retiring the current key at the hour before. Used at start (every
/// node's key, as it finds the registry) and by `bloomcast rotate-key` (a new key made
/// the current one); the registry as it stands after. With `retire` false, a current key
/// is never retired: `ours` is registered only into an empty registry (a cluster node's
/// first start, racing others), else left out.
///
/// The succession is signed both ways (docs/PROTOCOL.md section 11, "Trust"): `ours`
/// acknowledges the key it retires, and `retiring`, the current key's signer when the
/// caller holds it (`rotate-key` does), vouches for `ours`. A key registered without
/// that vouch is trusted by clients that hold it, never by clients holding the key
/// before it (logged). A key registered before successions were signed gets its
/// acknowledgement here, from a node that holds it.
///
/// # Errors
/// Store failures; a registry that fails its checks.
pub async fn register_key(
    store: &dyn Store,
    genesis: Hour,
    signer: &Signer,
    retiring: Option<&Signer>,
    retire: bool,
) -> Result<KeyList> {
    let ours = &signer.public_key();
    for _ in 0..REGISTER_TRIES {
        let list = key_list(store.signing_keys().await?)?;
        if let Some(at) = list.keys().iter().position(|k| k.public_key == *ours) {
            let listed = list.keys()[at];
            if let Some(prev) = at.checked_sub(1).map(|i| list.keys()[i]) {
                if listed.succession.ack.is_none() {
                    let ack = signer.acknowledge(&prev.public_key, listed.first_hour);
                    if store.put_key_ack(ours, &ack).await? {
                        tracing::info!(key_id = %ours.id(), previous = %prev.id(),
                            "acknowledged the key this one succeeds (clients trusting this key verify that one's hours)");
                    }
                }
                if listed.succession.vouch.is_none() {
                    tracing::warn!(key_id = %ours.id(), previous = %prev.id(),
                        "no vouch from the key this one succeeds: clients trusting only key {} refuse the hours this key signs (rotate with bloomcast rotate-key, which signs it)", prev.id());
                }
            }
            match listed.last_hour {
                None => tracing::info!(key_id = %ours.id(), first_hour = %listed.first_hour,
                    "signing with the current registered key"),
                Some(last) => {
                    let current = list.keys().last().map(|k| k.public_key.id().to_string());
                    tracing::warn!(key_id = %ours.id(), %last, current = ?current,
                        "this node's signing key was retired after hour {last}: it signs no new hour (install the current key, {})",
                        current.as_deref().unwrap_or("none"));
                }
            }
            return Ok(list);
        }
        let open = list.keys().last().filter(|k| k.last_hour.is_none());
        if open.is_some() && !retire {
            return Ok(list);
        }
        let first = match open {
            None => first_chained_hour(store, genesis).await?,
            Some(open) => {
                let after_sealed = store.last_sealed().await?.map(Hour::next);
                after_sealed.unwrap_or(genesis).max(open.first_hour.next())
            }
        };
        let current = open.map(|k| k.public_key);
        let succession = Succession {
            vouch: retiring
                .filter(|r| Some(r.public_key()) == current)
                .map(|r| r.vouch(ours, first)),
            ack: current.map(|c| signer.acknowledge(&c, first)),
        };
        if store
            .register_key(ours, first, current.as_ref(), &succession)
            .await?
        {
            tracing::info!(key_id = %ours.id(), first_hour = %first,
                retired = ?current.map(|k| k.id().to_string()),
                vouched = succession.vouch.is_some(), "registered a new signing key");
        }
    }
    let list = key_list(store.signing_keys().await?)?;
    if list.keys().iter().any(|k| k.public_key == *ours) {
        return Ok(list);
    }
    Err(ServiceError::Store(StoreError::bug(
        "cannot register the signing key: other nodes keep registering theirs",
    )))
}

/// The first hour of the chain (or genesis, if earlier or nothing is linked).
async fn first_chained_hour(store: &dyn Store, genesis: Hour) -> Result<Hour> {
    let oldest = store.links(Hour::from_index(i64::MIN), 1).await?;
    Ok(oldest.first().map_or(genesis, |l| l.hour.min(genesis)))
}

impl Signing<'_> {
    /// Every key registered, read from the store now (and kept for serving).
    ///
    /// # Errors
    /// Store failures; [`StoreError::Corrupt`] when the rows break the list's rules.
    pub async fn key_list(&self) -> Result<Arc<KeyList>> {
        self.fresh_keys().await
    }
}
