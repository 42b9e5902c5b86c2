//! The checksums and the verification of rows read back.

use super::*;
use crate::hour::hour_of;

fn hour() -> Hour {
    hour_of(2008, 9, 3, 13).unwrap()
}

fn sealed() -> SealedHour {
    SealedHour {
        hour: hour(),
        count: 2,
        m: 16,
        k: 3,
        filter: vec![0xa5, 0x5a],
    }
}

#[test]
fn checksums_cover_exactly_the_documented_bytes() {
    let (h, blob) = (hour(), [1u8, 2, 3, 4, 5, 6, 7, 8]);
    let be = h.index().to_be_bytes();
    let expect = |parts: &[&[u8]]| i64::from(crc32fast::hash(&parts.concat()));
    assert_eq!(batch_checksum(h, &blob), expect(&[b"b", &be, &blob]));
    assert_eq!(sealed_keys_checksum(h, &blob), expect(&[b"k", &be, &blob]));
    let s = sealed();
    assert_eq!(
        filter_checksum(&s),
        expect(&[
            b"f",
            &be,
            &2u64.to_be_bytes(),
            &16u32.to_be_bytes(),
            &3u32.to_be_bytes(),
            &[0xa5, 0x5a]
        ])
    );
}

#[test]
fn a_batch_fails_verification_in_another_hour_or_with_a_flipped_bit() {
    let blob = keys_to_blob(&[Key::of("a"), Key::of("b")]);
    let sum = batch_checksum(hour(), &blob);
    let mut keys = Vec::new();
    verify_batch(hour(), 17, &blob, Some(sum), &mut keys).unwrap();
    assert_eq!(keys, vec![Key::of("a"), Key::of("b")]);
    let moved = verify_batch(hour().next(), 17, &blob, Some(sum), &mut Vec::new());
    let mut flipped = blob.clone();
    flipped[3] ^= 0x10;
    let rotten = verify_batch(hour(), 17, &flipped, Some(sum), &mut Vec::new());
    for e in [moved.unwrap_err(), rotten.unwrap_err()] {
        assert!(
            matches!(&e, StoreError::Corrupt(m) if m.starts_with("batch 17 of hour 20") && m.contains("checksum mismatch")),
            "{e}"
        );
    }
}

#[test]
fn a_torn_batch_fails_even_with_a_matching_checksum() {
    let blob = vec![7u8; 12];
    let e = verify_batch(
        hour(),
        3,
        &blob,
        Some(batch_checksum(hour(), &blob)),
        &mut Vec::new(),
    );
    assert!(
        matches!(&e, Err(StoreError::Corrupt(m)) if m.contains("batch 3 of hour 2008-09-03T13:00:00Z") && m.contains("multiple of 8")),
        "{e:?}"
    );
}

#[test]
fn a_batch_written_before_checksums_is_accepted_unverified() {
    let mut keys = Vec::new();
    verify_batch(hour(), 1, &keys_to_blob(&[Key::of("a")]), None, &mut keys).unwrap();
    assert_eq!(keys, vec![Key::of("a")]);
}

fn row(s: &SealedHour, key_bytes: i64, checksum: Option<i64>) -> SealedRow {
    SealedRow {
        hour: s.hour,
        count: s.count as i64,
        m: s.m.into(),
        k: s.k.into(),
        filter: s.filter.clone(),
        key_bytes,
        checksum,
    }
}

#[test]
fn a_sealed_row_is_verified_whole() {
    let s = sealed();
    let sum = Some(filter_checksum(&s));
    assert_eq!(row(&s, 16, sum).verify().unwrap(), s);
    let mut flipped = row(&s, 16, sum);
    flipped.filter[1] ^= 1;
    let mut shrunk = row(&s, 16, sum);
    shrunk.count = 1;
    let failures = [
        (flipped, "checksum mismatch"),
        (shrunk, "checksum mismatch"),
        (row(&s, 8, sum), "count 2 but 8 bytes of keys"),
    ];
    for (bad, why) in failures {
        let e = bad.verify().unwrap_err();
        assert!(
            matches!(&e, StoreError::Corrupt(m) if m.contains("sealed filter of hour 2008-09-03T13:00:00Z") && m.contains(why)),
            "{e}"
        );
    }
}

#[test]
fn a_sealed_row_with_impossible_parameters_fails_even_with_a_matching_checksum() {
    let wrong_length = SealedHour {
        filter: vec![0; 3],
        ..sealed()
    };
    let k_too_big = SealedHour { k: 65, ..sealed() };
    for s in [wrong_length, k_too_big] {
        let sum = Some(filter_checksum(&s));
        assert!(matches!(
            row(&s, 16, sum).verify(),
            Err(StoreError::Corrupt(_))
        ));
    }
    let negative = SealedRow {
        m: -8,
        ..row(&sealed(), 16, None)
    };
    assert!(matches!(negative.verify(), Err(StoreError::Corrupt(m)) if m.contains("out of range")));
}

#[test]
fn sealed_keys_must_match_their_count_and_checksum() {
    let blob = keys_to_blob(&[Key::of("a"), Key::of("b")]);
    let sum = Some(sealed_keys_checksum(hour(), &blob));
    assert_eq!(verify_sealed_keys(hour(), 2, &blob, sum).unwrap().len(), 2);
    assert!(
        matches!(verify_sealed_keys(hour(), 3, &blob, sum), Err(StoreError::Corrupt(m)) if m.contains("count 3"))
    );
    assert!(
        matches!(verify_sealed_keys(hour(), 2, &blob[..15], sum), Err(StoreError::Corrupt(m)) if m.contains("checksum mismatch"))
    );
}

#[test]
fn sealed_keys_read_in_pieces_are_every_key_and_every_byte_checked() {
    // Several pieces, the last a partial one.
    let keys: Vec<Key> = (0..2_500).map(|i| Key::of(&format!("id-{i}"))).collect();
    let mut blob = keys_to_blob(&keys);
    let sum = Some(sealed_keys_checksum(hour(), &blob));
    let mut reads = Vec::new();
    let read = |blob: &[u8], reads: &mut Vec<(usize, usize)>| {
        read_sealed_keys(hour(), 2_500, blob.len(), sum, |at, piece| {
            reads.push((at, piece.len()));
            piece.copy_from_slice(&blob[at..at + piece.len()]);
            Ok(())
        })
    };
    assert_eq!(read(&blob, &mut reads).unwrap(), keys);
    assert!(reads.len() > 2, "{reads:?}");
    assert!(reads.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
    // One bit of the last piece flipped: refused, though every piece decodes.
    let last = blob.len() - 3;
    blob[last] ^= 1;
    assert!(
        matches!(read(&blob, &mut reads), Err(StoreError::Corrupt(m)) if m.contains("checksum mismatch") && m.contains("sealed keys"))
    );
    // What the reader fails with is the answer, not a partial list.
    let failing = read_sealed_keys(hour(), 2_500, blob.len(), sum, |_, _| {
        Err(StoreError::Unavailable {
            what: "the disk".into(),
            source: None,
        })
    });
    assert!(matches!(failing, Err(StoreError::Unavailable { .. })));
}
