//! The paged form (`.pages`, `BCP1`): a sealed hour's keys cut into pages of about
//! [`PAGE_KEYS`] keys each by the low 56 bits of their key, each page a small version 2
//! body of its own, laid out in slots of one size so that a client holding a few IDs
//! reads only their pages, by HTTP `Range`, from any cache or file server. Each page
//! carries its own Ed25519 signature (docs/PROTOCOL.md section 12, "Huge hours by the
//! page"), so a page read alone is verified alone.
//!
//! ```text
//! 0   4   magic "BCP1"
//! 4   1   k       (the version 2 grade every page is built at)
//! 5   1   split
//! 6   2   zero
//! 8   8   hour index, big-endian (hours since 1970-01-01T00Z)
//! 16  32  the hour's chain header (zero when unsigned)
//! 48  8   the key id of the signing key (zero when unsigned)
//! 56  8   n, distinct keys, big-endian
//! 64  4   pages P, big-endian (at least 1)
//! 68  4   slot bytes S, big-endian (at least 66)
//! 72      slot p at 72 + p * S, for p in 0..P:
//!         0   64  the page's signature (zero when unsigned)
//!         64  2   L, big-endian: bytes of the page's body
//!         66  L   the page's keys as a version 2 body (BCR2) at the header's grade
//!         66+L    zero to S
//! ```
//!
//! A key's page is `floor((key mod 2^56) * P / 2^56)`; it answers as that page's body.

use super::ribbon2::Grade;
use super::{distinct_keys, FilterError, Key, KeyParts, PartsError, Ribbon2};
use std::ops::Range;

/// Keys a page holds on average: `P = max(1, ceil(n / PAGE_KEYS))`. A page costs its
/// slot's fixed bytes (signature, length, its body's header) and the padding up to the
/// fullest page, so fewer keys a page cost more signatures and more of those bytes per
/// key, more keys a page more bytes per ID read (docs/BENCHMARKS.md, "Huge hours").
pub const PAGE_KEYS: u64 = 64;
/// Bytes of the body's header, before the first slot.
pub const HEADER_LEN: usize = 72;
/// Bytes of a slot before its page's body: the signature and the body's length.
pub const SLOT_PREFIX: usize = 66;
/// The magic of the paged form.
pub const MAGIC: [u8; 4] = *b"BCP1";

/// The paged body's header: what a client reads first (bytes `0..HEADER_LEN`) to know
/// where each page is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagesHeader {
    /// The version 2 grade every page is built at.
    pub grade: Grade,
    /// The hour's index (hours since the Unix epoch).
    pub hour: i64,
    /// The hour's chain header, which every page's signature covers (zero unsigned).
    pub chain_header: [u8; 32],
    /// The id of the key that signed the pages (zero unsigned).
    pub key_id: [u8; 8],
    /// Distinct keys in all pages.
    pub n: u64,
    /// Pages, at least 1.
    pub pages: u32,
    /// Bytes of each slot.
    pub slot: u32,
}

impl PagesHeader {
    /// Reads the header from the first [`HEADER_LEN`] bytes of a body.
    ///
    /// # Errors
    /// [`FilterError::BadRibbon`] naming the first field wrong.
    pub fn parse(bytes: &[u8]) -> Result<PagesHeader, FilterError> {
        let bad = |what: String| Err(FilterError::BadRibbon(what));
        if bytes.len() < HEADER_LEN {
            return bad(format!("{} bytes is shorter than the header", bytes.len()));
        }
        if bytes[0..4] != MAGIC {
            return bad("magic is not \"BCP1\"".into());
        }
        let (k, split) = (u32::from(bytes[4]), u32::from(bytes[5]));
        if k > super::MAX_K || (k == super::MAX_K && split != 0) || bytes[6..8] != [0, 0] {
            return bad(format!("k = {k}, split = {split}: no such grade"));
        }
        let be8 = |at: usize| <[u8; 8]>::try_from(&bytes[at..at + 8]).expect("8 bytes");
        let be4 = |at: usize| <[u8; 4]>::try_from(&bytes[at..at + 4]).expect("4 bytes");
        let header = PagesHeader {
            grade: Grade { k, split },
            hour: i64::from_be_bytes(be8(8)),
            chain_header: bytes[16..48].try_into().expect("32 bytes"),
            key_id: be8(48),
            n: u64::from_be_bytes(be8(56)),
            pages: u32::from_be_bytes(be4(64)),
            slot: u32::from_be_bytes(be4(68)),
        };
        if header.pages == 0 || (header.slot as usize) < SLOT_PREFIX {
            return bad(format!(
                "{} pages of {} bytes: at least one page of {SLOT_PREFIX}",
                header.pages, header.slot
            ));
        }
        Ok(header)
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = self.grade.k as u8;
        out[5] = self.grade.split as u8;
        out[8..16].copy_from_slice(&self.hour.to_be_bytes());
        out[16..48].copy_from_slice(&self.chain_header);
        out[48..56].copy_from_slice(&self.key_id);
        out[56..64].copy_from_slice(&self.n.to_be_bytes());
        out[64..68].copy_from_slice(&self.pages.to_be_bytes());
        out[68..72].copy_from_slice(&self.slot.to_be_bytes());
        out
    }

