//! Files the embedded store must refuse: a foreign SQLite database, an empty file, a file
//! that is not SQLite, and a read-only data directory or database file. The library
//! says why, naming the path; `bloomcast serve` prints it and exits non-zero.
//!
//! The read-only cases need a read-only mount when running as root (root ignores
//! permission bits): they mount a small tmpfs (or bind-mount the file) read-only, and
//! fall back to `chmod` for other users. Where neither works they are skipped with the
//! reason, except in CI (`CI` set), where they fail.

#![cfg(unix)]

mod common;

use bloomcast::hour::hour_of;
use bloomcast::store::{full_message, SqliteStore};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const DB: &str = "bloomcast.sqlite3";

/// Runs `bloomcast serve` over `data_dir`, expecting it to refuse to start: returns
/// its stderr once it has exited non-zero.
fn serve_refuses(data_dir: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bloomcast"))
        .arg("serve")
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", data_dir)
        .env("BLOOMCAST_INGEST_TOKENS", common::TOKEN)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut status = None;
    let exits = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        common::wait::eventually_blocking(
            format!("bloomcast serve over {} exits", data_dir.display()),
            || {
                status = child.try_wait().unwrap();
                status.is_some()
            },
        );
    }));
    if let Err(kept_running) = exits {
        let _ = child.kill();
        let _ = child.wait();
        std::panic::resume_unwind(kept_running);
    }
    let status = status.unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(
        !stderr.contains("bloomcast listening"),
        "it must not serve: {stderr}"
    );
    stderr
}

/// The error `SqliteStore::open` gives, with its causes.
fn open_error(dir: &Path) -> String {
    match SqliteStore::open(dir, hour_of(2008, 9, 3, 13).unwrap()) {
        Ok(_) => panic!("{} should be refused", dir.display()),
        Err(e) => full_message(&e),
    }
}

/// Asserts both the library and the binary refuse `dir` with a message holding `parts`.
fn assert_refused(dir: &Path, parts: &[&str]) {
    let lib = open_error(dir);
    let bin = serve_refuses(dir);
    for part in parts {
        assert!(
            lib.contains(part),
            "SqliteStore::open: {lib:?} lacks {part:?}"
        );
        assert!(
            bin.contains(part),
            "bloomcast serve: {bin:?} lacks {part:?}"
        );
    }
}

#[test]
fn a_foreign_sqlite_database_is_refused_and_left_alone() {
    let dir = sqlite_file("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);");
    let path = dir.path().join(DB);
    let before = std::fs::read(&path).unwrap();
    assert_refused(
        dir.path(),
        &[
            &format!("{} is not a bloomcast database", path.display()),
            "application_id 0x00000000",
            "refusing to add tables to it",
        ],
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "not one byte changed"
    );
}

/// A SQLite file in a new data dir, set up by `sql`.
fn sqlite_file(sql: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    rusqlite::Connection::open(dir.path().join(DB))
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    dir
}

#[test]
fn another_applications_database_is_refused_even_without_tables() {
    let dir = sqlite_file("PRAGMA application_id = 1234;");
    assert_refused(
        dir.path(),
        &["is not a bloomcast database (application_id 0x000004d2, no tables)"],
    );
    // No application id but a schema version of its own: someone else's too.
    let dir = sqlite_file("PRAGMA user_version = 7;");
    assert_refused(
        dir.path(),
        &["is not a bloomcast database (application_id 0x00000000, no tables)"],
    );
}

#[test]
fn a_database_from_a_newer_bloomcast_is_refused() {
    // 0x626C6F6D ("blom") is bloomcast's application_id; schema version 99 is the future.
    let dir = sqlite_file("PRAGMA application_id = 1651273581; PRAGMA user_version = 99;");
    assert_refused(dir.path(), &["newer bloomcast (schema version 99"]);
}

#[test]
fn an_empty_database_file_is_refused_as_possibly_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB);
    std::fs::write(&path, b"").unwrap();
    assert_refused(
        dir.path(),
        &[
            &format!("{} exists but is empty", path.display()),
            "remove it to start afresh",
        ],
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn a_file_that_is_not_sqlite_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DB), "not a database\n".repeat(100)).unwrap();
    assert_refused(dir.path(), &["is not a SQLite database"]);
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Makes `target` read-only for the life of the guard: a read-only remount of a tmpfs
/// (a directory) or a read-only bind mount (a file) as root, `chmod a-w` otherwise.
struct ReadOnly {
    target: PathBuf,
    mounted: bool,
}

impl ReadOnly {
    /// `fill` writes what the directory (or the file's directory) should hold first.
    fn new(target: &Path, fill: impl FnOnce(&Path)) -> Option<ReadOnly> {
        let t = target.to_str().unwrap();
        let made = if is_root() && target.is_dir() {
            run(&["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", t]).and_then(|()| {
                fill(target);
                run(&["mount", "-o", "remount,ro", t]).inspect_err(|_| drop(run(&["umount", t])))
            })
        } else if is_root() {
            fill(target.parent().unwrap());
            run(&["mount", "--bind", t, t]).and_then(|()| {
                run(&["mount", "-o", "remount,bind,ro", t])
                    .inspect_err(|_| drop(run(&["umount", t])))
            })
        } else {
            fill(if target.is_dir() {
                target
            } else {
                target.parent().unwrap()
            });
            std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o555))
                .map_err(|e| format!("chmod: {e}"))
        };
        match made {
            Ok(()) => Some(ReadOnly {
                target: target.to_owned(),
                mounted: is_root(),
            }),
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("CI must run the read-only tests, but {why}")
            }
            Err(why) => {
                eprintln!(
                    "SKIPPED: cannot make {t} read-only ({why}). Run as root with mount \
                     permission (CAP_SYS_ADMIN) or as a non-root user to run this test."
                );
                None
            }
        }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let t = self.target.to_str().unwrap();
        if self.mounted {
            let _ = run(&["umount", t]);
        } else {
            let _ = std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// A store written and closed in `dir`, as a server that ran there leaves it.
fn write_store(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    drop(SqliteStore::open(dir, hour_of(2008, 9, 3, 13).unwrap()).unwrap());
    // Once the writer thread has closed the file.
    common::wait::eventually_blocking("the store closes its file", || {
        common::wait::sqlite_closed(dir)
    });
}

#[test]
fn a_read_only_data_directory_is_refused_naming_it() {
    let base = tempfile::tempdir().unwrap();
    for name in ["empty", "existing"] {
        let dir = base.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let fill = |d: &Path| {
            if name == "existing" {
                write_store(d);
            }
        };
        let Some(_ro) = ReadOnly::new(&dir, fill) else {
            return;
        };
        let lib = open_error(&dir);
        let bin = serve_refuses(&dir);
        for text in [&lib, &bin] {
            assert!(
                text.contains(&format!("the data directory {}", dir.display()))
                    && (text.contains("read-only file system") || text.contains("not writable")),
                "{name}: {text}"
            );
        }
    }
}

#[test]
fn a_read_only_database_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(DB);
    let Some(_ro) = ReadOnly::new(&file, write_store) else {
        return;
    };
    let lib = open_error(dir.path());
    let bin = serve_refuses(dir.path());
    for text in [&lib, &bin] {
        assert!(
            text.contains(&format!("the database file {}", file.display()))
                && (text.contains("read-only file system") || text.contains("not writable")),
            "{text}"
        );
    }
}
