//! The CLI at its edges: a reader that stops reading (`| head -1`), a server named
//! nowhere, a misspelt database URL, a start that fails (said once).

mod common;

use common::needs;
use std::os::fd::{FromRawFd, OwnedFd};
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
