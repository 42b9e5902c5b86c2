// The planner of `changedSince`'s "auto" strategy (`cheapestPlan`, the Rust SDK's
// `cheapest_plan`): hour by hour, one v1 union, or the closed hours as one version 2
// union beside the open hour ("compact"), or, for registered IDs, as one exact body
// ("exact"), by expected bytes; and the body size it
// predicts for version 2 (`ribbon2PredictedBytes`, Rust's `Ribbon2::predicted_bytes`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { cheapestForm, cheapestPlan, expectedFpp, floorBits, ribbon2PredictedBytes, sizedParams, universeAtMost } from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/ribbon2-vectors.json", import.meta.url), "utf8"));
const FETCH = 10 * 1024;

/** A day of 400,000 IDs an hour missed, and 2,000 in the open hour (capacity 400,000). */
function bigDay() {
  const hours = Array.from({ length: 24 }, () => ({ count: 400_000, open: false }));
  hours.push({ count: 2_000, open: true });
  return hours;
}
const bigOptions = { targetFpp: 0.01, capacity: 400_000, fetchCost: FETCH, ribbon2: true };

test("a client back after a day of big hours, following 100 IDs, takes the closed hours in version 2", () => {
  const plan = cheapestPlan(bigDay(), { ...bigOptions, followed: 100 });
  assert.equal(plan.plan, "compact", JSON.stringify(plan));
  // 9.6M keys: each bit more costs about 1.2 MB, its wasted fetches save 100 x 2^-k x
  // 10 KiB (64,000 bytes at k = 4): the coarsest grade. Nothing held: from the first hour.
  assert.deepEqual([plan.k, plan.from], [4, 0]);
  // The v1 union at 1% is 11.5 MB.
  assert.ok(Math.abs(plan.union - (sizedParams(9_602_000, 0.01).m / 8 + 400 + 100 * 0.01 * FETCH)) < 1);
  assert.ok(plan.union > 11.4e6 && plan.union < 11.7e6, `${plan.union}`);
  assert.ok(plan.compact < plan.hourly && plan.compact < plan.union, JSON.stringify(plan));
  // The compact cost: the version 2 body at 2^-4, its wasted fetches and a response, and
  // the open hour as hour by hour counts it (the hourly plan's cost of the closed hours
  // taken away: 24 equal hours).
  const closed = ribbon2PredictedBytes(9_600_000, 4, 0) + 100 * 2 ** -4 * FETCH + 400;
  const oneHour = cheapestPlan([{ count: 400_000, open: false }], { ...bigOptions, followed: 100 }).hourly;
  assert.ok(Math.abs(plan.compact - closed - (plan.hourly - 24 * oneHour)) < 1e-3, JSON.stringify(plan));

  // Not without version 2 (hour by hour in version 1 ribbons is then cheapest, 7.2 MB),
  // nor for a verifying client (v1 Bloom filters only: the union).
  const v1 = cheapestPlan(bigDay(), { ...bigOptions, followed: 100, ribbon2: false });
  assert.deepEqual([v1.plan, v1.k, v1.from, v1.compact], ["hourly", null, null, null]);
  const verifying = cheapestPlan(bigDay(), { ...bigOptions, followed: 100, bloomOnly: true });
  assert.deepEqual([verifying.plan, verifying.k, verifying.from, verifying.compact], ["union", null, null, null]);
});

test("a large following over the same day reads version 2 at 6 to 10 bits; without it, the union", () => {
  // 40,000 IDs at 10 KiB: a bit more saves 40,000 x 10 KiB x 2^-k x ln 2, 1.2 MB at k = 8.
  const plan = cheapestPlan(bigDay(), { ...bigOptions, followed: 40_000 });
  assert.equal(plan.plan, "compact", JSON.stringify(plan));
  assert.ok(plan.k >= 6 && plan.k <= 10, `k = ${plan.k}`);
  assert.equal(plan.from, 0);
  for (const options of [{ ribbon2: false }, { bloomOnly: true }]) {
    const other = cheapestPlan(bigDay(), { ...bigOptions, followed: 40_000, ...options });
    assert.equal(other.plan, "union", `${JSON.stringify(options)}: ${JSON.stringify(other)}`);
  }
});

