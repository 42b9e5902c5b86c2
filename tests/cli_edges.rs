//! The CLI at its edges: a reader that stops reading (`| head -1`), a server named
//! nowhere, a misspelt database URL, a start that fails (said once), progress lines
//! (on a terminal only) and `--version` (naming the commit).
//!
//! The terminal test needs util-linux's `script`; reported ignored without it, failed in
//! CI (`tests/common/needs.rs`).

mod common;

use common::needs::{self, Need};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn main() {
    needs::run(vec![
        needs::trial(
            "inspect_into_a_closed_pipe_exits_quietly",
            &[],
            inspect_into_a_closed_pipe_exits_quietly,
        ),
        needs::trial(
            "a_missing_server_names_its_variable_in_every_verb",
            &[],
            a_missing_server_names_its_variable_in_every_verb,
        ),
        needs::trial(
            "a_misspelt_database_scheme_is_named_with_the_right_one_once",
            &[],
            a_misspelt_database_scheme_is_named_with_the_right_one_once,
        ),
        needs::trial(
            "progress_lines_stay_off_a_pipe",
            &[],
            progress_lines_stay_off_a_pipe,
        ),
        needs::trial(
            "ingest_shows_its_progress_on_a_terminal",
            &[Need::Script],
            ingest_shows_its_progress_on_a_terminal,
        ),
        needs::trial(
            "mirror_shows_its_progress_on_a_terminal",
            &[Need::Script],
            mirror_shows_its_progress_on_a_terminal,
        ),
        needs::trial(
            "version_names_the_commit_or_unknown",
            &[],
            version_names_the_commit_or_unknown,
        ),
        needs::trial(
            "the_build_script_says_unknown_outside_a_checkout",
            &[],
            the_build_script_says_unknown_outside_a_checkout,
        ),
    ]);
}

