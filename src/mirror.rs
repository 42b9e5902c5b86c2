//! `bloomcast mirror`: a static copy of a server's sealed hours that any file server,
//! object store or CDN serves with no bloomcast process in the path (PROTOCOL.md
//! section 13, docs/DEPLOY.md).
//!
//! A pass lists the chain ([`crate::client::Client::chain`], verified when a public key
//! is given), and writes each sealed hour not mirrored yet in every form with its gzip
//! sibling, the bytes the server sent (checked against their `Repr-Digest` and the
//! chain's digest), then the hour's one-entry chain page last (the server's answer to
//! `?limit=1`, its bytes): that page marks the hour done, so the next pass skips it.
//! The index and the well-known document follow.

mod check;
mod files;
mod hour;
mod same;
pub mod trust;

pub use check::{DirReport, MirrorDir};
pub use files::{FileError, Files, PARTIAL_DIR};
pub use same::same_service;
pub use trust::TrustError;

use crate::chain::PublicKey;
use crate::client::{ChainEntry, Client, ClientError, Index};
use crate::hour::Hour;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Hours fetched at once.
const HOURS_IN_FLIGHT: usize = 4;
/// Hours the mirror's index lists, newest first (as the server's).
const INDEX_HOURS: usize = 24;
/// The well-known document's path.
pub const WELL_KNOWN: &str = "/.well-known/bloomcast.json";
/// The mirror's index, served at `/`.
pub const INDEX_FILE: &str = "/index.json";

