//! The README and the pages of docs/ cannot rot: their shell examples run verbatim, in
//! order, against a fresh server, and print what they say they print.
//!
//! README.md's blocks run first, then each docs/*.md page's in the order of its file name,
//! all in the same session, against the same server (a page's blocks may use what the
//! README's quick start set up: `BLOOMCAST_TOKEN`, `$HOUR`, the files it wrote).
//!
//! Fenced blocks whose info string starts with `sh`, `bash`, `shell` or `console` are
//! shell blocks. Each runs, in order, in one `bash -e` session (variables and files carry
//! over), unless its info string also says `no-run` (a server start, an install, Docker,
//! a placeholder cluster URL: things that must not run here). A block tagged `python`
//! needs python3, one tagged `node` Node.js. A block tagged `postgres` (a cluster of
//! its own) needs PostgreSQL and runs alone, in a directory and `bash -e` session of its
//! own, given `DATABASE_URL`, a fresh `SCHEMA` (dropped after) and two free ports
//! `PORT_A`, `PORT_B`; whatever it leaves running is stopped with its process group. Inside a block, a line `#> PATTERN` is output the commands before it
//! must print: the block's stdout must contain lines matching its patterns in order,
//! where `...` in a pattern matches any text.
//!
//! The server is the real binary, started as the quick start starts it (`bloomcast
//! serve`, no token configured, data in `./data`) in a temporary directory that is also
//! the shell's working directory, on a free port passed to the blocks as
//! `BLOOMCAST_SERVER`. `bloomcast` is on `PATH`; `bloomcast-py` runs the Python package
//! from `clients/python` (what its installed entry point runs). Needs curl (and python3
//! for `python` blocks): reported ignored without them, failed in CI.

mod common;

#[allow(dead_code)]
#[path = "../examples/readme_sdk.rs"]
mod readme_sdk;

use common::needs::{self, Need};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const SHELLS: [&str; 4] = ["sh", "bash", "shell", "console"];
const TAGS: [&str; 4] = ["no-run", "python", "node", "postgres"];

/// One fenced shell block of README.md or a docs page.
#[derive(Debug)]
struct Block {
    /// The page, relative to the repository root.
    page: String,
    /// 1-based line of the opening fence.
    line: usize,
    tags: Vec<String>,
    code: String,
}

impl Block {
    fn runs(&self) -> bool {
        !self.tags.iter().any(|t| t == "no-run")
    }

    /// Whether it runs alone, against a PostgreSQL cluster of its own.
    fn on_postgres(&self) -> bool {
        self.runs() && self.tags.iter().any(|t| t == "postgres")
    }

    /// The `#> ` patterns, in order.
    fn expected(&self) -> Vec<&str> {
        self.code
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("#> "))
            .collect()
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shell blocks of a Markdown page.
fn shell_blocks(page: &str, markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Option<Vec<String>>, String)> = None;
    for (n, line) in markdown.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                let mut words = info.split_whitespace();
                let shell = words.next().is_some_and(|w| SHELLS.contains(&w));
                let tags = shell.then(|| words.map(str::to_owned).collect());
                open = Some((n + 1, tags, String::new()));
            }
            (Some(_), Some(_)) => {
                let (line, tags, code) = open.take().unwrap();
                if let Some(tags) = tags {
                    out.push(Block {
                        page: page.to_owned(),
                        line,
                        tags,
                        code,
                    });
                }
            }
            (Some((_, _, code)), None) => {
                code.push_str(line);
                code.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{page}: an unclosed code fence");
    out
}

/// Whether `line` matches `pattern`, where `...` matches any text.
fn matches(pattern: &str, line: &str) -> bool {
    let pieces: Vec<&str> = pattern.trim_end().split("...").collect();
    let line = line.trim_end();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if pieces.len() == 1 {
        return line == first;
    }
    if !line.starts_with(first) || !line[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// README.md, then docs/*.md by file name.
fn pages() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    std::iter::once("README.md".to_owned())
        .chain(docs)
        .collect()
}

/// The shell blocks of every page, in the order they run.
fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|page| {
            let text = std::fs::read_to_string(root().join(page)).expect(page);
            shell_blocks(page, &text)
        })
        .collect()
}

