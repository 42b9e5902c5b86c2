//! The read side of the hour chain: each sealed hour's link with its signature, for
//! hour responses and for `GET /chain/...`. Signatures are made once per hour and kept
//! (64 bytes each); links come from the store, where sealing wrote them.

use super::{Result, Service, ServiceError};
use crate::chain::{self, PublicKey};
use crate::hour::Hour;
use crate::render::ChainPlace;
use crate::store::{ChainLink, StoreError};

/// Most links one `GET /chain/...` page holds.
pub const MAX_CHAIN_PAGE: usize = 1000;

/// A link with the publisher's signature over it.
#[derive(Debug, Clone)]
pub struct SignedLink {
    pub link: ChainLink,
    /// `None` when the service has no signing key.
    pub signature: Option<[u8; 64]>,
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
    /// The public key clients verify signatures with, if the service signs.
    pub fn public_key(&self) -> Option<PublicKey> {
        self.tuning.signer.as_ref().map(chain::Signer::public_key)
    }

    /// Up to `limit` links from `from` on, oldest first, each signed.
    ///
    /// # Errors
    /// `NotFound` for an hour in the future; store failures.
    pub async fn chain(&self, from: Hour, limit: usize) -> Result<ChainPage> {
        let now = self.current_hour();
        if from > now {
            return Err(ServiceError::NotFound(format!(
                "{from} is in the future; the current hour is {now}"
            )));
        }
        let limit = limit.clamp(1, MAX_CHAIN_PAGE);
        let links = self.store.links(from, limit).await?;
        let next = (links.len() == limit)
            .then(|| links.last().map(|l| l.hour.next()))
            .flatten();
        let links = links
            .into_iter()
            .map(|link| SignedLink {
                signature: self.signature(&link),
                link,
            })
            .collect();
        Ok(ChainPage { links, next })
    }

    /// The signed link of a sealed hour, if it has one.
    ///
    /// # Errors
    /// Store failures.
    pub async fn signed_link(&self, hour: Hour) -> Result<Option<SignedLink>> {
        Ok(self
            .store
            .last_link(hour.next())
            .await?
            .filter(|l| l.hour == hour)
            .map(|link| SignedLink {
                signature: self.signature(&link),
                link,
            }))
    }

    /// The signature of a link, made once per hour.
    fn signature(&self, link: &ChainLink) -> Option<[u8; 64]> {
        let signer = self.tuning.signer.as_ref()?;
        Some(self.sealer.signature(signer, link))
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
        let signed = match self.signed_link(hour).await {
            Ok(Some(signed)) => signed,
            Ok(None) => return Ok(None),
            // Served unsigned (clients that verify refuse it), never unserved.
            Err(ServiceError::Store(e @ StoreError::Corrupt(_))) => {
                self.note_corrupt(hour, &e);
                return Ok(None);
            }
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
            self.note_corrupt(hour, &e);
            return Err(e.into());
        }
        Ok(Some(ChainPlace {
            prev: signed.link.prev,
            signature: signed.signature,
        }))
    }
}