fn bloomcast() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomcast"));
    for (name, _) in std::env::vars() {
        if name.starts_with("BLOOMCAST_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A pipe whose read end is already closed: every write to the other end fails with
/// EPIPE, as one into `| head -1` does once head has exited.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

/// The current hour's path, as the server (on this machine's clock) names it.
fn current_path() -> String {
    chrono::Utc::now().format("/%Y/%m/%d/%H").to_string()
}

fn inspect_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let url = format!("{}{}", server.base, current_path());

    for json in [false, true] {
        let mut cmd = bloomcast();
        cmd.args(["inspect", &url]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd
            .stdout(Stdio::from(closed_pipe()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();

        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked"), "json={json}: {stderr}");
        assert!(stderr.is_empty(), "json={json}: nothing to say: {stderr}");
        assert_eq!(out.status.code(), Some(0), "json={json}: {stderr}");
    }
}

fn a_missing_server_names_its_variable_in_every_verb() {
    for args in [
        &["check", "a"][..],
        &["history", "a"],
        &["ingest", "--token", "12345678", "a"],
        &["watch", "a"],
        &["mirror", "dir"],
        &["confirm-clock", "--token", "12345678"],
    ] {
        let out = bloomcast().args(args).output().unwrap();

        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("BLOOMCAST_SERVER"), "{args:?}: {stderr}");
    }
}

/// `bloomcast serve` in an empty directory with `env`; its output.
fn serve(env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bloomcast();
    cmd.arg("serve")
        .current_dir(dir.path())
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn a_misspelt_database_scheme_is_named_with_the_right_one_once() {
    let out = serve(&[
        (
            "BLOOMCAST_DATABASE_URL",
            "postgress://app:hunter2@127.0.0.1/db",
        ),
        ("BLOOMCAST_INGEST_TOKENS", "12345678"),
    ]);

    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("\"postgress://\""), "{stderr}");
    assert!(stderr.contains("write postgres://"), "{stderr}");
    assert!(!stderr.contains("unexpected EOF"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert_eq!(
        stderr.matches("is not PostgreSQL's").count(),
        1,
        "said once: {stderr}"
    );
}

/// Each progress line is rewritten in place: `\r`, then erase to the end of the line.
const REWRITE: &str = "\r\x1b[K";

fn progress_lines_stay_off_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let ids: String = (0..3000).map(|n| format!("piped:{n}\n")).collect();
    // Three sealed hours to mirror.
    let sealed = common::mirror::start();
    let mirror = tempfile::tempdir().unwrap();

    let runs: [(&[&str], &str, &str); 3] = [
        (
            &["ingest", "--batch", "100", "--token", common::TOKEN, "-"],
            &ids,
            &server.base,
        ),
        (&["check", "--strategy", "hourly", "-"], &ids, &server.base),
        (
            &["mirror", mirror.path().to_str().unwrap()],
            "",
            &sealed.origin,
        ),
    ];
    for (args, stdin, base) in runs {
        let out =
            common::run_with_stdin(bloomcast().args(args).env("BLOOMCAST_SERVER", base), stdin);

        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains(REWRITE), "{args:?}: {stderr:?}");
    }
}

/// What `command` shows on a terminal of its own (`script -c`, the program `script`), read
/// from that terminal; it must succeed.
fn on_a_terminal(script: &str, command: &str) -> String {
    let out = Command::new(script)
        .args(["-qefc", command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}{}", text(&out.stderr));
    shown
}

fn ingest_shows_its_progress_on_a_terminal() {
    let script = Need::Script.found();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path(), &[]);
    let ids: Vec<String> = (0..20).map(|n| format!("tty:{n}")).collect();
    let command = format!(
        "{} ingest --server {} --token {} --batch 1 {}",
        env!("CARGO_BIN_EXE_bloomcast"),
        server.base,
        common::TOKEN,
        ids.join(" ")
    );

    let shown = on_a_terminal(&script, &command);
    assert!(
        shown.contains(&format!("{REWRITE}ingested 1 IDs in 1 requests")),
        "a progress line: {shown:?}"
    );
    assert!(
        shown.contains("ingested 20 IDs in 20 requests (0 retries)"),
        "the summary after it: {shown:?}"
    );
}

fn mirror_shows_its_progress_on_a_terminal() {
    let script = Need::Script.found();
    let sealed = common::mirror::start();
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{} mirror {} --url {}",
        env!("CARGO_BIN_EXE_bloomcast"),
        dir.path().display(),
        sealed.origin
    );

    let shown = on_a_terminal(&script, &command);
    assert!(
        shown.contains(&format!("{REWRITE}mirrored 1 of 3 new hours")),
        "a progress line: {shown:?}"
    );
    assert!(
        shown.contains(&format!("{REWRITE}mirrored 3 new hours into")),
        "cleared before the summary: {shown:?}"
    );
}

/// What `git rev-parse --short=12 HEAD` says of this checkout, if it is one.
fn checked_out_commit(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--show-toplevel", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let top = PathBuf::from(lines.next()?);
    let same = top.canonicalize().ok()? == dir.canonicalize().ok()?;
    (out.status.success() && same).then(|| lines.next().map(str::to_owned))?
}

fn version_names_the_commit_or_unknown() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let expected = std::env::var("SOURCE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| checked_out_commit(&root))
        .unwrap_or_else(|| "unknown".into());

    let out = bloomcast().arg("--version").output().unwrap();

    let version = text(&out.stdout);
    assert!(out.status.success());
    assert_eq!(
        version.trim(),
        format!(
            "bloomcast {} (commit {expected})",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// build.rs compiled alone and run as cargo runs it, for a source tree without `.git`
/// (a tarball): it must still name a commit, "unknown", and not fail.
fn the_build_script_says_unknown_outside_a_checkout() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let tarball = work.path().join("bloomcast-0.1.0");
    std::fs::create_dir(&tarball).unwrap();
    let program = work.path().join("build-script");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiled = Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&program)
        .arg(root.join("build.rs"))
        .output()
        .unwrap();
    assert!(compiled.status.success(), "{}", text(&compiled.stderr));

    // GIT_CEILING_DIRECTORIES: git looks no further up than the temporary directory,
    // which may itself lie inside some checkout.
    let out = Command::new(&program)
        .current_dir(&tarball)
        .env("CARGO_MANIFEST_DIR", &tarball)
        .env("GIT_CEILING_DIRECTORIES", work.path())
        .env_remove("SOURCE_COMMIT")
        .output()
        .unwrap();

    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.lines()
            .any(|l| l == "cargo:rustc-env=BUILD_COMMIT=unknown"),
        "{said}"
    );
}
