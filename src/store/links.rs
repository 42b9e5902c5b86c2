//! The hour chain as stored: one row per sealed hour with its digest, the previous
//! hour's header and its own (see [`crate::chain`]). Written once, after the hour's
//! seal, never changed, and kept when the hour itself is pruned (a row is 104 bytes), so
//! the chain stays checkable from its start.

use super::rows::checksum;
use super::{Result, StoreError};
use crate::chain::{self, Hash};
use crate::hour::Hour;

/// One hour's link in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainLink {
    pub hour: Hour,
    /// SHA-256 of the hour's `.bin` bytes.
    pub digest: Hash,
    /// The previous hour's header ([`chain::GENESIS`] where the chain starts).
    pub prev: Hash,
    /// `SHA-256(digest || prev)`.
    pub header: Hash,
}

impl ChainLink {
    /// The link of `hour` whose filter bytes are `bin`, after `prev`.
    pub fn new(hour: Hour, bin: &[u8], prev: Hash) -> ChainLink {
        let digest = chain::digest(bin);
        ChainLink {
            hour,
            digest,
            prev,
            header: chain::header(&digest, &prev),
        }
    }

    /// The checksum stored with the row: kind `c`, the hour, then digest, prev and header
    /// (see [`super::batch_checksum`] for the scheme).
    pub fn checksum(&self) -> i64 {
        checksum(b'c', self.hour, &[&self.digest, &self.prev, &self.header])
    }

    /// A row as read back, verified: three 32-byte values, the header following from the
    /// other two, and the checksum.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour.
    pub fn verify_row(
        hour: Hour,
        digest: &[u8],
        prev: &[u8],
        header: &[u8],
        stored: i64,
    ) -> Result<ChainLink> {
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("the chain link of hour {hour}: {what}"));
        let bytes = |b: &[u8]| Hash::try_from(b).map_err(|_| corrupt("a value is not 32 bytes"));
        let link = ChainLink {
            hour,
            digest: bytes(digest)?,
            prev: bytes(prev)?,
            header: bytes(header)?,
        };
        if link.checksum() != stored {
            return Err(corrupt("checksum mismatch"));
        }
        if chain::header(&link.digest, &link.prev) != link.header {
            return Err(corrupt("the header does not follow from digest and prev"));
        }
        Ok(link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_read_back_verifies_and_a_flipped_bit_does_not() {
        let link = ChainLink::new(Hour::from_index(7), b"bits", chain::GENESIS);
        let ok = ChainLink::verify_row(
            link.hour,
            &link.digest,
            &link.prev,
            &link.header,
            link.checksum(),
        );
        assert_eq!(ok.unwrap(), link);
        let mut header = link.header;
        header[3] ^= 1;
        let bad = ChainLink::verify_row(
            link.hour,
            &link.digest,
            &link.prev,
            &header,
            link.checksum(),
        );
        assert!(matches!(bad, Err(StoreError::Corrupt(_))));
    }
}
