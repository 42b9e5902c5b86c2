//! The settings as people read them: `bloomcast serve --help` and docs/CONFIG.md, both
//! generated from the one declaration in `config.rs`.

use super::names::{NOT_SETTINGS, TEST_PREFIX};
use super::Settings;

impl Settings {
    /// Every setting as shown by `bloomcast serve --help`.
    pub fn help() -> String {
        let mut out = String::from(
            "Settings: config/default.toml, then config/local.toml, then the file named by \
             BLOOMCAST_CONFIG (or --config), then the environment (BLOOMCAST_<KEY>), then \
             --listen and --data-dir. An unknown BLOOMCAST_* variable is refused. \
             Reference: docs/CONFIG.md.\n",
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
        let others = NOT_SETTINGS.map(|n| format!("`{n}`")).join(", ");
        let mut out = format!(
            "# Configuration reference\n\n\
             Generated from `src/config.rs` (`cargo test --lib config` checks it; \
             `BLOOMCAST_BLESS=1 cargo test --lib config` rewrites it).\n\n\
             Files are read in order, later ones winning: `config/default.toml`, \
             `config/local.toml` (if present, not committed), the file named by \
             `BLOOMCAST_CONFIG` (an error if it is missing), then the environment, then \
             `bloomcast serve`'s flags (`--config FILE` instead of `BLOOMCAST_CONFIG`, \
             `--listen`, `--data-dir`). A `BLOOMCAST_*` variable that is neither a \
             setting's below, nor `{TEST_PREFIX}*` (the tests'), nor one read by the \
             client and the tools ({others}) is refused at start, naming the closest \
             known name. \
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