test("a regular poller holding its past hours goes hour by hour even with version 2: no compact plan", () => {
  // As Rust's `a_regular_poller_holding_past_hours_goes_hourly_even_with_version_2`.
  const polled = (n) => {
    const hours = Array.from({ length: n }, () => ({ count: 280, open: false, heldFpp: 0.01 }));
    hours.push({ count: 280, open: true, cachedCount: 280 });
    return hours;
  };
  for (const n of [1, 2, 3, 6, 23]) {
    const plan = cheapestPlan(polled(n), { followed: 3, ribbon2: true });
    // Every closed hour held: the version 2 union would start at the open hour, which it
    // never covers.
    assert.deepEqual([plan.plan, plan.k, plan.from, plan.compact], ["hourly", null, null, null], `${n} hours: ${JSON.stringify(plan)}`);
  }
  // Held hours cost their wasted fetches only (3 x 1% x 10 KiB each), the open hour held
  // unchanged a 304 and its own.
  const day = cheapestPlan(polled(23), { followed: 3, ribbon2: true });
  assert.ok(Math.abs(day.hourly - (23 * 3 * 0.01 * FETCH + 250 + 3 * expectedOpenFpp(280) * FETCH)) < 1e-6, JSON.stringify(day));
  // Not held, the same hours are cheapest as one v1 union (the open hour alone is a filter
  // sized for the capacity, 3,000), and a compact plan from the first hour is weighed.
  const fresh = cheapestPlan(
    polled(23).map(({ count, open }) => ({ count, open })),
    { followed: 3, ribbon2: true },
  );
  assert.equal(fresh.plan, "union", JSON.stringify(fresh));
  assert.equal(fresh.from, 0);
  const openAlone = cheapestPlan([{ count: 280, open: true }], { followed: 3 }).hourly;
  assert.ok(Math.abs(fresh.compact - (ribbon2PredictedBytes(23 * 280, fresh.k, 0) + 3 * 2 ** -fresh.k * FETCH + 400 + openAlone)) < 1e-6, JSON.stringify(fresh));
});

test("the version 2 union starts after the last closed hour held", () => {
  // As Rust's `the_version_2_union_starts_after_the_last_hour_held`: a poller holding the
  // first 20 of 30 hours of 50,000 IDs reads only the last 10 (and the open hour).
  const hours = Array.from({ length: 30 }, (_, i) => ({ count: 50_000, open: false, heldFpp: i < 20 ? 0.01 : null }));
  hours.push({ count: 1_000, open: true });
  const options = { targetFpp: 0.01, capacity: 50_000, followed: 100, fetchCost: FETCH, ribbon2: true };
  const plan = cheapestPlan(hours, options);
  assert.deepEqual([plan.plan, plan.from], ["compact", 20], JSON.stringify(plan));
  // Its cost: the held hours as hour by hour counts them (each its wasted fetches, 100 x
  // 1% x 10 KiB, less than fetching 50,000 IDs again), the version 2 union of the other
  // 10 hours' 500,000 IDs, and the open hour.
  const open = cheapestPlan([hours[30]], options).hourly;
  const union = ribbon2PredictedBytes(500_000, plan.k, 0) + 100 * 2 ** -plan.k * FETCH + 400;
  assert.ok(Math.abs(plan.compact - (20 * 100 * 0.01 * FETCH + union + open)) < 1e-6, JSON.stringify(plan));
  // Counted from the first hour, the union would cost more than this one.
  const unheld = cheapestPlan(hours.map(({ count, open }) => ({ count, open })), options);
  assert.deepEqual([unheld.plan, unheld.from], ["compact", 0]);
  assert.ok(plan.compact < unheld.compact, `${plan.compact} < ${unheld.compact}`);

  // Hours held with gaps: the union starts after the last one held; the hours before it
  // not held are counted as hour by hour reads them.
  const gaps = hours.map((h, i) => (h.open ? h : { ...h, heldFpp: i === 3 || i === 25 ? 0.01 : null }));
  const after = cheapestPlan(gaps, options);
  assert.equal(after.from, 26, JSON.stringify(after));
  const one = cheapestPlan([{ count: 50_000, open: false }], options).hourly;
  const four = ribbon2PredictedBytes(4 * 50_000, after.k, 0) + 100 * 2 ** -after.k * FETCH + 400;
  assert.ok(Math.abs(after.compact - (24 * one + 2 * 100 * 0.01 * FETCH + four + open)) < 1e-6, JSON.stringify(after));
  // Every closed hour held but the open hour: no compact plan.
  const all = hours.map((h) => (h.open ? h : { ...h, heldFpp: 0.01 }));
  assert.deepEqual([cheapestPlan(all, options).from, cheapestPlan(all, options).compact], [null, null]);
});

