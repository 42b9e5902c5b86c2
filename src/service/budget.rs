//! The one memory budget: `cache_bytes` bounds everything the server keeps beyond the
//! open hour's own keys (which `max_hour_ids` bounds), split here into fixed parts. The
//! split is pure arithmetic, stated once; each part is held where it is used:
//!
//! | part | share | what holds it |
//! |---|---|---|
//! | `builds` | 1/3 | union and compact builds in flight, reserved before they read a key |
//! | `deltas` | 1/8 of the rest, at most `delta_bytes` and a quarter more | the open hour's versions kept as dictionaries, and the `dcz` bodies made from them |
//! | `followers` | at most 1/4, and what `followers` asks (`events_max_subscribers` × [`FOLLOWER_BYTES`]) | the streams of followers (`GET /events`): each is admitted only while the part holds one more |
//! | `kept` | all the rest | the one cache ([`super::kept`]): renderings, open unions, built unions, decoded filters for `/history`, sealed keys |
//!
//! With the defaults (512 MiB, 4,096 followers): builds 170 MiB, deltas 64 MiB, followers
//! 64 MiB, kept 213 MiB. A union build holds about 14 bytes per ID at its peak while
//! the part has room (its keys, filter and rendering at a 1 % target), else about 6
//! (past 64Ki keys its keys wait in a temporary file, and it holds one part of them:
//! `unions::runs`), so the default builds any union of up to about 28M distinct IDs.

use serde::Serialize;

/// What one follower's stream holds at most, counted against the `followers` part: its
/// connection's buffers and task, its place in the feed (the events are shared, made
/// once). Measured at 12.9 KB of RSS each with 10,000 idle ones (docs/BENCHMARKS.md,
/// "Pushed changes").
pub const FOLLOWER_BYTES: u64 = 16 * 1024;

/// The budget's parts, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Split {
    pub total: u64,
    /// Builds in flight.
    pub builds: u64,
    /// The open hour's kept versions and the deltas made from them.
    pub deltas: u64,
    /// Followers' streams, [`FOLLOWER_BYTES`] each.
    pub followers: u64,
    /// The one cache.
    pub kept: u64,
}

impl Split {
    /// The split of `total` bytes, the kept versions of the open hour limited to
    /// `delta_bytes` (and the deltas made from them to a quarter of that:
    /// [`Split::delta_versions`]), and room for `followers` streams (at most a quarter
    /// of the total: [`Split::followers_admitted`]).
    pub fn of(total: u64, delta_bytes: u64, followers: u64) -> Split {
        let builds = total / 3;
        let deltas = (total / 8).min(delta_bytes.saturating_add(delta_bytes / 4));
        let followers = (total / 4).min(followers.saturating_mul(FOLLOWER_BYTES));
        Split {
            total,
            builds,
            deltas,
            followers,
            kept: total - builds - deltas - followers,
        }
    }

    /// Followers' streams the `followers` part holds.
    pub fn followers_admitted(&self) -> u64 {
        self.followers / FOLLOWER_BYTES
    }

    /// Bytes of versions kept as dictionaries: four fifths of the deltas' part (the
    /// deltas made from them are held to a quarter of it).
    pub fn delta_versions(&self) -> u64 {
        self.deltas / 5 * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_budget() {
        for total in [0, 1, 1 << 20, 256 << 20, 3 << 30, 1 << 40] {
            for delta in [0, 64 << 20, u64::MAX / 2] {
                let s = Split::of(total, delta, 1 << 20);
                let sum = s.builds + s.deltas + s.followers + s.kept;
                assert_eq!(sum, total, "{s:?}");
                assert!(s.delta_versions() + s.delta_versions() / 4 <= s.deltas);
            }
        }
    }

    #[test]
    fn the_defaults_split_as_documented() {
        let s = Split::of(512 << 20, 64 << 20, 4096);
        let mib = |b: u64| b >> 20;
        assert_eq!(mib(s.builds), 170);
        assert_eq!(mib(s.deltas), 64);
        assert_eq!(mib(s.followers), 64);
        assert_eq!(s.followers_admitted(), 4096);
        assert_eq!(mib(s.kept), 213);
    }

    #[test]
    fn no_delta_versions_leaves_their_part_to_the_cache() {
        let s = Split::of(256 << 20, 0, 0);
        assert_eq!(s.deltas, 0);
        assert_eq!(s.kept, s.total - s.builds);
    }

    #[test]
    fn followers_take_at_most_a_quarter() {
        let s = Split::of(64 << 20, 0, 1_000_000);
        assert_eq!(s.followers, 16 << 20);
        assert_eq!(s.followers_admitted(), 1024);
        assert_eq!(s.kept, s.total - s.builds - s.followers);
    }
}