    /// The page holding `key`: `floor((key mod 2^56) * P / 2^56)`.
    pub fn page_of(&self, key: Key) -> u32 {
        page_of(key, self.pages)
    }

    /// The bytes of page `p`'s slot within the body.
    pub fn slot_range(&self, p: u32) -> Range<u64> {
        let start = HEADER_LEN as u64 + u64::from(p) * u64::from(self.slot);
        start..start + u64::from(self.slot)
    }

    /// Bytes of the whole body.
    pub fn body_len(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.pages) * u64::from(self.slot)
    }

    /// Whether the pages carry signatures (a key id is set).
    pub fn signed(&self) -> bool {
        self.key_id != [0; 8]
    }
}

fn page_of(key: Key, pages: u32) -> u32 {
    let low = u128::from(key.to_u64() & ((1u64 << 56) - 1));
    ((low * u128::from(pages)) >> 56) as u32
}

/// Pages of `n` distinct keys.
pub fn pages_for(n: u64) -> u32 {
    n.div_ceil(PAGE_KEYS).clamp(1, u64::from(u32::MAX)) as u32
}

/// One page read from its slot: its signature and its filter.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page's number.
    pub index: u32,
    /// Its signature (zero when unsigned).
    pub signature: [u8; 64],
    filter: Ribbon2,
}

impl Page {
    /// Reads page `index`'s slot (its [`PagesHeader::slot_range`] bytes of a body with
    /// `header`), checking its length, its padding and its body's grade.
    ///
    /// # Errors
    /// [`FilterError::BadRibbon`] naming the page and what is wrong.
    pub fn parse(header: &PagesHeader, index: u32, slot: &[u8]) -> Result<Page, FilterError> {
        let bad = |what: String| Err(FilterError::BadRibbon(format!("page {index}: {what}")));
        if index >= header.pages || slot.len() != header.slot as usize {
            return bad(format!(
                "{} bytes where the header says page {index} of {} has {}",
                slot.len(),
                header.pages,
                header.slot
            ));
        }
        let len = usize::from(u16::from_be_bytes([slot[64], slot[65]]));
        let Some(body) = slot.get(SLOT_PREFIX..SLOT_PREFIX + len) else {
            return bad(format!("{len} body bytes do not fit in its slot"));
        };
        if slot[SLOT_PREFIX + len..].iter().any(|&b| b != 0) {
            return bad("padding is not zero".into());
        }
        let filter = Ribbon2::from_bytes(body)?;
        if filter.grade() != header.grade {
            return bad(format!(
                "grade {:?} where the header says {:?}",
                filter.grade(),
                header.grade
            ));
        }
        Ok(Page {
            index,
            signature: slot[..64].try_into().expect("64 bytes"),
            filter,
        })
    }

    /// Whether `key` (of this page) may be in the hour.
    pub fn contains(&self, key: Key) -> bool {
        self.filter.contains(key)
    }

    /// Distinct keys of the page.
    pub fn n(&self) -> u32 {
        self.filter.n()
    }
}

/// What page `index`'s signature is over, as an exact body's is over its body
/// ([`crate::chain::BodyForm::Page`]): the body's header, the page's number (4 bytes,
/// big-endian) and its slot after the signature (length, body and padding).
pub fn signed_page(header: &[u8; HEADER_LEN], index: u32, slot: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 4 + slot.len());
    out.extend_from_slice(header);
    out.extend_from_slice(&index.to_be_bytes());
    out.extend_from_slice(&slot[64.min(slot.len())..]);
    out
}

/// A whole paged body, as built or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pages {
    header: PagesHeader,
    bytes: Vec<u8>,
}

