//! Rows as the stores keep them: the 8-byte key blobs, the CRC-32 stored with every key
//! batch and sealed hour, and the verification of each row as it is read back. Both
//! stores use these, so a row means the same bytes in SQLite and PostgreSQL.

use super::{Result, SealedHour, StoreError};
use crate::bloom::{Key, Params};
use crate::hour::Hour;

/// The checksum stored with every key batch and sealed hour: CRC-32 (IEEE 802.3, the
/// zlib/gzip polynomial, as `crc32fast` computes it). It guards against bit rot and
/// torn or misplaced rows, not against tampering; 32 bits catch every burst error up
/// to 32 bits and all but 1 in 2^32 of the rest, at gigabytes a second.
///
/// The bytes covered, in this order:
/// 1. one ASCII byte naming what the row is: `b` a key batch, `f` a sealed filter,
///    `k` a sealed hour's distinct keys, `c` a chain link, `x` an exact body, `u` a
///    universe row (so one kind of row can never pass for another);
/// 2. the hour's index (hours since the Unix epoch) as 8 bytes, big-endian two's
///    complement (so a row that rot moves to another hour fails);
/// 3. the row's fields, as listed by [`batch_checksum`], [`filter_checksum`],
///    [`sealed_keys_checksum`] and [`ChainLink::checksum`](super::links::ChainLink::checksum).
///
/// Stored as a non-negative integer (`0..2^32`).
pub(super) fn checksum(kind: u8, hour: Hour, fields: &[&[u8]]) -> i64 {
    let mut crc = checksum_start(kind, hour);
    for field in fields {
        crc.update(field);
    }
    i64::from(crc.finalize())
}

/// A checksum of a row of `kind` of `hour`, before its fields.
fn checksum_start(kind: u8, hour: Hour) -> crc32fast::Hasher {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[kind]);
    crc.update(&hour.index().to_be_bytes());
    crc
}

/// The checksum of a key batch of `hour`: covers the key blob as stored (8 bytes a key,
/// see [`keys_to_blob`]). The batch's sequence number is not covered: it only orders rows.
pub fn batch_checksum(hour: Hour, blob: &[u8]) -> i64 {
    checksum(b'b', hour, &[blob])
}

/// The checksum of an hour's exact body (its bytes as served).
pub fn exact_checksum(hour: Hour, body: &[u8]) -> i64 {
    checksum(b'x', hour, &[body])
}

/// The checksum of a sealed hour's filter row: covers `count` (8 bytes), `m` and `k`
/// (4 bytes each), all big-endian, then the filter body in wire order.
pub fn filter_checksum(sealed: &SealedHour) -> i64 {
    checksum(
        b'f',
        sealed.hour,
        &[
            &sealed.count.to_be_bytes(),
            &sealed.m.to_be_bytes(),
            &sealed.k.to_be_bytes(),
            &sealed.filter,
        ],
    )
}

/// The checksum of a sealed hour's sorted distinct keys: covers the key blob as stored.
pub fn sealed_keys_checksum(hour: Hour, blob: &[u8]) -> i64 {
    checksum(b'k', hour, &[blob])
}

