//! The cluster store's link: `database_url` and `database_ca_file` turned into a
//! tokio-postgres config and the TLS connector its `sslmode` asks for.
//!
//! tokio-postgres parses `sslmode` only as `disable`/`prefer`/`require` and rejects
//! libpq's `sslrootcert`, so both are taken out of the URL here (its `postgres://` form
//! or libpq's `key=value` form) before the rest is handed to tokio-postgres.

use super::tls::{self, Roots, SslMode, TlsSetupError};
use std::path::Path;
use thiserror::Error;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A database URL that cannot be used, or a CA file that cannot; the message names
/// the setting to fix, the cause (when there is one) is the `source`, shown after it by
/// [`crate::store::full_message`]. Never shows the URL's password.
#[derive(Debug, Error)]
pub enum LinkError {
    #[error("invalid {0}: sslmode={1:?} is not one of {names}", names = SslMode::NAMES)]
    UnknownSslMode(&'static str, String),
    #[error(
        "invalid {0}: sslrootcert=system checks host names, so it needs \
         sslmode=verify-full (or no sslmode), not {1}"
    )]
    SystemRootsNeedVerifyFull(&'static str, String),
    #[error("invalid {0}: {1}")]
    Syntax(&'static str, String),
    /// A URL whose scheme is not PostgreSQL's (a typo such as `postgress://`), which
    /// tokio-postgres would otherwise read as libpq's `key=value` form and refuse
    /// with `unexpected EOF`.
    #[error("invalid {0}: the scheme {1:?} is not PostgreSQL's: write postgres://user@host/database (or postgresql://...)")]
    Scheme(&'static str, String),
    #[error("invalid {0}")]
    Parse(&'static str, #[source] tokio_postgres::Error),
    #[error("invalid {setting}")]
    Tls {
        setting: String,
        #[source]
        source: TlsSetupError,
    },
}

/// Everything a pool needs to open connections to the cluster database.
pub struct PgLink {
    pub(super) config: tokio_postgres::Config,
    pub(super) tls: MakeRustlsConnect,
    mode: SslMode,
    roots: Roots,
}

impl PgLink {
    /// Reads `sslmode` (default `prefer`, as in libpq) and `sslrootcert` from the URL,
    /// and loads the CA file (`sslrootcert`, else `ca_file` unless empty) whatever the
    /// mode, so a bad file fails at start and not at the first verified connection.
    ///
    /// # Errors
    /// [`LinkError`] naming the setting at fault.
    pub fn new(database_url: &str, ca_file: &Path) -> Result<PgLink, LinkError> {
        PgLink::of_setting("database_url", database_url, ca_file)
    }

    /// As [`PgLink::new`], for the URL of the setting `setting` (`database_read_url`,
    /// `database_listen_url`), which its errors name.
    ///
    /// # Errors
    /// [`LinkError`] naming the setting at fault.
    pub fn of_setting(
        setting: &'static str,
        url: &str,
        ca_file: &Path,
    ) -> Result<PgLink, LinkError> {
        check_scheme(setting, url)?;
        let params = take_ssl_params(setting, url)?;
        let mut config: tokio_postgres::Config = params
            .rest
            .parse()
            .map_err(|e| LinkError::Parse(setting, e))?;
        let system = params.sslrootcert.as_deref() == Some("system");
        let mode = match params.sslmode.as_deref() {
            None if system => SslMode::VerifyFull,
            None => SslMode::Prefer,
            Some(v) => {
                SslMode::parse(v).ok_or_else(|| LinkError::UnknownSslMode(setting, v.to_owned()))?
            }
        };
        if system && mode != SslMode::VerifyFull {
            return Err(LinkError::SystemRootsNeedVerifyFull(
                setting,
                params.sslmode.unwrap_or_default(),
            ));
        }
        let (roots, named) = match params.sslrootcert {
            Some(s) if s == "system" => (Roots::Public, setting.to_owned()),
            Some(path) => (Roots::File(path.into()), format!("{setting} (sslrootcert)")),
            None if ca_file.as_os_str().is_empty() => (Roots::Public, "database_ca_file".into()),
            None => (Roots::File(ca_file.to_owned()), "database_ca_file".into()),
        };
        let tls = tls::connector(mode, &roots).map_err(|source| LinkError::Tls {
            setting: named,
            source,
        })?;
        if matches!(roots, Roots::File(_)) && matches!(mode, SslMode::Disable | SslMode::Prefer) {
            tracing::warn!(
                ?mode,
                setting,
                "a CA file is set but sslmode does not check certificates: \
                 use sslmode=verify-full in the URL"
            );
        }
        config.ssl_mode(mode.negotiation());
        Ok(PgLink {
            config,
            tls,
            mode,
            roots,
        })
    }

    /// One connection over this link, outside any pool: for diagnostics and tests
    /// that look at the connection itself (e.g. `pg_stat_ssl`).
    ///
    /// # Errors
    /// The driver's error: unreachable, TLS refused, authentication failed.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(self.tls.clone()).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "diagnostic database connection ended");
            }
        });
        Ok(client)
    }

    /// The `sslmode` in force, for logs.
    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// The CA file checked against, if any (`None`: the public web roots, or no check).
    pub fn ca_file(&self) -> Option<&Path> {
        match &self.roots {
            Roots::File(path) => Some(path),
            Roots::Public => None,
        }
    }
}

