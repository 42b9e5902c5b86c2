//! Configuration: `config/` files layered with `BLOOMCAST_*` environment overrides, then
//! `bloomcast serve`'s flags (`load.rs`); an unknown `BLOOMCAST_*` variable or file key is
//! refused naming the closest known name (`names.rs`).
//!
//! Every setting is declared once, in the `settings!` block below: its doc comment, name,
//! type and default. From that one declaration come the struct, its `Default`, the
//! environment variable `BLOOMCAST_<NAME>` and how it is parsed (by the type, see
//! [`SettingValue`]), `Debug` with secrets redacted, `bloomcast serve --help` and the
//! generated reference docs/CONFIG.md (kept in sync by a test). Adding a setting is one
//! entry there, plus its line in config/default.toml (a test checks the two agree).
//!
//! Secrets (ingest tokens, the database URL) are `secrecy` types: never logged, exposed
//! only where they are used.

mod docs;
mod listen;
mod load;
mod names;
mod value;

pub use listen::ListenAddr;
pub use load::{process_env, Loaded, Overrides};
pub use names::{check_env_names, closest, NOT_SETTINGS};
pub use value::{redact_url, SettingValue};

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("environment variable {name}={value:?}: {message}")]
    Env {
        name: String,
        value: String,
        message: String,
    },
    #[error("invalid setting {name}: {message}")]
    Invalid { name: &'static str, message: String },
    #[error(
        "unknown environment variable {name} (the closest known is {closest}); every \
         setting's variable is listed by `bloomcast serve --help` and in docs/CONFIG.md"
    )]
    UnknownEnv { name: String, closest: String },
    #[error("environment variable {name} is not valid UTF-8")]
    NotUnicode { name: String },
}

/// One setting as documented: key, environment variable, default (as shown) and doc.
#[derive(Clone, Debug)]
pub struct SettingDoc {
    pub key: &'static str,
    pub env: String,
    pub default: String,
    pub doc: String,
}

/// Declares the settings; see the module doc.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr, )+) => {
        /// Every setting of the server. Field names are the config keys; each has an
        /// environment override `BLOOMCAST_<NAME>`.
        #[derive(Clone, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct Settings {
            $( $(#[doc = $doc])+ pub $name: $ty, )+
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default, )+ }
            }
        }

        impl std::fmt::Debug for Settings {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut s = f.debug_struct("Settings");
                $( s.field(stringify!($name), &format_args!("{}", self.$name.show())); )+
                s.finish()
            }
        }

        impl Settings {
            /// Every setting with its variable, default and doc, in declaration order.
            pub fn reference() -> Vec<SettingDoc> {
                let defaults = Settings::default();
                vec![$(
                    SettingDoc {
                        key: stringify!($name),
                        env: env_name(stringify!($name)),
                        default: defaults.$name.show(),
                        doc: [$($doc),+].map(str::trim).join(" "),
                    },
                )+]
            }

            /// Applies `BLOOMCAST_*` overrides read through `get` (the environment in
            /// production), one variable per setting.
            ///
            /// # Errors
            /// [`ConfigError::Env`] naming the variable whose value does not parse.
            pub fn apply_env(
                &mut self,
                get: impl Fn(&str) -> Option<String>,
            ) -> Result<(), ConfigError> {
                $(
                    let name = env_name(stringify!($name));
                    if let Some(value) = get(&name) {
                        self.$name = SettingValue::from_env(&value)
                            .map_err(|message| ConfigError::Env { name, value, message })?;
                    }
                )+
                Ok(())
            }
        }
    };
}

