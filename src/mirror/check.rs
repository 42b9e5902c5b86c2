//! A static mirror directory verified offline against the key a client holds
//! (PROTOCOL.md section 13; `bloomcast verify --dir`, `bloomcast inspect --pubkey FILE`
//! of a file in one): its key list walked from that key, its one-entry chain pages, every
//! file of each hour (the v1 forms and their `.gz` copies against the chain's digest, the
//! derived forms by their `.sig` sidecars over the hour's chain header) and its
//! `checkpoint.json`. A derived form without a sidecar is reported unverified, never
//! passed; a document's count must fit its bits and equal the `n` of the hour's signed
//! ribbons.

use super::trust::{self, TrustError, CHECKPOINT_FILE};
use super::{chain_path, Files, WELL_KNOWN};
use crate::chain::{Checkpoint, Hash, Trusted};
use crate::client::ChainEntry;
use crate::hour::Hour;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A mirror directory and the keys trusted in it.
#[derive(Debug)]
pub struct MirrorDir {
    files: Files,
    trusted: Trusted,
    /// Hour index -> header, of the entries verified.
    headers: std::sync::Mutex<BTreeMap<i64, Hash>>,
}

/// What [`MirrorDir::verify`] checked.
#[derive(Debug, Clone, Default)]
pub struct DirReport {
    /// Hours whose chain entry and every file verified, oldest first.
    pub hours: Vec<Hour>,
    /// The newest verified header.
    pub header: Option<Hash>,
    /// Files that could not be verified (nothing signed came with them), as lines.
    pub unverified: Vec<String>,
    /// The mirror's checkpoint, verified; `None` when it holds none.
    pub checkpoint: Option<Checkpoint>,
}

impl MirrorDir {
    /// The mirror at `root`, its key list (`.well-known/bloomcast.json`; none: the key
    /// given alone) trusted from `anchor`.
    ///
    /// # Errors
    /// An unreadable or malformed document, a list that does not name `anchor`.
    pub fn open(root: PathBuf, anchor: &crate::chain::PublicKey) -> Result<MirrorDir, TrustError> {
        let files = Files::new(root);
        let doc = match files
            .read(WELL_KNOWN)
            .map_err(|e| TrustError::Refused(e.to_string()))?
        {
            Some(bytes) => Some(serde_json::from_slice(&bytes).map_err(|e| {
                TrustError::Refused(format!(
                    "{}: not JSON ({e})",
                    files.path_of(WELL_KNOWN).display()
                ))
            })?),
            None => None,
        };
        let trusted = trust::trusted_keys(doc.as_ref(), anchor)?;
        Ok(MirrorDir {
            files,
            trusted,
            headers: Default::default(),
        })
    }

    pub fn trusted(&self) -> &Trusted {
        &self.trusted
    }

    fn read(&self, url_path: &str) -> Result<Option<Vec<u8>>, TrustError> {
        self.files
            .read(url_path)
            .map_err(|e| TrustError::Refused(e.to_string()))
    }

    fn shown(&self, url_path: &str) -> String {
        self.files.path_of(url_path).display().to_string()
    }

    /// The chain from `since` to the newest hour the mirror holds, every entry verified
    /// and linked to the one before, page after page (a mirror's pages hold one entry
    /// and no `Link`: the next is the page of the hour after the last entry).
    ///
    /// # Errors
    /// No page for `since`; the first entry that fails, naming its hour.
    pub fn chain(&self, since: Hour) -> Result<Vec<ChainEntry>, TrustError> {
        let mut entries: Vec<ChainEntry> = Vec::new();
        let mut last: Option<(Hour, Hash)> = None;
        let mut at = since;
        loop {
            let path = chain_path(at);
            let Some(bytes) = self.read(&path)? else {
                if entries.is_empty() {
                    return Err(TrustError::Refused(format!(
                        "{}: no chain page for {} (the mirror holds no sealed hour from there)",
                        self.shown(&path),
                        at.rfc3339()
                    )));
                }
                break;
            };
            let page = trust::parse_page(&self.shown(&path), &bytes)?;
            let Some(newest) = page.last().map(|e| e.hour) else {
                break;
            };
            for entry in page {
                if entry.hour < at {
                    return Err(TrustError::Refused(format!(
                        "{}: lists {}, before the hour it is the page of",
                        self.shown(&path),
                        entry.hour.rfc3339()
                    )));
                }
                let header = trust::verify_entry(&self.trusted, &entry, last)?;
                self.headers
                    .lock()
                    .expect("not poisoned")
                    .insert(entry.hour.index(), header);
                last = Some((entry.hour, header));
                entries.push(entry);
            }
            at = newest.next();
        }
        Ok(entries)
    }

