//! A closed hour read by the page (`.pages`, PROTOCOL.md section 12, "Huge hours by the
//! page"): the body's header, then the slot of each page the caller's keys fall in, one
//! `Range` request each, every page verified alone with a key. What was read answers
//! exactly as the whole body would; a key whose page was not read answers "maybe", so
//! no answer is ever a false negative.

use super::fetch::check;
use super::{Client, ClientError, Result};
use crate::bloom::pages::{signed_page, HEADER_LEN};
use crate::bloom::{Key, Page, PagesHeader};
use crate::chain::{BodyForm, KeyId};
use crate::hour::Hour;
use reqwest::header;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

/// The pages of one hour a client read: each answers for its keys.
#[derive(Debug, Clone)]
pub struct PagesRead {
    /// The body's header.
    pub header: PagesHeader,
    pages: HashMap<u32, Page>,
}

impl PagesRead {
    /// Whether `key` may have changed in the hour: its page's answer, or `true` when its
    /// page was not read (never a false negative).
    pub fn contains(&self, key: Key) -> bool {
        self.pages
            .get(&self.header.page_of(key))
            .is_none_or(|page| page.contains(key))
    }

    /// Pages read.
    pub fn read(&self) -> usize {
        self.pages.len()
    }

    /// The false-positive rate of a page's answer.
    pub fn fpp(&self) -> f64 {
        self.header.grade.fpp()
    }
}

impl Client {
    /// Reads the pages of a closed hour that `keys` fall in, at `fpp` or under (the
    /// server's next stricter grade; its target without), with `Range` requests: the
    /// header, then each page (and, with [`super::ClientBuilder::pages_cover`] of `N`,
    /// `N - 1` other pages chosen at random beside each, so that the pages read do not
    /// name the keys'). With a key, the header must be the hour's and signed by the key
    /// listed for it, and every page verifies alone.
    ///
    /// # Errors
    /// [`ClientError::Status`] 404 from a server without the paged form, 406 for the
    /// open hour; [`ClientError::Unsigned`] for unsigned pages with a key;
    /// [`ClientError::Unverified`] for a page that does not verify; a malformed body or
    /// a server that does not answer `Range` with the bytes asked is a protocol error.
    pub async fn pages(&self, hour: Hour, fpp: Option<f64>, keys: &[Key]) -> Result<PagesRead> {
        let mut path = format!("{}.pages", hour.path());
        if let Some(p) = fpp {
            path.push_str(&format!("?fpp={p:e}"));
        }
        let head = self.range(&path, 0..HEADER_LEN as u64).await?;
        let header =
            PagesHeader::parse(&head).map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
        if header.hour != hour.index() {
            return Err(ClientError::Protocol(format!(
                "{path}: its header is of hour index {}, not {}",
                header.hour,
                hour.index()
            )));
        }
        let label = "a page of its paged form (.pages)";
        let key = match self.keys(Some(hour)).await? {
            None => None,
            Some(_) if !header.signed() => return Err(ClientError::Unsigned { hour, form: label }),
            Some(keys) => Some(keys.key_for(hour, Some(KeyId(header.key_id)))?),
        };
        let mut wanted: BTreeSet<u32> = keys.iter().map(|&k| header.page_of(k)).collect();
        if self.pages_cover > 1 {
            wanted = cover(&wanted, header.pages, self.pages_cover);
        }
        let bytes = header.to_bytes();
        let mut pages = HashMap::with_capacity(wanted.len());
        for p in wanted {
            let slot = self.range(&path, header.slot_range(p)).await?;
            let page = Page::parse(&header, p, &slot)
                .map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
            if let Some(key) = &key {
                let name = format!("{} (page {p} of its paged form)", hour.rfc3339());
                key.verify_body(
                    BodyForm::Page,
                    &name,
                    hour.index(),
                    &header.chain_header,
                    &signed_page(&bytes, p, &slot),
                    &page.signature,
                )?;
            }
            pages.insert(p, page);
        }
        self.counters
            .pages
            .fetch_add(pages.len() as u64, Ordering::Relaxed);
        Ok(PagesRead { header, pages })
    }

    /// Bytes `range` of `path`, by `Range` (a `206` of exactly those bytes, or a `200`
    /// of the whole body, cut here).
    async fn range(&self, path: &str, range: std::ops::Range<u64>) -> Result<Vec<u8>> {
        let asked = format!("bytes={}-{}", range.start, range.end - 1);
        let response = self.get(path).header(header::RANGE, asked);
        let response = check(self.send(response).await?).await?;
        let whole = response.status() == reqwest::StatusCode::OK;
        let body = self.body(response, None).await?;
        let got = if whole {
            body.get(range.start as usize..range.end as usize)
                .map(<[u8]>::to_vec)
        } else {
            (body.len() as u64 == range.end - range.start).then_some(body)
        };
        got.ok_or_else(|| {
            ClientError::Protocol(format!(
                "{path}: asked for bytes {}..{}, got other bytes",
                range.start, range.end
            ))
        })
    }
}

/// `wanted` with `cover - 1` other pages of `pages` beside each, chosen at random.
fn cover(wanted: &BTreeSet<u32>, pages: u32, cover: u32) -> BTreeSet<u32> {
    let mut out = wanted.clone();
    let target = (wanted.len() as u64 * u64::from(cover)).min(u64::from(pages)) as usize;
    // The standard library's per-process random keys: a fresh hasher state each time.
    let random = || {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    while out.len() < target {
        out.insert((random() % u64::from(pages)) as u32);
    }
    out
}
