//! Prometheus metrics: counters kept per thread, summed and rendered as text on
//! `GET /metrics`.
//!
//! Every request is counted by route and status, so the counting must not be what stops
//! the read path from scaling with cores: each thread counts into a shard of its own
//! (its own cache lines, an uncontended atomic add), and `/metrics` sums the shards. The
//! routes and statuses the server answers are slots known in advance; anything else (a
//! route another module adds, an unusual status) is counted in a locked map, off the
//! hot path.
//!
//! Measured against `prometheus-client` holding the same metric set, in one run
//! (`benches/metrics.rs`, docs/BENCHMARKS.md): recording a response here is ~2.4x
//! faster from one thread and ~2.3x from two. Its Prometheus text encoder writes the
//! same lines in half the time, but its label sets come out in hash order, not sorted
//! by route and status as this text is (and as tests check); rendering is once per
//! scrape, recording once per request.

mod figures;
mod track;

pub use figures::{exposition, standby_exposition};

pub use track::{TagLayer, TrackLayer};

use axum::extract::MatchedPath;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::error::CODES;

/// The router's routes (as `MatchedPath` spells them), each a counter slot; the last is
/// requests no route matched. The first three are the filter reads.
const ROUTES: [&str; 9] = [
    "/{y}/{mo}/{d}/{h}",
    "/since/{y}/{mo}/{d}/{h}",
    "/{y}/{mo}/{d}",
    "/",
    "/healthz",
    "/metrics",
    "/updates",
    "/stats",
    UNMATCHED,
];
/// How many of [`ROUTES`], from the first, are filter reads (hour, since, day).
const READ_ROUTES: usize = 3;
const UNMATCHED: &str = "unmatched";
/// The statuses the server answers, each a counter slot.
const STATUSES: [u16; 15] = [
    200, 304, 400, 401, 404, 405, 408, 410, 413, 415, 431, 500, 503, 507, 204,
];
/// Shards: threads beyond this many share one (still correct, only slower).
const SHARDS: usize = 32;

/// One thread's counters, aligned so that no two shards share a cache line.
#[repr(align(128))]
struct Shard {
    bytes_served: AtomicU64,
    not_modified: AtomicU64,
    requests: [[AtomicU64; STATUSES.len()]; ROUTES.len()],
    /// Error responses by their `error` code, a slot each of [`CODES`].
    errors: [AtomicU64; CODES.len()],
}

impl Default for Shard {
    fn default() -> Shard {
        Shard {
            bytes_served: AtomicU64::new(0),
            not_modified: AtomicU64::new(0),
            requests: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The cumulative counters at one moment, for rates (see `http::series`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    pub ids_ingested: u64,
    /// Requests of every route.
    pub requests: u64,
    /// Requests of the filter routes (hour, day, since).
    pub reads: u64,
    pub not_modified: u64,
    pub bytes_served: u64,
}

/// The server's counters. Cheap to update from any thread; read by [`Metrics::render`].
pub struct Metrics {
    ids_ingested: AtomicU64,
    /// Connections closed because their client took no response bytes for the write
    /// timeout (rare: one shared counter).
    dropped_write_timeout: AtomicU64,
    /// Connections open now (once per connection: one shared counter).
    connections_open: AtomicU64,
    shards: Box<[Shard]>,
    /// Requests whose route or status has no slot: route → status → count.
    other: Mutex<BTreeMap<(String, u16), u64>>,
    /// The last hour of [`Totals`], sampled off the request path.
    pub series: super::series::Series,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            ids_ingested: AtomicU64::new(0),
            dropped_write_timeout: AtomicU64::new(0),
            connections_open: AtomicU64::new(0),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            other: Mutex::new(BTreeMap::new()),
            series: super::series::Series::default(),
        }
    }
}

/// A connection counted open ([`Metrics::connection_opened`]) until this is dropped.
pub struct OpenConnection(std::sync::Arc<Metrics>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The route slot of a matched path, if it has one.
fn route_slot(route: Option<&MatchedPath>) -> Option<usize> {
    let route = route.map_or(UNMATCHED, MatchedPath::as_str);
    ROUTES.iter().position(|r| *r == route)
}

/// This thread's shard: threads are numbered in the order they first count.
fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        if index.get() == usize::MAX {
            index.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
        }
        index.get()
    })
}

