//! Figures for operators (`GET /stats`, the dashboard): per-hour size, fill and
//! false-positive estimate of the filters the service serves, and what its caches hold.
//! Read-only: it looks at the same state the filter views use and changes nothing.

use super::{Result, Service, ServiceError};
use crate::hour::Hour;
use serde::Serialize;

/// One hour's filter as served: what it holds and how full and precise it is.
#[derive(Debug, Clone, PartialEq)]
pub struct HourStats {
    pub hour: Hour,
    /// Distinct IDs recorded (exact).
    pub count: u64,
    pub m: u32,
    pub k: u32,
    /// Set bits of the body.
    pub ones: u64,
    /// `ones / m`.
    pub fill: f64,
    /// `(ones / m)^k`, as the filter's own `fpp`.
    pub fpp: f64,
    /// `false` for the open hour.
    pub complete: bool,
}

impl HourStats {
    fn new(hour: Hour, count: u64, m: u32, k: u32, ones: u64, complete: bool) -> HourStats {
        let fill = ones as f64 / f64::from(m);
        HourStats {
            hour,
            count,
            m,
            k,
            ones,
            fill,
            fpp: fill.powi(k as i32),
            complete,
        }
    }
}

/// What the in-memory caches hold now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Rendered closed hours and day unions kept.
    pub entries: usize,
    pub bytes: usize,
    pub budget_bytes: usize,
    /// Unions ending in the open hour (`since`, today) kept for pollers to share.
    pub open_unions: usize,
    pub open_unions_max: usize,
    /// Bytes the open unions hold, of their budget (a quarter of `cache_bytes`).
    pub open_unions_bytes: usize,
    pub open_unions_budget_bytes: usize,
    /// Working memory compact builds in flight have reserved now, of their budget
    /// (`cache_bytes`, apart from the render cache's).
    pub build_bytes: u64,
    pub build_budget_bytes: u64,
}

impl Service {
    /// The `limit` most recent served hours, oldest first, ending with the open hour.
    ///
    /// # Errors
    /// Store failures.
    pub async fn hour_stats(&self, limit: usize) -> Result<Vec<HourStats>> {
        let now = self.current_hour();
        let earliest = self.earliest(now);
        let oldest =
            Hour::from_index((now.index() - limit.max(1) as i64 + 1).max(earliest.index()));
        self.sealer.forget_stats_before(earliest);
        let mut out = Vec::new();
        let mut hour = oldest;
        while hour < now {
            // A sealed hour's figures never change: each is read from the store once.
            if let Some(stats) = self.sealer.stats(hour) {
                out.push(stats);
                hour = hour.next();
                continue;
            }
            let sealed = match self.store.sealed(hour).await? {
                Some(sealed) => sealed,
                None => match self.seal_or_backoff(hour).await {
                    Ok(sealed) => sealed,
                    // Not sealable yet (the store takes no writes): left out for now.
                    Err(ServiceError::Store(e)) if e.is_transient() => {
                        hour = hour.next();
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            let ones = sealed
                .filter
                .iter()
                .map(|b| u64::from(b.count_ones()))
                .sum();
            let stats = HourStats::new(hour, sealed.count, sealed.m, sealed.k, ones, true);
            self.sealer.keep_stats(hour, stats.clone());
            out.push(stats);
            hour = hour.next();
        }
        self.refresh(now).await?;
        if let Some(open) = self.open.figures(now, self.closed_through()) {
            let (count, m, k, ones) = (open.count, open.m, open.k, open.ones);
            out.push(HourStats::new(now, count, m, k, ones, false));
        }
        Ok(out)
    }

    /// What union work has cost since start: runs and CPU time of each step.
    pub fn union_work(&self) -> super::UnionWork {
        self.unions.work()
    }

    /// What the render cache and the open-union map hold.
    pub fn cache_stats(&self) -> CacheStats {
        let (entries, bytes) = self.cache.usage();
        let unions = self.unions.open_usage();
        let (build_bytes, build_budget_bytes) = self.unions.memory_usage();
        CacheStats {
            entries,
            bytes,
            budget_bytes: self.tuning.cache_bytes,
            open_unions: unions.entries,
            open_unions_bytes: unions.bytes,
            open_unions_budget_bytes: unions.budget_bytes,
            open_unions_max: unions.max_entries,
            build_bytes,
            build_budget_bytes,
        }
    }
}
