//! Changes, as they happen: a counter bumped whenever the open hour may have a new
//! version (this node acknowledged IDs, or another node said it wrote some) or an hour
//! was sealed, for whoever follows the service (`/events`). It is a signal, not a log:
//! a follower that wakes reads the state it reports from the service ([`SealedNote`]s,
//! the open hour's view), so changes between two wake-ups fold into one.
//!
//! Other nodes' writes arrive through the store ([`Store::changes`]: PostgreSQL's
//! `LISTEN`); each expires this node's view of the open hour, so the next read takes
//! them from the store at once rather than after `refresh`.
//!
//! [`Store::changes`]: crate::store::Store::changes

use super::parts::Hours;
use super::{Result, Service};
use crate::chain::Hash;
use crate::hour::Hour;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// The signal: bumped on every change.
pub(super) struct Changes {
    tx: watch::Sender<u64>,
}

impl Default for Changes {
    fn default() -> Changes {
        Changes {
            tx: watch::Sender::new(0),
        }
    }
}

impl Changes {
    /// Something changed.
    pub(super) fn bump(&self) {
        self.tx.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A sealed hour as its followers are told of it: its count, and the digest and chain
/// header that its link holds (PROTOCOL.md section 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedNote {
    pub hour: Hour,
    pub count: u64,
    pub digest: Hash,
    pub header: Hash,
}

impl Hours<'_> {
    /// A receiver that sees a new value whenever the open hour may have a new version or
    /// an hour was sealed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.tx.subscribe()
    }

    /// The sealed hours after `after` (all from `from` when `None`) with a chain link, in
    /// order, at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn sealed_notes(&self, from: Hour, limit: usize) -> Result<Vec<SealedNote>> {
        let links = self.store.links(from, limit).await?;
        let Some(last) = links.last().map(|l| l.hour) else {
            return Ok(Vec::new());
        };
        let counts = self.store.sealed_counts(from, last).await?;
        Ok(links
            .iter()
            .filter_map(|link| {
                let count = counts.iter().find(|(h, _)| *h == link.hour)?.1;
                Some(SealedNote {
                    hour: link.hour,
                    count,
                    digest: link.digest,
                    header: link.header,
                })
            })
            .collect())
    }
}

impl Service {
    /// Follows other nodes' writes (the store's change feed, when it has one) until
    /// `shutdown` resolves: each expires the open hour's view and bumps the signal.
    pub async fn run_change_feed(self: Arc<Self>, shutdown: impl Future<Output = ()>) {
        let Some(mut feed) = self.store.changes() else {
            return;
        };
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                signal = feed.recv() => {
                    if signal.is_none() {
                        return;
                    }
                    let now = self.current_hour();
                    self.open.expire(now, self.closed_through());
                    self.changes.bump();
                }
                () = &mut shutdown => return,
            }
        }
    }
}
