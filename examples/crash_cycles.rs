//! Crash cycles: start the real server on the embedded store, let concurrent clients
//! ingest batches, `kill -9` it at a random moment, restart it on the same data dir and
//! check that every ID it ever acknowledged is in its hour's filter. Repeats N times
//! over one data dir, so later cycles also re-check what earlier ones acknowledged.
//!
//! ```sh
//! cargo build --release --bin bloomcast --example crash_cycles
//! target/release/examples/crash_cycles --binary target/release/bloomcast --cycles 20
//! target/release/examples/crash_cycles --binary target/release/bloomcast --cycles 5 --across-hour
//! target/release/examples/crash_cycles --binary target/release/bloomcast --cycles 12 --clock-steps
//! ```
//!
//! `--across-hour` starts each cycle's server a few seconds before the top of an hour
//! (through `BLOOMCAST_CLOCK_OFFSET_SECONDS`), so ingest, kill and restart straddle the
//! boundary; each cycle's clock is up to an hour past the last one's, which a start holds
//! as a jump at the default tolerance, so that mode runs with
//! `BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS` at two hours. `--clock-steps` restarts each
//! cycle's server with its clock stepped (back 2 h, forward 1 h, back 3 h, ...) through the
//! same setting, as an NTP correction or a restored VM would (a step back is followed, a
//! start further forward than the time trusted before is held as a jump), and checks every
//! acknowledged ID in the hour its receipt named.
//! Exits 1 when any acknowledged ID is missing. `benches/harness/crash.sh`
//! builds and runs it.

use bloomcast::wire::Document;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "crash-cycles-token";
const WRITERS: usize = 4;

struct Args {
    binary: PathBuf,
    cycles: usize,
    across_hour: bool,
    clock_steps: bool,
}

/// `--clock-steps`: each cycle's clock offset in hours, in turn.
const CLOCK_STEPS: [i64; 6] = [0, -2, 1, -1, -3, 2];

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        binary: PathBuf::from("target/release/bloomcast"),
        cycles: 20,
        across_hour: false,
        clock_steps: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--binary" => args.binary = it.next().ok_or("--binary needs a path")?.into(),
            "--cycles" => {
                let n = it.next().ok_or("--cycles needs a number")?;
                args.cycles = n.parse().map_err(|_| format!("bad --cycles {n}"))?;
            }
            "--across-hour" => args.across_hour = true,
            "--clock-steps" => args.clock_steps = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

/// A running `bloomcast serve`.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    /// Starts the server on a free port, its clock `offset` seconds off and a jump
    /// tolerance of `tolerance` seconds, and waits until it says where it listens.
    fn start(binary: &Path, dir: &Path, offset: i64, tolerance: u64) -> Server {
        let mut child = Command::new(binary)
            .arg("serve")
            .env("BLOOMCAST_LISTEN", "127.0.0.1:0")
            .env("BLOOMCAST_DATA_DIR", dir)
            .env("BLOOMCAST_INGEST_TOKENS", TOKEN)
            .env("BLOOMCAST_CLOCK_OFFSET_SECONDS", offset.to_string())
            .env(
                "BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS",
                tolerance.to_string(),
            )
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining so the server never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.split("addr=").nth(1) {
                    let _ = tx.send(addr.split_whitespace().next().unwrap_or("").to_owned());
                }
                if line.contains("ERROR") {
                    eprintln!("server: {line}");
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server reports its address");
        Server {
            child,
            base: format!("http://{addr}"),
        }
    }

    fn kill9(mut self) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-9", &pid]).status();
        assert!(killed.is_ok_and(|s| s.success()), "kill -9 {pid} failed");
        let _ = self.child.wait();
    }
}

/// hour (RFC 3339) → IDs acknowledged in it.
type Acked = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

/// Posts batches until the server goes away; returns how many requests got no answer
/// (or no 200: nothing the server did not acknowledge is checked).
async fn writer(http: reqwest::Client, base: String, acked: Acked, tag: String, seed: u64) -> u64 {
    let mut rng = seed | 1;
    let mut unanswered = 0;
    for batch in 0.. {
        let size = 1 + (next(&mut rng) % 200) as usize;
        let ids: Vec<String> = (0..size).map(|i| format!("{tag}-b{batch}-{i}")).collect();
        let request = http.post(format!("{base}/updates")).bearer_auth(TOKEN);
        let request = if batch % 2 == 0 {
            request.json(&serde_json::json!({ "ids": ids }))
        } else {
            request
                .header("content-type", "text/plain")
                .body(ids.join("\n"))
        };
        let reply = match request.send().await {
            Ok(reply) if reply.status() == 200 => reply,
            Ok(reply) => {
                eprintln!("unexpected status {}", reply.status());
                unanswered += 1;
                continue;
            }
            Err(_) => return unanswered + 1,
        };
        let Ok(body) = reply.json::<serde_json::Value>().await else {
            unanswered += 1;
            continue;
        };
        let hour = body["hour"]
            .as_str()
            .expect("a reply names its hour")
            .to_owned();
        acked.lock().unwrap().entry(hour).or_default().extend(ids);
    }
    unanswered
}

