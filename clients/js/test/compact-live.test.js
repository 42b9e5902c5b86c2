// The closed hours as one version 2 union (PROTOCOL.md section 12, "Catching up":
// `/since/YYYY/MM/DD/HH.ribbon2`) against a real `bloomcast serve` with two sealed hours
// H0 and H1 of 100 IDs each and 100 IDs in the open hour: `sinceRibbon2` and the
// "compact" strategy (two ranges, three requests), and, behind a proxy playing an older
// server, its fallback to the v1 union on 406 and 404 (and no fallback on other errors).
// Skipped without the binary, unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, ProtocolError, StatusError, cheapestPlan, hourPath, ribbon2PredictedBytes } from "../bloomcast.js";
import { binary, skipUnless, NO_BINARY } from "../support/server.js";
import { startHistory } from "../support/history.js";
import { startProxy, jsonReply } from "../support/proxy.js";

const skip = skipUnless(binary(), NO_BINARY);
const BATCHES = [0, 1].map((h) => Array.from({ length: 100 }, (_, i) => `h${h}:${i}`));
const OPEN_IDS = Array.from({ length: 100 }, (_, i) => `open:${i}`);
const QUIET = Array.from({ length: 1000 }, (_, i) => `quiet:${i}`);
const UPDATED = [...BATCHES.flat(), ...OPEN_IDS];
const SINCE_RIBBON2 = /^\/since\/\d{4}\/\d{2}\/\d{2}\/\d{2}\.ribbon2(\?|$)/;

let history;
let H0;
let H1;
let OPEN;

