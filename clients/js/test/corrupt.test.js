// An hour the server could not verify (PROTOCOL.md section 9: listed `corrupt` in the
// index, without a count; its filter answers 500 `corrupt`) is unknown, never "no
// change": changedSince rejects with a CorruptHoursError naming it, unless the client
// holds the hour's complete filter from before, and a range without it is answered as
// ever. A stub server (node:http) with hours 08 (sealed), 09 (damaged) and 10 (open).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, CorruptHoursError, Filter, StatusError, SHA1_KM32, corruptHours } from "../bloomcast.js";

const [H08, H09, H10] = ["2026-11-23T08:00:00Z", "2026-11-23T09:00:00Z", "2026-11-23T10:00:00Z"];
// The clients' clock: ten minutes into the stub's open hour.
const clock = () => Date.parse(H10) + 600e3;
const pathOf = (hour) => `/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;
const IDS = { [H08]: ["a"], [H09]: ["b"], [H10]: ["c"] };
const LINES = [
  { hour: H10, url: pathOf(H10), count: 1, complete: false },
  { hour: H09, url: pathOf(H09), complete: false, corrupt: true },
  { hour: H08, url: pathOf(H08), count: 1, complete: true },
];

/** The stub; `state.corrupt` (hours answering 500) and `state.lines` (the index's hours) may change. */
async function stub() {
  const state = { corrupt: new Set([H09]), lines: LINES };
  const server = createServer(async (req, res) => {
    const { pathname } = new URL(req.url, "http://stub");
    const json = (body, status = 200) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (pathname === "/") {
      return json({
        service: "bloomcast", protocol: 1, hash: SHA1_KM32, target_fpp: 0.01, capacity: 3000, retention_hours: 720,
        genesis: H08, current: { hour: H10, url: pathOf(H10) }, exact_since: null, hours: state.lines,
      });
    }
    const since = pathname.startsWith("/since/") ? pathname.slice("/since".length) : null;
    const hour = Object.keys(IDS).find((h) => pathOf(h) === (since ?? pathname));
    const covered = since ? Object.keys(IDS).filter((h) => h >= hour) : [hour];
    if (!hour) return json({ error: "not_found", message: "no such resource" }, 404);
    if (covered.some((h) => state.corrupt.has(h))) {
      return json({ error: "corrupt", message: "this filter's stored data failed verification" }, 500);
    }
    const ids = covered.flatMap((h) => IDS[h]);
    const filter = Filter.empty(1024, 7);
    for (const id of ids) await filter.insert(id);
    const complete = !covered.includes(H10);
    const doc = { complete, count: ids.length, m: 1024, k: 7, hash: SHA1_KM32, fpp: 0.01, filter: filter.toHex() };
    json(since ? { ...doc, from: hour, to: H10 } : { ...doc, hour });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { state, base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((ok) => server.close(ok)) };
}

async function withStub(body) {
  const server = await stub();
  try {
    return await body(server);
  } finally {
    await server.close();
  }
}

const rejectsNaming = (promise, hours) =>
  assert.rejects(promise, (e) => {
    assert.ok(e instanceof CorruptHoursError && e instanceof StatusError, e);
    assert.deepEqual(e.hours, hours);
    assert.equal(e.status, 500);
    assert.equal(e.code, "corrupt");
    assert.ok(hours.every((h) => e.message.includes(h)), e.message);
    return true;
  });

test("a range over an hour listed corrupt is refused naming it, by union or hour by hour", async () => {
  await withStub(async ({ base }) => {
    for (const strategy of ["union", "hourly"]) {
      await rejectsNaming(new Client(base, { clock }).changedSince(["a", "b", "c"], H08, { strategy }), [H09]);
    }
  });
});

test("a range without it is answered as ever, and the window still reads the index", async () => {
  await withStub(async ({ base }) => {
    const client = new Client(base, { clock });
    const changes = await client.changedSince(["a", "b", "c"], H10, { strategy: "hourly" });
    assert.deepEqual([...changes], [{ from: H10, to: H10, ids: ["c"] }]);
    assert.deepEqual([changes.from, changes.to, changes.unverified, changes.stale], [H10, H10, null, null]);
    assert.deepEqual(await client.window(3), { since: H08, clamped: false });
    assert.deepEqual(corruptHours(await client.index(), Date.parse(H08), Date.parse(H10)), [H09]);
  });
});

test("a 500 corrupt the index does not list still names the hour", async () => {
  await withStub(async ({ base, state }) => {
    state.lines = LINES.filter((line) => !line.corrupt);
    await rejectsNaming(new Client(base, { clock }).changedSince(["b"], H08, { strategy: "hourly" }), [H09]);
  });
});

test("a client holding the hour's complete filter answers from it, by union or hour by hour", async () => {
  await withStub(async ({ base, state }) => {
    state.corrupt.clear();
    state.lines = LINES.filter((line) => !line.corrupt);
    const holder = new Client(base, { clock });
    const before = await holder.changedSince(["a", "b", "c"], H08, { strategy: "hourly" });
    assert.deepEqual(before.map((c) => c.ids), [["a"], ["b"], ["c"]]);
    state.corrupt.add(H09);
    state.lines = LINES;
    assert.deepEqual([...(await holder.changedSince(["a", "b", "c"], H08, { strategy: "hourly" }))], [...before]);
    // Its union answers 500: the hours held do not make it, so the error names them.
    await rejectsNaming(holder.changedSince(["b"], H08, { strategy: "union" }), [H09]);
    await rejectsNaming(new Client(base, { clock }).changedSince(["b"], H08, { strategy: "hourly" }), [H09]);
  });
});
