// The exact plan of a client made with `registered: true` (the Rust SDK's `Plan::Exact {
// from }`, PROTOCOL.md section 14, "Ranges"): back after the hours it missed, it reads
// their sealed hours as one exact body (`/since/YYYY/MM/DD/HH.exact`) and the open hour on
// its own, answering exactly: every followed ID that changed, none that did not. Against
// a real `bloomcast serve` whose publisher registered a universe of 10,000 IDs before four
// sealed hours H0..H3 of 2,000 of them each; behind a proxy playing a server without exact
// ranges (404, 406), the hours are read one by one, each its exact body alone. Skipped
// without the binary, unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, cheapestPlan, hourPath } from "../bloomcast.js";
import { binary, skipUnless, NO_BINARY } from "../support/server.js";
import { startHistory } from "../support/history.js";
import { startProxy, jsonReply } from "../support/proxy.js";

const skip = skipUnless(binary(), NO_BINARY);
const UNIVERSE = Array.from({ length: 10_000 }, (_, i) => `u:${i}`);
/** Hour h publishes u:2500h .. u:2500h+1999; u:2500h+2000 .. u:2500h+2499 never change. */
const BATCHES = [0, 1, 2, 3].map((h) => UNIVERSE.slice(2500 * h, 2500 * h + 2000));
/** Registered IDs that changed in no sealed hour, then in the open hour (an ID outside the
 * universe is answered arbitrarily by an exact body: not the caller's declaration). */
const OPEN_IDS = ["u:9700", "u:9701"];
/** Three IDs of each sealed hour, two registered IDs of each that never changed, the open hour's. */
const CHANGED = BATCHES.flatMap((ids) => [ids[0], ids[999], ids[1999]]);
const UNCHANGED = [0, 1, 2, 3].flatMap((h) => [`u:${2500 * h + 2000}`, `u:${2500 * h + 2499}`]);
const FOLLOWED = [...CHANGED, ...UNCHANGED, ...OPEN_IDS];
const SINCE_EXACT = /^\/since\/\d{4}\/\d{2}\/\d{2}\/\d{2}\.exact$/;

let history;
let H;
let OPEN;

before(async () => {
  if (skip) return;
  history = await startHistory(BATCHES, OPEN_IDS, { universe: UNIVERSE });
  H = history.sealed;
  OPEN = history.open;
});

after(async () => {
  await history?.stop();
});

/** A client of `base` (`options` as `Client`'s) that lists the path of each request it makes in `seen`. */
function recording(base, options = {}) {
  const seen = [];
  const fetchImpl = (url, init) => {
    seen.push(String(url).slice(base.length));
    return fetch(url, init);
  };
  return { client: new Client(base, { ...options, fetch: fetchImpl }), seen };
}

/** The changed IDs of the sealed hours from `H[first]` on. */
const changedFrom = (first) => CHANGED.filter((id) => BATCHES.slice(first).some((ids) => ids.includes(id)));

test('"auto" for registered IDs reads the sealed hours as one exact body and answers exactly', { skip }, async () => {
  const { client, seen } = recording(history.server.base, { registered: true });
  const changes = await client.changedSince(FOLLOWED, H[0], { strategy: "auto" });

  assert.deepEqual(seen, ["/", `/since${hourPath(H[0])}.exact`, hourPath(OPEN)]);
  // One range for H0..H3: exactly the IDs that changed in them, none of the others.
  assert.deepEqual(changes[0], { from: H[0], to: H[3], ids: changedFrom(0), exact: true });
  assert.deepEqual([changes.at(-1).from, changes.at(-1).to], [OPEN, OPEN]);
  assert.ok(OPEN_IDS.every((id) => changes.at(-1).ids.includes(id)), JSON.stringify(changes.at(-1)));
  assert.equal(changes.length, 2);
  assert.deepEqual([changes.from, changes.to], [H[0], OPEN]);

  // What the planner weighed: the index's counts and exact sizes. One exact body of the
  // range is at most the sum of its hours' (here much less: 8,000 of 10,000 changed).
  const index = await client.index();
  assert.equal(index.exact_since, H[0]);
  const listed = new Map(index.hours.map((h) => [h.hour, h]));
  const hours = H.map((hour) => ({ count: listed.get(hour).count, open: false, exact: listed.get(hour).exact_bytes }));
  assert.ok(hours.every((h) => Number.isInteger(h.exact)), JSON.stringify(index.hours));
  hours.push({ count: listed.get(OPEN).count, open: true });
  const options = { targetFpp: index.target_fpp, capacity: index.capacity, followed: FOLLOWED.length, ribbon2: true };
  const plan = cheapestPlan(hours, { ...options, registered: true });
  assert.deepEqual([plan.plan, plan.from], ["exact", 0], JSON.stringify(plan));
  const range = await client.sinceExact(H[0]);
  assert.deepEqual([range.from, range.to, range.exact.universe, range.exact.changedCount], [H[0], H[3], 10_000, 8000]);
  assert.ok(range.exact.size < hours.slice(0, 4).reduce((sum, h) => sum + h.exact, 0), `${range.exact.size}`);
  // Not registered, the same hours are read otherwise.
  assert.notEqual(cheapestPlan(hours, options).plan, "exact");
});

