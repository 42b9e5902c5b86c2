// A static mirror (PROTOCOL.md section 13) with canned files: its index says
// `"static": true`, it has no `/since/` unions and ignores query strings. The client reads
// it hour by hour whatever the strategy, asks no `?fpp=` (the compact files hold the
// service's target only), and the example script runs against it (its hours are of 2025:
// stale for the script, which answers and says so with exit status 3).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { Client, Filter, Ribbon2, cheapestForm, sizedParams, SHA1_KM32 } from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/ribbon2-vectors.json", import.meta.url), "utf8"));
// The version 2 body at the target (0.01) of user:1000, user:1007 and user:1014.
const AT_TARGET = vectors.filters.find((f) => f.fpp === 0.01 && f.members.count === 3);
const MEMBERS = Array.from({ length: 3 }, (_, i) => `user:${1000 + 7 * i}`);
const HOURS = ["2025-12-20T13:00:00Z", "2025-12-20T14:00:00Z", "2025-12-20T15:00:00Z"];
// The clients' clock: an hour after the mirror's newest hour, which it is then current for.
const clock = () => Date.parse(HOURS[2]) + 3600e3 + 60e3;
const pathOf = (hour) => `/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;

/** The mirror: `/` (its index.json), each hour's JSON document and `.ribbon2` file; 404 for the
 * rest. Query strings are ignored, as a file server does; every request is recorded. */
async function mirror() {
  const { m, k } = sizedParams(MEMBERS.length, 0.01);
  const filter = Filter.empty(m, k);
  for (const id of MEMBERS) await filter.insert(id);
  const listed = HOURS.map((hour) => ({ hour, url: pathOf(hour), count: MEMBERS.length, complete: true })).reverse();
  const index = {
    service: "bloomcast", protocol: 1, hash: SHA1_KM32, target_fpp: 0.01, capacity: 3000, retention_hours: 720,
    genesis: HOURS[0], current: listed[0], hours: listed, ribbon_versions: [1, 2], static: true, exact_since: null,
  };
  const seen = [];
  const server = createServer((req, res) => {
    seen.push(req.url);
    const path = new URL(req.url, "http://mirror").pathname;
    const hour = HOURS.find((h) => path === pathOf(h) || path === `${pathOf(h)}.json`);
    const send = (type, body) => {
      res.writeHead(200, { "content-type": type });
      res.end(body);
    };
    if (path === "/") return send("application/json", JSON.stringify(index));
    if (hour) {
      const doc = { hour, complete: true, count: MEMBERS.length, m, k, hash: SHA1_KM32, fpp: filter.fpp(), filter: filter.toHex() };
      return send("application/json", JSON.stringify(doc));
    }
    if (HOURS.some((h) => path === `${pathOf(h)}.ribbon2`)) {
      return send("application/vnd.bloomcast.ribbon; v=2", Buffer.from(AT_TARGET.body, "hex"));
    }
    res.writeHead(404, { "content-type": "text/html" });
    res.end("<html><body>404 Not Found</body></html>");
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { base: `http://127.0.0.1:${server.address().port}`, seen, close: () => new Promise((ok) => server.close(ok)) };
}

test("a static mirror is read hour by hour whatever the strategy, without unions or ?fpp=", async () => {
  const { base, seen, close } = await mirror();
  try {
    for (const options of [{}, { strategy: "union" }, { strategy: "hourly", fetchCost: 10 ** 9 }]) {
      const client = new Client(base, { clock });
      const changes = await client.changedSince([...MEMBERS, "nobody"], HOURS[0], options);
      assert.deepEqual([changes.from, changes.to, changes.stale], [HOURS[0], HOURS[2], null]);

      assert.deepEqual(changes.map((c) => c.from), HOURS, JSON.stringify(options));
      for (const c of changes) assert.deepEqual(c.ids.filter((id) => id !== "nobody"), MEMBERS);
    }
    assert.ok(!seen.some((url) => url.startsWith("/since") || url.includes("?")), seen.join(" "));
  } finally {
    await close();
  }
});

test("on a mirror the compact form is weighed and read at the target, the one precision it holds", async () => {
  // Following 45,754 IDs, an hour of 3,000 is worth a precise ribbon from the server...
  const served = cheapestForm(3000, 0.01, 45754, 10240, { ribbon2: true });
  assert.ok(served.fpp < 0.001 && !served.atTarget, JSON.stringify(served));
  // ...but a mirror holds the target's file only: that, or the v1 filter.
  const mirrored = cheapestForm(3000, 0.01, 45754, 10240, { ribbon2: true, mirror: true });
  assert.ok(mirrored.fpp > 0.001 && (mirrored.form === "bloom" || mirrored.atTarget), JSON.stringify(mirrored));
  // Where bytes alone count, the server's fewest bits (2^-4) are not on a mirror: the
  // target's grade (k 6, split 185), asked for without ?fpp=.
  assert.equal(cheapestForm(3000, 0.01, 1, 0, { ribbon2: true }).k, 4);
  const atTarget = cheapestForm(3000, 0.01, 1, 0, { ribbon2: true, mirror: true });
  assert.deepEqual([atTarget.form, atTarget.k, atTarget.split, atTarget.atTarget], ["ribbon2", 6, 185, true]);
  const { base, seen, close } = await mirror();
  try {
    const ribbon = await new Client(base, { clock }).readForm(HOURS[0], atTarget);
    assert.ok(ribbon instanceof Ribbon2 && ribbon.fpp <= 0.01);
    for (const id of MEMBERS) assert.ok(await ribbon.contains(id), id);
    assert.deepEqual(seen, [`${pathOf(HOURS[0])}.ribbon2`]);
  } finally {
    await close();
  }
});

test("the example script reads a stale static mirror, answers, and exits 3 naming its newest hour", async () => {
  const { base, close } = await mirror();
  try {
    const script = fileURLToPath(new URL("../examples/changed.js", import.meta.url));
    const { code, stdout, stderr } = await new Promise((resolve) =>
      execFile(process.execPath, [script, base, ...MEMBERS, "nobody"], (error, stdout, stderr) =>
        resolve({ code: error ? error.code : 0, stdout, stderr }),
      ),
    );
    assert.equal(code, 3, stderr);
    assert.match(stderr, new RegExp(`^stale: the source is stale: the newest hour this mirror holds, ${HOURS[2]}, ends more than 2 hours before`, "m"));
    assert.match(stderr, new RegExp(`^hours read: ${HOURS[0]} \\.\\. ${HOURS[2]}$`, "m"));
    assert.match(stdout, new RegExp(`${HOURS[2]} \\.\\. ${HOURS[2]}: ${MEMBERS.join(" ")}`));
    assert.match(stdout, /^current hour: 3 IDs, m=\d+, k=\d+/m);
    // Accepted, it says so all the same, and exits 0.
    const accepted = await new Promise((resolve) =>
      execFile(process.execPath, [script, "--accept-stale", base, ...MEMBERS], (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr })),
    );
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stderr, /^stale: the source is stale: /m);
    assert.match(accepted.stdout, new RegExp(`${HOURS[2]} \\.\\. ${HOURS[2]}: ${MEMBERS.join(" ")}`));
  } finally {
    await close();
  }
});