impl Pages {
    /// Builds the pages of the distinct keys of every part at `grade`, for hour
    /// `hour`, unsigned. Parts come as for [`Ribbon2::build_in_parts`]: in the order of
    /// the keys' low 56 bits, or as one part. Deterministic: the same keys give the
    /// same bytes.
    ///
    /// # Errors
    /// A page too large for a slot (more than 65,535 body bytes), or a part that could
    /// not be read.
    pub fn build_in_parts<P: KeyParts + ?Sized>(
        parts: &mut P,
        grade: Grade,
        hour: i64,
    ) -> Result<Pages, PartsError<P::Error>> {
        let mut n = 0u64;
        parts
            .for_each_part(&mut |part| n += distinct_keys(part).len() as u64)
            .map_err(PartsError::Read)?;
        let pages = pages_for(n);
        // Each page's body, end to end, and where each ends.
        let (mut bodies, mut ends) = (Vec::new(), Vec::with_capacity(pages as usize));
        let mut open: (u32, Vec<Key>) = (0, Vec::new());
        let mut failed = None;
        let mut finish =
            |page: &mut (u32, Vec<Key>), bodies: &mut Vec<u8>, ends: &mut Vec<usize>, upto: u32| {
                // Pages before `upto` are complete: the open one, then any empty ones.
                while page.0 < upto {
                    match Ribbon2::build(&page.1, grade) {
                        Ok(filter) => bodies.extend_from_slice(&filter.to_bytes()),
                        Err(e) => failed = failed.take().or(Some(e)),
                    }
                    ends.push(bodies.len());
                    page.1.clear();
                    page.0 += 1;
                }
            };
        parts
            .for_each_part(&mut |part| {
                let mut keys = distinct_keys(part);
                keys.sort_unstable_by_key(|k| k.to_u64().rotate_left(8));
                for key in keys {
                    let p = page_of(key, pages);
                    finish(&mut open, &mut bodies, &mut ends, p);
                    open.1.push(key);
                }
            })
            .map_err(PartsError::Read)?;
        finish(&mut open, &mut bodies, &mut ends, pages);
        if let Some(e) = failed {
            return Err(PartsError::Filter(e));
        }
        let longest = ends
            .iter()
            .scan(0, |start, &end| {
                let len = end - *start;
                *start = end;
                Some(len)
            })
            .max()
            .unwrap_or(0);
        if longest > usize::from(u16::MAX) {
            return Err(PartsError::Filter(FilterError::BadDocument(format!(
                "a page of {longest} bytes does not fit in a slot"
            ))));
        }
        let header = PagesHeader {
            grade,
            hour,
            chain_header: [0; 32],
            key_id: [0; 8],
            n,
            pages,
            slot: (SLOT_PREFIX + longest) as u32,
        };
        let mut bytes = Vec::with_capacity(header.body_len() as usize);
        bytes.extend_from_slice(&header.to_bytes());
        let mut start = 0;
        for end in ends {
            let slot = bytes.len();
            bytes.resize(slot + 64, 0);
            bytes.extend_from_slice(&((end - start) as u16).to_be_bytes());
            bytes.extend_from_slice(&bodies[start..end]);
            bytes.resize(slot + header.slot as usize, 0);
            start = end;
        }
        Ok(Pages { header, bytes })
    }

    /// [`Pages::build_in_parts`] of one set of keys.
    ///
    /// # Errors
    /// A page too large for a slot.
    pub fn build(keys: &[Key], grade: Grade, hour: i64) -> Result<Pages, FilterError> {
        Pages::build_in_parts(&mut super::union::Held(&[keys]), grade, hour)
            .map_err(PartsError::into_filter)
    }

    /// Signs every page: writes the chain header and key id into the header, then
    /// each page's signature, by `sign` of [`signed_page`]'s bytes.
    pub fn sign(
        &mut self,
        chain_header: [u8; 32],
        key_id: [u8; 8],
        mut sign: impl FnMut(&[u8]) -> [u8; 64],
    ) {
        self.header.chain_header = chain_header;
        self.header.key_id = key_id;
        let header = self.header.to_bytes();
        self.bytes[..HEADER_LEN].copy_from_slice(&header);
        for p in 0..self.header.pages {
            let range = self.header.slot_range(p);
            let slot = &mut self.bytes[range.start as usize..range.end as usize];
            let signature = sign(&signed_page(&header, p, slot));
            slot[..64].copy_from_slice(&signature);
        }
    }