/// xorshift64: enough randomness for kill moments and batch sizes.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// IDs acknowledged but missing from their hour's filter, per hour.
async fn verify(http: &reqwest::Client, base: &str, acked: &BTreeMap<String, Vec<String>>) -> u64 {
    let mut lost = 0;
    for (hour, ids) in acked {
        let t = chrono::DateTime::parse_from_rfc3339(hour).expect("an RFC 3339 hour");
        let url = format!("{base}{}", t.format("/%Y/%m/%d/%H"));
        let reply = http
            .get(&url)
            .send()
            .await
            .expect("the restarted server answers");
        assert_eq!(reply.status(), 200, "{url}");
        let body = reply.bytes().await.expect("a body");
        let (meta, filter) = Document::parse(&body).expect("a valid filter document");
        let missing = ids.iter().filter(|id| !filter.contains(id)).count() as u64;
        if missing > 0 {
            eprintln!("LOST {missing} of {} IDs in {hour} ({meta:?})", ids.len());
        }
        lost += missing;
    }
    lost
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// An offset putting the server's clock `lead` seconds before the first top of an hour
/// that is at least `lead + 1` seconds past `after` (server time), so each cycle gets a
/// boundary of its own and the clock never runs backwards between cycles. Also returns
/// when (Unix seconds, real time) the server's clock will cross that boundary.
fn offset_before_boundary(after: i64, lead: i64) -> (i64, i64) {
    let boundary = (after + lead + 1).div_euclid(3600) * 3600 + 3600;
    let now = unix_now();
    (boundary - lead - now, now + lead)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("crash_cycles: {e}\nusage: crash_cycles [--binary PATH] [--cycles N] [--across-hour | --clock-steps]");
            return ExitCode::from(2);
        }
    };
    let dir = tempfile::tempdir().expect("a temporary data dir");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTP client");
    let acked: Acked = Arc::default();
    let mut rng = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64;
    let (mut offset, mut lost_total, mut unanswered_total) = (0i64, 0u64, 0u64);
    let mut boundary_at = 0i64;
    // Across the hour, each cycle's clock is up to an hour past the last one's on purpose.
    let tolerance = if args.across_hour { 7200 } else { 300 };
    let mode = match (args.across_hour, args.clock_steps) {
        (true, _) => "across the hour",
        (false, true) => "clock stepped between restarts",
        (false, false) => "plain",
    };
    println!(
        "crash cycles ({mode}): {} cycles, {WRITERS} writers, data in {}",
        args.cycles,
        dir.path().display()
    );
    for cycle in 1..=args.cycles {
        if args.across_hour {
            (offset, boundary_at) = offset_before_boundary(unix_now() + offset, 3);
        } else if args.clock_steps {
            offset = CLOCK_STEPS[(cycle - 1) % CLOCK_STEPS.len()] * 3600;
        }
        let server = Server::start(&args.binary, dir.path(), offset, tolerance);
        let before: BTreeMap<String, usize> = acked
            .lock()
            .unwrap()
            .iter()
            .map(|(h, ids)| (h.clone(), ids.len()))
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (http, base, acked) = (http.clone(), server.base.clone(), acked.clone());
                tokio::spawn(writer(
                    http,
                    base,
                    acked,
                    format!("c{cycle}-w{w}"),
                    next(&mut rng),
                ))
            })
            .collect();
        // Plain: anywhere in the first 1.5 s. Across the hour: from 0.5 s before the
        // boundary to 2 s after it, so the kill lands on either side (mostly after).
        let started = Instant::now();
        let kill_at = if args.across_hour {
            let boundary = UNIX_EPOCH + Duration::from_secs(boundary_at as u64);
            let delta = Duration::from_millis(next(&mut rng) % 2500);
            boundary + delta - Duration::from_millis(500)
        } else {
            SystemTime::now() + Duration::from_millis(100 + next(&mut rng) % 1400)
        };
        let wait = kill_at
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        tokio::time::sleep(wait).await;
        server.kill9();
        let killed_after = started.elapsed();
        for w in writers {
            unanswered_total += w.await.expect("a writer finishes");
        }
        let snapshot = acked.lock().unwrap().clone();
        let total: usize = snapshot.values().map(Vec::len).sum();
        let restarted = Server::start(&args.binary, dir.path(), offset, tolerance);
        let lost = verify(&http, &restarted.base, &snapshot).await;
        restarted.kill9();
        lost_total += lost;
        // This cycle's acknowledgements by hour (HH:00 of the server's clock).
        let by_hour: Vec<String> = snapshot
            .iter()
            .map(|(h, ids)| (h, ids.len() - before.get(h).copied().unwrap_or(0)))
            .filter(|(_, n)| *n > 0)
            .map(|(h, n)| format!("{} +{n}", &h[11..16]))
            .collect();
        let new: usize = total - before.values().sum::<usize>();
        println!(
            "cycle {cycle:>2}: clock {:+} h, killed after {:>4} ms, acknowledged {new:>6} ({}), total {total}, lost {lost}",
            offset / 3600,
            killed_after.as_millis(),
            by_hour.join(", ")
        );
    }
    let acknowledged: usize = acked.lock().unwrap().values().map(Vec::len).sum();
    println!(
        "cycles: {}, IDs acknowledged: {acknowledged}, IDs lost: {lost_total}, requests cut off by the kill: {unanswered_total}",
        args.cycles
    );
    if lost_total > 0 || acknowledged == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
