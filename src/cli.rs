//! The command-line client: `check`, `history`, `ingest`, `inspect`, `estimate`,
//! `verify`, `watch`, `mirror` and `confirm-clock`, over [`crate::client`].
//!
//! Each verb is a clap `Args` struct with a `run` that returns the process exit code;
//! `src/main.rs` only dispatches.

mod check;
mod clock;
mod estimate;
mod exact;
mod history;
mod ingest;
mod inspect;
mod mirror;
mod progress;
mod ribbon;
mod verify;
mod watch;

pub use check::CheckArgs;
pub use clock::ConfirmClockArgs;
pub use estimate::EstimateArgs;
pub use history::HistoryArgs;
pub use ingest::IngestArgs;
pub use inspect::InspectArgs;
pub use mirror::MirrorArgs;
pub use verify::VerifyArgs;
pub use watch::{Event, WatchArgs, Watcher};

use crate::client::{Client, ClientError};
use crate::wire::check_id;
use std::io::BufRead;
use std::process::ExitCode;

pub use crate::wire::MAX_ID_BYTES;

/// A CLI failure: printed as `bloomcast: <message>`, exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Mirror(#[from] crate::mirror::MirrorError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Whatever reads stdout stopped reading (`bloomcast inspect URL | head -1`): not a
    /// failure of the verb, which ends quietly ([`finish`]).
    #[error("stdout was closed")]
    StdoutClosed,
}

/// A failed write to stdout: [`CliError::StdoutClosed`] when its reader went away
/// (`EPIPE`: Rust ignores SIGPIPE, so the write fails instead of the signal ending
/// the process), else [`CliError::Io`].
pub(crate) fn stdout_error(source: std::io::Error) -> CliError {
    if source.kind() == std::io::ErrorKind::BrokenPipe {
        return CliError::StdoutClosed;
    }
    CliError::Io {
        context: "cannot write to stdout".into(),
        source,
    }
}

/// Writes one line to stdout, as `println!` would, but returns the failure (see
/// [`stdout_error`]) instead of panicking with a backtrace.
pub(crate) fn write_line(line: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{line}").map_err(stdout_error)
}

/// `println!` for the verbs: `outln!("...", ..)?` ([`write_line`]).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// Prints a failure the way every verb does and turns it into the exit code; a closed
/// stdout ends quietly, with success, as `head` expects of what it reads.
pub fn finish(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) | Err(CliError::StdoutClosed) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bloomcast: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `error` with a tip for each missing argument that an environment variable could
/// have given (`--server`: `BLOOMCAST_SERVER`), found among `command`'s subcommands:
/// clap's own message names only the flag.
pub fn with_env_tips(mut error: clap::Error, mut command: clap::Command) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::MissingRequiredArgument {
        return error;
    }
    let Some(ContextValue::Strings(missing)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    // Built, as parsing builds it, so that each argument shows as in the error.
    command.build();
    let mut tips: Vec<clap::builder::StyledStr> = Vec::new();
    for arg in command.get_subcommands().flat_map(|c| c.get_arguments()) {
        let Some(env) = arg.get_env().and_then(|e| e.to_str()) else {
            continue;
        };
        let shown = arg.to_string();
        let tip = format!("pass {shown} or set {env}");
        if missing.contains(&shown) && !tips.iter().any(|t| t.to_string() == tip) {
            tips.push(tip.into());
        }
    }
    if !tips.is_empty() {
        error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    error
}

fn client(server: &str, token: Option<&str>) -> Result<Client, CliError> {
    verifying_client(server, token, None, crate::client::DEFAULT_FETCH_COST)
}

/// A client that verifies every closed hour against `pubkey`, when given, and weighs a
/// wasted fetch at `fetch_cost` bytes.
fn verifying_client(
    server: &str,
    token: Option<&str>,
    pubkey: Option<crate::chain::PublicKey>,
    fetch_cost: u64,
) -> Result<Client, CliError> {
    Ok(verifying_builder(server, token, pubkey, fetch_cost).build()?)
}

/// [`verifying_client`]'s configuration, for a verb that sets more.
fn verifying_builder(
    server: &str,
    token: Option<&str>,
    pubkey: Option<crate::chain::PublicKey>,
    fetch_cost: u64,
) -> crate::client::ClientBuilder {
    let mut builder = Client::builder(server).fetch_cost(fetch_cost);
    if let Some(token) = token {
        builder = builder.token(token);
    }
    if let Some(key) = pubkey {
        builder = builder.pubkey(key);
    }
    builder
}

/// Reads one ID per line from `input` (LF or CRLF; blank lines skipped), as the
/// server's `text/plain` ingest does, and hands each to `each` with its line number.
///
/// # Errors
/// [`CliError::Input`] naming the line of invalid UTF-8 or an over-long ID.
fn read_ids(
    input: impl BufRead,
    mut each: impl FnMut(String) -> Result<(), CliError>,
) -> Result<(), CliError> {
    for (n, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|source| CliError::Io {
            context: "cannot read IDs".into(),
            source,
        })?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        let id = String::from_utf8(line.to_vec())
            .map_err(|_| CliError::Input(format!("line {}: not valid UTF-8", n + 1)))?;
        if id.trim().is_empty() {
            continue;
        }
        check_id(&id).map_err(|e| CliError::Input(format!("line {}: the ID {e}", n + 1)))?;
        each(id)?;
    }
    Ok(())
}

/// The IDs named on the command line, where `-` stands for every line of stdin.
fn collect_ids(args: &[String]) -> Result<Vec<String>, CliError> {
    let mut ids = Vec::new();
    for arg in args {
        if arg == "-" {
            read_ids(std::io::stdin().lock(), |id| {
                ids.push(id);
                Ok(())
            })?;
        } else {
            check_id(arg).map_err(|e| CliError::Input(format!("{arg:?} {e}")))?;
            ids.push(arg.clone());
        }
    }
    if ids.is_empty() {
        return Err(CliError::Input(
            "no IDs: pass them as arguments, or - to read one per line from stdin".into(),
        ));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(input: &[u8]) -> Result<Vec<String>, CliError> {
        let mut out = Vec::new();
        read_ids(input, |id| {
            out.push(id);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn lines_are_read_like_the_server_reads_text_bodies() {
        let ids = ids_of(b"a\r\n\r\n  \nb c\nd").unwrap();
        assert_eq!(ids, ["a", "b c", "d"]);
    }

    #[test]
    fn bad_lines_are_named() {
        let err = ids_of(b"ok\n\xff\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("UTF-8"), "{err}");
        let long = format!("ok\n{}\n", "x".repeat(MAX_ID_BYTES + 1));
        let err = ids_of(long.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("1025"), "{err}");
    }
}