    /// Reads a whole body back, checking its header and every page.
    ///
    /// # Errors
    /// [`FilterError::BadRibbon`] naming the first thing wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<Pages, FilterError> {
        let header = PagesHeader::parse(bytes)?;
        if bytes.len() as u64 != header.body_len() {
            return Err(FilterError::BadRibbon(format!(
                "{} bytes where the header says {}",
                bytes.len(),
                header.body_len()
            )));
        }
        let mut n = 0u64;
        for p in 0..header.pages {
            n += u64::from(Page::parse(&header, p, &bytes[slot(&header, p)])?.n());
        }
        if n != header.n {
            return Err(FilterError::BadRibbon(format!(
                "pages hold {n} keys where the header says {}",
                header.n
            )));
        }
        Ok(Pages {
            header,
            bytes: bytes.to_vec(),
        })
    }

    /// The header.
    pub fn header(&self) -> &PagesHeader {
        &self.header
    }

    /// The body's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The body's bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Page `p`, read from its slot.
    ///
    /// # Errors
    /// As [`Page::parse`] (never for a body built or read whole).
    pub fn page(&self, p: u32) -> Result<Page, FilterError> {
        Page::parse(&self.header, p, &self.bytes[slot(&self.header, p)])
    }

    /// Whether `key` may be in the hour: the answer of its page.
    pub fn contains(&self, key: Key) -> bool {
        self.page(self.header.page_of(key))
            .is_ok_and(|page| page.contains(key))
    }

    /// How many of `keys` answer "no", in any order: each page they fall in read once
    /// (where [`Pages::contains`] reads its page for every key).
    pub fn count_missing(&self, keys: &[Key]) -> u64 {
        let mut by_page: Vec<(u32, Key)> =
            keys.iter().map(|&k| (self.header.page_of(k), k)).collect();
        by_page.sort_unstable_by_key(|&(p, _)| p);
        let mut missing = 0;
        let mut read: Option<(u32, Option<Page>)> = None;
        for (p, key) in by_page {
            if read.as_ref().is_none_or(|(at, _)| *at != p) {
                read = Some((p, self.page(p).ok()));
            }
            let page = read.as_ref().and_then(|(_, page)| page.as_ref());
            missing += u64::from(!page.is_some_and(|page| page.contains(key)));
        }
        missing
    }

    /// The body bytes expected for `n` distinct keys at `grade`, before fetching:
    /// the header and `P` slots of [`Pages::predicted_slot_bytes`].
    pub fn predicted_bytes(n: u64, grade: Grade) -> u64 {
        HEADER_LEN as u64 + u64::from(pages_for(n)) * Pages::predicted_slot_bytes(n, grade)
    }

    /// The slot bytes expected for `n` distinct keys at `grade`: the fullest of `P`
    /// pages, whose key counts are near Poisson of mean `n / P`, is taken as the mean
    /// and five of its standard deviations, with the slot's own bytes and its body's
    /// header. An estimate for choosing (within about 10% for a million keys and
    /// more); the header read first gives the real size.
    pub fn predicted_slot_bytes(n: u64, grade: Grade) -> u64 {
        let pages = pages_for(n);
        let mean = n as f64 / f64::from(pages);
        let fullest = if n == 0 {
            0.0
        } else {
            mean + 5.0 * mean.sqrt() + 2.0
        };
        let solution = (fullest * grade.bits_per_key() / 8.0).ceil() as u64;
        // Magic, grade, n, two shard counts, two shards' m and seed.
        SLOT_PREFIX as u64 + 13 + solution
    }
}

