//! Configuring a [`Client`]: the server, credentials, timeouts, caches, verification
//! and what a wasted fetch costs.

use super::{
    cache::EtagCache, compact, dictionaries, exact_hours, Client, ClientError, Counters, Result,
    DEFAULT_FETCH_COST,
};
use std::time::Duration;

/// Configures a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    base: String,
    token: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    cache_entries: usize,
    cache_dir: Option<std::path::PathBuf>,
    pubkey: Option<crate::chain::PublicKey>,
    pin: bool,
    fetch_cost: u64,
    registered: bool,
    freshness: Duration,
    accept_stale: bool,
    pages_cover: u32,
    read_tries: u32,
}

impl ClientBuilder {
    /// What fetching a resource that turns out unchanged costs the caller, in bytes
    /// (default [`DEFAULT_FETCH_COST`], 10 KiB). [`Client::changed_since`] reads each
    /// closed hour in the form and precision that minimise filter bytes plus
    /// `IDs followed × fpp × fetch_cost` ([`cheapest_form`](crate::cheapest_form)): a ribbon at up to 2^-24
    /// for a large following, the v1 Bloom filter for a nearly empty hour, and from the
    /// index's `exact_since` the hour's exact body when it costs no more: alone for IDs
    /// declared [`registered`](Self::registered) ([`exact_or`](crate::exact_or)), else
    /// refining an approximate form ([`refined_or`](crate::refined_or)).
    ///
    /// ```
    /// let client = bloomcast_client::Client::builder("http://127.0.0.1:8080")
    ///     .fetch_cost(50 * 1024) // a feed page with its images
    ///     .build();
    /// assert!(client.is_ok());
    /// ```
    pub fn fetch_cost(mut self, bytes: u64) -> Self {
        self.fetch_cost = bytes;
        self
    }

    /// Declares that every ID this client asks about is registered in the publisher's
    /// universe (`POST /universe`) from before the first hour asked about: an exact body
    /// may then be read alone, with no false positive (PROTOCOL.md section 14). Default
    /// `false`: a poller cannot know what is registered (the universe is never
    /// published), and an exact body's answer for any other ID is arbitrary, so each one
    /// is read only as a refinement of an approximate form of its hour at the service's
    /// target fpp or under (an ID is changed when both say so): exact for registered IDs,
    /// at most the target for any other ([`refined_or`](crate::refined_or)).
    ///
    /// ```
    /// // A publisher's own poller, following IDs it registered itself:
    /// let client = bloomcast_client::Client::builder("http://127.0.0.1:8080")
    ///     .registered(true)
    ///     .build();
    /// assert!(client.is_ok());
    /// ```
    pub fn registered(mut self, registered: bool) -> Self {
        self.registered = registered;
        self
    }

    /// Trust on first use, without a key given: the server's list of keys is read from
    /// `/.well-known/bloomcast.json` and pinned in the [`cache_dir`](Self::cache_dir)
    /// (`<dir>/<server>/keys.json`); every closed hour is then verified against the key
    /// listed for it, in this process and later ones. A later list is accepted only if it
    /// extends the pinned one (a key rotated in for new hours); one that adds or moves a
    /// key for hours already covered is refused. Needs a cache dir.
    pub fn pin_on_first_use(mut self) -> Self {
        self.pin = true;
        self
    }

    /// The publisher's public key (`GET /.well-known/bloomcast.json`, printed by the
    /// server at start): every closed hour fetched is then verified (digest, chain link,
    /// signature) and a tampered one refused with [`ClientError::Unverified`], and so is
    /// every exact body (under the hour's chain header). Unions and ribbons are not
    /// signed, so [`Client::changed_since`] fetches hour by hour, v1 filters and exact
    /// bodies only. After key
    /// rotations, any of the keys the server lists may be given: the list must name it,
    /// and is trusted only from it (PROTOCOL.md section 11, "Trust"): the keys it
    /// vouched for, and those that acknowledged it, each signing the hours listed for it;
    /// an hour listed under any other key (a mirror's own, "vouched" for by itself) is
    /// refused, naming that key.
    ///
    /// ```
    /// let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    /// let client = bloomcast_client::Client::builder("http://127.0.0.1:8080")
    ///     .pubkey(key.parse().expect("a public key"))
    ///     .build();
    /// assert!(client.is_ok());
    /// ```
    pub fn pubkey(mut self, key: crate::chain::PublicKey) -> Self {
        self.pubkey = Some(key);
        self
    }

    /// How old a version of the open hour may be when verified with a key (default
    /// [`DEFAULT_FRESHNESS`](crate::DEFAULT_FRESHNESS), 600 s): each version carries its
    /// `Bloom-Open-Signature` with the time it was made, and one made longer ago (an
    /// older version replayed, hiding the changes since) is refused with
    /// [`ClientError::Unverified`] naming the hour.
    pub fn freshness(mut self, freshness: Duration) -> Self {
        self.freshness = freshness;
        self
    }