before(async () => {
  if (skip) return;
  history = await startHistory(BATCHES, OPEN_IDS);
  [H0, H1] = history.sealed;
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

/** Runs `body` with a proxy in front of the server that answers `rewrite`'s replies. */
async function via(rewrite, body) {
  const proxy = await startProxy(history.server.base, rewrite);
  try {
    return await body(proxy);
  } finally {
    await proxy.close();
  }
}

test("sinceRibbon2 is the closed hours' union in version 2, with the hours it covers, never kept", { skip }, async () => {
  const client = new Client(history.server.base);
  const { ribbon, from, to } = await client.sinceRibbon2(H0, { fpp: 2 ** -10 });
  assert.deepEqual([from, to], [H0, H1]);
  assert.equal(ribbon.n, 200);
  assert.equal(ribbon.fpp, 2 ** -10);
  // One shard of 200 keys, sized as the planner predicts.
  assert.equal(ribbon.size, ribbon2PredictedBytes(200, 10, 0));
  for (const id of BATCHES.flat()) assert.ok(await ribbon.contains(id), `false negative: ${id}`);
  // The open hour is not in it: its 100 IDs are absent but for a false positive at 2^-10.
  let open = 0;
  for (const id of OPEN_IDS) if (await ribbon.contains(id)) open++;
  assert.ok(open <= 2, `${open} of the open hour's IDs`);
  // One closed hour: its own body, named by Bloom-Hour.
  const one = await client.sinceRibbon2(H1);
  assert.deepEqual([one.from, one.to, one.ribbon.n], [H1, H1, 100]);
  // Changes hourly: fetched again each time, never answered from memory.
  const before = { ...client.stats };
  await client.sinceRibbon2(H0, { fpp: 2 ** -10 });
  assert.deepEqual([client.stats.requests, client.stats.cacheHits], [before.requests + 1, before.cacheHits]);
  // From the open hour there is no closed hour.
  await assert.rejects(client.sinceRibbon2(OPEN), (e) => e instanceof StatusError && e.status === 406 && e.code === "not_acceptable");
});

test('strategy "compact": the closed hours as one range, the open hour as another, in three requests', { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  const changes = await client.changedSince([...UPDATED, ...QUIET], H0, { strategy: "compact" });

  assert.equal(changes.length, 2, JSON.stringify(changes.map(({ from, to }) => [from, to])));
  assert.deepEqual([changes[0].from, changes[0].to], [H0, H1]);
  assert.deepEqual([changes[1].from, changes[1].to], [OPEN, OPEN]);
  assert.deepEqual([changes.from, changes.to, changes.unverified, changes.stale], [H0, OPEN, null, null]);
  const closed = new Set(changes[0].ids);
  for (const id of BATCHES.flat()) assert.ok(closed.has(id), `${id} missing from ${H0} .. ${H1}`);
  const open = new Set(changes[1].ids);
  for (const id of OPEN_IDS) assert.ok(open.has(id), `${id} missing from the open hour`);
  // The index, the version 2 union at 2^-k, the open hour's v1 filter.
  assert.equal(client.stats.requests, 3);
  assert.equal(seen.length, 3);
  assert.equal(seen[0], "/");
  const asked = new URL(seen[1], "http://x");
  assert.equal(asked.pathname, `/since${hourPath(H0)}.ribbon2`);
  const k = -Math.log2(Number(asked.searchParams.get("fpp")));
  assert.ok(Number.isInteger(k) && k >= 4 && k <= 24, `fpp=${asked.searchParams.get("fpp")}`);
  // The precision the planner finds for 1,300 IDs followed over 200 closed IDs.
  const { k: planned } = cheapestPlan(
    [
      { count: 100, open: false },
      { count: 100, open: false },
      { count: 100, open: true },
    ],
    { followed: UPDATED.length + QUIET.length, ribbon2: true },
  );
  assert.equal(k, planned);
  assert.equal(seen[2], hourPath(OPEN));
  // Quiet IDs flagged in the closed range: about 1,000 x 2^-k.
  const wrong = changes[0].ids.filter((id) => id.startsWith("quiet:")).length;
  assert.ok(wrong <= 5 + 5000 * 2 ** -k, `${wrong} quiet IDs flagged at 2^-${k}`);
});

test('"compact" from the open hour has no closed hour: it is the v1 union', { skip }, async () => {
  const { client, seen } = recording(history.server.base);
  const changes = await client.changedSince(OPEN_IDS, OPEN, { strategy: "compact" });
  assert.deepEqual(seen.slice(1), [`/since${hourPath(OPEN)}`]);
  assert.deepEqual([changes.length, changes[0].from, changes[0].to], [1, OPEN, OPEN]);
  assert.ok(OPEN_IDS.every((id) => changes[0].ids.includes(id)));
});

for (const [status, error] of [
  [406, "not_acceptable"],
  [404, "not_found"],
]) {
  test(`a server answering ${status} for the version 2 since-range is read with the v1 union`, { skip }, async () => {
    const older = async (path) => (SINCE_RIBBON2.test(path) ? jsonReply({ error, message: "not served here" }, status) : null);
    await via(older, async (proxy) => {
      const client = new Client(proxy.base);
      const changes = await client.changedSince(UPDATED, H0, { strategy: "compact" });
      assert.equal(changes.length, 1);
      assert.deepEqual([changes[0].from, changes[0].to, changes.from, changes.to], [H0, OPEN, H0, OPEN]);
      const found = new Set(changes[0].ids);
      for (const id of UPDATED) assert.ok(found.has(id), `${id} missing`);
      const paths = proxy.seen.map((r) => r.path);
      assert.equal(paths.length, 3, paths.join(" "));
      assert.match(paths[1], SINCE_RIBBON2);
      assert.equal(paths[2], `/since${hourPath(H0)}`);
    });
  });
}

test("other failures of the version 2 since-range are not hidden by the fallback", { skip }, async () => {
  const busy = async (path) => (SINCE_RIBBON2.test(path) ? jsonReply({ error: "busy", message: "try later" }, 503, { "retry-after": "1" }) : null);
  await via(busy, async (proxy) => {
    await assert.rejects(new Client(proxy.base).changedSince(UPDATED, H0, { strategy: "compact" }), (e) => e instanceof StatusError && e.status === 503 && e.retryAfter === 1);
    assert.ok(!proxy.seen.some((r) => r.path === `/since${hourPath(H0)}`), "the v1 union was read");
  });
  // A response that names no hour it covers is refused, not guessed at.
  const unnamed = async (path, reply) => {
    if (!SINCE_RIBBON2.test(path)) return null;
    for (const name of ["bloom-to", "bloom-hour"]) delete reply.headers[name];
    return reply;
  };
  await via(unnamed, async (proxy) => {
    const client = new Client(proxy.base);
    await assert.rejects(client.sinceRibbon2(H0), (e) => e instanceof ProtocolError && /Bloom-To or Bloom-Hour/.test(e.message));
    await assert.rejects(client.changedSince(UPDATED, H0, { strategy: "compact" }), ProtocolError);
  });
});