test("a registered caller back after a day of big hours takes the closed hours as one exact body", () => {
  // As Rust's `a_registered_caller_back_after_a_day_takes_the_closed_hours_as_one_exact_body`:
  // 24 hours of 400,000 changed IDs of a universe of 4M, each hour's exact body about 240 KB
  // (4M x H(0.1) bits); following 40,000 IDs, version 2 of the 9.6M keys is dearer or
  // wastes fetches, the day's exact body neither (at most the sum of its hours').
  const day = (exact) => bigDay().map((h, i) => (h.open ? h : { ...h, exact: exact(i) }));
  const options = { ...bigOptions, followed: 40_000, registered: true };
  const back = cheapestPlan(day(() => 240_000), options);
  assert.deepEqual([back.plan, back.from], ["exact", 0], JSON.stringify(back));
  // Its cost: the hours' exact bodies, one response, and the open hour as hour by hour
  // counts it. Hour by hour reads the same bodies, a response each.
  const open = cheapestPlan([bigDay()[24]], options).hourly;
  assert.ok(Math.abs(back.exact - (24 * 240_000 + 400 + open)) < 1e-6, JSON.stringify(back));
  assert.ok(Math.abs(back.hourly - (24 * (240_000 + 400) + open)) < 1e-6, JSON.stringify(back));
  assert.ok(back.exact < back.compact && back.exact < back.union, JSON.stringify(back));
  // Weighed without version 2 too: the exact range needs no ribbon.
  assert.equal(cheapestPlan(day(() => 240_000), { ...options, ribbon2: false }).plan, "exact");

  // Not for a caller that did not declare its IDs registered, nor a verifying one, nor a
  // static mirror (no unions), nor when an hour of the range has no exact body (before
  // exact_since).
  const unregistered = cheapestPlan(day(() => 240_000), { ...options, registered: false });
  assert.deepEqual([unregistered.plan, unregistered.exact], ["compact", null], JSON.stringify(unregistered));
  for (const other of [{ bloomOnly: true }, { mirror: true }]) {
    const plan = cheapestPlan(day(() => 240_000), { ...options, ...other });
    assert.deepEqual([plan.plan, plan.exact], ["hourly", null], `${JSON.stringify(other)}: ${JSON.stringify(plan)}`);
  }
  const partly = cheapestPlan(day((i) => (i === 3 ? undefined : 240_000)), options);
  assert.equal(partly.exact, null, JSON.stringify(partly));
  assert.notEqual(partly.plan, "exact");
  // Exact bodies dearer than version 2 and its wasted fetches are not read.
  const dear = cheapestPlan(day(() => 4_000_000), options);
  assert.equal(dear.plan, "compact", JSON.stringify(dear));
  assert.ok(dear.exact > dear.compact, JSON.stringify(dear));
  // Sizes the index does not list are the v1 body's predicted bytes, as `cheapestForm`'s.
  const unlisted = cheapestPlan(day(() => true), options);
  const v1 = cheapestForm(400_000, 0.01, 0, FETCH, { ribbons: false }).bytes;
  assert.ok(Math.abs(unlisted.exact - (24 * v1 + 400 + open)) < 1e-6, JSON.stringify(unlisted));

  // Held hours: the exact body starts after the last one held, those before it counted as
  // hour by hour counts them; every closed hour held, no exact plan.
  const held = day(() => 240_000).map((h, i) => (i < 20 ? { ...h, heldFpp: 0.01 } : h));
  const after = cheapestPlan(held, options);
  assert.deepEqual([after.plan, after.from], ["exact", 20], JSON.stringify(after));
  // (A held hour costs its wasted fetches, 40,000 x 1% x 10 KiB, or fetching its exact
  // body again if less.)
  const heldHour = Math.min(40_000 * 0.01 * FETCH, 240_000 + 400);
  assert.ok(Math.abs(after.exact - (20 * heldHour + 4 * 240_000 + 400 + open)) < 1e-6, JSON.stringify(after));
  const all = cheapestPlan(day(() => 240_000).map((h) => (h.open ? h : { ...h, heldFpp: 0.01 })), options);
  assert.deepEqual([all.plan, all.from, all.exact], ["hourly", null, null], JSON.stringify(all));
});