settings! {
    /// Address and port to listen on: an IP address (IPv6 in brackets) or a host name,
    /// e.g. 0.0.0.0:8080 or localhost:8080. A name is resolved at start and the first of
    /// its addresses that can be bound is used.
    listen: ListenAddr = ListenAddr::from(std::net::SocketAddr::from(([127, 0, 0, 1], 8080))),
    /// Where the embedded store (a SQLite file) and the generated ingest token live.
    /// A relative path is taken from the working directory (the resolved path is logged).
    data_dir: PathBuf = PathBuf::from("data"),
    /// Bearer tokens accepted by POST /updates, comma-separated in the environment, each
    /// at least 8 characters. Empty: a random token is generated on first start and kept
    /// in <data_dir>/ingest-token. Required in cluster mode (the same on every node).
    ingest_tokens: Vec<SecretString> = Vec::new(),
    /// File holding the Ed25519 key that signs each sealed hour (64 hex digits, a seed).
    /// Empty: generated on first start into <data_dir>/signing-key (mode 0600). Cluster
    /// mode: give every node the same file (`bloomcast rotate-key` makes the first): a
    /// cluster with no key recorded publishes unsigned hours (once it has sealed some, a
    /// node with a key refuses to make it the cluster's: `rotate-key` does that on
    /// purpose), and once one is recorded a node without a key file refuses to start,
    /// naming it; a node whose key is not
    /// recorded while another is the cluster's current key refuses to start, naming both
    /// key ids (`bloomcast rotate-key` records a new key for the cluster). A
    /// new key in the file signs the hours sealed after the restart; published signatures
    /// never change (PROTOCOL.md section 11).
    signing_key_file: PathBuf = PathBuf::new(),
    /// Distinct IDs an hour's filter is sized for before it grows. Cluster-wide (see
    /// target_fpp).
    capacity: u64 = 3000,
    /// False-positive probability no served filter ever exceeds. Cluster-wide with
    /// capacity: in cluster mode the first node records both in PostgreSQL, and a node
    /// whose own value differs logs a warning naming both values and follows the
    /// cluster's; `bloomcast cluster-settings set target_fpp=VALUE` changes them for every
    /// node from the next hour on (docs/DEPLOY.md, A fleet).
    target_fpp: f64 = 0.01,
    /// Hours kept; older hours answer 410 Gone and are pruned.
    retention_hours: u64 = 720,
    /// Cache-Control max-age (seconds) for the open hour; never runs past the end of the hour.
    open_max_age: u64 = 30,
    /// Bytes of open-hour versions kept as compression dictionaries (RFC 9842 `dcz`
    /// deltas for pollers), at most, within their part of cache_bytes; the oldest go
    /// first. 0 turns deltas off.
    delta_bytes: usize = 64 * 1024 * 1024,
    /// New IDs after which a served open-hour version is kept as a dictionary before
    /// open_max_age seconds have passed since the last one kept (0: only by time).
    delta_ids: u64 = 5000,
    /// Seconds each open-hour version kept as a dictionary is also served at its own URL
    /// (GET /dictionaries/..., linked from the open hour's responses) and kept for at
    /// least, never past the end of its hour: the Cache-Control max-age of that URL, so
    /// a client polling less often than open_max_age still holds a dictionary. While
    /// delta_bytes is full of such versions, no newer one is kept. 0 links none.
    dictionary_max_age: u64 = 600,
    /// Largest accepted ingest body, in bytes.
    body_limit: usize = 16 * 1024 * 1024,
    /// The one memory budget: bytes of everything the server keeps beyond the open hour's
    /// own keys (which max_hour_ids bounds: at most 16 bytes per ID at their peak, see
    /// docs/BENCHMARKS.md). Split in fixed parts: 16 KiB per event stream
    /// (events_max_subscribers, at most a quarter), a third for union and compact builds
    /// in flight (each reserves its peak before it reads a key: a union about 14 bytes per
    /// ID while the part has room, else about 6, its filter and rendering, with past 64Ki
    /// IDs its keys in a temporary file under TMPDIR, and a compact build 45 bytes per ID,
    /// a version 2 one past 64Ki
    /// IDs about 4 and its keys in such a file: past what is left it answers
    /// 503 busy, and one that alone needs more than the part 413 range_too_large, or 406
    /// for a compact form), an eighth (at most delta_bytes and
    /// a quarter more) for the open hour's versions kept as dictionaries and the deltas made
    /// from them, and all the rest for one cache of renderings, open and built unions,
    /// decoded filters for /history and sealed keys. GET /stats reports each part.
    cache_bytes: usize = 512 * 1024 * 1024,
    /// Seconds to let in-flight requests finish on shutdown (SIGTERM, Ctrl-C).
    shutdown_timeout: u64 = 10,
    /// PostgreSQL URL for cluster mode (postgres://user@host:port/db); empty uses the
    /// embedded store.
    database_url: SecretString = SecretString::default(),
    /// PostgreSQL URL of read replicas (several hosts: postgresql://r1,r2/db?
    /// target_session_attrs=read-only&load_balance_hosts=random), for sealed hours: each
    /// is read from a replica when it has replayed the seal, else from database_url's
    /// server; the open hour always comes from there. Empty: every read goes to
    /// database_url.
    database_read_url: SecretString = SecretString::default(),
    /// PostgreSQL URL for the one session that LISTENs for other nodes' writes, when
    /// database_url goes through a pooler in transaction mode (PgBouncer's
    /// pool_mode = transaction), which cannot keep a LISTEN: the servers themselves, as
    /// in database_url with target_session_attrs=read-write. Empty: database_url.
    database_listen_url: SecretString = SecretString::default(),
    /// PostgreSQL schema for cluster mode (created and migrated by the service).
    database_schema: String = "bloomcast".into(),
    /// PEM file of the CA(s) that sign the PostgreSQL server's certificate, checked with
    /// sslmode=verify-ca or verify-full in database_url; empty: the public web roots.
    database_ca_file: PathBuf = PathBuf::new(),
    /// Milliseconds one call to PostgreSQL may take, a connection from the pool included;
    /// then it is given up (an ingest answers 503 store_unavailable with Retry-After) and
    /// the pool's idle connections are replaced, so a link that stopped answering without
    /// closing is not used again. Calls that move a whole hour's keys or filter (sealing,
    /// loading the open hour) get ten times as long.
    database_timeout_ms: u64 = 10_000,
    /// How stale (milliseconds) a cluster node's view of the open hour may be.
    refresh_ms: u64 = 1000,
    /// Seconds a whole request may take. A client still sending its body then is answered
    /// 408; a request received whole whose answer is not ready then is answered 503 timeout
    /// with Retry-After (the server's fault, not the client's).
    request_timeout_seconds: u64 = 30,
    /// Seconds a client has to send a request's headers (slow-loris defence); the
    /// connection is closed when they do not arrive in time. Also bounds idle keep-alive.
    header_read_timeout_seconds: u64 = 5,
    /// Seconds a connection may have response bytes to send without the client taking any
    /// of them; then it is closed (a client that pipelines requests and never reads its
    /// answers cannot hold a connection slot) and counted in bloomcast_connections_dropped_total.
    write_timeout_seconds: u64 = 20,
    /// Shifts the server's clock by this many seconds, signed (testing only, e.g. to cross
    /// an hour boundary on purpose; a warning is logged when set). A start further past the
    /// last heartbeat than clock_jump_tolerance_seconds is held as a jump; in cluster mode
    /// it shifts only the node's own clock, which the cluster does not run on.
    clock_offset_seconds: i64 = 0,
    /// Seconds the wall clock may run ahead of the time measured on the monotonic clock
    /// since it was last trusted, or at start ahead of the time the last heartbeat recorded
    /// (plus the downtime, where this boot measured it); a step further ahead is a jump,
    /// not followed (nothing is opened or pruned by it) until it is corrected or confirmed.
    /// In cluster mode, also how far a node's own clock may be off PostgreSQL's before its
    /// /healthz says so.
    clock_jump_tolerance_seconds: u64 = 300,
    /// Seconds of monotonic time a forward clock jump must hold (by the same offset)
    /// before the service follows it; `bloomcast confirm-clock` (POST /clock/confirm)
    /// follows it at once.
    clock_jump_confirm_seconds: u64 = 7200,
    /// Log one line per request at info level (remote address, method, path, status,
    /// bytes, duration). Off by default: it costs a little on every request.
    access_log: bool = false,
    /// Distinct IDs one hour may hold; a batch that would pass it answers 507 hour_full and
    /// nothing of it is recorded. Bounds the open hour's memory (11 to 16 bytes per distinct ID
    /// at its peak, measured at 1M to 50M IDs).
    max_hour_ids: u64 = 50_000_000,
    /// Distinct IDs the publisher's universe may hold (POST /universe; exact hours, see
    /// docs/PROTOCOL.md section 14); a batch that would pass it answers 507 universe_full
    /// and nothing of it is recorded. IDs ingested through POST /updates join it when their
    /// hour is sealed, whatever this limit. Bounds the build of an exact hour: 9 to 31 bytes
    /// per universe ID at its peak (more as more of the universe changed in the hour),
    /// reserved from the builds' part of cache_bytes, which at the default cache_bytes fits
    /// this default at any fraction changed; a build that does not fit answers 406.
    max_universe_ids: u64 = 5_000_000,
    /// Connections served at once; further connections wait in the listen backlog.
    max_connections: usize = 4096,
    /// Ingest bodies read at once (each up to body_limit bytes); more answer 503 busy with
    /// Retry-After at once.
    ingest_concurrency: usize = 32,
    /// Writes that may wait for the embedded store's writer thread; more answer 503 busy.
    write_queue_depth: usize = 256,
    /// Union filters (days, since-ranges), compact (ribbon) filters and exact bodies of
    /// different ranges or precisions built at once; a request needing another build
    /// waits its client's turn (requests for one range share it; 503 busy past 8 waiting
    /// builds of one client).
    union_builds: usize = 1,
    /// Seconds one scrub pass takes: every closed hour still served is read back and
    /// verified in the background (its row, chain link, keys, exact body, universe), one
    /// at a time and evenly spaced over the pass, so damage is found before a reader finds
    /// it (/healthz, bloomcast_scrub_* in /metrics). 0 turns the scrub off.
    scrub_pass_seconds: u64 = 86_400,
    /// Event streams (GET /events) open at once; more answer 503 busy with Retry-After.
    /// Each holds one of max_connections, and 16 KiB of cache_bytes: the budget gives
    /// them a part of their own of at most a quarter of cache_bytes, so past that
    /// quarter fewer are admitted (raise cache_bytes for more).
    events_max_subscribers: usize = 4096,
    /// Seconds between the comment lines that keep an idle event stream open through
    /// proxies (GET /events).
    events_heartbeat_seconds: u64 = 30,
    /// Hours back an event stream resumes from (Last-Event-ID) without a gap; an older
    /// position gets one reset event (re-read the index). At most retention_hours.
    events_resume_hours: u64 = 24,
    /// WebSub subscriptions the hub (POST /websub) keeps at most, every topic and
    /// callback together; past it a new one answers 503 busy.
    websub_max_subscriptions: usize = 1000,
    /// The longest WebSub lease (seconds), and the lease given when none is asked.
    websub_max_lease_seconds: u64 = 864_000,
    /// WebSub deliveries (and verifications) in flight at most.
    websub_deliveries: usize = 16,
    /// Networks WebSub callbacks may resolve into besides public addresses, e.g.
    /// 10.0.0.0/8 (comma-separated in the environment). Empty: public addresses only, so
    /// no subscriber can make the hub call into the server's own network.
    websub_callback_networks: Vec<ipnet::IpNet> = Vec::new(),
}

