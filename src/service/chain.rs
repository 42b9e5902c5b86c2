//! The read side of the hour chain: each sealed hour's link with its signature, for
//! hour responses and for `GET /chain/...`. Links and signatures come from the store,
//! where sealing wrote them (see `signing.rs`).

use super::parts::Signing;
use super::{Result, Service, ServiceError, Target};
use crate::chain::{self, PublicKey, SignatureField};
use crate::hour::Hour;
use crate::render::ChainPlace;
use crate::store::{ChainLink, StoreError};

/// Most links one `GET /chain/...` page holds.
pub const MAX_CHAIN_PAGE: usize = 1000;

/// A link with the publisher's signature over it.
#[derive(Debug, Clone)]
pub struct SignedLink {
    pub link: ChainLink,
    /// `None` when no signature is stored and this node holds no key to make it.
    pub signature: Option<SignatureField>,
}

/// One page of the chain.
#[derive(Debug, Clone)]
pub struct ChainPage {
    pub links: Vec<SignedLink>,
    /// Where the next page starts when this one is full (more links may follow); a full
    /// page never changes.
    pub next: Option<Hour>,
}

impl Service {
    /// Signs a checkpoint of the chain's head `hour` (its `header`), made now, when this
    /// node holds the key listed for that hour (docs/PROTOCOL.md section 11, "Trust"):
    /// housekeeping makes one at every hour boundary and at least every minute, so a
    /// client holding the key tells a stale or withholding mirror from a quiet publisher.
    pub(super) async fn sign_checkpoint(&self, hour: Hour, header: &chain::Hash) {
        let Some(signer) = &self.tuning.signer else {
            return;
        };
        let ours = signer.public_key();
        let listed = match self.signing().key_list().await {
            Ok(list) => list.for_hour(hour).map(|k| k.public_key),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the key registry; no checkpoint made");
                return;
            }
        };
        if listed != Some(ours) {
            return;
        }
        let made = self.now().timestamp();
        let checkpoint = chain::Checkpoint {
            hour,
            header: *header,
            made,
            signature: signer.checkpoint(made, hour, header),
        };
        self.sealer.keep_checkpoint(checkpoint, ours.id());
    }

    /// The place in the chain of a sealed hour whose `.bin` bytes have `digest`, served
    /// with its every representation: `None` when the hour has no link (or its link row
    /// fails verification).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] (recorded) when the hour's link covers other bytes.
    pub(super) async fn chain_place(
        &self,
        hour: Hour,
        digest: &chain::Hash,
    ) -> Result<Option<ChainPlace>> {
        let signed = match self.signing().signed_link(hour).await {
            Ok(Some(signed)) => signed,
            Ok(None) => return Ok(None),
            // Served unsigned (clients that verify refuse it), never unserved.
            Err(ServiceError::Store(e @ StoreError::Corrupt(_))) => {
                self.note_corrupt(hour, &e);
                return Ok(None);
            }
            Err(ServiceError::Corrupt { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        if &signed.link.digest != digest {
            // The chain is the record of what was sealed: bytes it does not cover (a seal
            // rebuilt from what is left of a damaged hour) are never served as the hour.
            let e = StoreError::Corrupt(format!(
                "the filter of hour {hour} rebuilt from its keys is not the one its chain link \
                 covers (digest {}, link {}): its stored keys are not all there",
                chain::hex(digest),
                chain::hex(&signed.link.digest)
            ));
            return Err(self.corrupt(hour, e));
        }
        Ok(Some(ChainPlace {
            prev: signed.link.prev,
            signature: signed.signature,
        }))
    }
}

impl Signing<'_> {
    /// This node's signing key, if it has one.
    pub fn public_key(&self) -> Option<PublicKey> {
        self.tuning.signer.as_ref().map(chain::Signer::public_key)
    }

    /// The chain's head as housekeeping last read it: the newest linked hour and its
    /// link header (`None` before any hour is linked).
    pub fn chain_head(&self) -> Option<(Hour, chain::Hash)> {
        self.sealer.head()
    }

    /// The latest checkpoint this node signed, with the id of its key: `None` before the
    /// first hour is linked, or when this node holds no key listed for the newest hour.
    pub fn checkpoint(&self) -> Option<(chain::Checkpoint, chain::KeyId)> {
        self.sealer.checkpoint()
    }

    /// Up to `limit` links from `from` on, oldest first, each signed.
    ///
    /// # Errors
    /// `InFuture` for an hour in the future; store failures.
    pub async fn chain(&self, from: Hour, limit: usize) -> Result<ChainPage> {
        let now = self.current_hour();
        if from > now {
            return Err(ServiceError::InFuture {
                asked: Target::Hour(from),
                now,
            });
        }
        let limit = limit.clamp(1, MAX_CHAIN_PAGE);
        let links = self.store.links(from, limit).await?;
        let next = (links.len() == limit)
            .then(|| links.last().map(|l| l.hour.next()))
            .flatten();
        let mut stored = match (links.first(), links.last()) {
            (Some(first), Some(last)) => self.store.signatures(first.hour, last.hour).await?,
            _ => Vec::new(),
        }
        .into_iter()
        .map(|s| (s.hour, s))
        .collect::<std::collections::HashMap<_, _>>();
        let mut signed = Vec::with_capacity(links.len());
        for link in links {
            let signature = self
                .signature_given(&link, stored.remove(&link.hour))
                .await?;
            signed.push(SignedLink { link, signature });
        }
        Ok(ChainPage {
            links: signed,
            next,
        })
    }

    /// The signed link of a sealed hour, if it has one.
    ///
    /// # Errors
    /// Store failures.
    pub async fn signed_link(&self, hour: Hour) -> Result<Option<SignedLink>> {
        let Some(link) = self.store.last_link(hour.next()).await? else {
            return Ok(None);
        };
        if link.hour != hour {
            return Ok(None);
        }
        Ok(Some(SignedLink {
            signature: self.signature(&link).await?,
            link,
        }))
    }
}