/// Fails with [`StoreError::Corrupt`] naming `row` unless the stored checksum matches.
/// `None` is a row written before checksums existed (PostgreSQL only): accepted as is.
fn check_sum(row: &dyn std::fmt::Display, stored: Option<i64>, computed: i64) -> Result<()> {
    match stored {
        Some(stored) if stored != computed => Err(StoreError::Corrupt(format!(
            "{row}: checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        ))),
        _ => Ok(()),
    }
}

/// Verifies key batch `seq` of `hour` as read back and appends its keys to `out`.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the batch and hour: a checksum mismatch, or a blob
/// whose length is not a multiple of 8.
pub fn verify_batch(
    hour: Hour,
    seq: i64,
    blob: &[u8],
    stored: Option<i64>,
    out: &mut Vec<Key>,
) -> Result<()> {
    let row = format!("batch {seq} of hour {hour}");
    check_sum(&row, stored, batch_checksum(hour, blob))?;
    blob_to_keys(blob, out).map_err(|e| in_row(&row, e))
}

/// A sealed filter row as read back, before verification: the integers as the
/// database holds them, so out-of-range values are caught here rather than in a cast.
pub struct SealedRow {
    pub hour: Hour,
    pub count: i64,
    pub m: i64,
    pub k: i64,
    pub filter: Vec<u8>,
    /// The length of the hour's stored key blob.
    pub key_bytes: i64,
    /// `None` for a row written before checksums existed (PostgreSQL only).
    pub checksum: Option<i64>,
}

impl SealedRow {
    /// Verifies the row: the checksum, `m` and `k` within the wire format's ranges, a
    /// body of the length `m` implies, and `count` equal to the number of stored keys.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] naming the hour and what failed.
    pub fn verify(self) -> Result<SealedHour> {
        let row = format!("the sealed filter of hour {}", self.hour);
        let corrupt = |what: String| StoreError::Corrupt(format!("{row}: {what}"));
        let (count, m, k) = match (
            u64::try_from(self.count),
            u32::try_from(self.m),
            u32::try_from(self.k),
        ) {
            (Ok(count), Ok(m), Ok(k)) => (count, m, k),
            _ => {
                return Err(corrupt(format!(
                    "count {}, m {}, k {} out of range",
                    self.count, self.m, self.k
                )))
            }
        };
        let sealed = SealedHour {
            hour: self.hour,
            count,
            m,
            k,
            filter: self.filter,
        };
        check_sum(&row, self.checksum, filter_checksum(&sealed))?;
        let params = Params::new(m.into(), k.into()).map_err(|e| corrupt(e.to_string()))?;
        if sealed.filter.len() != params.byte_len() {
            return Err(corrupt(format!(
                "a body of {} bytes where m = {m} needs {}",
                sealed.filter.len(),
                params.byte_len()
            )));
        }
        check_count(&row, self.count, self.key_bytes)?;
        Ok(sealed)
    }
}

/// Verifies a sealed hour's distinct keys as read back against the hour's count and
/// checksum, and decodes them.
///
/// # Errors
/// [`StoreError::Corrupt`] naming the hour and what failed.
pub fn verify_sealed_keys(
    hour: Hour,
    count: i64,
    blob: &[u8],
    stored: Option<i64>,
) -> Result<Vec<Key>> {
    read_sealed_keys(hour, count, blob.len(), stored, |at, piece| {
        piece.copy_from_slice(&blob[at..at + piece.len()]);
        Ok(())
    })
}

/// As [`verify_sealed_keys`], for a stored blob of `len` bytes that `read_at(offset,
/// piece)` reads a piece at a time: each piece is checksummed and decoded while it is in
/// cache, and the blob is never whole in memory beside its keys (SQLite's incremental
/// blob reads; a 58.7M-key union reads 470 MB of them).
///
/// # Errors
/// [`StoreError::Corrupt`] naming the hour and what failed (the checksum first, as
/// [`verify_sealed_keys`]); what `read_at` fails with.
pub fn read_sealed_keys(
    hour: Hour,
    count: i64,
    len: usize,
    stored: Option<i64>,
    mut read_at: impl FnMut(usize, &mut [u8]) -> Result<()>,
) -> Result<Vec<Key>> {
    /// Bytes a piece: 8 KiB of keys, a whole number of them.
    const PIECE: usize = 8 * 1024;
    let row = format!("the sealed keys of hour {hour}");
    let mut crc = checksum_start(b'k', hour);
    let mut keys = Vec::with_capacity(len / 8);
    let mut piece = vec![0; PIECE.min(len)];
    let mut decoded = Ok(());
    let mut at = 0;
    while at < len {
        let piece = &mut piece[..PIECE.min(len - at)];
        read_at(at, piece)?;
        crc.update(piece);
        if decoded.is_ok() {
            decoded = blob_to_keys(piece, &mut keys);
        }
        at += piece.len();
    }
    check_sum(&row, stored, i64::from(crc.finalize()))?;
    check_count(&row, count, i64::try_from(len).unwrap_or(i64::MAX))?;
    decoded.map_err(|e| in_row(&row, e))?;
    Ok(keys)
}

/// Checks a sealed hour's count against the length of its stored keys (8 bytes each),
/// which it always equals as written; returns the count.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `row` when they disagree.
pub fn check_count(row: &str, count: i64, key_bytes: i64) -> Result<u64> {
    match u64::try_from(count) {
        Ok(n) if count.checked_mul(8) == Some(key_bytes) => Ok(n),
        _ => Err(StoreError::Corrupt(format!(
            "{row}: count {count} but {key_bytes} bytes of keys"
        ))),
    }
}

/// A corruption error with the row it was found in prefixed.
fn in_row(row: &str, e: StoreError) -> StoreError {
    match e {
        StoreError::Corrupt(what) => StoreError::Corrupt(format!("{row}: {what}")),
        other => other,
    }
}

/// Keys as stored: 8 bytes each, `h1` then `h2`, big-endian.
pub fn keys_to_blob(keys: &[Key]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(keys.len() * 8);
    for key in keys {
        blob.extend_from_slice(&key.to_bytes());
    }
    blob
}

/// Inverse of [`keys_to_blob`]; a trailing partial key (corruption) is an error.
pub fn blob_to_keys(blob: &[u8], out: &mut Vec<Key>) -> Result<()> {
    if blob.len() % 8 != 0 {
        return Err(StoreError::Corrupt(format!(
            "key blob of {} bytes is not a multiple of 8",
            blob.len()
        )));
    }
    out.extend(
        blob.chunks_exact(8)
            .map(|c| Key::from_bytes(c.try_into().expect("chunks of 8"))),
    );
    Ok(())
}

/// Sorts and deduplicates keys: the canonical form of an hour's key set.
pub fn distinct(mut keys: Vec<Key>) -> Vec<Key> {
    keys.sort_unstable();
    keys.dedup();
    keys
}