/// Why a mirror pass failed.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("cannot write to the mirror directory {}: {}", .0.path.display(), .0.source)]
    NotWritable(#[source] FileError),
    #[error("{} holds a mirror of another service ({why}); refusing to write over it", dir.display())]
    OtherService { dir: PathBuf, why: String },
    #[error("cannot write the mirror: {0}")]
    File(#[from] FileError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("cannot reach {url}: {source}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url}: {detail}")]
    Protocol { url: String, detail: String },
    /// What the server sent does not verify against the key given (its key list, its
    /// chain, its checkpoint): nothing more is written.
    #[error("{0}")]
    Trust(#[from] TrustError),
    /// A file of the hour does not verify: nothing is written for the hour.
    #[error("refusing hour {hour}, nothing written for it: {source}")]
    HourRefused {
        hour: String,
        #[source]
        source: TrustError,
    },
}

impl From<TrustError> for crate::cli::CliError {
    /// A refusal of what was read, said as the mirror says it.
    fn from(e: TrustError) -> Self {
        crate::cli::CliError::Mirror(MirrorError::Trust(e))
    }
}

impl MirrorError {
    /// Whether another pass may succeed (the server was unreachable or busy); a refusal
    /// or a file-system failure will fail again.
    pub fn is_transient(&self) -> bool {
        match self {
            MirrorError::Client(e) => e.is_transient(),
            MirrorError::Transport { .. } => true,
            _ => false,
        }
    }
}

pub type Result<T, E = MirrorError> = std::result::Result<T, E>;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Hours written by this pass.
    pub written: u64,
    /// Sealed hours already in the mirror, left as they were.
    pub kept: u64,
    /// Files written (hours' forms, chain pages, index, well-known document).
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The newest hour the mirror holds.
    pub newest: Option<Hour>,
}

/// A mirror directory kept from one server.
#[derive(Debug)]
pub struct Mirror {
    client: Client,
    /// The key everything is verified against, when given.
    pubkey: Option<PublicKey>,
    http: reqwest::Client,
    base: String,
    files: Files,
    /// One ribbon request at a time (the server builds them on first request).
    builds: tokio::sync::Semaphore,
}

impl Mirror {
    /// A mirror of the server at `url` into `dir`, verifying everything it writes
    /// against `pubkey` when given. Checks nothing yet: [`Mirror::pass`] does, before it
    /// writes.
    ///
    /// # Errors
    /// A URL that cannot be a server's.
    pub fn new(dir: PathBuf, url: &str, pubkey: Option<PublicKey>) -> Result<Mirror> {
        // The listing only: the pass verifies what it lists against the keys trusted
        // from `pubkey` itself (trust::trusted_keys).
        let client = Client::builder(url).build()?;
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|source| MirrorError::Transport {
                url: url.to_owned(),
                source,
            })?;
        Ok(Mirror {
            base: client.base().to_owned(),
            client,
            pubkey,
            http,
            files: Files::new(dir),
            builds: tokio::sync::Semaphore::new(1),
        })
    }

    /// Brings the mirror up to date with the server's sealed hours: the hours not
    /// mirrored yet, then the checkpoint, the index and the well-known document. Refuses,
    /// writing nothing, a directory that holds another service's mirror or cannot be
    /// written, and with a key a key list that does not name it, a chain entry or a
    /// checkpoint that does not verify; an hour any file of which fails is not written.
    ///
    /// # Errors
    /// The refusals above; an unreachable server; a response whose bytes do not match
    /// their `Repr-Digest` or the chain.
    pub async fn pass(&self) -> Result<Summary> {
        self.pass_reporting(|_, _| {}).await
    }

    /// As [`Mirror::pass`], calling `each(done, todo)` each time an hour is written:
    /// `done` of the `todo` hours this pass found not mirrored yet (for a progress line).
    ///
    /// # Errors
    /// As [`Mirror::pass`].
    #[tracing::instrument(skip(self, each), fields(dir = %self.files.root().display()))]
    pub async fn pass_reporting(&self, mut each: impl FnMut(u64, u64)) -> Result<Summary> {
        let well_known = self.get(WELL_KNOWN, false).await?.identity;
        let served: Value = self.json(WELL_KNOWN, &well_known)?;
        if let Some(mirrored) = self.files.read(WELL_KNOWN)? {
            let mirrored: Value = serde_json::from_slice(&mirrored).unwrap_or(Value::Null);
            same_service(&mirrored, &served).map_err(|why| MirrorError::OtherService {
                dir: self.files.root().to_owned(),
                why,
            })?;
        }
        // The keys trusted from the key given: a list that does not name it, or an hour
        // listed under a key it never vouched for, is refused before anything is written.
        let trusted = match &self.pubkey {
            Some(key) => Some(trust::trusted_keys(Some(&served), key)?),
            None => None,
        };
        self.files
            .check_writable()
            .map_err(MirrorError::NotWritable)?;

        // The publisher's checkpoint, read before the hours so that it names none newer
        // than those the chain lists next.
        let checkpoint = self
            .get_or_missing("/checkpoint", false)
            .await?
            .map(|got| got.identity);
        let verified_checkpoint = match (&trusted, &checkpoint) {
            (Some(trusted), Some(bytes)) => Some(trust::verify_checkpoint(trusted, bytes)?),
            (Some(_), None) => {
                tracing::warn!("the server serves no checkpoint: the mirror holds none");
                None
            }
            _ => None,
        };
        let index_bytes = self.get("/", false).await?.identity;
        let server_index: Value = self.json("/", &index_bytes)?;
        let index: Index =
            serde_json::from_value(server_index.clone()).map_err(|e| MirrorError::Protocol {
                url: format!("{}/", self.base),
                detail: format!("not an index: {e}"),
            })?;
        let now = index.current_hour()?;
        let retained = now.index() - index.retention_hours as i64 + 1;
        let oldest = Hour::from_index(index.genesis_hour()?.index().max(retained));
        let entries = self.client.chain(oldest).await?;
        if let Some(trusted) = &trusted {
            let mut last = None;
            for entry in &entries {
                last = Some((entry.hour, trust::verify_entry(trusted, entry, last)?));
            }
            if let Some(cp) = &verified_checkpoint {
                let listed = entries.iter().find(|e| e.hour == cp.hour);
                if listed.is_some_and(|e| e.header != cp.header) {
                    return Err(TrustError::Refused(format!(
                        "hour {} (checkpoint): the checkpoint's header is not the chain's for that hour",
                        cp.hour.rfc3339()
                    ))
                    .into());
                }
            }
        }
        let exact_since = index.exact_since_hour()?;

        let mut summary = Summary::default();
        let mut todo = Vec::new();
        let mut from = oldest;
        for entry in &entries {
            // Hours without an entry (gaps) get the page the server gives them too: the
            // next entry.
            let pages: Vec<Hour> = (from.index()..=entry.hour.index())
                .map(Hour::from_index)
                .collect();
            from = entry.hour.next();
            if self.files.exists(&chain_path(entry.hour)) {
                summary.kept += 1;
            } else {
                todo.push((entry, pages));
            }
        }
        let todo_hours = todo.len() as u64;
        let mut done = futures_util::stream::iter(todo)
            .map(|(entry, pages)| {
                let exact = exact_since.is_some_and(|since| entry.hour >= since);
                self.hour(entry, pages, trusted.as_ref(), exact)
            })
            .buffer_unordered(HOURS_IN_FLIGHT);
        while let Some(written) = done.next().await {
            let (files, bytes) = written?;
            summary.written += 1;
            summary.files += files;
            summary.bytes += bytes;
            each(summary.written, todo_hours);
        }
        summary.newest = entries.last().map(|e| e.hour);

        if let Some(bytes) = &checkpoint {
            self.write_if_changed(trust::CHECKPOINT_FILE, bytes, &mut summary)?;
        }
        if summary.newest.is_some() {
            let doc = self.index_document(&server_index, &entries, checkpoint.is_some())?;
            self.write_if_changed(INDEX_FILE, &doc, &mut summary)?;
        }
        self.write_if_changed(WELL_KNOWN, &well_known, &mut summary)?;
        tracing::info!(?summary, "mirror pass done");
        Ok(summary)
    }

    /// Writes `bytes` as `path` unless the file holds them already.
    fn write_if_changed(&self, path: &str, bytes: &[u8], summary: &mut Summary) -> Result<()> {
        if self.files.read(path)?.as_deref() != Some(bytes) {
            summary.bytes += self.files.write(path, bytes)?;
            summary.files += 1;
        }
        Ok(())
    }

    /// Writes one sealed hour: its forms, then its chain page (and the pages of the gap
    /// hours before it). Returns files and bytes written.
    async fn hour(
        &self,
        entry: &ChainEntry,
        pages: Vec<Hour>,
        trusted: Option<&crate::chain::Trusted>,
        exact: bool,
    ) -> Result<(u64, u64)> {
        let (mut files, mut bytes) = (0, 0);
        // Every file is fetched and checked before the first is written.
        for (path, body) in self.hour_files(entry, trusted, exact).await? {
            bytes += self.files.write(&path, &body)?;
            files += 1;
        }
        // `pages` ends with the entry's own hour: its page, written last, marks the hour
        // done.
        for hour in &pages {
            let page = self.chain_page(*hour, entry).await?;
            bytes += self.files.write(&chain_path(*hour), &page)?;
            files += 1;
        }
        Ok((files, bytes))
    }

    /// The mirror's index: the server's, with the newest mirrored hour as `current`, the
    /// newest mirrored hours as `hours`, `"static": true` and `"exact_since": null`
    /// (PROTOCOL.md section 13).
    fn index_document(
        &self,
        server_index: &Value,
        entries: &[ChainEntry],
        checkpoint: bool,
    ) -> Result<Vec<u8>> {
        let mut hours = Vec::new();
        for entry in entries.iter().rev().take(INDEX_HOURS) {
            let path = format!("{}.json", entry.hour.path());
            let count = match self.files.read(&path)? {
                Some(bytes) => serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .map(|d| d["count"].clone()),
                None => None,
            };
            hours.push(json!({
                "hour": entry.hour.rfc3339(),
                "url": entry.hour.path(),
                "count": count,
                "complete": true,
            }));
        }
        let mut doc = server_index.clone();
        doc["current"] = hours.first().cloned().unwrap_or(Value::Null);
        doc["hours"] = Value::Array(hours);
        doc["static"] = Value::Bool(true);
        // Clients are not offered exact hours: their bodies, when mirrored, are there to
        // be verified by their sidecars, not chosen by the index.
        doc["exact_since"] = Value::Null;
        doc["urls"] = json!({
            "hour": "/YYYY/MM/DD/HH[.json|.hex|.bin|.ribbon|.ribbon.json|.ribbon2] (sealed hours; signed forms with a .sig sidecar)",
            "chain": "/chain/YYYY/MM/DD/HH (one entry a page)",
            "well_known": WELL_KNOWN,
        });
        if checkpoint {
            doc["urls"]["checkpoint"] = json!(trust::CHECKPOINT_FILE);
        }
        Ok(serde_json::to_vec(&doc).expect("JSON of values"))
    }
}

/// The chain page of one hour: `/chain/YYYY/MM/DD/HH`.
pub fn chain_path(hour: Hour) -> String {
    format!("/chain{}", hour.path())
}