fn main() {
    let blocks = all_blocks();
    let mut run_needs = vec![Need::Curl];
    if blocks
        .iter()
        .any(|b| b.runs() && b.tags.iter().any(|t| t == "python"))
    {
        run_needs.push(Need::Python3);
    }
    if blocks
        .iter()
        .any(|b| b.runs() && b.tags.iter().any(|t| t == "node"))
    {
        run_needs.push(Need::Node);
    }
    needs::run(vec![
        needs::trial(
            "every_readme_shell_block_is_run_or_marked_no_run",
            &[],
            every_readme_shell_block_is_run_or_marked_no_run,
        ),
        needs::trial(
            "the_readme_shell_blocks_run_verbatim_and_print_what_they_say",
            &run_needs,
            the_readme_shell_blocks_run_verbatim_and_print_what_they_say,
        ),
        needs::trial(
            "the_postgres_blocks_run_verbatim_on_a_cluster_of_their_own",
            &[Need::Curl, Need::Postgres],
            the_postgres_blocks_run_verbatim_on_a_cluster_of_their_own,
        ),
        needs::trial(
            "the_readme_rust_block_is_the_compiled_example_and_runs_on_a_young_server",
            &[],
            the_readme_rust_block_is_the_compiled_example_and_runs_on_a_young_server,
        ),
        needs::trial(
            "the_readme_js_block_runs_on_a_young_server",
            &[Need::Node],
            the_readme_js_block_runs_on_a_young_server,
        ),
        needs::trial(
            "the_deploy_nginx_excerpt_is_lines_of_the_real_configuration",
            &[],
            the_deploy_nginx_excerpt_is_lines_of_the_real_configuration,
        ),
        needs::trial("output_patterns_match_as_documented", &[], || {
            assert!(matches("a...c", "abc") && matches("a...c", "ac"));
            assert!(matches("{\"n\":...}", "{\"n\":12}"));
            assert!(!matches("a...c", "abd") && !matches("304", "3045"));
            assert!(matches("x...y...z", "x1y2z") && !matches("x...y...z", "x1z"));
        }),
    ]);
}

fn every_readme_shell_block_is_run_or_marked_no_run() {
    let blocks = all_blocks();
    assert!(
        pages().len() > 1 && blocks.iter().any(|b| b.page.starts_with("docs/")),
        "no docs/*.md page has a shell block: {:?}",
        pages()
    );
    for block in &blocks {
        for tag in &block.tags {
            assert!(
                TAGS.contains(&tag.as_str()),
                "{} line {}: unknown tag {tag:?} (known: {TAGS:?})",
                block.page,
                block.line
            );
        }
    }
    let readme_runs = blocks
        .iter()
        .filter(|b| b.page == "README.md" && b.runs())
        .count();
    assert!(readme_runs >= 4, "only {readme_runs} README blocks run");
    for block in blocks.iter().filter(|b| b.runs()) {
        assert!(
            !block.expected().is_empty(),
            "{} line {}: a block that runs says nothing of its output (`#> ...`)",
            block.page,
            block.line
        );
    }
}

/// `bloomcast` and a `bloomcast-py` that runs the package from the source tree.
fn tools_dir(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bloomcast"), bin.join("bloomcast")).unwrap();
    let shim = bin.join("bloomcast-py");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec python3 -m bloomcast_client \"$@\"\n",
            root().join("clients/python").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", bin.display())
}

