// A client back after 30 missed hours, as the Rust SDK's test
// `a_client_back_after_many_hours_takes_the_version_2_union_on_its_own`: a real `bloomcast
// serve` (capacity 2,000) with 30 sealed hours of 2,000 IDs each and a few IDs in the open
// hour, a client following 20 of those IDs with strategy "auto". One v1 union of 60,000
// IDs at 1% costs about 75 KB, hour by hour 30 requests; the closed hours as one version
// 2 union at the precision that suits 20 IDs, and the open hour, cost least: the index,
// `/since/...ribbon2`, the open hour, and every followed ID found. Skipped without the
// binary, unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, cheapestPlan, hourPath } from "../bloomcast.js";
import { binary, skipUnless, NO_BINARY } from "../support/server.js";
import { startHistory } from "../support/history.js";

const skip = skipUnless(binary(), NO_BINARY);
const HOURS = 30;
const BATCHES = Array.from({ length: HOURS }, (_, h) => Array.from({ length: 2000 }, (_, i) => `m${h}:${i}`));
const OPEN_IDS = ["back:0", "back:1", "back:2"];
/** 17 IDs of the closed hours, the first and the last among them, and the open hour's 3. */
const FOLLOWED = [...Array.from({ length: 17 }, (_, j) => BATCHES[Math.round((j * (HOURS - 1)) / 16)][7 + j]), ...OPEN_IDS];

let history;

before(async () => {
  if (skip) return;
  history = await startHistory(BATCHES, OPEN_IDS, { env: { BLOOMCAST_CAPACITY: "2000" } });
});

after(async () => {
  await history?.stop();
});

test('"auto" takes the closed hours as one version 2 union and the open hour for a client back after 30 hours', { skip }, async () => {
  const base = history.server.base;
  const [first] = history.sealed;
  const last = history.sealed[HOURS - 1];
  const seen = [];
  const client = new Client(base, {
    fetch: (url, init) => {
      seen.push(String(url).slice(base.length));
      return fetch(url, init);
    },
  });

  const changes = await client.changedSince(FOLLOWED, first, { strategy: "auto" });

  assert.equal(client.stats.requests, 3, `the index, the union, the open hour: ${seen.join(" ")}`);
  assert.equal(new URL(seen[1], "http://x").pathname, `/since${hourPath(first)}.ribbon2`);
  assert.equal(seen[2], hourPath(history.open));
  const found = new Set(changes.flatMap((c) => c.ids));
  const missed = FOLLOWED.filter((id) => !found.has(id));
  assert.deepEqual(missed, [], "false negatives");
  assert.deepEqual([changes[0].from, changes[0].to], [first, last]);
  assert.deepEqual([changes.at(-1).from, changes.at(-1).to], [history.open, history.open]);
  assert.ok(OPEN_IDS.every((id) => changes.at(-1).ids.includes(id)));
  assert.deepEqual([changes.from, changes.to], [first, history.open]);

  // What the planner weighed: the index lists the newest 24 hours; the 6 before are
  // taken at the capacity, 2,000, which they hold.
  const index = await client.index();
  assert.equal(index.capacity, 2000);
  const hours = history.sealed.map(() => ({ count: 2000, open: false }));
  hours.push({ count: OPEN_IDS.length, open: true });
  const plan = cheapestPlan(hours, { targetFpp: index.target_fpp, capacity: 2000, followed: FOLLOWED.length, ribbon2: true });
  assert.equal(plan.plan, "compact");
  assert.ok(plan.compact < plan.union && plan.union < plan.hourly, JSON.stringify(plan));
  assert.equal(Number(new URL(seen[1], "http://x").searchParams.get("fpp")), 2 ** -plan.k);
});
