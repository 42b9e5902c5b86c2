// The compact plan of a client that holds some closed hours already (the Rust SDK's
// `Plan::Compact { k, from }`): the version 2 union starts just after the last closed hour
// held complete; the hours before it are read as hour by hour reads them, a held one
// without a request; the open hour on its own. Against a real `bloomcast serve` with four
// sealed hours H0..H3 of 100 IDs each and 20 IDs in the open hour; behind a proxy playing
// a server without version 2 since-ranges, the hours not held are read on their own.
// Skipped without the binary, unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, hourPath } from "../bloomcast.js";
import { binary, skipUnless, NO_BINARY } from "../support/server.js";
import { startHistory } from "../support/history.js";
import { startProxy, jsonReply } from "../support/proxy.js";

const skip = skipUnless(binary(), NO_BINARY);
const BATCHES = [0, 1, 2, 3].map((h) => Array.from({ length: 100 }, (_, i) => `held${h}:${i}`));
const OPEN_IDS = Array.from({ length: 20 }, (_, i) => `open:${i}`);
/** Two IDs of each sealed hour and two of the open hour. */
const FOLLOWED = [...BATCHES.flatMap((ids) => [ids[3], ids[97]]), OPEN_IDS[0], OPEN_IDS[19]];
/** A wasted fetch costs 1 KiB: a held v1 filter at 1% wastes 10 x 1% x 1 KiB, fewer bytes
 * than any form fetched again (a response alone is 400). */
const OPTIONS = { strategy: "compact", fetchCost: 1024 };
const SINCE_RIBBON2 = /^\/since\/\d{4}\/\d{2}\/\d{2}\/\d{2}\.ribbon2(\?|$)/;

let history;
let H;
let OPEN;

before(async () => {
  if (skip) return;
  history = await startHistory(BATCHES, OPEN_IDS);
  H = history.sealed;
  OPEN = history.open;
});

after(async () => {
  await history?.stop();
});

/** A client of `base` that lists the path (and query) of each request it makes in `seen`. */
function recording(base) {
  const seen = [];
  const fetchImpl = (url, init) => {
    seen.push(String(url).slice(base.length));
    return fetch(url, init);
  };
  return { client: new Client(base, { fetch: fetchImpl }), seen };
}

/** Every followed ID is in `changes`, each in the range of its own hour. */
function noneMissed(changes) {
  const hourOf = (id) => (id.startsWith("open:") ? OPEN : H[Number(/^held(\d)/.exec(id)[1])]);
  for (const id of FOLLOWED) {
    const at = Date.parse(hourOf(id));
    const found = changes.some((c) => c.ids.includes(id) && Date.parse(c.from) <= at && at <= Date.parse(c.to));
    assert.ok(found, `${id} (of ${hourOf(id)}) missed: ${JSON.stringify(changes.map(({ from, to, ids }) => [from, to, ids.length]))}`);
  }
}

test('"compact" after the first hours held: the version 2 union starts at the first hour not held', { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  // Held: H0 as its v1 filter, H1 as a version 2 ribbon at 2^-20, each fetched on its own.
  const v1 = await client.hour(H[0]);
  assert.ok(v1.meta.complete);
  await client.ribbon2(H[1], { fpp: 2 ** -20 });
  assert.deepEqual(seen.splice(0), [hourPath(H[0]), `${hourPath(H[1])}.ribbon2?fpp=9.5367431640625e-7`]);
  assert.ok(client.heldHour(H[0]) && client.heldHour(H[1]) && !client.heldHour(H[2]));
  const before = { ...client.stats };

  const changes = await client.changedSince(FOLLOWED, H[0], OPTIONS);

  // The index, the version 2 union from H2 (not H0), the open hour: H0 and H1 answered
  // from what is held, no request.
  assert.equal(seen.length, 3, seen.join(" "));
  assert.equal(seen[0], "/");
  const asked = new URL(seen[1], "http://x");
  assert.equal(asked.pathname, `/since${hourPath(H[2])}.ribbon2`);
  const k = -Math.log2(Number(asked.searchParams.get("fpp")));
  assert.ok(Number.isInteger(k) && k >= 4 && k <= 24, seen[1]);
  assert.equal(seen[2], hourPath(OPEN));
  assert.equal(client.stats.requests - before.requests, 3);
  assert.equal(client.stats.cacheHits - before.cacheHits, 2, "H0 and H1 from what is held");
  assert.ok(!seen.some((path) => path.startsWith(hourPath(H[0])) || path.startsWith(hourPath(H[1]))), seen.join(" "));

  // Ranges in order: H0 and H1 each their own, H2 .. H3 the union's, the open hour its own.
  assert.deepEqual(
    changes.map(({ from, to }) => [from, to]),
    [
      [H[0], H[0]],
      [H[1], H[1]],
      [H[2], H[3]],
      [OPEN, OPEN],
    ],
  );
  assert.deepEqual([changes.from, changes.to, changes.unverified, changes.stale], [H[0], OPEN, null, null]);
  noneMissed(changes);
});

