//! The records a store keeps of each hour beside its rows (the hour chain, the batch
//! count), and the cross-checks that find a row deleted or moved.

use super::{ChainLink, Result, SealedHour, StoreError};
use crate::hour::Hour;

/// What a store knows of an hour besides its rows, read in the same snapshot as them:
/// the records that say whether the rows are all there.
///
/// - The hour chain: a link is written only after the hour's seal is stored, and links
///   are never pruned, so a link at an hour not pruned means a sealed row must be
///   there, with the bytes the link's digest covers. Hours are linked in order, so a
///   sealed row without a link while a later hour has one (from the chain's first hour
///   on) lost its link.
/// - The batch record: every append adds one to its hour's batch count in the same
///   transaction as the batch, so the number of batches read back must equal it; and
///   closing an hour gives it a record even when nothing was appended (zero batches),
///   kept until its seal replaces it. So every closed hour has a sealed row or a
///   record: one with neither lost it.
#[derive(Debug, Default)]
pub struct HourRecord {
    /// The hour's chain link as read back: `Some(Err(_))` for a link row that fails its
    /// own verification (it still says the hour was sealed).
    pub link: Option<Result<ChainLink>>,
    /// Every hour before this one was pruned: its rows are gone by design.
    pub pruned_before: Option<Hour>,
    /// The batches appended to the hour, as its record counts them (`None`: no record).
    pub batches: Option<i64>,
    /// Every hour up to this one is closed to appends.
    pub closed_through: Option<Hour>,
    /// The first hour the chain covers: hours sealed before it (by a version without
    /// the chain) have no link by design.
    pub chain_since: Option<Hour>,
    /// Whether a later hour than this one has a chain link.
    pub later_link: bool,
}

impl HourRecord {
    fn pruned(&self, hour: Hour) -> bool {
        self.pruned_before.is_some_and(|p| hour < p)
    }

    /// Whether a sealed hour without a link lost it: a later hour is linked and the
    /// hour is one the chain covers.
    fn lost_link(&self, hour: Hour) -> bool {
        self.later_link && self.chain_since.is_some_and(|since| hour >= since)
    }

    /// Cross-checks a sealed hour as read (`None`: no sealed row) against the record.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the hour is in the chain but its sealed row is
    /// missing, or its filter is not the one the chain link's digest covers.
    pub fn check_sealed(
        &self,
        hour: Hour,
        sealed: Option<SealedHour>,
    ) -> Result<Option<SealedHour>> {
        if self.pruned(hour) {
            return Ok(sealed);
        }
        match (&sealed, &self.link) {
            (None, Some(_)) => Err(missing_seal(hour)),
            (Some(_), None) if self.lost_link(hour) => Err(StoreError::Corrupt(format!(
                "hour {hour} is sealed but has no chain link, though later hours are linked: \
                 its link was deleted, so nothing vouches for its sealed filter"
            ))),
            (Some(s), Some(Ok(link))) if crate::chain::digest(&s.filter) != link.digest => {
                Err(StoreError::Corrupt(format!(
                    "the sealed filter of hour {hour} is not the one its chain link covers \
                     (digest {}, link {})",
                    crate::chain::hex(&crate::chain::digest(&s.filter)),
                    crate::chain::hex(&link.digest)
                )))
            }
            _ => Ok(sealed),
        }
    }

    /// Checks that an hour with no sealed row may be read from its batches: it is not
    /// in the chain, and `read` batches are what its record counts.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour and what is missing.
    pub fn check_batches(&self, hour: Hour, read: usize) -> Result<()> {
        if self.pruned(hour) {
            return Ok(());
        }
        if self.link.is_some() {
            return Err(missing_seal(hour));
        }
        let closed = self.closed_through.is_some_and(|c| hour <= c);
        let recorded = match self.batches {
            Some(recorded) => recorded,
            None if closed => {
                return Err(StoreError::Corrupt(format!(
                    "hour {hour} is closed but has neither a sealed row nor a batch record: \
                     every closed hour has one of them, so its rows were deleted"
                )))
            }
            None => 0,
        };
        if i64::try_from(read).ok() != Some(recorded) {
            return Err(StoreError::Corrupt(format!(
                "hour {hour}: {read} key batches are stored but its record counts {recorded}: \
                 a batch was deleted, moved to another hour, or its record damaged"
            )));
        }
        Ok(())
    }
}

fn missing_seal(hour: Hour) -> StoreError {
    StoreError::Corrupt(format!(
        "hour {hour} is in the hour chain, so it was sealed, but its sealed row is missing \
         (deleted, or moved to another hour)"
    ))
}
