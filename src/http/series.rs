//! The last hour of the request counters, for rates: a ring of cumulative samples of
//! [`Metrics`] taken by a background task every [`SAMPLE_EVERY`], so the request path
//! does no extra work. Rates are differences between neighbouring samples.

use super::metrics::{Metrics, Totals};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the counters are sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// How far back rates go.
pub const WINDOW_SECONDS: i64 = 3600;

/// The counters at one moment (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub at: i64,
    pub totals: Totals,
}

/// Samples of the last [`WINDOW_SECONDS`], oldest first.
#[derive(Default)]
pub struct Series {
    samples: Mutex<VecDeque<Sample>>,
}

impl Series {
    /// Adds a sample and forgets those older than the window.
    pub fn push(&self, sample: Sample) {
        let mut samples = crate::sync::lock(&self.samples);
        samples.push_back(sample);
        while samples
            .front()
            .is_some_and(|s| s.at < sample.at - WINDOW_SECONDS)
        {
            samples.pop_front();
        }
    }

    /// The window's samples, oldest first, followed by `now` (a fresh reading).
    pub fn with(&self, now: Sample) -> Vec<Sample> {
        let samples = crate::sync::lock(&self.samples);
        let mut out: Vec<Sample> = samples
            .iter()
            .filter(|s| s.at >= now.at - WINDOW_SECONDS && s.at < now.at)
            .copied()
            .collect();
        out.push(now);
        out
    }
}

/// Samples `metrics` every `SAMPLE_EVERY` until `stop` resolves.
pub async fn run_sampler(metrics: Arc<Metrics>, stop: impl Future<Output = ()>) {
    let mut every = tokio::time::interval(SAMPLE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            _ = every.tick() => metrics.sample(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(at: i64, reads: u64) -> Sample {
        Sample {
            at,
            totals: Totals {
                reads,
                ..Totals::default()
            },
        }
    }

    #[test]
    fn keeps_one_window_and_appends_the_fresh_reading() {
        let series = Series::default();
        for t in (0..=7200).step_by(600) {
            series.push(at(t, t as u64));
        }
        let window = series.with(at(7300, 7300));
        let times: Vec<i64> = window.iter().map(|s| s.at).collect();
        assert_eq!(times, vec![4200, 4800, 5400, 6000, 6600, 7200, 7300]);
    }
}
