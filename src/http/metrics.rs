//! Prometheus metrics: counters kept in atomics, rendered as text on `GET /metrics`.

use axum::body::HttpBody as _;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The cumulative counters at one moment, for rates (see [`super::series`]).
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

#[derive(Default)]
pub struct Metrics {
    ids_ingested: AtomicU64,
    not_modified: AtomicU64,
    bytes_served: AtomicU64,
    /// route → status → count
    requests: RwLock<HashMap<String, HashMap<u16, AtomicU64>>>,
    /// The last hour of [`Totals`], sampled off the request path.
    pub series: super::series::Series,
}

impl Metrics {
    pub fn ids_ingested(&self, n: usize) {
        self.ids_ingested.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn record(&self, route: &str, status: u16, bytes: u64) {
        self.bytes_served.fetch_add(bytes, Ordering::Relaxed);
        if status == 304 {
            self.not_modified.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(counter) = self
            .requests
            .read()
            .expect("metrics lock")
            .get(route)
            .and_then(|by_status| by_status.get(&status))
        {
            counter.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut requests = self.requests.write().expect("metrics lock");
        requests
            .entry(route.to_owned())
            .or_default()
            .entry(status)
            .or_default()
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now (a few atomic loads and one pass over the routes).
    pub fn totals(&self) -> Totals {
        let mut totals = Totals {
            ids_ingested: self.ids_ingested.load(Ordering::Relaxed),
            not_modified: self.not_modified.load(Ordering::Relaxed),
            bytes_served: self.bytes_served.load(Ordering::Relaxed),
            ..Totals::default()
        };
        for (route, by_status) in self.requests.read().expect("metrics lock").iter() {
            let n: u64 = by_status.values().map(|c| c.load(Ordering::Relaxed)).sum();
            totals.requests += n;
            if route.starts_with("/{y}") || route.starts_with("/since/") {
                totals.reads += n;
            }
        }
        totals
    }

    /// The totals now, stamped with the wall clock.
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
            self.not_modified.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "bloomcast_http_response_body_bytes_total",
            "Response body bytes sent.",
            self.bytes_served.load(Ordering::Relaxed),
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
        let requests = self.requests.read().expect("metrics lock");
        let mut routes: Vec<_> = requests.iter().collect();
        routes.sort_by(|a, b| a.0.cmp(b.0));
        for (route, by_status) in routes {
            let mut statuses: Vec<_> = by_status.iter().collect();
            statuses.sort_by_key(|(s, _)| **s);
            for (status, n) in statuses {
                let route = route.replace('\\', "\\\\").replace('"', "\\\"");
                let _ = writeln!(
                    out,
                    "bloomcast_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {}",
                    n.load(Ordering::Relaxed)
                );
            }
        }
        out
    }
}

/// Middleware counting every request by matched route and status, and body bytes.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    let bytes = response.body().size_hint().exact().unwrap_or(0);
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    metrics.record(route, response.status().as_u16(), bytes);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "bloomcast_http_requests_total{route=\"/{y}/{mo}/{d}/{h}\",status=\"200\"} 2"
        ));
    }
}