/// `data_dir` → `BLOOMCAST_DATA_DIR`.
pub fn env_name(key: &str) -> String {
    format!("BLOOMCAST_{}", key.to_ascii_uppercase())
}

impl Settings {
    /// Checks ranges that would otherwise fail later and less clearly.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |name, message: &str| {
            Err(ConfigError::Invalid {
                name,
                message: message.into(),
            })
        };
        if !(self.target_fpp > 0.0 && self.target_fpp < 1.0) {
            return invalid("target_fpp", "must be between 0 and 1, exclusive");
        }
        if self.capacity == 0 {
            return invalid("capacity", "must be at least 1");
        }
        // Every count up to max_hour_ids must get a filter the wire format can carry
        // (m below 2^32 bits) at the target; checked here, not by a panic at ingest.
        if self.max_hour_ids == 0 {
            return invalid("max_hour_ids", "must be at least 1");
        }
        if self.max_universe_ids == 0 || self.max_universe_ids > u64::from(u32::MAX / 2) {
            return invalid(
                "max_universe_ids",
                "must be between 1 and 2147483647 (an exact body counts IDs in 32 bits)",
            );
        }
        for (name, n) in [
            ("capacity", self.capacity),
            ("max_hour_ids", self.max_hour_ids),
        ] {
            if crate::bloom::Params::sized(n.saturating_mul(2), self.target_fpp).is_err() {
                return invalid(
                    name,
                    &format!(
                        "{n} IDs at target_fpp {} need a filter larger than the wire format's \
                         2^32 bits; lower it or raise target_fpp",
                        self.target_fpp
                    ),
                );
            }
        }
        if self.capacity > self.max_hour_ids {
            return invalid("capacity", "must not exceed max_hour_ids");
        }
        for (name, value) in [
            ("max_connections", self.max_connections),
            ("ingest_concurrency", self.ingest_concurrency),
            ("write_queue_depth", self.write_queue_depth),
            ("union_builds", self.union_builds),
            ("cache_bytes", self.cache_bytes),
            ("events_max_subscribers", self.events_max_subscribers),
            (
                "events_heartbeat_seconds",
                self.events_heartbeat_seconds as usize,
            ),
            ("events_resume_hours", self.events_resume_hours as usize),
            ("websub_max_subscriptions", self.websub_max_subscriptions),
            (
                "websub_max_lease_seconds",
                self.websub_max_lease_seconds as usize,
            ),
            ("websub_deliveries", self.websub_deliveries),
        ] {
            if value == 0 {
                return invalid(name, "must be at least 1");
            }
        }
        if self.refresh_ms > 3_600_000 {
            return invalid("refresh_ms", "must be at most an hour (3600000)");
        }
        if self.retention_hours == 0 {
            return invalid("retention_hours", "must be at least 1");
        }
        if self.body_limit == 0 {
            return invalid("body_limit", "must be at least 1 byte");
        }
        if self.database_timeout_ms == 0 {
            return invalid("database_timeout_ms", "must be at least 1 millisecond");
        }
        if self.request_timeout_seconds == 0 {
            return invalid("request_timeout_seconds", "must be at least 1 second");
        }
        if self.header_read_timeout_seconds == 0 {
            return invalid("header_read_timeout_seconds", "must be at least 1 second");
        }
        if self.write_timeout_seconds == 0 {
            return invalid("write_timeout_seconds", "must be at least 1 second");
        }
        if self
            .ingest_tokens
            .iter()
            .any(|t| t.expose_secret().len() < 8)
        {
            return invalid("ingest_tokens", "each token must be at least 8 characters");
        }
        if !self
            .database_schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            || self.database_schema.is_empty()
        {
            return invalid(
                "database_schema",
                "must be a plain identifier: letters, digits and _",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
