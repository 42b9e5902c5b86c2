//! Ingest load generator: C concurrent clients each POST batches of B unique IDs to
//! `/updates` for a fixed time, and the run reports durable IDs per second and the
//! latency of each request (p50, p99).
//!
//! ```text
//! cargo run --release --example loadgen -- --url http://127.0.0.1:8080 --token TOKEN \
//!     --batch 1000 --clients 64 --seconds 10
//! cargo run --release --example loadgen -- --url http://127.0.0.1:8080 --token TOKEN \
//!     --batch 1000 --clients 8 --ids 5000000     # exactly 5M IDs, then exit
//! ```
//!
//! With `--ids N` the clients share N IDs between them (the last batch may be shorter)
//! and the run ends when the last of them is acknowledged, with no warm-up: every ID
//! counts, and a script can read the server's memory the moment the load is acknowledged.
//!
//! A 200 from bloomcast means the IDs are durable, so acknowledged IDs over wall time is
//! the durable ingest rate. `--url` takes a comma-separated list: client i talks to URL
//! i mod n, which spreads the clients round-robin over the nodes of a cluster. Every ID
//! is unique (`<prefix>-<client>-<n>`), so no batch is a repeat of another.
//!
//! Output is one line of `key=value` pairs for scripts to read. Any failed request
//! (transport error or a status other than 200) is counted and makes the exit status 1:
//! the generator never retries, so a failure is never hidden.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    urls: Vec<String>,
    token: String,
    batch: usize,
    clients: usize,
    seconds: f64,
    warmup: f64,
    prefix: String,
    /// `--ids N`: send exactly N IDs in all, then stop (no time limit, no warm-up).
    ids: Option<u64>,
}

fn args() -> Args {
    let mut a = Args {
        urls: vec!["http://127.0.0.1:8080".into()],
        token: std::env::var("BLOOMCAST_TOKEN").unwrap_or_default(),
        batch: 100,
        clients: 8,
        seconds: 10.0,
        warmup: 1.0,
        prefix: format!("lg{}", std::process::id()),
        ids: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = pair
            .get(1)
            .unwrap_or_else(|| panic!("{} needs a value", pair[0]));
        let number = || -> f64 {
            value
                .parse()
                .unwrap_or_else(|_| panic!("{} needs a number", pair[0]))
        };
        match pair[0].as_str() {
            "--url" => a.urls = value.split(',').map(str::to_owned).collect(),
            "--token" => a.token = value.clone(),
            "--batch" => a.batch = number() as usize,
            "--clients" => a.clients = number() as usize,
            "--seconds" => a.seconds = number(),
            "--warmup" => a.warmup = number(),
            "--prefix" => a.prefix = value.clone(),
            "--ids" => a.ids = Some(number() as u64),
            other => panic!(
                "unknown option {other} (--url, --token, --batch, --clients, --seconds, --warmup, --prefix, --ids)"
            ),
        }
    }
    assert!(
        a.batch >= 1 && a.clients >= 1,
        "batch and clients must be at least 1"
    );
    assert!(
        !a.token.is_empty(),
        "--token (or BLOOMCAST_TOKEN) is required"
    );
    if a.ids.is_some() {
        a.warmup = 0.0;
    }
    a
}

/// What one client saw during the measured window.
#[derive(Default)]
struct Tally {
    /// Microseconds per acknowledged request.
    latencies: Vec<u32>,
    ids: u64,
    errors: u64,
    first_error: Option<String>,
}

/// The JSON body `{"ids": [...]}` of one batch of fresh IDs.
fn body(prefix: &str, client: usize, next: &mut u64, batch: usize) -> String {
    let mut out = String::with_capacity(16 + batch * (prefix.len() + 16));
    out.push_str("{\"ids\":[");
    for i in 0..batch {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"{prefix}-{client}-{next}\""));
        *next += 1;
    }
    out.push_str("]}");
    out
}

