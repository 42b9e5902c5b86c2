// Exact hours against a real server (PROTOCOL.md section 14, "Choosing it"): the README's
// quick start, sealed (a universe of three IDs registered, then 3,000 IDs published, an
// hour back). 1,000 IDs never registered nor published are flagged by `changedSince` at
// most at the target's rate, by hour and verifying, the exact body refining a filter;
// declared registered (falsely), the exact body alone flags far more: nearly all of them
// (3,000 of the universe's 3,003 changed, so the body is complemented, version 2: an ID
// outside its universe answers changed but for a few).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";

const skip = skipUnless(binary(), NO_BINARY);
const OUTSIDERS = Array.from({ length: 1000 }, (_, i) => `nobody:${i}`);
// One sealed hour, each ID flagged with probability at most 0.01: the mean plus four
// standard deviations (exceeded with probability below 1e-4), 22.
const BOUND = Math.floor(1000 * 0.01 + 4 * Math.sqrt(1000 * 0.01 * 0.99));
let server;
let sealed;
let publicKey;

before(async () => {
  if (skip) return;
  const past = await startServer({ env: { BLOOMCAST_CLOCK_OFFSET_SECONDS: "-3600" } });
  const post = (path, ids) =>
    fetch(`${past.base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ ids }),
    }).then((r) => r.json());
  await post("/universe", ["user:1", "user:2", "user:5"]);
  sealed = (await post("/updates", Array.from({ length: 3000 }, (_, i) => `h0:${i}`))).hour;
  await past.stop({ keep: true });
  // Restarted an hour past its last heartbeat on purpose: a tolerance above that lets the
  // start follow the clock.
  server = await startServer({ dir: past.dir, env: { BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS: "7200" } });
  publicKey = (await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json()).public_key;
  // Read once, as another client would have: the index then lists its size.
  assert.ok(await new Client(server.base).exact(sealed));
});

after(async () => {
  await server?.stop({ purge: true });
});

/** The (ID, hour) pairs flagged, and whether the sealed hour was read with its exact body. */
async function flagged(options, strategy = "hourly") {
  const client = new Client(server.base, options);
  const changes = await client.changedSince(OUTSIDERS, sealed, { strategy });
  const hour = changes.find((c) => c.from === sealed);
  const exactRead = [...client.cache.keys()].some((url) => url.endsWith(".exact"));
  return { flags: changes.reduce((n, c) => n + c.ids.length, 0), exactRead, read: hour && (hour.exact ? "alone" : hour.refined ? "refined" : "filter") };
}

test("IDs never registered are flagged at most at the target, the exact body refining a filter", { skip }, async () => {
  // The default (one union at the target), hour by hour, and verifying (hour by hour).
  for (const [name, options, strategy] of [
    ["union", {}, "union"],
    ["hourly", {}, "hourly"],
    ["verifying", { pubkey: publicKey }, "union"],
  ]) {
    const { flags, exactRead } = await flagged(options, strategy);
    console.log(`# ${name}: ${flags} of 1000 flagged, exact body read: ${exactRead}`);
    assert.equal(exactRead, name !== "union", name);
    assert.ok(flags <= BOUND, `${name}: ${flags} > ${BOUND}`);
  }
});

test("declared registered (falsely), the exact body alone flags far more of them", { skip }, async () => {
  const { flags, read } = await flagged({ registered: true });
  console.log(`# registered: ${flags} of 1000 flagged`);
  assert.equal(read, "alone");
  assert.ok(flags > 10 * BOUND, `${flags}`);
});