test("a range in which most of the universe changed is weighed by its floor", () => {
  // As Rust's `a_range_in_which_most_of_the_universe_changed_is_weighed_by_its_floor`: 24
  // hours of 400,000 of a universe of 11M, each hour's body about 320 KB, 7.7 MB summed,
  // more than version 2 at 2^-4 for 100 IDs (4.8 MB); the day's 9.6M of 11M take at most
  // 1.15 x 11M bits (1.6 MB). The universe comes from an hour's body.
  const hourBytes = Math.floor((1.08 * floorBits(11_000_000, 400_000)) / 8);
  const n = universeAtMost(400_000, hourBytes);
  assert.ok(n >= 11_000_000 && n < 16_000_000, `${n}`);
  const hours = Array.from({ length: 24 }, () => ({ count: 400_000, open: false, exact: hourBytes }));
  hours.push({ count: 0, open: true });
  const options = { targetFpp: 0.01, capacity: 400_000, followed: 100, fetchCost: FETCH, ribbon2: true, registered: true };
  const without = cheapestPlan(hours, options);
  assert.deepEqual([without.plan, without.k], ["compact", 4], JSON.stringify(without));
  // (Without the bound, the exact plan is the hours' bodies summed.)
  const open = cheapestPlan([hours[24]], options).hourly;
  assert.ok(Math.abs(without.exact - (24 * hourBytes + 400 + open)) < 1e-6, JSON.stringify(without));
  const bounded = cheapestPlan(hours, { ...options, universe: n });
  assert.deepEqual([bounded.plan, bounded.from], ["exact", 0], JSON.stringify(bounded));
  // Its body: 1.15 x the floor of the 9.6M changed in N (taken at N/2 where 9.6M is more),
  // and its longest header.
  const body = (1.15 * floorBits(n, Math.min(9_600_000, Math.floor(n / 2)))) / 8 + 47;
  assert.ok(body < 24 * hourBytes, `${body}`);
  assert.ok(Math.abs(bounded.exact - (body + 400 + open)) < 1e-6, JSON.stringify(bounded));
  // A null universe is no bound.
  assert.equal(cheapestPlan(hours, { ...options, universe: null }).exact, without.exact);
  // The bound holds N below what a body that small can tell.
  assert.ok(floorBits(n + 1, 400_000) > 8 * hourBytes);
  assert.equal(universeAtMost(0, 100), null);
});

/** The fpp of an open hour of `count` IDs in a filter sized for 3,000 at 1% (section 3). */
function expectedOpenFpp(count) {
  const { m, k } = sizedParams(3000, 0.01);
  return Math.min(0.01, expectedFpp(m, k, count));
}

test("compact is weighed only with a closed hour, version 2, and a source serving unions", () => {
  const open = [{ count: 10, open: true }];
  const alone = cheapestPlan(open, { followed: 5, ribbon2: true });
  assert.deepEqual([alone.k, alone.from, alone.compact], [null, null, null]);
  const day = bigDay();
  // A static mirror serves no unions of either kind.
  assert.equal(cheapestPlan(day, { ...bigOptions, followed: 100, mirror: true }).plan, "hourly");
  // Hours the index does not list are taken at the capacity.
  const unlisted = day.map((h) => (h.open ? h : { open: false }));
  assert.deepEqual(cheapestPlan(unlisted, { ...bigOptions, followed: 100 }), cheapestPlan(day, { ...bigOptions, followed: 100 }));
  const smaller = cheapestPlan(unlisted, { ...bigOptions, capacity: 100_000, followed: 100 });
  assert.ok(smaller.union < cheapestPlan(day, { ...bigOptions, followed: 100 }).union);
});

test("ties go to hour by hour", () => {
  // The open hour alone, at the capacity, nothing followed: read on its own or as the
  // union from it, the same filter in one response.
  const plan = cheapestPlan([{ count: 3000, open: true }], { capacity: 3000, followed: 0, ribbon2: true });
  assert.equal(plan.hourly, plan.union);
  assert.deepEqual([plan.plan, plan.compact], ["hourly", null]);
  // Following IDs, the open hour's filter (sized for the capacity, filled to 3,000) is at
  // most the target: hour by hour still.
  assert.equal(cheapestPlan([{ count: 3000, open: true }], { capacity: 3000, followed: 50 }).plan, "hourly");
});

test("the predicted .ribbon2 size is Rust's: header varints, shards, rows, solution bits", () => {
  // No key: magic, k, split, n = 0, sA = 0, sB = 0.
  assert.equal(ribbon2PredictedBytes(0, 7, 0), 9);
  // 100 keys, one dense shard of 100 rows: 9 + 2 header bytes, 700 bits.
  assert.equal(ribbon2PredictedBytes(100, 7, 0), 11 + 88);
  // 3,000 keys: n takes 2 bytes; 3,000 + 15 + 4 = 3,019 rows (2 bytes) and a seed.
  assert.equal(ribbon2PredictedBytes(3000, 7, 0), 6 + 2 + 1 + 1 + 3 + Math.ceil((3019 * 7) / 8));
  // 8,193 keys: three shards of 2,731 keys, 2,731 + 14 + 4 rows each.
  assert.equal(ribbon2PredictedBytes(8193, 5, 0), 6 + 2 + 1 + 1 + 3 * 3 + Math.ceil((3 * 2749 * 5) / 8));
  // Part B of 0 bits: one empty shard.
  assert.equal(ribbon2PredictedBytes(300, 0, 0), 6 + 2 + 1 + 1 + 2);
  // The built bodies of the vectors, within a percent and 2 bytes (as Rust's test).
  for (const f of vectors.filters) {
    const built = f.body.length / 2;
    const predicted = ribbon2PredictedBytes(f.members.count, f.k, f.split);
    assert.ok(Math.abs(built - predicted) <= built / 100 + 2, `${f.members.count} IDs: ${predicted} for ${built}`);
  }
});