/// A command with none of the caller's `BLOOMCAST_*` settings.
fn clean(program: &str) -> Command {
    let mut cmd = Command::new(program);
    for (name, _) in std::env::vars() {
        if name.starts_with("BLOOMCAST_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// `child`'s output, once it ends or `limit` has passed and `kill -- target` (its pid, or
/// `-pgid` for its process group) stopped it. A child that ends first stands the watchdog
/// down (its id may be reused once it is gone).
fn output_within(
    child: std::process::Child,
    limit: Duration,
    target: &str,
) -> std::process::Output {
    let (finished, done) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn({
        let target = target.to_owned();
        move || {
            if done.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                let _ = Command::new("kill").args(["--", &target]).status();
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    drop(finished);
    watchdog.join().unwrap();
    out
}

/// The blocks' counts assume one hour (a real server on the real clock, so no paused
/// time): do not start within a minute of its end.
fn wait_out_the_hours_last_minute() {
    let into_hour = chrono::Utc::now().timestamp().rem_euclid(3600);
    if into_hour > 3540 {
        std::thread::sleep(Duration::from_secs((3601 - into_hour) as u64));
    }
}

fn the_readme_shell_blocks_run_verbatim_and_print_what_they_say() {
    let blocks: Vec<Block> = all_blocks()
        .into_iter()
        .filter(|b| b.runs() && !b.on_postgres())
        .collect();
    wait_out_the_hours_last_minute();
    let tools = tempfile::tempdir().unwrap();
    let path = tools_dir(tools.path());
    let work = tempfile::tempdir().unwrap();
    // The working directory stands for a fresh clone: its sources, a data dir of its own.
    std::os::unix::fs::symlink(root().join("clients"), work.path().join("clients")).unwrap();
    // As the quick start: `bloomcast serve` in the working directory, no token set.
    let mut serve = clean(env!("CARGO_BIN_EXE_bloomcast"));
    serve
        .arg("serve")
        .current_dir(work.path())
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info");
    let server = common::start_command(serve);

    let mut script = String::new();
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("printf '\\n::block {i}::\\n'\n{}\n", block.code));
    }
    std::fs::write(tools.path().join("readme.sh"), &script).unwrap();
    let mut bash = clean("bash");
    bash.args(["--noprofile", "--norc", "-e"])
        .arg(tools.path().join("readme.sh"))
        .current_dir(work.path())
        .env("PATH", &path)
        .env("BLOOMCAST_SERVER", &server.base)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = bash.spawn().expect("bash runs");
    let pid = child.id().to_string();
    let out = output_within(child, Duration::from_secs(180), &pid);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    // stdout per block, split at the markers.
    let mut outputs: Vec<Vec<&str>> = vec![Vec::new(); blocks.len()];
    let mut current = None;
    for line in stdout.lines() {
        if let Some(i) = line
            .strip_prefix("::block ")
            .and_then(|r| r.strip_suffix("::"))
        {
            current = Some(i.parse::<usize>().unwrap());
        } else if let Some(i) = current {
            outputs[i].push(line);
        }
    }
    let reached = current.map_or(0, |i| i + 1);
    let failed_at = |i: usize| {
        format!(
            "{} block at line {}:\n{}\n--- its stdout:\n{}\n--- stderr of the run:\n{stderr}",
            blocks[i].page,
            blocks[i].line,
            blocks[i].code,
            outputs[i].join("\n")
        )
    };
    assert!(
        out.status.success(),
        "the shell blocks failed ({}) in {}",
        out.status,
        failed_at(reached.saturating_sub(1))
    );
    assert_eq!(reached, blocks.len(), "not every block ran: {stdout}");
    for (i, block) in blocks.iter().enumerate() {
        let mut lines = outputs[i].iter();
        for pattern in block.expected() {
            assert!(
                lines.any(|line| matches(pattern, line)),
                "no output line matches `#> {pattern}` (in order) in {}",
                failed_at(i)
            );
        }
    }
}

/// Each `postgres` block, alone: in a fresh directory and `bash -e` session (`bloomcast`
/// on `PATH`), with `DATABASE_URL`, a schema of its own (`SCHEMA`, dropped after) and two
/// free ports (`PORT_A`, `PORT_B`); it must exit 0 and print what it says. The session
/// runs in a process group of its own, stopped after, with any server it left running.
fn the_postgres_blocks_run_verbatim_on_a_cluster_of_their_own() {
    use std::os::unix::process::CommandExt;
    let blocks: Vec<Block> = all_blocks()
        .into_iter()
        .filter(Block::on_postgres)
        .collect();
    assert!(
        !blocks.is_empty(),
        "no block tagged postgres (docs/CLUSTER.md has one)"
    );
    let url = Need::Postgres.found();
    for block in &blocks {
        wait_out_the_hours_last_minute();
        let tools = tempfile::tempdir().unwrap();
        let path = tools_dir(tools.path());
        let work = tempfile::tempdir().unwrap();
        let schema = common::nodes::unique_schema();
        let port = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port().to_string()
        };
        let child = clean("bash")
            .args(["--noprofile", "--norc", "-e", "-c", &block.code])
            .current_dir(work.path())
            .env("PATH", &path)
            .env("DATABASE_URL", &url)
            .env("SCHEMA", &schema)
            .env("PORT_A", port())
            .env("PORT_B", port())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("bash runs");
        let group = child.id().to_string();
        let out = output_within(child, Duration::from_secs(120), &format!("-{group}"));
        // Whatever the block left running (it failed before its `kill`, say).
        let _ = Command::new("kill")
            .args(["--", &format!("-{group}")])
            .stderr(Stdio::null())
            .status();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(common::nodes::drop_schema(&url, &schema));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let logs: String = ["node-a.log", "node-b.log"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(work.path().join(f)).ok())
            .collect();
        let failed = format!(
            "{} block at line {}:\n{}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}\n--- node logs:\n{logs}",
            block.page, block.line, block.code
        );
        assert!(out.status.success(), "exit {}: {failed}", out.status);
        let mut lines = stdout.lines();
        for pattern in block.expected() {
            assert!(
                lines.any(|line| matches(pattern, line)),
                "no output line matches `#> {pattern}` (in order) in {failed}"
            );
        }
    }
}

/// The README's one Rust block is `examples/readme_sdk.rs` between its markers (so it
/// compiles), and it runs without error on a server started within the hour: its 3-hour
/// window starts at the server's first hour instead of asking for hours it never had.
fn the_readme_rust_block_is_the_compiled_example_and_runs_on_a_young_server() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme.split("```rust\n").skip(1).collect();
    assert_eq!(blocks.len(), 1, "one Rust block in the README");
    let block = blocks[0].split("```").next().unwrap();
    let example = std::fs::read_to_string(root().join("examples/readme_sdk.rs")).unwrap();
    let marked = example
        .split("// README begin\n")
        .nth(1)
        .and_then(|rest| rest.split("    // README end").next())
        .expect("the README markers in examples/readme_sdk.rs");
    let dedented: String = marked
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    assert_eq!(
        block, dedented,
        "README.md's Rust block differs from examples/readme_sdk.rs"
    );

    let work = tempfile::tempdir().unwrap();
    let mut serve = clean(env!("CARGO_BIN_EXE_bloomcast"));
    serve
        .arg("serve")
        .current_dir(work.path())
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0");
    let server = common::start_command(serve);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let followed = vec!["user:1".to_owned(), "nobody".to_owned()];
    let ran = runtime.block_on(readme_sdk::changed_in_the_last_hours(
        &server.base,
        &followed,
    ));
    if let Err(e) = ran {
        panic!("the README's Rust block failed on a server started within the hour: {e}");
    }
    let window = runtime
        .block_on(async {
            let client = bloomcast::client::Client::new(&server.base)?;
            client.index().await?.window(3)
        })
        .unwrap();
    assert!(window.clamped, "a fresh server is younger than 3 hours");
}

/// The README's one JavaScript block runs with `node`, as written, from a directory
/// laid out as the checkout (`./clients/js`), on a server started within the hour with
/// an ID in it: it exits 0 and prints the ID among the changed ones.
fn the_readme_js_block_runs_on_a_young_server() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme.split("```js\n").skip(1).collect();
    assert_eq!(blocks.len(), 1, "one JavaScript block in the README");
    let block = blocks[0].split("```").next().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("clients"), work.path().join("clients")).unwrap();
    std::fs::write(work.path().join("readme.mjs"), block).unwrap();
    let mut serve = clean(env!("CARGO_BIN_EXE_bloomcast"));
    serve
        .arg("serve")
        .current_dir(work.path())
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_INGEST_TOKENS", common::TOKEN);
    let server = common::start_command(serve);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ids = ["user:42".to_owned()];
    runtime
        .block_on(common::post_ids(
            &reqwest::Client::new(),
            &server.base,
            &ids,
        ))
        .expect("the ID is acknowledged");
    let out = clean(Need::Node.found().as_str())
        .arg("readme.mjs")
        .current_dir(work.path())
        .env("BLOOMCAST_SERVER", &server.base)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "the README's JS block failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.starts_with("false\n"), "{stdout}");
    assert!(stdout.contains("'user:42'"), "{stdout}");
    assert!(
        stderr.contains("note: the server has hours from"),
        "{stderr}"
    );
}

