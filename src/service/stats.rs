//! Figures for operators (`GET /stats`, the dashboard): per-hour size, fill and
//! false-positive estimate of the filters the service serves, and what its caches hold.
//! Read-only: it looks at the same state the filter views use and changes nothing.

use super::parts::Stats;
use super::{Result, ServiceError};
use crate::bloom::{Filter, SHA1_KM32};
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
    /// The filter's own `fpp`, as served (docs/PROTOCOL.md section 8).
    pub fpp: f64,
    /// `false` for the open hour.
    pub complete: bool,
}

impl HourStats {
    fn sealed(hour: Hour, count: u64, filter: &Filter) -> HourStats {
        HourStats {
            hour,
            count,
            m: filter.m(),
            k: filter.k(),
            ones: filter.ones(),
            fill: filter.fill_ratio(),
            fpp: filter.fpp(),
            complete: true,
        }
    }

    fn open(hour: Hour, open: super::open_hours::Figures) -> HourStats {
        HourStats {
            hour,
            count: open.count,
            m: open.m,
            k: open.k,
            ones: open.ones,
            fill: open.ones as f64 / f64::from(open.m),
            fpp: open.fpp,
            complete: false,
        }
    }
}

/// What the in-memory caches hold now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Entries of the one cache, every part.
    pub entries: u64,
    /// Bytes of rendered closed hours, complete unions and their compact forms.
    pub bytes: u64,
    /// The one cache's part of the budget, which every part of it shares.
    pub budget_bytes: u64,
    /// Unions ending in the open hour (`since`, today) kept for pollers to share.
    pub open_unions: u64,
    /// Bytes the open unions hold, with the codings their next versions are coded against.
    pub open_unions_bytes: u64,
    /// What they share (the one cache's part).
    pub open_unions_budget_bytes: u64,
    /// Working memory union and compact builds in flight have reserved now, of their
    /// part of the budget.
    pub build_bytes: u64,
    pub build_budget_bytes: u64,
}

/// The one memory budget (`cache_bytes`): each part's bytes now, against its share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryStats {
    pub split: super::Split,
    /// What the one cache holds, by part.
    pub kept: super::KeptUsage,
    /// Bytes the one cache holds (every part).
    pub kept_bytes: u64,
    /// Working memory builds in flight hold now (each at most its reservation).
    pub build_bytes: u64,
    /// Working memory builds in flight have reserved, at their peaks.
    pub build_reserved_bytes: u64,
    /// The open hour's versions kept as dictionaries and the deltas made from them.
    pub delta_bytes: u64,
    /// Outside the budget: the open hours' keys, filters and newest renderings
    /// (`max_hour_ids` bounds them).
    pub open_hour_bytes: u64,
    /// Outside the budget: what the store's client holds in the process.
    pub store_bytes: u64,
}

impl Stats<'_> {
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
            let filter =
                Filter::decode_bytes(sealed.m.into(), sealed.k.into(), SHA1_KM32, &sealed.filter)?
                    .sized_by_rule(self.sizing_of(hour));
            let stats = HourStats::sealed(hour, sealed.count, &filter);
            self.sealer.keep_stats(hour, stats.clone());
            out.push(stats);
            hour = hour.next();
        }
        self.refresh(now).await?;
        if let Some(open) = self.open.figures(now, self.closed_through()) {
            out.push(HourStats::open(now, open));
        }
        Ok(out)
    }

    /// What the one cache holds, and the builds in flight.
    pub fn cache_stats(&self) -> CacheStats {
        let kept = self.kept.usage();
        let (build_bytes, build_budget_bytes) = self.unions.memory_usage();
        CacheStats {
            entries: kept.entries,
            bytes: kept.renderings,
            budget_bytes: self.kept.budget(),
            open_unions: kept.open_union_entries,
            open_unions_bytes: kept.open_unions,
            open_unions_budget_bytes: self.kept.budget(),
            build_bytes,
            build_budget_bytes,
        }
    }

    /// Each part of the one memory budget the service holds, against its share.
    pub fn memory_stats(&self) -> MemoryStats {
        MemoryStats {
            split: self.split,
            kept: self.kept.usage(),
            kept_bytes: self.kept.bytes(),
            build_bytes: self.unions.memory_holding(),
            build_reserved_bytes: self.unions.memory_usage().0,
            delta_bytes: self.open.deltas().bytes(),
            open_hour_bytes: self.open.heap_bytes(),
            store_bytes: self.store.memory_bytes(),
        }
    }

    /// What union work has cost since start: runs and CPU time of each step.
    pub fn union_work(&self) -> super::UnionWork {
        self.unions.work()
    }
}
