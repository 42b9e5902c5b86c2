//! Choosing between hourly filters and one union for `changed_since`: pure arithmetic
//! on what the index says and what the client already holds.
//!
//! Hourly filters say *when* an ID changed and, once complete, are cached forever, so
//! a client that polls regularly pays only for the new hours; each closed hour travels
//! in its cheapest form ([`super::choice`]). A client that missed many hours pays a
//! request per hour; one union (`/since/...`) covers them all in one request of about
//! the same payload, at the service's target fpp over the whole range; or, where the
//! server serves version 2, two requests: the closed hours as one version 2 union
//! (`/since/....ribbon2`) at the precision that suits the caller, near the floor, and
//! the open hour on its own. We estimate the bytes of each, counting the fetches each
//! would waste on false positives, and take the cheapest.

use super::choice::{cheapest_form_of, cheapest_pages, exact_or, wasted, Choice, RIBBON_BITS};
use super::refine::{cheapest_within, refined_or, Reading};
use crate::bloom::Params;
use crate::exact::floor_bits;

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
    /// One version 2 union of the closed hours from `since` (PROTOCOL.md section 12,
    /// "Catching up") and the open hour on its own: two results. Read as [`Union`](Strategy::Union)
    /// from a server that does not serve it.
    Compact,
    /// One filter per hour, every closed hour read by the pages the IDs fall in
    /// (PROTOCOL.md section 12, "Huge hours by the page") at the precision that suits
    /// them; read whole from a server that does not serve pages.
    Pages,
}

/// How a range is read, as [`cheapest_plan`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    Hourly,
    /// One v1 union through the open hour.
    Union,
    /// One version 2 union at `2^-k` of the closed hours from `inputs.hours[from]`, the
    /// hours before it and the open hour each on its own.
    Compact {
        k: u32,
        from: usize,
    },
    /// One exact body of the closed hours from `inputs.hours[from]` (PROTOCOL.md section
    /// 14, "Ranges"), for a caller whose IDs are registered; the hours before it and the
    /// open hour each on its own.
    Exact {
        from: usize,
    },
}

/// Bytes a filter response costs besides its payload (status line and headers).
pub(crate) const RESPONSE_OVERHEAD: f64 = 400.0;
/// Bytes a 304 revalidation costs.
pub(crate) const NOT_MODIFIED: f64 = 250.0;

#[derive(Debug, Clone)]
pub(crate) struct HourInput {
    /// Distinct IDs, when the index lists the hour.
    pub count: Option<u64>,
    /// The lowest fpp of a complete filter of this hour we hold (it costs no bytes).
    pub held_fpp: Option<f64>,
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
    /// IDs the caller follows: each false positive costs one wasted fetch.
    pub followed: u64,
    /// Bytes of one wasted fetch.
    pub fetch_cost: u64,
    /// Closed hours must come as v1 Bloom filters (a verifying client: ribbons are not
    /// signed).
    pub bloom_only: bool,
    /// The server serves the compact form's version 2 (its index lists it): closed hours
    /// are read as version 2 ribbons where a ribbon is cheapest.
    pub ribbon2: bool,
    /// Pages read per page needed ([`crate::ClientBuilder::pages_cover`]).
    pub pages_cover: u32,
    /// The caller declared every ID it asks about registered in the publisher's universe:
    /// an exact body may be read alone (`super::ClientBuilder::registered`).
    pub registered: bool,
    /// At least the size of the publisher's universe when the index lists an hour's
    /// exact body ([`universe_at_most`]), for weighing an exact body of a range.
    pub universe: Option<u64>,
}