/// Whether `excerpt`'s lines are lines of `file`, in order, where a line `...` stands for
/// any lines left out and lines not separated by one are adjacent in `file` too.
fn is_excerpt_of(excerpt: &str, file: &str) -> Result<(), String> {
    let lines: Vec<&str> = file.lines().collect();
    let (mut at, mut gap) = (0, true);
    for line in excerpt.lines() {
        if line.trim() == "..." {
            gap = true;
            continue;
        }
        let found = if gap {
            lines[at..].iter().position(|l| *l == line).map(|i| at + i)
        } else {
            (lines.get(at) == Some(&line)).then_some(at)
        };
        match found {
            Some(i) => (at, gap) = (i + 1, false),
            None if gap => return Err(format!("{line:?} is not a later line of the file")),
            None => return Err(format!("{line:?} is not the line after the one before it")),
        }
    }
    Ok(())
}

/// docs/DEPLOY.md's nginx block shows deploy/nginx-mirror.conf as it is: its lines are
/// the file's, in order, `...` marking what is left out (the file is what the mirror
/// tests serve with, so the page cannot show a location the tests never ran).
fn the_deploy_nginx_excerpt_is_lines_of_the_real_configuration() {
    let deploy = std::fs::read_to_string(root().join("docs/DEPLOY.md")).unwrap();
    let blocks: Vec<&str> = deploy.split("```nginx\n").skip(1).collect();
    assert_eq!(blocks.len(), 1, "one nginx block in docs/DEPLOY.md");
    let excerpt = blocks[0].split("```").next().unwrap();
    let conf = std::fs::read_to_string(root().join("deploy/nginx-mirror.conf")).unwrap();
    if let Err(e) = is_excerpt_of(excerpt, &conf) {
        panic!("docs/DEPLOY.md's nginx block is not deploy/nginx-mirror.conf's lines: {e}");
    }
    assert!(is_excerpt_of("a\n...\nc\n", "a\nb\nc\n").is_ok());
    assert!(is_excerpt_of("a\nc\n", "a\nb\nc\n").is_err());
    assert!(is_excerpt_of("c\n...\na\n", "a\nb\nc\n").is_err());
}
