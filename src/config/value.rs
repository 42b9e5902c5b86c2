//! How each setting's type is read from an environment variable and shown in `--help`,
//! docs/CONFIG.md and `Debug` (secrets redacted). A setting of a new type needs one
//! [`SettingValue`] impl here; a setting of a known type needs nothing.

use secrecy::{ExposeSecret, SecretString};
use std::net::SocketAddr;
use std::path::PathBuf;

/// A type a setting can have.
pub trait SettingValue: Sized {
    /// Parses the value of a `BLOOMCAST_*` variable.
    ///
    /// # Errors
    /// Why the text is not a valid value.
    fn from_env(text: &str) -> Result<Self, String>;
    /// The value as shown to people; secrets redacted.
    fn show(&self) -> String;
}

macro_rules! from_str_values {
    ($($ty:ty),+) => {$(
        impl SettingValue for $ty {
            fn from_env(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|e: <$ty as std::str::FromStr>::Err| e.to_string())
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )+};
}
from_str_values!(
    u16,
    u32,
    u64,
    usize,
    i64,
    f64,
    bool,
    SocketAddr,
    super::ListenAddr
);

impl SettingValue for String {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text.to_owned())
    }
    fn show(&self) -> String {
        format!("{self:?}")
    }
}

impl SettingValue for PathBuf {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
    }
    fn show(&self) -> String {
        format!("{:?}", self.display().to_string())
    }
}

/// Empty means none.
impl SettingValue for Option<PathBuf> {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok((!text.trim().is_empty()).then(|| PathBuf::from(text)))
    }
    fn show(&self) -> String {
        match self {
            Some(path) => path.show(),
            None => "\"\"".into(),
        }
    }
}

/// A secret: a URL keeps all but its password; anything else is shown only as set or not.
impl SettingValue for SecretString {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(SecretString::from(text))
    }
    fn show(&self) -> String {
        let secret = self.expose_secret();
        if secret.is_empty() {
            "\"\"".into()
        } else if secret.contains("://") {
            format!("{:?}", redact_url(secret))
        } else {
            "<redacted>".into()
        }
    }
}

/// Comma-separated in the environment; blanks around and between commas are ignored.
impl SettingValue for Vec<SecretString> {
    fn from_env(text: &str) -> Result<Self, String> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(SecretString::from)
            .collect())
    }
    fn show(&self) -> String {
        match self.len() {
            0 => "[]".into(),
            n => format!("<{n} redacted>"),
        }
    }
}

/// Networks (`10.0.0.0/8`, `fd00::/8`), comma-separated in the environment.
impl SettingValue for Vec<ipnet::IpNet> {
    fn from_env(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.parse()
                    .map_err(|e| format!("{t:?} is not a network like 10.0.0.0/8: {e}"))
            })
            .collect()
    }
    fn show(&self) -> String {
        format!(
            "{:?}",
            self.iter().map(ToString::to_string).collect::<Vec<_>>()
        )
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_url(url: &str) -> String {
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
