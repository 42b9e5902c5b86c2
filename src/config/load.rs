//! Loading the settings: the files under `config/`, the environment, then the command
//! line, each layer winning over the one before.

use super::names::{check_env_names, unknown_key_hint};
use super::{ConfigError, ListenAddr, Settings};
use std::path::{Path, PathBuf};

/// Settings as loaded, with where they came from (logged at startup).
#[derive(Debug)]
pub struct Loaded {
    pub settings: Settings,
    /// The config files read, in order (absolute paths).
    pub files: Vec<PathBuf>,
}

/// Settings given on `bloomcast serve`'s command line: each wins over the environment
/// and the files.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--config`: a file read after config/local.toml, instead of `BLOOMCAST_CONFIG`'s.
    pub config: Option<PathBuf>,
    /// `--listen`.
    pub listen: Option<ListenAddr>,
    /// `--data-dir` (a relative path is taken from the working directory).
    pub data_dir: Option<PathBuf>,
}

/// The process's `BLOOMCAST_*` variables, the ones settings are read from.
///
/// # Errors
/// [`ConfigError::NotUnicode`] for one whose value is not UTF-8.
pub fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            name.starts_with("BLOOMCAST_").then_some((name, value))
        })
        .map(|(name, value)| match value.into_string() {
            Ok(value) => Ok((name, value)),
            Err(_) => Err(ConfigError::NotUnicode { name }),
        })
        .collect()
}

impl Settings {
    /// Loads `config/default.toml` and `config/local.toml` from `base` if present, then
    /// the file named by `BLOOMCAST_CONFIG` (which must exist), then applies the process
    /// environment. A relative `data_dir` (or `BLOOMCAST_CONFIG`) is resolved against `base`.
    ///
    /// # Errors
    /// An unreadable or malformed file (naming the file, and the line for syntax and type
    /// errors), an unknown `BLOOMCAST_*` variable, a malformed environment value, or a
    /// setting out of range.
    pub fn load(base: &Path) -> Result<Settings, ConfigError> {
        Settings::load_from(base, &Overrides::default(), process_env()?).map(|l| l.settings)
    }

    /// As [`Settings::load`], with the environment given as `(name, value)` pairs and
    /// the command line's `overrides` applied last, also returning the files read.
    ///
    /// # Errors
    /// As [`Settings::load`].
    pub fn load_from(
        base: &Path,
        overrides: &Overrides,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, ConfigError> {
        let env: std::collections::BTreeMap<String, String> = env.into_iter().collect();
        check_env_names(env.keys().map(String::as_str))?;
        let get = |name: &str| env.get(name).cloned();
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
        let mut candidates = vec![
            (base.join("config/default.toml"), false),
            (base.join("config/local.toml"), false),
        ];
        let extra = match &overrides.config {
            Some(path) => Some(path.clone()),
            None => get("BLOOMCAST_CONFIG")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        };
        if let Some(extra) = extra {
            candidates.push((base.join(extra), true));
        }
        let mut table = toml::Table::new();
        let mut files = Vec::new();
        for (path, required) in candidates {
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => continue,
                Err(source) => return Err(ConfigError::Read { path, source }),
            };
            // Each file on its own first, so an error names its file and line.
            let parse = |e: toml::de::Error| ConfigError::Parse {
                path: path.clone(),
                message: e.to_string().trim_end().to_owned(),
            };
            // An unknown key is named with the closest setting, as an unknown variable is.
            toml::from_str::<Settings>(&text).map_err(|e| {
                let mut message = e.to_string().trim_end().to_owned();
                if let Some(hint) = unknown_key_hint(&text) {
                    message.push('\n');
                    message.push_str(&hint);
                }
                ConfigError::Parse {
                    path: path.clone(),
                    message,
                }
            })?;
            table.extend(text.parse::<toml::Table>().map_err(parse)?);
            files.push(path);
        }
        let mut settings: Settings =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: files.last().cloned().unwrap_or_else(|| base.join("config")),
                    message: e.to_string(),
                })?;
        settings.apply_env(get)?;
        if let Some(listen) = &overrides.listen {
            settings.listen = listen.clone();
        }
        if let Some(dir) = &overrides.data_dir {
            settings.data_dir = dir.clone();
        }
        settings.data_dir = base.join(&settings.data_dir);
        if !settings.signing_key_file.as_os_str().is_empty() {
            settings.signing_key_file = base.join(&settings.signing_key_file);
        }
        settings.validate()?;
        Ok(Loaded { settings, files })
    }
}
