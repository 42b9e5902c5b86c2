//! Lists bloomcast-core's public API (all features on) and compares it with the recorded
//! `crates/bloomcast-core/public-api.txt`; a difference fails with the lines added and
//! removed. `--bless` records the current listing instead. Blanket impls (`From`, `Into`,
//! `Any`, ...) are left out: every type has them.
//!
//! The listing comes from rustdoc's JSON output, an unstable rustdoc flag: stable rustc
//! allows it under `RUSTC_BOOTSTRAP=1`, so no nightly toolchain is needed. It is built in
//! `public-api-json/` under the workspace's target directory (`CARGO_TARGET_DIR`, default
//! `target/` at the top), apart from the other builds: some build scripts (thiserror's)
//! probe the compiler again when `RUSTC_BOOTSTRAP` changes, which would rebuild everything
//! above them in a shared directory.
//!
//! Run from the top of the repository:
//! `cargo run --locked --manifest-path crates/bloomcast-core/public-api/Cargo.toml
//! --target-dir target/public-api-tool [-- --bless]`

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let bless = std::env::args().skip(1).any(|a| a == "--bless");
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let top = core.join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| top.join("target"))
        .join("public-api-json");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&top)
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "rustdoc",
            "--locked",
            "--lib",
            "--all-features",
            "-p",
            "bloomcast-core",
        ])
        .arg("--target-dir")
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .status()
        .expect("run cargo rustdoc");
    if !status.success() {
        eprintln!("cargo rustdoc (JSON output) failed for bloomcast-core");
        return ExitCode::FAILURE;
    }
    let json = target.join("doc/bloomcast_core.json");
    let api = match public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .build()
    {
        Ok(api) => api,
        Err(e) => {
            eprintln!(
                "cannot read {}: {e}\n(a rustdoc JSON format other than public-api's? \
                 move the public-api pin in {}/Cargo.toml to the release for this toolchain)",
                json.display(),
                Path::new(env!("CARGO_MANIFEST_DIR")).display()
            );
            return ExitCode::FAILURE;
        }
    };
    let current: String = api.items().map(|item| format!("{item}\n")).collect();
    let recorded_path = core.join("public-api.txt");
    if bless {
        std::fs::write(&recorded_path, &current).expect("write public-api.txt");
        println!(
            "recorded {} items in {}",
            api.items().count(),
            recorded_path.display()
        );
        return ExitCode::SUCCESS;
    }
    let recorded = std::fs::read_to_string(&recorded_path).unwrap_or_default();
    if recorded == current {
        println!(
            "bloomcast-core's public API: {} items, as recorded",
            api.items().count()
        );
        return ExitCode::SUCCESS;
    }
    let old: BTreeSet<&str> = recorded.lines().collect();
    let new: BTreeSet<&str> = current.lines().collect();
    eprintln!("bloomcast-core's public API differs from crates/bloomcast-core/public-api.txt:");
    for line in old.difference(&new) {
        eprintln!("- {line}");
    }
    for line in new.difference(&old) {
        eprintln!("+ {line}");
    }
    eprintln!(
        "If the change is meant, record it: cargo run --locked --manifest-path \
         crates/bloomcast-core/public-api/Cargo.toml \
         --target-dir target/public-api-tool -- --bless"
    );
    ExitCode::FAILURE
}