test("after the first hours held, the exact body starts at the first hour not held", { skip }, async () => {
  const { client, seen } = recording(history.server.base, { registered: true });
  // Held: H0 and H1's exact bodies, answered from alone for registered IDs.
  await client.exact(H[0]);
  await client.exact(H[1]);
  seen.length = 0;
  const changes = await client.changedSince(FOLLOWED, H[0], { strategy: "auto" });

  assert.deepEqual(seen, ["/", `/since${hourPath(H[2])}.exact`, hourPath(OPEN)]);
  const byHour = (h) => ({ from: H[h], to: H[h], ids: changedFrom(h).filter((id) => BATCHES[h].includes(id)), exact: true });
  assert.deepEqual(changes.slice(0, 3), [byHour(0), byHour(1), { from: H[2], to: H[3], ids: changedFrom(2), exact: true }]);
  assert.deepEqual([changes.from, changes.to], [H[0], OPEN]);
});

test("a server without exact ranges (404, 406) is read hour by hour, each hour's exact body alone", { skip }, async () => {
  for (const status of [404, 406]) {
    const proxy = await startProxy(history.server.base, async (path) =>
      SINCE_EXACT.test(path) ? jsonReply({ error: status === 404 ? "not_found" : "not_acceptable", message: "no exact ranges here" }, status) : null,
    );
    try {
      const { client, seen } = recording(proxy.base, { registered: true });
      const changes = await client.changedSince(FOLLOWED, H[0], { strategy: "auto" });

      const exacts = H.map((hour) => `${hourPath(hour)}.exact`);
      assert.deepEqual(seen, ["/", `/since${hourPath(H[0])}.exact`, ...exacts, hourPath(OPEN)], `${status}`);
      const hourly = H.map((hour, h) => ({ from: hour, to: hour, ids: BATCHES[h].filter((id) => CHANGED.includes(id)), exact: true }));
      assert.deepEqual(changes.slice(0, 4), hourly, `${status}`);
      assert.deepEqual([changes.at(-1).from, changes.length, changes.from, changes.to], [OPEN, 5, H[0], OPEN]);
    } finally {
      await proxy.close();
    }
  }
});

test("a client not declaring its IDs registered, or verifying, never reads an exact range", { skip }, async () => {
  const base = history.server.base;
  const pubkey = (await (await fetch(`${base}/.well-known/bloomcast.json`)).json()).public_key;
  for (const options of [{}, { pubkey, registered: true }]) {
    const { client, seen } = recording(base, options);
    const changes = await client.changedSince(FOLLOWED, H[0], { strategy: "auto" });
    assert.ok(!seen.some((path) => SINCE_EXACT.test(path)), `${JSON.stringify(options)}: ${seen.join(" ")}`);
    // No false negative either way.
    const found = new Set(changes.flatMap((c) => c.ids));
    assert.deepEqual(CHANGED.filter((id) => !found.has(id)), [], JSON.stringify(options));
  }
});
