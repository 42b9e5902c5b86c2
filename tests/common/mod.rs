//! Helpers for tests that run the real `bloomcast` binary. What a test needs from the
//! machine (PostgreSQL, python3, node, curl, Chromium) and how a missing need is reported
//! (ignored with the reason; failed in CI) is [`needs`].

#![allow(dead_code)]

pub mod clock_record;
pub mod damaged;
pub mod exact;
pub mod inproc;
pub mod mirror;
pub mod needs;
pub mod nodes;
pub mod pg;
pub mod races;
pub mod rotated;
pub mod wait;
pub mod websub;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const TOKEN: &str = "process-test-token";

/// A running `bloomcast serve`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    /// Every line the server wrote to stderr so far.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `bloomcast serve` on a free port over `data_dir`, with extra environment,
/// and waits until it reports the address it listens on.
pub fn start(data_dir: &Path, env: &[(&str, &str)]) -> Server {
    start_command(serve_command(data_dir, env))
}

/// `bloomcast serve` on a free port over `data_dir`, with the test token and extra
/// environment.
fn serve_command(data_dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bloomcast"));
    cmd.arg("serve")
        .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
        .env("BLOOMCAST_DATA_DIR", data_dir)
        .env("BLOOMCAST_INGEST_TOKENS", TOKEN)
        .env("RUST_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Spawns a prepared `bloomcast serve` command (which must listen on port 0 or a free
/// port) and waits until it reports the address it listens on and is ready.
pub fn start_command(cmd: Command) -> Server {
    let server = spawn_command(cmd);
    wait_ready(server.base.trim_start_matches("http://"));
    server
}

/// As [`start`], returning once the server reports the address it listens on, ready or
/// not (a cluster node in standby while PostgreSQL cannot be reached).
pub fn spawn_server(data_dir: &Path, env: &[(&str, &str)]) -> Server {
    spawn_command(serve_command(data_dir, env))
}

/// Spawns a prepared `bloomcast serve` command and waits until it reports the address
/// it listens on (not until it is ready).
pub fn spawn_command(mut cmd: Command) -> Server {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the binary starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            keep.lock().unwrap().push(line.clone());
            if let Some(addr) = line.split("addr=").nth(1) {
                let _ = tx.send(addr.split_whitespace().next().unwrap_or("").to_owned());
            }
            // A refused start is said once, on stderr, without a log level.
            if line.contains("ERROR") || line.starts_with("bloomcast: ") {
                eprintln!("server: {line}");
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server reports its address");
    Server {
        child,
        base: format!("http://{addr}"),
        log,
    }
}

/// Waits until `/healthz` answers 200 (the open hour is loaded), as a load balancer would
/// before sending traffic.
fn wait_ready(addr: &str) {
    use std::io::{Read, Write};
    wait::eventually_blocking(format!("the server at {addr} is ready"), || {
        let Ok(mut conn) = std::net::TcpStream::connect(addr) else {
            return false;
        };
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        let mut reply = String::new();
        conn.write_all(request.as_bytes()).is_ok()
            && conn.read_to_string(&mut reply).is_ok()
            && reply.starts_with("HTTP/1.1 200")
    });
}

/// SIGKILL, and reap.
pub fn kill9(server: &mut Server) {
    let pid = server.child.id().to_string();
    let status = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(status.success());
    server.child.wait().unwrap();
}

/// Posts a batch; `Some(hour)` when acknowledged.
pub async fn post_ids(http: &reqwest::Client, base: &str, ids: &[String]) -> Result<String, u16> {
    let reply = http
        .post(format!("{base}/updates"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "ids": ids }))
        .send()
        .await
        .map_err(|_| 0u16)?;
    let status = reply.status().as_u16();
    if status != 200 {
        return Err(status);
    }
    let body: serde_json::Value = reply.json().await.map_err(|_| 0u16)?;
    Ok(body["hour"].as_str().unwrap().to_owned())
}

/// The URL path of an RFC 3339 hour.
pub fn path_of(hour: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(hour)
        .unwrap()
        .format("/%Y/%m/%d/%H")
        .to_string()
}

/// Fetches and decodes an hour's JSON filter.
pub async fn fetch(
    http: &reqwest::Client,
    base: &str,
    path: &str,
) -> (bloomcast::wire::Meta, bloomcast::bloom::Filter) {
    let reply = http.get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(reply.status(), 200, "{path}");
    bloomcast::wire::Document::parse(&reply.bytes().await.unwrap()).unwrap()
}

/// Runs `cmd` to the end with `stdin` piped in and its output captured.
pub fn run_with_stdin(cmd: &mut Command, stdin: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} runs: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `base`'s `/metrics`, as text.
pub async fn metrics_text(http: &reqwest::Client, base: &str) -> String {
    http.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of the sample `series` (a name, with its labels if any) in `base`'s
/// `/metrics`; fails the test when it is not there.
pub async fn metric(http: &reqwest::Client, base: &str, series: &str) -> String {
    let text = metrics_text(http, base).await;
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{series} in /metrics:\n{text}"))
        .to_owned()
}

/// `GET URL`, its body parsed as JSON.
pub async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// `GET BASE/.well-known/bloomcast.json`, parsed.
pub async fn well_known(http: &reqwest::Client, base: &str) -> serde_json::Value {
    get_json(http, &format!("{base}/.well-known/bloomcast.json")).await
}

/// The current public key the server at `base` publishes.
pub async fn public_key(base: &str) -> bloomcast::chain::PublicKey {
    well_known(&reqwest::Client::new(), base).await["public_key"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits until the server's `GET /stats` says `value` at `pointer` (a JSON pointer,
/// e.g. `/events/subscribers`), naming it if it never does ([`wait::until`]).
pub async fn stats_reach(
    http: &reqwest::Client,
    base: &str,
    pointer: &str,
    value: serde_json::Value,
) {
    wait::until(format!("{base}/stats {pointer} = {value}"), || {
        let (http, url) = (http.clone(), format!("{base}/stats"));
        let (pointer, value) = (pointer.to_owned(), value.clone());
        async move {
            let stats: serde_json::Value = http.get(url).send().await.ok()?.json().await.ok()?;
            (stats.pointer(&pointer) == Some(&value)).then_some(())
        }
    })
    .await;
}

/// What `origin` answers to a GET of `path` (identity encoding: reqwest here asks for no
/// other): its status, its headers but the framing ones (the proxy's own response sets
/// those) and its body. For the test proxies that pass a publisher's answers on, some
/// altered.
pub async fn upstream(
    origin: &str,
    path: &str,
) -> (axum::http::StatusCode, axum::http::HeaderMap, Vec<u8>) {
    use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
    let upstream = reqwest::Client::new()
        .get(format!("{origin}{path}"))
        .send()
        .await
        .unwrap();
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap();
    let mut headers = HeaderMap::new();
    for (name, value) in upstream.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            headers.insert(
                HeaderName::from_bytes(name.as_str().as_bytes()).unwrap(),
                HeaderValue::from_bytes(value.as_bytes()).unwrap(),
            );
        }
    }
    (status, headers, upstream.bytes().await.unwrap().to_vec())
}
