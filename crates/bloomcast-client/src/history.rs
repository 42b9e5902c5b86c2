//! `Client::history`: in which hours since a given one may each of some IDs have changed?
//!
//! Fetches every hour's filter once. Complete hours never change, so with a cache
//! directory ([`super::ClientBuilder::cache_dir`]) their filters are also kept on disk,
//! one JSON document per hour per server, and a later process fetches only the hours it
//! has not seen complete. The cache is best-effort: an unreadable or unwritable file
//! means a fetch, never a wrong answer.

use super::{Client, ClientError, Result};
use crate::bloom::{Filter, Key};
use crate::hour::Hour;
use crate::wire::Document;
use sha1::{Digest, Sha1};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// The hours (oldest first) in which one ID may have changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdHistory {
    pub id: String,
    pub hours: Vec<Hour>,
}

/// The default cache directory: `$XDG_CACHE_HOME/bloomcast`, else `~/.cache/bloomcast`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|dir| dir.join("bloomcast"))
}

impl Client {
    /// For each ID, the hours from `since` (clamped to the oldest hour the server still
    /// has) through the server's current hour whose filter holds it.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), bloomcast_client::ClientError> {
    /// use bloomcast_client::hour::Hour;
    /// let client = bloomcast_client::Client::new("http://127.0.0.1:8080")?;
    /// let since = Hour::parse_flexible("2008-09-03T05").expect("a valid hour");
    /// for h in client.history(&["user:42"], since).await? {
    ///     println!("{}: {:?}", h.id, h.hours);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Client::hour`] and [`Client::index`]; [`ClientError::Corrupt`] naming the
    /// hours the server could not verify (listed `corrupt` in its index, or answering
    /// `500 corrupt`) whose complete filter is not kept.
    pub async fn history<S: AsRef<str>>(&self, ids: &[S], since: Hour) -> Result<Vec<IdHistory>> {
        let index = self.index().await?;
        let now = index.current_hour()?;
        let from = since.max(index.oldest_hour()?);
        if from > now {
            return Err(ClientError::Argument(format!(
                "{from} is after the server's current hour {now}"
            )));
        }
        // An hour the server could not verify is unknown, unless its complete filter
        // is kept from before: no history is given over it.
        let unknown: Vec<Hour> = (index.corrupt_hours(from, now)?.into_iter())
            .filter(|hour| !self.holds_complete(*hour))
            .collect();
        if !unknown.is_empty() {
            return Err(ClientError::Corrupt { hours: unknown });
        }
        let keys: Vec<Key> = ids.iter().map(|id| Key::of(id.as_ref())).collect();
        let mut hours = vec![Vec::new(); keys.len()];
        let mut hour = from;
        while hour <= now {
            let filter = self.hour_filter(hour).await.map_err(|e| e.of_hour(hour))?;
            for (i, key) in keys.iter().enumerate() {
                if filter.contains_key(*key) {
                    hours[i].push(hour);
                }
            }
            hour = hour.next();
        }
        Ok(ids
            .iter()
            .zip(hours)
            .map(|(id, hours)| IdHistory {
                id: id.as_ref().to_owned(),
                hours,
            })
            .collect())
    }

    /// One hour's filter: from the disk cache when complete there, else fetched (and
    /// written to the disk cache once complete).
    async fn hour_filter(&self, hour: Hour) -> Result<Filter> {
        let file = self
            .cache_dir
            .as_deref()
            .map(|dir| self.cache_file(dir, hour));
        if let Some(filter) = file.as_deref().and_then(read_complete) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(filter);
        }
        let fetched = self.hour(hour).await?;
        if let (Some(file), true) = (file, fetched.meta.complete) {
            let doc = Document::json_of(fetched.meta.clone(), &fetched.filter);
            if let Err(e) = write_atomically(&file, &doc) {
                tracing::warn!(file = %file.display(), error = %e, "cannot cache a filter");
            }
        }
        Ok(fetched.filter.clone())
    }

    /// Whether a complete filter of `hour` is kept, in memory or on disk.
    fn holds_complete(&self, hour: Hour) -> bool {
        let in_memory = self.cache.get(&super::fetch::bin_path(&hour.path()));
        in_memory.is_some_and(|f| f.meta.complete)
            || (self.cache_dir.as_deref())
                .is_some_and(|dir| read_complete(&self.cache_file(dir, hour)).is_some())
    }

    /// `<dir>/<server>/<YYYY-MM-DDTHH>.json`.
    fn cache_file(&self, dir: &Path, hour: Hour) -> PathBuf {
        self.server_dir(dir)
            .join(hour.start().format("%Y-%m-%dT%H.json").to_string())
    }

    /// `<dir>/<server>`, the server named by a digest of its URL.
    pub(super) fn server_dir(&self, dir: &Path) -> PathBuf {
        dir.join(crate::bloom::to_hex(
            &Sha1::digest(self.base.as_bytes())[..8],
        ))
    }
}

fn read_complete(file: &Path) -> Option<Filter> {
    let bytes = std::fs::read(file).ok()?;
    match Document::parse(&bytes) {
        Ok((meta, filter)) if meta.complete => Some(filter),
        _ => None,
    }
}

fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)
}