    /// Whether [`Client::changed_since`] and its variants return an answer whose source
    /// is not shown current (its newest hour more than [`LAG_HOURS`](crate::LAG_HOURS)
    /// hours behind this machine's clock; with a key, a checkpoint naming a newer
    /// sealed hour, made long ago, or missing) as an answer (`true`), its
    /// [`Coverage::stale`](crate::Coverage) saying why, or as
    /// [`ClientError::Stale`] carrying it (`false`, the default).
    pub fn accept_stale(mut self, accept: bool) -> Self {
        self.accept_stale = accept;
        self
    }

    /// Tries in all of a read (GET) the server answers 503 with a `Retry-After` of at most
    /// 5 s (a build busy, the store recovering): sent again after that wait (default 3;
    /// 1 returns the first 503 as it came). Writes are never sent again here
    /// ([`Client::publish`] has its own loop).
    pub fn read_tries(mut self, tries: u32) -> Self {
        self.read_tries = tries.max(1);
        self
    }

    /// Pages read for each page needed when a closed hour is read by the page
    /// ([`Client::pages`]; PROTOCOL.md section 12, "What a reader tells the server"):
    /// `n` (default 1, at least 1) reads each needed page among `n - 1` others chosen at
    /// random, for `n` times the bytes, so that whoever serves them learns only that the
    /// pages followed are among those read.
    pub fn pages_cover(mut self, n: u32) -> Self {
        self.pages_cover = n.max(1);
        self
    }

    /// The bearer token for [`Client::ingest`].
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The whole-request timeout (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many fetched filters to keep for revalidation (default 1024; 0 disables).
    pub fn cache_entries(mut self, entries: usize) -> Self {
        self.cache_entries = entries;
        self
    }

    /// A directory where [`Client::history`] keeps complete hours' filters, so a later
    /// process fetches only hours it has not seen complete (default: none, memory only;
    /// [`default_cache_dir`](crate::default_cache_dir) is the conventional place).
    pub fn cache_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Builds the client.
    ///
    /// # Errors
    /// [`ClientError::Url`] for a base that is neither `http://`/`https://` nor
    /// `host:port` (taken as `http://host:port`);
    /// [`ClientError::Transport`] when the TLS backend cannot start.
    pub fn build(self) -> Result<Client> {
        // `host:port` (no scheme) means plain HTTP, as curl takes it.
        let base = match self.base.contains("://") {
            true => self.base.trim_end_matches('/').to_owned(),
            false => format!("http://{}", self.base.trim_end_matches('/')),
        };
        let bad = || ClientError::Url(self.base.clone());
        let parsed = reqwest::Url::parse(&base).map_err(|_| bad())?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(bad());
        }
        let http = reqwest::Client::builder()
            // reqwest's own gzip is not built in: we send Accept-Encoding ourselves and
            // gunzip by hand, so that the bytes counted in `Stats` crossed the wire.
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .user_agent(concat!("bloomcast-client/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Client {
            http,
            base,
            token: self.token,
            cache: EtagCache::new(self.cache_entries),
            ribbons: compact::RibbonCache::new(self.cache_entries),
            ribbons2: compact::RibbonCache::new(self.cache_entries),
            exacts: exact_hours::ExactCache::new(self.cache_entries),
            fetch_cost: self.fetch_cost,
            registered: self.registered,
            dictionaries: dictionaries::Dictionaries::default(),
            counters: Counters::default(),
            cache_dir: self.cache_dir,
            pubkey: self.pubkey,
            pin: self.pin,
            keyring: tokio::sync::Mutex::default(),
            pin_mark: std::sync::atomic::AtomicI64::new(i64::MIN),
            static_layout: Default::default(),
            verified: std::sync::Mutex::default(),
            unverified: std::sync::Mutex::default(),
            open_made: std::sync::Mutex::default(),
            current: std::sync::atomic::AtomicI64::new(i64::MIN),
            freshness: self.freshness,
            accept_stale: self.accept_stale,
            pages_cover: self.pages_cover,
            read_tries: self.read_tries,
        })
    }
}

impl Client {
    /// A client for the server at `base` (e.g. `http://127.0.0.1:8080`) with defaults.
    ///
    /// # Errors
    /// As [`ClientBuilder::build`].
    pub fn new(base: &str) -> Result<Client> {
        Client::builder(base).build()
    }

    /// Starts configuring a client for the server at `base`.
    pub fn builder(base: &str) -> ClientBuilder {
        ClientBuilder {
            base: base.to_owned(),
            token: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            cache_entries: 1024,
            cache_dir: None,
            pubkey: None,
            pin: false,
            fetch_cost: DEFAULT_FETCH_COST,
            registered: false,
            freshness: crate::DEFAULT_FRESHNESS,
            accept_stale: false,
            pages_cover: 1,
            read_tries: crate::fetch::READ_TRIES,
        }
    }
}
