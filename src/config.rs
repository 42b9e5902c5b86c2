//! Configuration: `config/` files layered with `BLOOMCAST_*` environment overrides.
//!
//! Secrets (ingest tokens, the database URL's password) are never logged: `Debug`
//! redacts them.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
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
}

/// Every setting of the server. Field names are the config keys; each has an
/// environment override `BLOOMCAST_<NAME>`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub ingest_tokens: Vec<String>,
    pub capacity: u64,
    pub target_fpp: f64,
    pub retention_hours: u64,
    pub open_max_age: u64,
    pub body_limit: usize,
    pub cache_bytes: usize,
    pub shutdown_timeout: u64,
    pub database_url: String,
    pub database_schema: String,
    /// PEM file of the CA(s) that sign the PostgreSQL server's certificate, checked with
    /// `sslmode=verify-ca`/`verify-full` in `database_url`; empty: the public web roots.
    pub database_ca_file: PathBuf,
    pub refresh_ms: u64,
    /// Seconds a whole request (body included) may take before it is answered 408.
    pub request_timeout_seconds: u64,
    /// Seconds a client has to send a request's headers (slow-loris defence); the
    /// connection is closed when they do not arrive in time. Also bounds idle keep-alive.
    pub header_read_timeout_seconds: u64,
    /// Shifts the server's notion of now (testing: run a whole process at another time).
    pub clock_offset_seconds: i64,
    /// Distinct IDs one hour may hold; ingest past it answers 507 `hour_full`. Bounds the
    /// open hour's memory (about 25-40 bytes per distinct ID).
    pub max_hour_ids: u64,
    /// Connections served at once; further connections wait in the listen backlog.
    pub max_connections: usize,
    /// Ingest requests whose bodies are read at once (each up to `body_limit` bytes);
    /// more answer 503 `busy` with Retry-After at once.
    pub ingest_concurrency: usize,
    /// Write requests that may wait for the embedded store's writer; more answer 503 `busy`.
    pub write_queue_depth: usize,
    /// Union filters (days, since-ranges) of different ranges built at once; a request
    /// needing another build answers 503 `busy` at once. Requests for one range share a build.
    pub union_builds: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: PathBuf::from("data"),
            ingest_tokens: Vec::new(),
            capacity: 3000,
            target_fpp: 0.01,
            retention_hours: 720,
            open_max_age: 30,
            body_limit: 16 * 1024 * 1024,
            cache_bytes: 256 * 1024 * 1024,
            shutdown_timeout: 10,
            database_url: String::new(),
            database_schema: "bloomcast".into(),
            database_ca_file: PathBuf::new(),
            refresh_ms: 1000,
            request_timeout_seconds: 30,
            header_read_timeout_seconds: 5,
            clock_offset_seconds: 0,
            max_hour_ids: 50_000_000,
            max_connections: 4096,
            ingest_concurrency: 32,
            write_queue_depth: 256,
            union_builds: 1,
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field(
                "ingest_tokens",
                &format!("<{} redacted>", self.ingest_tokens.len()),
            )
            .field("capacity", &self.capacity)
            .field("target_fpp", &self.target_fpp)
            .field("retention_hours", &self.retention_hours)
            .field("open_max_age", &self.open_max_age)
            .field("body_limit", &self.body_limit)
            .field("cache_bytes", &self.cache_bytes)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("database_url", &redact_url(&self.database_url))
            .field("database_schema", &self.database_schema)
            .field("database_ca_file", &self.database_ca_file)
            .field("refresh_ms", &self.refresh_ms)
            .field("request_timeout_seconds", &self.request_timeout_seconds)
            .field(
                "header_read_timeout_seconds",
                &self.header_read_timeout_seconds,
            )
            .field("clock_offset_seconds", &self.clock_offset_seconds)
            .field("max_hour_ids", &self.max_hour_ids)
            .field("max_connections", &self.max_connections)
            .field("ingest_concurrency", &self.ingest_concurrency)
            .field("write_queue_depth", &self.write_queue_depth)
            .field("union_builds", &self.union_builds)
            .finish()
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl Settings {
    /// Loads `config/default.toml`, `config/local.toml` and `$BLOOMCAST_CONFIG` (each
    /// if present) from `base`, then applies the process environment.
    ///
    /// # Errors
    /// An unreadable or malformed file, a malformed environment value, or a setting
    /// out of range.
    pub fn load(base: &Path) -> Result<Settings, ConfigError> {
        let mut files = vec![
            base.join("config/default.toml"),
            base.join("config/local.toml"),
        ];
        if let Ok(extra) = std::env::var("BLOOMCAST_CONFIG") {
            files.push(PathBuf::from(extra));
        }
        let mut table = toml::Table::new();
        for path in files {
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(ConfigError::Read { path, source }),
            };
            let layer: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::Parse {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
            table.extend(layer);
        }
        let mut settings: Settings =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: base.join("config"),
                    message: e.to_string(),
                })?;
        settings.apply_env(|name| std::env::var(name).ok())?;
        settings.validate()?;
        Ok(settings)
    }

    /// Applies `BLOOMCAST_*` overrides read through `get` (the environment in production).
    ///
    /// # Errors
    /// [`ConfigError::Env`] naming the variable whose value does not parse.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            value.trim().parse().map_err(|e: T::Err| ConfigError::Env {
                name: name.into(),
                value: value.into(),
                message: e.to_string(),
            })
        }
        macro_rules! env {
            ($field:ident, $name:literal) => {
                if let Some(v) = get($name) {
                    self.$field = parse($name, &v)?;
                }
            };
        }
        env!(listen, "BLOOMCAST_LISTEN");
        env!(data_dir, "BLOOMCAST_DATA_DIR");
        env!(capacity, "BLOOMCAST_CAPACITY");
        env!(target_fpp, "BLOOMCAST_TARGET_FPP");
        env!(retention_hours, "BLOOMCAST_RETENTION_HOURS");
        env!(open_max_age, "BLOOMCAST_OPEN_MAX_AGE");
        env!(body_limit, "BLOOMCAST_BODY_LIMIT");
        env!(cache_bytes, "BLOOMCAST_CACHE_BYTES");
        env!(shutdown_timeout, "BLOOMCAST_SHUTDOWN_TIMEOUT");
        env!(database_url, "BLOOMCAST_DATABASE_URL");
        env!(database_schema, "BLOOMCAST_DATABASE_SCHEMA");
        env!(database_ca_file, "BLOOMCAST_DATABASE_CA_FILE");
        env!(refresh_ms, "BLOOMCAST_REFRESH_MS");
        env!(request_timeout_seconds, "BLOOMCAST_REQUEST_TIMEOUT_SECONDS");
        env!(
            header_read_timeout_seconds,
            "BLOOMCAST_HEADER_READ_TIMEOUT_SECONDS"
        );
        env!(clock_offset_seconds, "BLOOMCAST_CLOCK_OFFSET_SECONDS");
        env!(max_hour_ids, "BLOOMCAST_MAX_HOUR_IDS");
        env!(max_connections, "BLOOMCAST_MAX_CONNECTIONS");
        env!(ingest_concurrency, "BLOOMCAST_INGEST_CONCURRENCY");
        env!(write_queue_depth, "BLOOMCAST_WRITE_QUEUE_DEPTH");
        env!(union_builds, "BLOOMCAST_UNION_BUILDS");
        if let Some(v) = get("BLOOMCAST_INGEST_TOKENS") {
            self.ingest_tokens = v
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Ok(())
    }

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
        for (name, n) in [
            ("capacity", self.capacity),
            ("max_hour_ids", self.max_hour_ids),
        ] {
            if crate::bloom::Params::optimal(n.saturating_mul(2), self.target_fpp).is_err() {
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
        if self.request_timeout_seconds == 0 {
            return invalid("request_timeout_seconds", "must be at least 1 second");
        }
        if self.header_read_timeout_seconds == 0 {
            return invalid("header_read_timeout_seconds", "must be at least 1 second");
        }
        if self.ingest_tokens.iter().any(|t| t.len() < 8) {
            return invalid("ingest_tokens", "each token must be at least 8 characters");
        }
        if !self.database_url.is_empty() && self.ingest_tokens.is_empty() {
            // A token generated per node would make ingest depend on which node answers.
            return invalid(
                "ingest_tokens",
                "cluster mode (database_url set) needs the same ingest tokens on every node: \
                 set BLOOMCAST_INGEST_TOKENS",
            );
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_committed_default_file_parses_to_the_defaults() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.toml"))
                .unwrap();
        let from_file: Settings = toml::from_str(&text).unwrap();
        assert_eq!(
            format!("{from_file:?}"),
            format!("{:?}", Settings::default())
        );
    }

    #[test]
    fn environment_overrides_the_documented_names() {
        let mut s = Settings::default();
        s.apply_env(env(&[
            ("BLOOMCAST_LISTEN", "0.0.0.0:9999"),
            ("BLOOMCAST_DATA_DIR", "/var/lib/bloomcast"),
            ("BLOOMCAST_INGEST_TOKENS", "token-one-x, token-two-y,"),
            ("BLOOMCAST_CAPACITY", "5000"),
            ("BLOOMCAST_REQUEST_TIMEOUT_SECONDS", "7"),
            ("BLOOMCAST_HEADER_READ_TIMEOUT_SECONDS", "2"),
            ("BLOOMCAST_CLOCK_OFFSET_SECONDS", "-3600"),
            ("BLOOMCAST_DATABASE_CA_FILE", "/etc/bloomcast/db-ca.pem"),
        ]))
        .unwrap();
        assert_eq!(
            s.database_ca_file,
            PathBuf::from("/etc/bloomcast/db-ca.pem")
        );
        assert_eq!(s.request_timeout_seconds, 7);
        assert_eq!(s.header_read_timeout_seconds, 2);
        assert_eq!(s.clock_offset_seconds, -3600);
        assert_eq!(s.listen.port(), 9999);
        assert_eq!(s.data_dir, PathBuf::from("/var/lib/bloomcast"));
        assert_eq!(s.ingest_tokens, vec!["token-one-x", "token-two-y"]);
        assert_eq!(s.capacity, 5000);
    }

    #[test]
    fn a_bad_environment_value_names_the_variable() {
        let err = Settings::default()
            .apply_env(env(&[("BLOOMCAST_LISTEN", "nowhere")]))
            .unwrap_err();
        assert!(err.to_string().contains("BLOOMCAST_LISTEN"), "{err}");
    }

    #[test]
    fn validation_rejects_out_of_range_settings() {
        let mut s = Settings {
            target_fpp: 1.5,
            ..Settings::default()
        };
        assert!(matches!(
            s.validate(),
            Err(ConfigError::Invalid {
                name: "target_fpp",
                ..
            })
        ));
        s = Settings {
            ingest_tokens: vec!["short".into()],
            ..Settings::default()
        };
        assert!(matches!(
            s.validate(),
            Err(ConfigError::Invalid {
                name: "ingest_tokens",
                ..
            })
        ));
        s = Settings {
            database_url: "postgres://db/bloom".into(),
            ..Settings::default()
        };
        let err = s.validate().unwrap_err();
        assert!(err.to_string().contains("BLOOMCAST_INGEST_TOKENS"), "{err}");
    }

    #[test]
    fn settings_that_cannot_work_are_refused_with_their_name() {
        for (name, tweak) in [
            (
                "capacity",
                Box::new(|s: &mut Settings| s.capacity = 500_000_000) as Box<dyn Fn(&mut Settings)>,
            ),
            (
                "max_hour_ids",
                Box::new(|s: &mut Settings| s.max_hour_ids = u64::MAX / 4),
            ),
            (
                "max_connections",
                Box::new(|s: &mut Settings| s.max_connections = 0),
            ),
            (
                "write_queue_depth",
                Box::new(|s: &mut Settings| s.write_queue_depth = 0),
            ),
        ] {
            let mut s = Settings::default();
            tweak(&mut s);
            let err = s.validate().unwrap_err();
            assert!(
                matches!(&err, ConfigError::Invalid { name: n, .. } if *n == name),
                "{name}: {err}"
            );
        }
        assert!(Settings::default().validate().is_ok());
    }

    #[test]
    fn debug_output_never_shows_secrets() {
        let s = Settings {
            ingest_tokens: vec!["super-secret-token".into()],
            database_url: "postgres://app:hunter2@db/bloom".into(),
            ..Settings::default()
        };
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("super-secret-token") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert!(shown.contains("postgres://app:***@db/bloom"));
    }
}
