//! The server's Prometheus counters (`http::Metrics`: per-thread shards of atomic
//! counters, the exposition text written by hand) against `prometheus-client` doing the
//! same job: the same metric set (the request counters by route and status, body bytes,
//! 304s, the fast-lane counters, dropped connections, the open hour's gauge), rendered
//! with its Prometheus text encoder (version 0.0.4, as `/metrics` serves).
//!
//! ```text
//! cargo bench --bench metrics -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! - `record/1`, `record/2`: counting one response (route, status, body bytes) as the
//!   router's layer does, from one thread or from two at once (wall time per response
//!   of each thread: equal to `record/1` is perfect scaling). Responses cycle through
//!   the hour route's 200 and 304 and a few others.
//! - `render`: the whole exposition text of that set, 36 request series.
//!
//! Before the run it prints whether the two texts have the same lines, and in the same
//! order (the contract `tests/` and the unit tests pin).

use bloomcast::http::Metrics;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Barrier;
use std::time::{Duration, Instant};

const ROUTES: &[&str] = Metrics::ROUTES;

/// The responses recorded, cycled: mostly polls of an hour (200 and 304).
const RESPONSES: [(&str, u16, u64); 8] = [
    (ROUTES[0], 200, 7_400),
    (ROUTES[0], 304, 0),
    (ROUTES[0], 304, 0),
    (ROUTES[0], 200, 2_100),
    (ROUTES[1], 200, 52_000),
    (ROUTES[2], 304, 0),
    (ROUTES[6], 200, 40),
    (ROUTES[8], 404, 120),
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: &'static str,
}

/// The same metric set in `prometheus-client`.
struct Client {
    registry: Registry,
    ids_ingested: Counter,
    not_modified: Counter,
    bytes: Counter,
    current: Gauge,
    requests: Family<Request, Counter>,
}

impl Client {
    fn new() -> Client {
        let mut registry = Registry::default();
        let counter = |registry: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            // The registry ends every help text with a period.
            registry.register(name, help.trim_end_matches('.'), c.clone());
            c
        };
        let ids_ingested = counter(
            &mut registry,
            "bloomcast_ids_ingested",
            "IDs acknowledged by POST /updates.",
        );
        let not_modified = counter(
            &mut registry,
            "bloomcast_http_not_modified",
            "Responses 304 Not Modified.",
        );
        let bytes = counter(
            &mut registry,
            "bloomcast_http_response_body_bytes",
            "Response body bytes sent.",
        );
        let dropped = Family::<Reason, Counter>::default();
        // The one series exists from the start, at 0, as ours.
        drop(dropped.get_or_create(&Reason {
            reason: "write_timeout",
        }));
        registry.register(
            "bloomcast_connections_dropped",
            "Connections the server closed, by reason (write_timeout: the client took no response bytes for write_timeout_seconds)",
            dropped,
        );
        let current = Gauge::default();
        registry.register(
            "bloomcast_current_hour_ids",
            "Distinct IDs in the open hour",
            current.clone(),
        );
        let requests = Family::<Request, Counter>::default();
        registry.register(
            "bloomcast_http_requests",
            "HTTP requests by route and status",
            requests.clone(),
        );
        Client {
            registry,
            ids_ingested,
            not_modified,
            bytes,
            current,
            requests,
        }
    }

    fn record(&self, route: &'static str, status: u16, bytes: u64) {
        self.bytes.inc_by(bytes);
        if status == 304 {
            self.not_modified.inc();
        }
        self.requests
            .get_or_create(&Request { route, status })
            .inc();
    }

    fn render(&self, current_hour_ids: u64) -> String {
        self.current.set(current_hour_ids as i64);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String");
        out
    }
}

/// Runs `op(i)` for `i in 0..iters` on `threads` threads at once; wall time.
fn on_threads(threads: usize, iters: u64, op: &(dyn Fn(u64) + Sync)) -> Duration {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in 0..iters {
                    op(i + t as u64 * 3);
                }
            });
        }
        start.wait();
        Instant::now()
    })
    .elapsed()
}

/// Both, holding the same counts: every route with four statuses, and some IDs.
fn filled() -> (Metrics, Client) {
    let (ours, theirs) = (Metrics::default(), Client::new());
    ours.ids_ingested(1234);
    theirs.ids_ingested.inc_by(1234);
    for (i, route) in ROUTES.iter().enumerate() {
        for status in [200, 304, 404, 503] {
            for _ in 0..=i {
                ours.record(route, status, 100);
                theirs.record(route, status, 100);
            }
        }
    }
    (ours, theirs)
}

fn bench(c: &mut Criterion) {
    let (ours, theirs) = filled();
    let (a, b) = (ours.render(42), theirs.render(42));
    let (mut sa, mut sb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let same_order = sa == sb;
    sa.sort_unstable();
    sb.sort_unstable();
    eprintln!(
        "metrics: same lines {}, same order {} ({} and {} lines)",
        sa == sb,
        same_order,
        sa.len(),
        sb.len()
    );
    if sa != sb {
        eprintln!("ours:\n{a}\nprometheus-client:\n{b}");
    }

    let mut group = c.benchmark_group("record");
    let ours_op = |i: u64| {
        let (route, status, bytes) = RESPONSES[i as usize % RESPONSES.len()];
        ours.record(black_box(route), black_box(status), black_box(bytes));
    };
    let theirs_op = |i: u64| {
        let (route, status, bytes) = RESPONSES[i as usize % RESPONSES.len()];
        theirs.record(black_box(route), black_box(status), black_box(bytes));
    };
    let ops: [(&str, &(dyn Fn(u64) + Sync)); 2] =
        [("ours", &ours_op), ("prometheus_client", &theirs_op)];
    for (name, op) in ops {
        group.bench_function(BenchmarkId::new(name, "1"), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                op(i);
            })
        });
        group.bench_function(BenchmarkId::new(name, "2"), |b| {
            b.iter_custom(|iters| on_threads(2, iters, op))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("render");
    group.bench_function("ours", |b| b.iter(|| black_box(ours.render(42))));
    group.bench_function("prometheus_client", |b| {
        b.iter(|| black_box(theirs.render(42)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