    /// The verified chain entry of `hour` (its page's first entry must be that hour),
    /// `None` when the mirror holds no page for it or its page lists a later hour.
    ///
    /// # Errors
    /// The entry fails to verify.
    pub fn entry(&self, hour: Hour) -> Result<Option<ChainEntry>, TrustError> {
        let path = chain_path(hour);
        let Some(bytes) = self.read(&path)? else {
            return Ok(None);
        };
        let page = trust::parse_page(&self.shown(&path), &bytes)?;
        let Some(entry) = page.into_iter().next().filter(|e| e.hour == hour) else {
            return Ok(None);
        };
        let header = trust::verify_entry(&self.trusted, &entry, None)?;
        self.headers
            .lock()
            .expect("not poisoned")
            .insert(hour.index(), header);
        Ok(Some(entry))
    }

    /// Checks every file the mirror holds for the sealed hour of the verified `entry`
    /// ([`trust::check_hour_files`]). Returns the files left unverified (a derived form
    /// without its sidecar), as lines.
    ///
    /// # Errors
    /// The first file that fails, naming it and what failed.
    pub fn check_hour(&self, entry: &ChainEntry) -> Result<Vec<String>, TrustError> {
        trust::check_hour_files(
            Some(&self.trusted),
            entry,
            &|path| self.read(path),
            &|path| self.shown(path),
        )
    }

    /// The mirror's `checkpoint.json`, verified, and its header checked against the
    /// chain's for its hour when that hour was verified; `None` when it holds none.
    ///
    /// # Errors
    /// A checkpoint that does not verify, or names another header.
    pub fn checkpoint(&self) -> Result<Option<Checkpoint>, TrustError> {
        let Some(bytes) = self.read(CHECKPOINT_FILE)? else {
            return Ok(None);
        };
        let checkpoint = trust::verify_checkpoint(&self.trusted, &bytes)?;
        let known = self
            .headers
            .lock()
            .expect("not poisoned")
            .get(&checkpoint.hour.index())
            .copied();
        if known.is_some_and(|h| h != checkpoint.header) {
            return Err(TrustError::Refused(format!(
                "hour {} (checkpoint): the checkpoint's header is not the chain's for that hour",
                checkpoint.hour.rfc3339()
            )));
        }
        Ok(Some(checkpoint))
    }

    /// Verifies the mirror from `since` on: the chain, every file of each hour, the
    /// checkpoint.
    ///
    /// # Errors
    /// The first thing that fails, named.
    pub fn verify(&self, since: Hour) -> Result<DirReport, TrustError> {
        let entries = self.chain(since)?;
        let mut report = DirReport {
            header: entries.last().map(|e| e.header),
            ..DirReport::default()
        };
        for entry in &entries {
            report.unverified.extend(self.check_hour(entry)?);
            report.hours.push(entry.hour);
        }
        report.checkpoint = self.checkpoint()?;
        Ok(report)
    }

    /// The newest hour the mirror's index names `current`, if it has an index.
    pub fn newest(&self) -> Option<Hour> {
        let bytes = self.read(super::INDEX_FILE).ok()??;
        let index: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        Hour::parse_flexible(index["current"]["hour"].as_str()?).ok()
    }
}