test('"compact" with a gap in the hours held: an hour before the last held is read on its own', { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  await client.hour(H[0]);
  await client.hour(H[2]);
  seen.splice(0);

  const changes = await client.changedSince(FOLLOWED, H[0], OPTIONS);

  // H1, not held, on its own (its cheapest form); the union from H3, the last closed hour.
  assert.equal(seen.length, 4, seen.join(" "));
  assert.equal(new URL(seen[1], "http://x").pathname, `/since${hourPath(H[3])}.ribbon2`);
  assert.ok(seen[2].startsWith(hourPath(H[1])), seen[2]);
  assert.equal(seen[3], hourPath(OPEN));
  assert.ok(!seen.some((path) => path.startsWith(hourPath(H[0])) || path.startsWith(hourPath(H[2]))), seen.join(" "));
  assert.deepEqual(
    changes.map(({ from, to }) => [from, to]),
    [
      [H[0], H[0]],
      [H[1], H[1]],
      [H[2], H[2]],
      [H[3], H[3]],
      [OPEN, OPEN],
    ],
  );
  noneMissed(changes);
});

test("every closed hour held: no compact plan, the v1 union when forced, hour by hour for auto", { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  for (const hour of H) await client.hour(hour);
  await client.hour(OPEN);
  seen.splice(0);

  // Forced "compact" has no closed hour to read as version 2: the v1 union.
  const forced = await client.changedSince(FOLLOWED, H[0], OPTIONS);
  assert.deepEqual(seen.splice(0), ["/", `/since${hourPath(H[0])}`]);
  noneMissed(forced);

  // "auto": the hours held answer, the open hour revalidated (a 304).
  const notModified = client.stats.notModified;
  const auto = await client.changedSince(FOLLOWED, H[0], { ...OPTIONS, strategy: "auto" });
  assert.deepEqual(seen.splice(0), ["/", hourPath(OPEN)]);
  assert.equal(client.stats.notModified, notModified + 1);
  assert.equal(auto.length, 5);
  noneMissed(auto);
});

test("hour by hour reuses a held hour only while its wasted fetches cost no more than fetching", { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  await client.hour(H[0]);
  seen.splice(0);
  // 10 IDs at 1 KiB a wasted fetch: the v1 filter held at 1% (102 bytes) is used.
  await client.changedSince(FOLLOWED, H[0], { strategy: "hourly", fetchCost: 1024 });
  assert.ok(!seen.some((path) => path.startsWith(hourPath(H[0]))), seen.join(" "));
  // At 1 MiB a wasted fetch, its false positives (100 KiB) cost more than a precise ribbon.
  seen.splice(0);
  const changes = await client.changedSince(FOLLOWED, H[0], { strategy: "hourly", fetchCost: 1 << 20 });
  assert.ok(seen.some((path) => path.startsWith(`${hourPath(H[0])}.ribbon2?`)), seen.join(" "));
  noneMissed(changes);
});

for (const [status, error] of [
  [406, "not_acceptable"],
  [404, "not_found"],
]) {
  test(`after hours held, a server answering ${status} for the version 2 since-range is read hour by hour`, { skip }, async () => {
    const older = async (path) => (SINCE_RIBBON2.test(path) ? jsonReply({ error, message: "not served here" }, status) : null);
    const proxy = await startProxy(history.server.base, older);
    try {
      const client = new Client(proxy.base);
      await client.hour(H[0]);
      await client.hour(H[1]);
      const start = proxy.seen.length;
      const changes = await client.changedSince(FOLLOWED, H[0], OPTIONS);
      const paths = proxy.seen.slice(start).map((r) => r.path);
      // The index, the refused union from H2, then H2, H3 and the open hour on their own:
      // not the v1 union, and not the hours held.
      assert.equal(paths.length, 5, paths.join(" "));
      assert.equal(new URL(paths[1], "http://x").pathname, `/since${hourPath(H[2])}.ribbon2`);
      assert.ok(paths[2].startsWith(hourPath(H[2])) && paths[3].startsWith(hourPath(H[3])), paths.join(" "));
      assert.equal(paths[4], hourPath(OPEN));
      assert.ok(!paths.some((path) => path.startsWith("/since/") && !SINCE_RIBBON2.test(path)), paths.join(" "));
      assert.deepEqual([changes.from, changes.to], [H[0], OPEN]);
      noneMissed(changes);
    } finally {
      await proxy.close();
    }
  });
}
