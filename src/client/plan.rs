//! Choosing between hourly filters and one union for `changed_since`: pure arithmetic
//! on what the index says and what the client already holds.
//!
//! Hourly filters say *when* an ID changed and, once complete, are cached forever, so
//! a client that polls regularly pays only for the new hours. A client that missed many
//! hours pays a request per hour; one union (`/since/...`) covers them all in one
//! request of about the same payload. We estimate the bytes of both and take the
//! cheaper.

/// How [`super::Client::changed_since_with`] fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Whichever of the other two is estimated to cost fewer bytes.
    #[default]
    Auto,
    /// One filter per hour: results per hour.
    Hourly,
    /// One union from `since` through now: one result for the whole range.
    Union,
}

/// Bytes a filter response costs besides its payload (status line and headers).
pub(crate) const RESPONSE_OVERHEAD: f64 = 400.0;
/// Bytes a 304 revalidation costs.
pub(crate) const NOT_MODIFIED: f64 = 250.0;

#[derive(Debug, Clone)]
pub(crate) struct HourInput {
    /// Distinct IDs, when the index lists the hour.
    pub count: Option<u64>,
    /// We hold the hour's complete filter: it costs nothing.
    pub cached_complete: bool,
    /// The count of the copy we hold, if any: unchanged means a 304.
    pub cached_count: Option<u64>,
    /// The current hour, whose filter is sized for capacity rather than its count.
    pub open: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    pub hours: Vec<HourInput>,
    pub target_fpp: f64,
    pub capacity: u64,
}

/// Payload bytes of a filter for `n` IDs at `p`: `n ln(1/p) / (ln 2)^2` bits.
fn payload(n: u64, p: f64) -> f64 {
    let p = p.clamp(1e-12, 0.5);
    (n.max(1) as f64) * (1.0 / p).ln() / (std::f64::consts::LN_2.powi(2)) / 8.0
}

/// Whether fetching hour by hour costs fewer bytes than one union.
pub(crate) fn hourly_is_cheaper(inputs: &Inputs) -> bool {
    let p = inputs.target_fpp;
    // An hour the index does not list is older than it shows: assume a full hour.
    let count = |h: &HourInput| h.count.unwrap_or(inputs.capacity);
    let hourly: f64 = inputs
        .hours
        .iter()
        .map(|h| {
            if h.cached_complete {
                0.0
            } else if h.cached_count.is_some() && h.cached_count == h.count {
                NOT_MODIFIED
            } else if h.open {
                payload(count(h).max(inputs.capacity), p) + RESPONSE_OVERHEAD
            } else {
                payload(count(h), p) + RESPONSE_OVERHEAD
            }
        })
        .sum();
    let total: u64 = inputs.hours.iter().map(count).sum();
    let union = payload(total, p) + RESPONSE_OVERHEAD;
    hourly <= union
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(count: u64, cached_complete: bool, open: bool) -> HourInput {
        HourInput {
            count: Some(count),
            cached_complete,
            cached_count: cached_complete.then_some(count),
            open,
        }
    }

    fn inputs(hours: Vec<HourInput>) -> Inputs {
        Inputs {
            hours,
            target_fpp: 0.01,
            capacity: 3000,
        }
    }

    #[test]
    fn a_regular_poller_holding_past_hours_goes_hourly() {
        let mut hours: Vec<_> = (0..23).map(|_| hour(280, true, false)).collect();
        hours.push(hour(280, false, true));
        assert!(hourly_is_cheaper(&inputs(hours)));
    }

    #[test]
    fn a_client_that_missed_many_small_hours_takes_the_union() {
        let mut hours: Vec<_> = (0..47).map(|_| hour(5, false, false)).collect();
        hours.push(hour(5, false, true));
        assert!(!hourly_is_cheaper(&inputs(hours)));
    }

    #[test]
    fn an_open_hour_not_held_is_cheaper_as_a_union_sized_for_its_count() {
        // The open hour's own filter is sized for capacity (3000); a union, for 100.
        assert!(!hourly_is_cheaper(&inputs(vec![hour(100, false, true)])));
    }

    #[test]
    fn an_open_hour_held_unchanged_costs_a_revalidation() {
        let mut open = hour(100, false, true);
        open.cached_count = Some(100);
        assert!(hourly_is_cheaper(&inputs(vec![open])));
    }

    #[test]
    fn the_payload_estimate_matches_the_sizing_formula() {
        // n = 3000, p = 0.01 gives m = 28756 bits: 3594.5 bytes.
        assert!((payload(3000, 0.01) - 28756.0 / 8.0).abs() < 1.0);
    }
}