fn slot(header: &PagesHeader, p: u32) -> Range<usize> {
    let range = header.slot_range(p);
    range.start as usize..range.end as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u64, tag: &str) -> Vec<Key> {
        (0..n).map(|i| Key::of(&format!("{tag}:{i}"))).collect()
    }

    #[test]
    fn every_key_built_in_answers_yes_and_others_at_the_grade() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let members = keys(20_000, "user");
        let pages = Pages::build(&members, grade, 500_000).unwrap();
        assert_eq!(pages.header().pages, pages_for(20_000));
        assert!(members.iter().all(|&k| pages.contains(k)));
        assert_eq!(pages.count_missing(&members), 0);
        let others = keys(200_000, "other");
        let fp = others.iter().filter(|&&k| pages.contains(k)).count() as f64;
        let rate = fp / others.len() as f64;
        assert!(
            rate < grade.fpp() * 1.25 && rate > grade.fpp() * 0.75,
            "{rate}"
        );
        let answered_no = others.len() as u64 - fp as u64;
        assert_eq!(pages.count_missing(&others), answered_no);
        let back = Pages::from_bytes(pages.as_bytes()).unwrap();
        assert_eq!(back, pages);
    }

    #[test]
    fn parts_in_low_bit_order_give_the_bytes_of_one_set() {
        let grade = Grade::for_fpp(0.001).unwrap();
        let mut all = keys(9_000, "a");
        all.extend(keys(300, "a")); // repeats count once
        let whole = Pages::build(&all, grade, 7).unwrap();
        let mut sorted = all.clone();
        sorted.sort_unstable_by_key(|k| k.to_u64().rotate_left(8));
        struct Two<'a>([&'a [Key]; 2]);
        impl KeyParts for Two<'_> {
            type Error = std::convert::Infallible;
            fn for_each_part(
                &mut self,
                each: &mut dyn FnMut(&[&[Key]]),
            ) -> Result<(), Self::Error> {
                each(&[self.0[0]]);
                each(&[self.0[1]]);
                Ok(())
            }
        }
        // Cut mid-page: the page across the cut is built from both parts' keys.
        sorted.dedup();
        let parts: [&[Key]; 2] = [&sorted[..4_001], &sorted[4_001..]];
        let built = Pages::build_in_parts(&mut Two(parts), grade, 7).unwrap();
        assert_eq!(built, whole);
    }

    #[test]
    fn a_page_read_alone_answers_as_the_whole_body() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let members = keys(5_000, "m");
        let pages = Pages::build(&members, grade, 1).unwrap();
        let header = PagesHeader::parse(&pages.as_bytes()[..HEADER_LEN]).unwrap();
        for id in 0..2_000 {
            let key = Key::of(&format!("probe:{id}"));
            let p = header.page_of(key);
            let range = header.slot_range(p);
            let slot = &pages.as_bytes()[range.start as usize..range.end as usize];
            let page = Page::parse(&header, p, slot).unwrap();
            assert_eq!(page.contains(key), pages.contains(key));
        }
    }

    #[test]
    fn signing_writes_each_page_over_its_own_bytes() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let mut pages = Pages::build(&keys(1_000, "s"), grade, 3).unwrap();
        let mut seen = Vec::new();
        pages.sign([7; 32], [9; 8], |msg| {
            seen.push(msg.to_vec());
            let mut sig = [0u8; 64];
            sig[0] = seen.len() as u8;
            sig
        });
        assert_eq!(seen.len(), pages.header().pages as usize);
        let header = pages.header().to_bytes();
        assert_eq!(&header[16..48], &[7; 32]);
        let page = pages.page(2).unwrap();
        assert_eq!(page.signature[0], 3);
        let range = pages.header().slot_range(2);
        let slot = &pages.as_bytes()[range.start as usize..range.end as usize];
        assert_eq!(seen[2], signed_page(&header, 2, slot));
    }

    #[test]
    fn damaged_bodies_are_refused() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let pages = Pages::build(&keys(500, "d"), grade, 3).unwrap();
        let good = pages.as_bytes().to_vec();
        let mut short = good.clone();
        short.pop();
        assert!(Pages::from_bytes(&short).is_err());
        let mut magic = good.clone();
        magic[0] = b'X';
        assert!(Pages::from_bytes(&magic).is_err());
        let mut padding = good.clone();
        let last = padding.len() - 1;
        padding[last] ^= 1;
        let header = pages.header();
        // The last byte is padding only when the last page is not the fullest.
        let fullest = (0..header.pages)
            .map(|p| pages.page(p).unwrap().n())
            .max()
            .unwrap();
        if pages.page(header.pages - 1).unwrap().n() < fullest {
            assert!(Pages::from_bytes(&padding).is_err());
        }
        let mut count = good;
        count[63] ^= 1;
        assert!(Pages::from_bytes(&count).is_err());
    }

    #[test]
    fn no_keys_is_one_empty_page() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let pages = Pages::build(&[], grade, 3).unwrap();
        assert_eq!(pages.header().pages, 1);
        assert!(!pages.contains(Key::of("x")));
        assert!(Pages::from_bytes(pages.as_bytes()).is_ok());
    }

    #[test]
    fn the_predicted_size_is_near_the_built_one() {
        let grade = Grade::for_fpp(0.01).unwrap();
        let n = 300_000;
        let pages = Pages::build(&keys(n, "p"), grade, 3).unwrap();
        let real = pages.as_bytes().len() as f64;
        let predicted = Pages::predicted_bytes(n, grade) as f64;
        assert!(
            (predicted / real - 1.0).abs() < 0.1,
            "{predicted} vs {real}"
        );
    }
}