/// Refuses a URL (`scheme://...`) whose scheme is not `postgres` or `postgresql`,
/// naming only the scheme (the rest may hold a password). Text without `://` is
/// libpq's `key=value` form, left to its parser.
fn check_scheme(setting: &'static str, url: &str) -> Result<(), LinkError> {
    let Some((scheme, _)) = url.trim_start().split_once("://") else {
        return Ok(());
    };
    let is_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme || ["postgres", "postgresql"].contains(&scheme) {
        return Ok(());
    }
    Err(LinkError::Scheme(setting, format!("{scheme}://")))
}

/// A URL with `sslmode` and `sslrootcert` taken out, and their values.
#[derive(Debug, PartialEq, Eq)]
struct SslParams {
    rest: String,
    sslmode: Option<String>,
    sslrootcert: Option<String>,
}

fn take_ssl_params(setting: &'static str, url: &str) -> Result<SslParams, LinkError> {
    let mut params = SslParams {
        rest: url.to_owned(),
        sslmode: None,
        sslrootcert: None,
    };
    // Records an SSL parameter; false for any other, which stays in the URL.
    let mut take = |key: &str, value: String| {
        match key {
            "sslmode" => params.sslmode = Some(value),
            "sslrootcert" => params.sslrootcert = Some(value),
            _ => return false,
        }
        true
    };
    let rest = if let Some(scheme_end) = ["postgres://", "postgresql://"]
        .iter()
        .find(|p| url.starts_with(*p))
        .map(|p| p.len())
    {
        // As tokio-postgres: credentials end at the first '@', the query starts after.
        let host_start = url[scheme_end..]
            .find('@')
            .map_or(scheme_end, |at| scheme_end + at + 1);
        let Some(q) = url[host_start..].find('?') else {
            return Ok(params);
        };
        let (base, query) = (&url[..host_start + q], &url[host_start + q + 1..]);
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(
                &percent_decode(setting, key)?,
                percent_decode(setting, value)?,
            ) {
                kept.push(pair);
            }
        }
        match kept.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", kept.join("&")),
        }
    } else {
        // Malformed key=value text is left whole for tokio-postgres to report.
        let Some(pairs) = key_value_pairs(url) else {
            return Ok(params);
        };
        let mut kept = Vec::new();
        for (key, value, raw) in pairs {
            if !take(key, value) {
                kept.push(raw);
            }
        }
        kept.join(" ")
    };
    params.rest = rest;
    Ok(params)
}

/// `s` percent-decoded, refusing what tokio-postgres refuses: a `%` not followed by
/// two hex digits, and bytes that are not UTF-8.
fn percent_decode(setting: &'static str, s: &str) -> Result<String, LinkError> {
    let bad = || LinkError::Syntax(setting, format!("bad percent-encoding in {s:?}"));
    let escapes_whole = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_whole {
        return Err(bad());
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(String::from)
        .map_err(|_| bad())
}

/// libpq's `key = value` pairs (values optionally single-quoted, `\` escapes), each
/// with its raw text; `None` if the text does not follow that grammar.
fn key_value_pairs(s: &str) -> Option<Vec<(&str, String, &str)>> {
    let mut pairs = Vec::new();
    let mut it = s.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else {
            return Some(pairs);
        };
        let mut key_end = start;
        while let Some((i, c)) = it.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key_end = i + c.len_utf8();
        }
        skip_ws(&mut it);
        if key_end == start || it.next()?.1 != '=' {
            return None;
        }
        skip_ws(&mut it);
        let quoted = it.next_if(|(_, c)| *c == '\'').is_some();
        let mut value = String::new();
        let mut end = s.len();
        loop {
            match it.peek().copied() {
                None if quoted => return None,
                None => break,
                Some((i, '\'')) if quoted => {
                    it.next();
                    end = i + 1;
                    break;
                }
                Some((i, c)) if c.is_whitespace() && !quoted => {
                    end = i;
                    break;
                }
                Some((_, c)) => {
                    it.next();
                    let c = if c == '\\' { it.next()?.1 } else { c };
                    value.push(c);
                }
            }
        }
        if value.is_empty() && !quoted {
            return None;
        }
        pairs.push((&s[start..key_end], value, &s[start..end]));
    }
}

#[cfg(test)]
mod tests;
