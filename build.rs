//! Names the commit the binary is built from, for `bloomcast --version` (as
//! `BUILD_COMMIT` at compile time): the environment variable `SOURCE_COMMIT` when set (a
//! packager or image build from a tarball who knows it; Docker Hub's builds set it),
//! else `git rev-parse` of this source tree's own checkout, else "unknown" (a tarball
//! without `.git`, or no `git` on the machine). Never fails the build.
//!
//! Not a `BLOOMCAST_*` name: cargo also sets it when it runs the tests, and the server
//! refuses `BLOOMCAST_*` variables that are no setting.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_COMMIT");
    let commit = std::env::var("SOURCE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BUILD_COMMIT={}", commit.trim());
}

/// The checked-out commit (12 hex digits), when this directory is the top of a git
/// checkout (not a tarball unpacked inside some other repository); the files that
/// change when it moves are watched so the name follows new commits.
fn from_git() -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let top = git(&dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &str, b: &str| {
        let canonical = |p: &str| Path::new(p).canonicalize().ok();
        canonical(a).is_some() && canonical(a) == canonical(b)
    };
    if !same(&top, &dir) {
        return None;
    }
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&dir, &["rev-parse", "--git-path", &name]) {
            let path = Path::new(&dir).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    git(&dir, &["rev-parse", "--short=12", "HEAD"])
}

/// `git ARGS` in `dir`: its first line of output when it succeeds.
fn git(dir: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}