/// The most IDs a universe can hold for an exact body of `bytes` to tell which `count` of
/// them changed: the largest `N` whose floor, `log2(C(N, count))` bits, fits in the body
/// (a body is never below its floor). `None` for an hour with no change (its body says
/// nothing of `N`).
pub(crate) fn universe_at_most(count: u64, bytes: u64) -> Option<u64> {
    if count == 0 {
        return None;
    }
    let bits = 8.0 * bytes as f64;
    let (mut low, mut high) = (count, 1u64 << 40);
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if floor_bits(mid, count) <= bits {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    Some(low)
}

/// The most bytes an exact body of `r` changed IDs of a universe of at most `n` takes:
/// 1.15 times the floor (section 14's bound) and its longest header; the floor is taken
/// at `min(r, n / 2)`, where it is largest, so `r` may be an upper bound.
fn exact_bytes_at_most(n: u64, r: u64) -> f64 {
    1.15 * floor_bits(n, r.min(n / 2)) / 8.0 + 47.0
}

/// Payload bytes of a filter for `n` IDs at `p`: the `m` of the sizing rule
/// (docs/PROTOCOL.md section 3), in bytes.
fn payload(n: u64, p: f64) -> f64 {
    let p = p.clamp(1e-12, 0.5);
    Params::sized(n, p).map_or(f64::from(u32::MAX), |s| f64::from(s.m)) / 8.0
}

impl Inputs {
    /// An hour the index does not list is older than it shows: assume a full hour.
    fn count(&self, h: &HourInput) -> u64 {
        h.count.unwrap_or(self.capacity)
    }

    /// The cheapest approximate form of a closed hour of `count` IDs: the v1 filter for a
    /// verifying client (ribbons are not signed), else the v1 filter or a ribbon.
    pub(crate) fn other(&self, count: u64) -> Choice {
        match self.bloom_only {
            true => Choice::bloom(count, self.target_fpp),
            false => cheapest_form_of(
                count,
                self.target_fpp,
                self.followed,
                self.fetch_cost,
                self.ribbon2,
            ),
        }
    }

    /// How a closed hour of `count` IDs is read; `exact` is the size of its exact body
    /// when it has one (PROTOCOL.md section 14, "Choosing it"): alone when cheaper for a
    /// caller that declared its IDs registered, else as a refinement when cheaper
    /// ([`super::refine`]).
    pub(crate) fn reading(&self, count: u64, exact: Option<u64>) -> Reading {
        let (other, followed, cost) = (self.other(count), self.followed, self.fetch_cost);
        match exact {
            None => Reading::One(other),
            Some(bytes) if self.registered => Reading::One(exact_or(bytes, other, followed, cost)),
            Some(bytes) => {
                let under = self.within(count);
                refined_or(bytes, under, other, followed, cost)
            }
        }
    }

    /// The cheapest paged reading of a closed hour of `count` IDs, its first response's
    /// headers included, where the server may serve one (it serves version 2; a
    /// verifying client verifies pages alone).
    pub(crate) fn paged(&self, count: u64) -> Option<Choice> {
        self.ribbon2.then(|| {
            let mut pages = cheapest_pages(count, self.followed, self.fetch_cost, self.pages_cover);
            pages.filter_bytes += RESPONSE_OVERHEAD as u64;
            pages
        })
    }

    /// The approximate form an exact body of an hour of `count` IDs refines.
    pub(crate) fn within(&self, count: u64) -> Choice {
        cheapest_within(count, self.target_fpp, self.ribbon2, self.bloom_only)
    }

    /// Expected bytes of one hour read on its own, wasted fetches included; `exact` is the
    /// size of the hour's exact body when it may be read in that form.
    fn hour_cost(&self, h: &HourInput, exact: Option<u64>) -> f64 {
        let (p, count) = (self.target_fpp, self.count(h));
        let waste = |fpp: f64| wasted(fpp, self.followed, self.fetch_cost);
        if h.open {
            // Sized for capacity (or grown past it), filled to `count`.
            let shape = Params::sized(count.max(self.capacity), p).ok();
            let fpp = shape.map_or(p, |s| s.expected_fpp(count).min(p));
            let fetch = if h.cached_count.is_some() && h.cached_count == h.count {
                NOT_MODIFIED
            } else {
                payload(count.max(self.capacity), p) + RESPONSE_OVERHEAD
            };
            return fetch + waste(fpp);
        }
        let fetch = self.reading(count, exact);
        let fetched = fetch.expected_bytes(self.followed, self.fetch_cost) + RESPONSE_OVERHEAD;
        let fetched = match self.paged(count) {
            Some(pages) => fetched.min(pages.expected_bytes(self.followed, self.fetch_cost)),
            None => fetched,
        };
        match h.held_fpp {
            Some(fpp) => fetched.min(waste(fpp)),
            None => fetched,
        }
    }
}

/// The closed hours of `inputs` not held as one version 2 union: those after the last
/// closed hour this client holds complete (before it, each hour read on its own, held
/// ones answered from what is held), at the whole bit `k` minimising the union's bytes
/// and wasted fetches, when the server serves version 2 to this client and there is
/// such an hour. `k`, where the union starts in `inputs.hours`, and the expected bytes
/// of the whole range with the other hours' (`costs`: per hour, read on its own).
fn compact_cost(inputs: &Inputs, costs: &[f64]) -> Option<(u32, usize, f64)> {
    if !inputs.ribbon2 || inputs.bloom_only {
        return None;
    }
    let from = union_start(inputs)?;
    let count: u64 = (inputs.hours[from..].iter())
        .filter(|h| !h.open)
        .map(|h| inputs.count(h))
        .sum();
    let (followed, fetch_cost) = (inputs.followed, inputs.fetch_cost);
    let cost = |k: u32| Choice::ribbon2(count, k).expected_bytes(followed, fetch_cost);
    let k = RIBBON_BITS
        .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
        .expect("at least one precision");
    Some((
        k,
        from,
        cost(k) + RESPONSE_OVERHEAD + others_cost(inputs, costs, from),
    ))
}

/// Where a union of the closed hours of `inputs` starts: after the last closed hour this
/// client holds complete (before it, each hour is read on its own, held ones answered
/// from what is held); `None` when no closed hour is after it.
fn union_start(inputs: &Inputs) -> Option<usize> {
    let from = (inputs.hours.iter())
        .rposition(|h| !h.open && h.held_fpp.is_some())
        .map_or(0, |i| i + 1);
    inputs.hours[from..].iter().any(|h| !h.open).then_some(from)
}

/// The expected bytes of the hours of `inputs` not in a union from `from` (those before
/// it, and the open hour after it), each read on its own at `costs`.
fn others_cost(inputs: &Inputs, costs: &[f64], from: usize) -> f64 {
    (inputs.hours.iter().zip(costs).enumerate())
        .filter(|(i, (h, _))| *i < from || h.open)
        .map(|(_, (_, c))| c)
        .sum()
}

/// The closed hours of `inputs` not held as one exact body, for a caller that declared
/// its IDs registered, where every one of them has an exact body (`exact`, per hour, its
/// bytes): where it starts and the expected bytes of the whole range. An exact body of
/// a range is at most the sum of its hours' (PROTOCOL.md section 14, "Ranges"), and at
/// most [`exact_bytes_at_most`] the hours' counts in the universe the index allows; it
/// wastes no fetch. A verifying client reads hour by hour (unions are not signed).
fn exact_cost(inputs: &Inputs, exact: &[Option<u64>], costs: &[f64]) -> Option<(usize, f64)> {
    if !inputs.registered || inputs.bloom_only {
        return None;
    }
    let from = union_start(inputs)?;
    let (mut bytes, mut changed) = (0, 0);
    for (i, h) in inputs.hours.iter().enumerate().skip(from) {
        if !h.open {
            bytes += exact.get(i).copied().flatten()?;
            changed += inputs.count(h);
        }
    }
    // Where many of the universe changed, far below the sum: at most the floor of the
    // hours' counts in the largest universe the index allows, with the body's slack.
    let bytes = match inputs.universe {
        Some(n) => (bytes as f64).min(exact_bytes_at_most(n, changed)),
        None => bytes as f64,
    };
    Some((
        from,
        bytes + RESPONSE_OVERHEAD + others_cost(inputs, costs, from),
    ))
}

/// How [`Strategy::Compact`] reads `inputs`, when it can: the precision and where its
/// union starts ([`Plan::Compact`]).
pub(crate) fn compact_plan(inputs: &Inputs) -> Option<Plan> {
    let costs: Vec<f64> = (inputs.hours.iter())
        .map(|h| inputs.hour_cost(h, None))
        .collect();
    compact_cost(inputs, &costs).map(|(k, from, _)| Plan::Compact { k, from })
}

/// Whether fetching hour by hour costs fewer bytes than one union.
#[cfg(test)]
pub(crate) fn hourly_is_cheaper(inputs: &Inputs) -> bool {
    cheapest_plan(inputs, &[], false) == Plan::Hourly
}

/// The cheapest way to read `inputs.hours` (the last the open hour): hour by hour (with,
/// per hour, the size of its exact body when it may be read in that form, PROTOCOL.md
/// section 14; missing: none), one v1 union, or, when `compact` may be read (a server
/// serving version 2 to a client reading unsigned forms), the closed hours after the
/// last one held as one version 2 union at the whole bit minimising its bytes and
/// wasted fetches, the others as hour by hour reads them ([`compact_cost`]); or, for a
/// caller that declared its IDs registered, those hours as one exact body when each has
/// one ([`exact_cost`]). Ties go to hour by hour, then to the v1 union, then version 2.
pub(crate) fn cheapest_plan(inputs: &Inputs, exact: &[Option<u64>], compact: bool) -> Plan {
    let costs: Vec<f64> = (inputs.hours.iter().enumerate())
        .map(|(i, h)| inputs.hour_cost(h, exact.get(i).copied().flatten()))
        .collect();
    let hourly: f64 = costs.iter().sum();
    let total: u64 = inputs.hours.iter().map(|h| inputs.count(h)).sum();
    let (p, followed, fetch_cost) = (inputs.target_fpp, inputs.followed, inputs.fetch_cost);
    let union = payload(total, p) + RESPONSE_OVERHEAD + wasted(p, followed, fetch_cost);
    let mut best = (Plan::Hourly, hourly);
    if union < best.1 {
        best = (Plan::Union, union);
    }
    if let Some((k, from, compact)) = compact.then(|| compact_cost(inputs, &costs)).flatten() {
        if compact < best.1 {
            best = (Plan::Compact { k, from }, compact);
        }
    }
    if let Some((from, exact)) = compact.then(|| exact_cost(inputs, exact, &costs)).flatten() {
        if exact < best.1 {
            best = (Plan::Exact { from }, exact);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(count: u64, held: bool, open: bool) -> HourInput {
        HourInput {
            count: Some(count),
            held_fpp: (held && !open).then_some(0.01),
            cached_count: held.then_some(count),
            open,
        }
    }

    fn inputs(hours: Vec<HourInput>, followed: u64) -> Inputs {
        Inputs {
            hours,
            target_fpp: 0.01,
            capacity: 3000,
            followed,
            fetch_cost: 10 * 1024,
            bloom_only: false,
            ribbon2: false,
            pages_cover: 1,
            registered: false,
            universe: None,
        }
    }

    /// A client following `followed` IDs back after 24 closed hours of 400,000 IDs, the
    /// open hour of 2,000 after them, from a server serving version 2.
    fn back_after_a_day_of_big_hours(followed: u64) -> Inputs {
        let mut hours: Vec<_> = (0..24).map(|_| hour(400_000, false, false)).collect();
        hours.push(hour(2_000, false, true));
        let mut back = inputs(hours, followed);
        back.capacity = 400_000;
        back.ribbon2 = true;
        back
    }

    #[test]
    fn a_client_back_after_a_day_of_big_hours_takes_the_closed_hours_in_version_2() {
        // 24 hours of 400,000 IDs missed: the v1 union is 11.5 MB at 1%, hour by hour
        // the cheapest ribbons. Following 100 IDs, 2^-4 wastes 64 KB of fetches where
        // each bit more costs 1.2 MB; following 40,000, a finer grade pays.
        let few = back_after_a_day_of_big_hours(100);
        assert_eq!(
            cheapest_plan(&few, &[], true),
            Plan::Compact { k: 4, from: 0 }
        );
        let mut many = few.clone();
        many.followed = 40_000;
        let plan = cheapest_plan(&many, &[], true);
        assert!(
            matches!(plan, Plan::Compact { k: 6..=10, from: 0 }),
            "{plan:?}"
        );
        // Not where the server does not serve version 2, nor for a verifying client.
        assert_eq!(cheapest_plan(&many, &[], false), Plan::Union);
        many.bloom_only = true;
        assert_eq!(cheapest_plan(&many, &[], true), Plan::Union);
        assert_eq!(
            cheapest_plan(&few, &[], false),
            Plan::Hourly,
            "v1 ribbons, 7 MB"
        );
    }

    #[test]
    fn a_registered_caller_back_after_a_day_takes_the_closed_hours_as_one_exact_body() {
        // 24 hours of 400,000 changed IDs of a universe of 4M: each hour's exact body is
        // about 240 KB (4M * H(0.1) bits); following 40,000 IDs, version 2 of the 9.6M
        // keys costs 8 MB at 2^-7 or wastes fetches, the day's exact body neither.
        let mut back = back_after_a_day_of_big_hours(40_000);
        back.registered = true;
        let exact: Vec<_> = (0..24).map(|_| Some(240_000)).chain([None]).collect();
        assert_eq!(cheapest_plan(&back, &exact, true), Plan::Exact { from: 0 });
        // Not for a caller that did not declare its IDs registered, nor a verifying one,
        // nor when an hour of the range has no exact body (before exact_since).
        let mut unregistered = back.clone();
        unregistered.registered = false;
        assert!(matches!(
            cheapest_plan(&unregistered, &exact, true),
            Plan::Compact { .. }
        ));
        let mut verifying = back.clone();
        verifying.bloom_only = true;
        assert_ne!(
            cheapest_plan(&verifying, &exact, true),
            Plan::Exact { from: 0 }
        );
        // (Its other 23 hours' exact bodies and a ribbon of the one without come to 6.7
        // MB, below version 2 at 2^-7: hour by hour.)
        let mut partly = exact.clone();
        partly[3] = None;
        assert_eq!(cheapest_plan(&back, &partly, true), Plan::Hourly);
        // Exact bodies dearer than version 2 and its wasted fetches are not read.
        let dear: Vec<_> = (0..24).map(|_| Some(4_000_000)).chain([None]).collect();
        assert!(matches!(
            cheapest_plan(&back, &dear, true),
            Plan::Compact { .. }
        ));
    }

    #[test]
    fn a_range_in_which_most_of_the_universe_changed_is_weighed_by_its_floor() {
        // 24 hours of 400,000 of a universe of 11M: each hour's body about 320 KB, 7.7 MB
        // summed, more than version 2 at 2^-4 for 100 IDs (4.8 MB); the day's 9.6M of 11M
        // take at most 1.15 x 11M bits (1.6 MB). The universe comes from an hour's body.
        let hour_bytes = (1.08 * floor_bits(11_000_000, 400_000) / 8.0) as u64;
        let n = universe_at_most(400_000, hour_bytes).unwrap();
        assert!((11_000_000..16_000_000).contains(&n), "{n}");
        let mut hours: Vec<_> = (0..24).map(|_| hour(400_000, false, false)).collect();
        hours.push(hour(0, false, true));
        let mut back = inputs(hours, 100);
        back.capacity = 400_000;
        back.ribbon2 = true;
        back.registered = true;
        let exact: Vec<_> = (0..24).map(|_| Some(hour_bytes)).chain([None]).collect();
        assert!(matches!(
            cheapest_plan(&back, &exact, true),
            Plan::Compact { k: 4, .. }
        ));
        back.universe = Some(n);
        assert_eq!(cheapest_plan(&back, &exact, true), Plan::Exact { from: 0 });
        // The bound holds N below what a body that small can tell.
        assert!(floor_bits(n + 1, 400_000) > 8.0 * hour_bytes as f64);
        assert_eq!(universe_at_most(0, 100), None);
    }

    #[test]
    fn the_version_2_union_starts_after_the_last_hour_held() {
        // A poller holding the first 20 of 30 hours of 50,000: only the last 10 (and the
        // open hour) are to be read.
        let mut hours: Vec<_> = (0..30).map(|i| hour(50_000, i < 20, false)).collect();
        hours.push(hour(1_000, false, true));
        let mut back = inputs(hours, 100);
        back.capacity = 50_000;
        back.ribbon2 = true;
        assert!(matches!(
            cheapest_plan(&back, &[], true),
            Plan::Compact { from: 20, .. }
        ));
        assert!(matches!(
            compact_plan(&back),
            Some(Plan::Compact { from: 20, .. })
        ));
    }

    #[test]
    fn a_regular_poller_holding_past_hours_goes_hourly_even_with_version_2() {
        let mut hours: Vec<_> = (0..23).map(|_| hour(280, true, false)).collect();
        hours.push(hour(280, true, true));
        let mut inputs = inputs(hours, 3);
        inputs.ribbon2 = true;
        assert_eq!(cheapest_plan(&inputs, &[], true), Plan::Hourly);
        assert_eq!(compact_plan(&inputs), None, "every closed hour held");
    }

    #[test]
    fn a_regular_poller_holding_past_hours_goes_hourly() {
        let mut hours: Vec<_> = (0..23).map(|_| hour(280, true, false)).collect();
        hours.push(hour(280, true, true));
        assert!(hourly_is_cheaper(&inputs(hours, 3)));
    }

    #[test]
    fn a_client_that_missed_many_small_hours_takes_the_union() {
        let mut hours: Vec<_> = (0..47).map(|_| hour(5, false, false)).collect();
        hours.push(hour(5, false, true));
        assert!(!hourly_is_cheaper(&inputs(hours, 1)));
    }

    #[test]
    fn an_open_hour_not_held_is_cheaper_as_a_union_sized_for_its_count() {
        // The open hour's own filter is sized for capacity (3000); a union, for 100.
        assert!(!hourly_is_cheaper(&inputs(vec![hour(100, false, true)], 1)));
    }

    #[test]
    fn an_open_hour_held_unchanged_costs_a_revalidation() {
        let mut open = hour(100, false, true);
        open.cached_count = Some(100);
        assert!(hourly_is_cheaper(&inputs(vec![open], 1)));
    }

    #[test]
    fn many_ids_followed_over_a_missed_day_read_precise_hours_not_the_union() {
        // 45,754 IDs against a union at 0.01 waste 457 fetches (4.7 MB); 24 ribbons at
        // 2^-23 cost about 22 KB and waste almost nothing.
        let mut hours: Vec<_> = (0..23).map(|_| hour(280, false, false)).collect();
        hours.push(hour(0, true, true));
        assert!(hourly_is_cheaper(&inputs(hours.clone(), 45_754)));
        // Held at 0.01 already, the hours are still worth fetching again precisely.
        let held: Vec<_> = (0..23).map(|_| hour(280, true, false)).collect();
        assert!(hourly_is_cheaper(&inputs(held, 45_754)));
    }

    #[test]
    fn a_verifying_client_reading_v1_hours_pays_their_false_positives() {
        // v1 hours at 0.01 each waste 24 times what one union at 0.01 does.
        let hours: Vec<_> = (0..24).map(|_| hour(280, false, false)).collect();
        let mut verifying = inputs(hours, 45_754);
        verifying.bloom_only = true;
        assert!(!hourly_is_cheaper(&verifying));
    }

    #[test]
    fn the_payload_estimate_matches_the_sizing_formula() {
        // n = 3000, p = 0.01 gives m = 28,837 bits: 3604.6 bytes.
        assert!((payload(3000, 0.01) - 28_837.0 / 8.0).abs() < 1.0);
    }

    #[test]
    fn exact_hours_of_a_large_following_read_hourly_and_waste_nothing() {
        // 2,000 IDs over a missed day of 20-ID hours: the union at 0.01 wastes 20 fetches
        // (200 KB); 23 exact bodies of about 150 bytes waste none.
        let mut hours: Vec<_> = (0..23).map(|_| hour(20, false, false)).collect();
        hours.push(hour(0, true, true));
        let exact: Vec<_> = (0..23).map(|_| Some(150)).chain([None]).collect();
        let mut verifying = inputs(hours, 2_000);
        verifying.bloom_only = true;
        assert_eq!(cheapest_plan(&verifying, &exact, true), Plan::Hourly);
        // Exact bodies larger than the v1 filter's sum leave the choice as it was.
        let dear: Vec<_> = (0..24).map(|_| Some(1 << 30)).collect();
        assert_eq!(
            cheapest_plan(&verifying, &dear, true) == Plan::Hourly,
            hourly_is_cheaper(&verifying)
        );
    }
}
