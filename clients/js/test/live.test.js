// The client against a real server: ingest with the token, then no false negative over
// every ingested ID and a false-positive rate within 1.5x of the target over 10,000
// absent IDs; the representations agree; ETag revalidation; typed errors.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { Client, StatusError } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";

const skip = skipUnless(binary(), NO_BINARY);
let server;
let client;
const ingested = Array.from({ length: 3000 }, (_, i) => `live:${i}:${(i * 7919) % 104729}`);
let hour;

before(async () => {
  if (skip) return;
  server = await startServer();
  client = new Client(server.base, { token: TOKEN });
  for (let i = 0; i < ingested.length; i += 1000) {
    const receipt = await client.ingest(ingested.slice(i, i + 1000));
    assert.equal(receipt.accepted, 1000);
    hour = receipt.hour;
  }
});

after(async () => {
  await server?.stop();
});

test("no false negatives and an FP rate within 1.5x of the target", { skip }, async () => {
  const index = await client.index();
  const target = index.target_fpp;
  const fetched = await client.hour(hour);
  assert.equal(fetched.meta.count, ingested.length);
  assert.equal(fetched.meta.complete, false);
  for (const id of ingested) assert.ok(await fetched.mayContain(id), `false negative: ${id}`);
  let fp = 0;
  const absent = 10000;
  for (let i = 0; i < absent; i++) if (await fetched.mayContain(`absent:${i}`)) fp++;
  const rate = fp / absent;
  console.log(`# FP rate ${rate} over ${absent} absent IDs (target ${target}, fpp ${fetched.meta.fpp})`);
  assert.ok(rate <= 1.5 * target, `FP rate ${rate} > 1.5 x ${target}`);
});

test("changedSince finds every ingested ID by union and by hour", { skip }, async () => {
  const sample = ingested.slice(0, 200);
  const absent = Array.from({ length: 200 }, (_, i) => `never:${i}`);
  for (const strategy of ["union", "hourly"]) {
    const changed = await client.changedSince([...sample, ...absent], hour, { strategy });
    const found = new Set(changed.flatMap((c) => c.ids));
    for (const id of sample) assert.ok(found.has(id), `${strategy}: ${id} missing`);
    assert.ok(found.size < sample.length + 20, `${strategy}: ${found.size} hits`);
    assert.equal(changed[0].to, hour);
  }
});

test("hex and binary representations decode to the JSON filter", { skip }, async () => {
  const json = await client.hour(hour);
  for (const repr of ["hex", "bin"]) {
    const raw = await new Client(server.base, { repr }).hour(hour);
    assert.equal(raw.filter.toHex(), json.filter.toHex(), repr);
    assert.deepEqual([raw.meta.m, raw.meta.k, raw.meta.count, raw.meta.hour], [json.meta.m, json.meta.k, json.meta.count, hour]);
  }
});

test("an open filter is revalidated with its ETag and answered 304", { skip }, async () => {
  const fresh = new Client(server.base);
  const first = await fresh.hour(hour);
  assert.ok(first.etag);
  const again = await fresh.hour(hour);
  assert.equal(again, first);
  assert.equal(fresh.stats.notModified, 1);
  await client.ingest(["live:new-after-etag"]);
  const grown = await fresh.hour(hour);
  assert.notEqual(grown.etag, first.etag);
  assert.ok(await grown.mayContain("live:new-after-etag"));
});

test("errors carry the server's status and code", { skip }, async () => {
  await assert.rejects(client.hour("2999-01-01T00:00:00Z"), (e) => e instanceof StatusError && e.status === 404 && e.code === "not_found");
  await assert.rejects(client.filter("/2008/02/30/00"), (e) => e instanceof StatusError && e.status === 400 && e.code === "invalid_hour");
  await assert.rejects(new Client(server.base, { token: "wrong-token-123" }).ingest(["x"]), (e) => e.status === 401 && e.code === "unauthorized");
});
