// A read answered 503 with a short Retry-After is tried again after it (at most
// READ_TRIES tries); a longer wait, or a write, is answered at once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, READ_TRIES, StatusError } from "../bloomcast.js";

const INDEX = { service: "bloomcast", current: { hour: "2026-11-23T10:00:00Z", url: "/2026/11/23/10" } };

/** A fetch answering `busy` times 503 `busy` with `Retry-After: retryAfter` (POSTs
 * always), then the index; `seen` lists the methods asked. */
function busyFetch(busy, retryAfter) {
  const seen = [];
  const fetchImpl = async (_url, init = {}) => {
    const method = (init.method ?? "GET").toUpperCase();
    seen.push(method);
    if (seen.length <= busy || method === "POST") {
      return new Response(JSON.stringify({ error: "busy", message: "builds are busy" }), {
        status: 503,
        headers: { "content-type": "application/json", "retry-after": retryAfter },
      });
    }
    return new Response(JSON.stringify(INDEX), { status: 200, headers: { "content-type": "application/json" } });
  };
  return { fetchImpl, seen };
}

test("busy twice, then served: the third try answers", async () => {
  const { fetchImpl, seen } = busyFetch(2, "0");
  const client = new Client("http://stub", { fetch: fetchImpl });
  assert.deepEqual(await client.index(), INDEX);
  assert.equal(seen.length, 3);
  assert.equal(client.stats.requests, 3);
});

test("busy every time: the last try's 503 is the answer", async () => {
  const { fetchImpl, seen } = busyFetch(READ_TRIES, "0");
  await assert.rejects(new Client("http://stub", { fetch: fetchImpl }).index(), (e) => e instanceof StatusError && e.status === 503);
  assert.equal(seen.length, READ_TRIES);
});

test("one try asked for (readTries: 1): the first refusal is the answer", async () => {
  const { fetchImpl, seen } = busyFetch(1, "1");
  await assert.rejects(new Client("http://stub", { fetch: fetchImpl, readTries: 1 }).index(), (e) => e instanceof StatusError && e.status === 503);
  assert.equal(seen.length, 1);
});

test("a long Retry-After, or a write, is answered at once", async () => {
  const { fetchImpl, seen } = busyFetch(1, "60");
  const client = new Client("http://stub", { fetch: fetchImpl, token: "t0ken-t0ken" });
  await assert.rejects(client.index(), (e) => e instanceof StatusError && e.status === 503 && e.retryAfter === 60);
  assert.deepEqual(seen, ["GET"]);
  await assert.rejects(client.ingest(["x"]), (e) => e instanceof StatusError && e.status === 503);
  assert.deepEqual(seen, ["GET", "POST"]);
});