impl Metrics {
    /// The routes counted in slots of their own, as `MatchedPath` spells them (the
    /// last is requests no route matched); `benches/metrics.rs` registers the same set.
    pub const ROUTES: &'static [&'static str] = &ROUTES;

    /// Counts IDs acknowledged by an ingest (once per batch, so one shared counter).
    pub fn ids_ingested(&self, n: usize) {
        self.ids_ingested.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts a connection closed by the write timeout (`write_timeout_seconds`).
    pub fn connection_dropped_write_timeout(&self) {
        self.dropped_write_timeout.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection open until the guard returned is dropped.
    pub fn connection_opened(self: &std::sync::Arc<Self>) -> OpenConnection {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(self.clone())
    }

    /// Connections open now.
    pub fn connections_open(&self) -> u64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    /// Counts one response of `route` (as `MatchedPath` spells it) outside the router's
    /// layer: tests and `benches/metrics.rs`.
    pub fn record(&self, route: &str, status: u16, bytes: u64) {
        self.record_slot(
            ROUTES.iter().position(|r| *r == route),
            route,
            status,
            bytes,
        );
    }

    /// Counts an error response by its `error` code (one of `CODES`; another, which
    /// no [`super::ApiError`] answers, is not counted).
    pub fn count_error(&self, code: &str) {
        if let Some(slot) = CODES.iter().position(|c| *c == code) {
            self.shards[shard_index()].errors[slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn record_slot(&self, slot: Option<usize>, route: &str, status: u16, bytes: u64) {
        let shard = &self.shards[shard_index()];
        shard.bytes_served.fetch_add(bytes, Ordering::Relaxed);
        if status == 304 {
            shard.not_modified.fetch_add(1, Ordering::Relaxed);
        }
        let status_slot = STATUSES.iter().position(|s| *s == status);
        match (slot, status_slot) {
            (Some(r), Some(s)) => {
                shard.requests[r][s].fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                let mut other = crate::sync::lock(&self.other);
                *other.entry((route.to_owned(), status)).or_default() += 1;
            }
        }
    }

    fn sum(&self, field: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.shards
            .iter()
            .map(|s| field(s).load(Ordering::Relaxed))
            .sum()
    }

    /// The counters now: one pass over the shards (read off the request path).
    pub fn totals(&self) -> Totals {
        let mut totals = Totals {
            ids_ingested: self.ids_ingested.load(Ordering::Relaxed),
            not_modified: self.sum(|s| &s.not_modified),
            bytes_served: self.sum(|s| &s.bytes_served),
            ..Totals::default()
        };
        for r in 0..ROUTES.len() {
            let n: u64 = (0..STATUSES.len())
                .map(|s| self.sum(|shard| &shard.requests[r][s]))
                .sum();
            totals.requests += n;
            if r < READ_ROUTES {
                totals.reads += n;
            }
        }
        for ((route, _), n) in crate::sync::lock(&self.other).iter() {
            totals.requests += n;
            if route.starts_with("/{y}") || route.starts_with("/since/") {
                totals.reads += n;
            }
        }
        totals
    }

    /// The totals now, stamped, for the series.
    pub fn reading(&self) -> super::series::Sample {
        super::series::Sample {
            at: chrono::Utc::now().timestamp(),
            totals: self.totals(),
        }
    }

    /// Records the totals now in the last hour's series.
    pub fn sample(&self) {
        self.series.push(self.reading());
    }

    /// The Prometheus text exposition.
    pub fn render(&self, current_hour_ids: u64) -> String {
        let mut out = String::new();
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        };
        counter(
            &mut out,
            "bloomcast_ids_ingested_total",
            "IDs acknowledged by POST /updates.",
            self.ids_ingested.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "bloomcast_http_not_modified_total",
            "Responses 304 Not Modified.",
            self.sum(|s| &s.not_modified),
        );
        counter(
            &mut out,
            "bloomcast_http_response_body_bytes_total",
            "Response body bytes sent.",
            self.sum(|s| &s.bytes_served),
        );
        let _ = writeln!(
            out,
            "# HELP bloomcast_connections_dropped_total Connections the server closed, by reason \
             (write_timeout: the client took no response bytes for write_timeout_seconds).\n\
             # TYPE bloomcast_connections_dropped_total counter\n\
             bloomcast_connections_dropped_total{{reason=\"write_timeout\"}} {}",
            self.dropped_write_timeout.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP bloomcast_current_hour_ids Distinct IDs in the open hour."
        );
        let _ = writeln!(out, "# TYPE bloomcast_current_hour_ids gauge\nbloomcast_current_hour_ids {current_hour_ids}");
        let _ = writeln!(
            out,
            "# HELP bloomcast_http_requests_total HTTP requests by route and status."
        );
        let _ = writeln!(out, "# TYPE bloomcast_http_requests_total counter");
        let mut requests = crate::sync::lock(&self.other).clone();
        for (r, route) in ROUTES.iter().enumerate() {
            for (s, status) in STATUSES.iter().enumerate() {
                let n = self.sum(|shard| &shard.requests[r][s]);
                if n > 0 {
                    *requests.entry(((*route).to_owned(), *status)).or_default() += n;
                }
            }
        }
        for ((route, status), n) in requests {
            let route = route.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(
                out,
                "bloomcast_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        out
    }

    /// Error responses by code, as Prometheus text: apart from [`Metrics::render`], whose
    /// families `benches/metrics.rs` registers in `prometheus-client` too, to compare.
    pub fn render_errors(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP bloomcast_http_errors_total Error responses by their JSON error code (busy and \
             store_unavailable are both 503; also counted in bloomcast_http_requests_total).\n\
             # TYPE bloomcast_http_errors_total counter"
        );
        for (slot, code) in CODES.iter().enumerate() {
            let n = self.sum(|shard| &shard.errors[slot]);
            let _ = writeln!(out, "bloomcast_http_errors_total{{code=\"{code}\"}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn renders_counters_by_route_and_status() {
        let m = Metrics::default();
        m.ids_ingested(5);
        m.record("/{y}/{mo}/{d}/{h}", 200, 100);
        m.record("/{y}/{mo}/{d}/{h}", 200, 50);
        m.record("/{y}/{mo}/{d}/{h}", 304, 0);
        let text = m.render(7);
        assert!(text.contains("bloomcast_ids_ingested_total 5"), "{text}");
        assert!(text.contains("bloomcast_http_not_modified_total 1"));
        assert!(text.contains("bloomcast_http_response_body_bytes_total 150"));
        assert!(text.contains("bloomcast_current_hour_ids 7"));
        assert!(text.contains(
            "\n# TYPE bloomcast_connections_dropped_total counter\n\
             bloomcast_connections_dropped_total{reason=\"write_timeout\"} 0\n"
        ));
        assert!(text.contains(
            "bloomcast_http_requests_total{route=\"/{y}/{mo}/{d}/{h}\",status=\"200\"} 2"
        ));
    }

    #[test]
    fn a_connection_counts_as_open_until_its_guard_is_dropped() {
        let m = Arc::new(Metrics::default());
        let first = m.connection_opened();
        let second = m.connection_opened();
        assert_eq!(m.connections_open(), 2);
        drop(first);
        assert_eq!(m.connections_open(), 1);
        drop(second);
        assert_eq!(m.connections_open(), 0);
    }

    #[test]
    fn counts_error_responses_by_code_and_every_code_from_zero() {
        let m = Metrics::default();
        m.count_error("busy");
        m.count_error("busy");
        m.count_error("no_such_code");
        let mut text = String::new();
        m.render_errors(&mut text);
        assert!(
            text.contains("\nbloomcast_http_errors_total{code=\"busy\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("\nbloomcast_http_errors_total{code=\"store_unavailable\"} 0\n"));
        assert_eq!(text.lines().count(), 2 + CODES.len(), "{text}");
        assert!(!text.contains("no_such_code"));
    }

    #[test]
    fn counts_from_every_thread_and_routes_without_a_slot() {
        let m = Arc::new(Metrics::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        m.record("/updates", 200, 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        m.record("/dashboard", 200, 0);
        m.record("/updates", 418, 0);
        let text = m.render(0);
        assert!(text.contains("bloomcast_http_response_body_bytes_total 4000"));
        assert!(
            text.contains(r#"bloomcast_http_requests_total{route="/updates",status="200"} 4000"#)
        );
        assert!(
            text.contains(r#"bloomcast_http_requests_total{route="/dashboard",status="200"} 1"#)
        );
        assert!(text.contains(r#"bloomcast_http_requests_total{route="/updates",status="418"} 1"#));
        let dashboard = text.find("/dashboard").unwrap();
        let updates = text.find("route=\"/updates\"").unwrap();
        assert!(dashboard < updates, "sorted by route: {text}");
    }
}
