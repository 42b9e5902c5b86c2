//! Which `BLOOMCAST_*` environment variables mean something, so a misspelt one is
//! refused at start (naming the closest known name) instead of silently ignored.

use super::{ConfigError, Settings};

/// `BLOOMCAST_*` variables that are not settings of the server but are read elsewhere:
/// the file of settings, the command-line client's server, token and cache, and the
/// test and build tooling (a server started by a test inherits them).
pub const NOT_SETTINGS: [&str; 6] = [
    "BLOOMCAST_CONFIG",
    "BLOOMCAST_SERVER",
    "BLOOMCAST_TOKEN",
    "BLOOMCAST_CACHE_DIR",
    "BLOOMCAST_BLESS",
    "BLOOMCAST_BIN",
];

/// Variables of the test suites (`BLOOMCAST_TEST_DATABASE_URL`, `BLOOMCAST_TEST_PG_BIN`, ...).
pub const TEST_PREFIX: &str = "BLOOMCAST_TEST_";

/// Refuses the first `BLOOMCAST_*` name in `names` that is neither a setting's variable
/// nor one of [`NOT_SETTINGS`] (nor a test variable).
///
/// # Errors
/// [`ConfigError::UnknownEnv`] naming the variable and the closest known name.
pub fn check_env_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), ConfigError> {
    let settings: Vec<String> = Settings::reference().into_iter().map(|s| s.env).collect();
    let known: Vec<&str> = settings
        .iter()
        .map(String::as_str)
        .chain(NOT_SETTINGS)
        .collect();
    for name in names {
        if !name.starts_with("BLOOMCAST_") || name.starts_with(TEST_PREFIX) {
            continue;
        }
        if !known.contains(&name) {
            return Err(ConfigError::UnknownEnv {
                name: name.to_owned(),
                closest: closest(name, &known).unwrap_or_default().to_owned(),
            });
        }
    }
    Ok(())
}

/// For a config file refused by the parser: the first key in `text` that is no setting,
/// with the closest setting's name, as a line to add to the parser's message.
pub(super) fn unknown_key_hint(text: &str) -> Option<String> {
    let table: toml::Table = text.parse().ok()?;
    let keys: Vec<&str> = Settings::reference().iter().map(|s| s.key).collect();
    let unknown = table.keys().find(|k| !keys.contains(&k.as_str()))?;
    let closest = closest(unknown, &keys)?;
    Some(format!(
        "`{unknown}` is no setting: the closest is `{closest}`"
    ))
}

/// The candidate nearest to `name` by edit distance (ignoring case); the first of
/// equals. `None` only without candidates.
pub fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    candidates
        .iter()
        .min_by_key(|c| strsim::levenshtein(&name, &c.to_ascii_lowercase()))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_variable_is_refused_naming_the_closest_setting() {
        let err = check_env_names(["BLOOMCAST_LISTEN", "BLOOMCAST_DATA_DRI"]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::UnknownEnv { name, closest }
                if name == "BLOOMCAST_DATA_DRI" && closest == "BLOOMCAST_DATA_DIR"),
            "{err}"
        );
        let shown = err.to_string();
        assert!(shown.contains("BLOOMCAST_DATA_DRI") && shown.contains("BLOOMCAST_DATA_DIR"));
        let err = check_env_names(["BLOOMCAST_INGEST_TOKEN"]).unwrap_err();
        assert!(err.to_string().contains("BLOOMCAST_INGEST_TOKENS"), "{err}");
    }

    #[test]
    fn variables_read_by_the_client_and_the_tests_are_not_refused() {
        let names = [
            "BLOOMCAST_CONFIG",
            "BLOOMCAST_SERVER",
            "BLOOMCAST_TOKEN",
            "BLOOMCAST_CACHE_DIR",
            "BLOOMCAST_BLESS",
            "BLOOMCAST_BIN",
            "BLOOMCAST_TEST_DATABASE_URL",
            "BLOOMCAST_TEST_PG_BIN",
            "BLOOMCAST_DATABASE_SCHEMA",
            "PATH",
            "RUST_LOG",
        ];
        assert!(check_env_names(names).is_ok());
    }
}