/// Takes the next batch's size from the IDs left to send (`--ids`): `batch`, or fewer
/// at the end, or 0 once none are left.
fn take(left: &AtomicU64, batch: usize) -> usize {
    let mut taken = 0;
    let _ = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        taken = n.min(batch as u64);
        Some(n - taken)
    });
    taken as usize
}

async fn client(
    http: reqwest::Client,
    url: String,
    args: Arc<Args>,
    index: usize,
    measure_from: Instant,
    stop_at: Instant,
    left: Arc<AtomicU64>,
) -> Tally {
    let mut tally = Tally::default();
    let mut next = 0u64;
    while Instant::now() < stop_at {
        let size = match args.ids {
            Some(_) => take(&left, args.batch),
            None => args.batch,
        };
        if size == 0 {
            break;
        }
        let payload = body(&args.prefix, index, &mut next, size);
        let started = Instant::now();
        let outcome = http
            .post(&url)
            .bearer_auth(&args.token)
            .header("content-type", "application/json")
            .body(payload)
            .send()
            .await;
        let outcome = match outcome {
            Ok(response) => {
                let status = response.status();
                // Read the receipt: the request is over when its body is.
                match response.bytes().await {
                    Ok(_) if status == reqwest::StatusCode::OK => Ok(()),
                    Ok(body) => Err(format!("{status}: {}", String::from_utf8_lossy(&body))),
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let elapsed = started.elapsed();
        if started < measure_from {
            continue;
        }
        match outcome {
            Ok(()) => {
                tally.ids += size as u64;
                tally
                    .latencies
                    .push(elapsed.as_micros().min(u128::from(u32::MAX)) as u32);
            }
            Err(e) => {
                tally.errors += 1;
                tally.first_error.get_or_insert(e);
            }
        }
    }
    tally
}

/// Nearest-rank percentile of sorted microseconds, in milliseconds.
fn percentile_ms(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1]) / 1000.0
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Arc::new(args());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("an HTTP client");
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(args.warmup);
    let stop_at = match args.ids {
        // Bounded by the IDs, not the clock: a day is past any run.
        Some(_) => measure_from + Duration::from_secs(86_400),
        None => measure_from + Duration::from_secs_f64(args.seconds),
    };
    let left = Arc::new(AtomicU64::new(args.ids.unwrap_or(0)));
    let tasks: Vec<_> = (0..args.clients)
        .map(|i| {
            let url = format!(
                "{}/updates",
                args.urls[i % args.urls.len()].trim_end_matches('/')
            );
            tokio::spawn(client(
                http.clone(),
                url,
                args.clone(),
                i,
                measure_from,
                stop_at,
                left.clone(),
            ))
        })
        .collect();
    let mut total = Tally::default();
    for task in tasks {
        let t = task.await.expect("a client task does not panic");
        total.latencies.extend(t.latencies);
        total.ids += t.ids;
        total.errors += t.errors;
        if total.first_error.is_none() {
            total.first_error = t.first_error;
        }
    }
    // Requests in flight at the stop time finish after it and still count: measure to
    // the last one.
    let window = measure_from.elapsed().as_secs_f64();
    total.latencies.sort_unstable();
    let requests = total.latencies.len();
    println!(
        "batch={} clients={} nodes={} secs={:.2} requests={} ids={} ids_per_s={:.0} req_per_s={:.1} p50_ms={:.2} p99_ms={:.2} errors={}",
        args.batch,
        args.clients,
        args.urls.len(),
        window,
        requests,
        total.ids,
        total.ids as f64 / window,
        requests as f64 / window,
        percentile_ms(&total.latencies, 0.50),
        percentile_ms(&total.latencies, 0.99),
        total.errors,
    );
    match total.first_error {
        Some(e) => {
            eprintln!("loadgen: {} failed requests; first: {e}", total.errors);
            std::process::ExitCode::FAILURE
        }
        None => std::process::ExitCode::SUCCESS,
    }
}
