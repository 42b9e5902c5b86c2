//! The settings as people read them: `bloomcast serve --help` and docs/CONFIG.md, both
//! generated from the one declaration in `config.rs`.

use super::Settings;

impl Settings {
    /// Every setting as shown by `bloomcast serve --help`.
    pub fn help() -> String {
        let mut out = String::from(
            "Settings: config/default.toml, then config/local.toml, then the file named by \
             BLOOMCAST_CONFIG, then the environment (BLOOMCAST_<KEY>). Reference: docs/CONFIG.md.\n",
        );
        for s in Settings::reference() {
            out.push_str(&format!(
                "\n  {} / {} [default: {}]\n      {}\n",
                s.key, s.env, s.default, s.doc
            ));
        }
        out
    }

    /// The reference page docs/CONFIG.md (generated; a test keeps the file in sync).
    pub fn reference_markdown() -> String {
        let mut out = String::from(
            "# Configuration reference\n\n\
             Generated from `src/config.rs` (`cargo test --lib config` checks it; \
             `BLOOMCAST_BLESS=1 cargo test --lib config` rewrites it).\n\n\
             Files are read in order, later ones winning: `config/default.toml`, \
             `config/local.toml` (if present, not committed), the file named by \
             `BLOOMCAST_CONFIG` (an error if it is missing), then the environment. \
             Relative paths are taken from the working directory; the resolved data \
             directory and the files read are logged at startup.\n\n\
             | Key | Environment variable | Default | Meaning |\n| --- | --- | --- | --- |\n",
        );
        for s in Settings::reference() {
            out.push_str(&format!(
                "| `{}` | `{}` | `{}` | {} |\n",
                s.key,
                s.env,
                s.default,
                s.doc.replace('|', "\\|")
            ));
        }
        out
    }
}
