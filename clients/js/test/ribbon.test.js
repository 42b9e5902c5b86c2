// Every entry of docs/ribbon-vectors.json, and the decoding rules of PROTOCOL.md section 12.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client, Filter, Ribbon, ribbonSlot, mix64, keyOf, cheapestForm, DecodeError } from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/ribbon-vectors.json", import.meta.url), "utf8"));

const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

test("mix64 wraps at 64 bits", () => {
  // SplitMix64's first output for state 0 + golden gamma (a published constant).
  assert.equal(mix64(0x9e3779b97f4a7c15n), 0xe220a8397b1dcdafn);
});

test("the query's 32-bit mixing is mix64 on many keys and seeds", async () => {
  // ribbonSlot computes with 32-bit halves; mix64 is the BigInt transcription of section 12.
  const G = 0x9e3779b97f4a7c15n;
  const M = (1n << 64n) - 1n;
  let state = 12345n;
  for (let i = 0; i < 2000; i++) {
    state = (state + G) & M;
    const z = mix64(state);
    const key = { h1: Number(z >> 32n), h2: Number(z & 0xffffffffn) };
    const seed = mix64(z);
    const m = 64 + Number(seed % 5000000n);
    const a = mix64((z ^ seed) & M);
    const b = mix64(a ^ G);
    const c = mix64(b ^ G);
    const slot = ribbonSlot(key, seed, m, 1 + (i % 32));
    assert.equal(slot.start, Number((a * BigInt(m - 63)) >> 64n));
    assert.equal(slot.coeff, b | 1n);
    assert.equal(slot.fp, Number(c & ((1n << BigInt(1 + (i % 32))) - 1n)));
  }
});

for (const v of vectors.slots) {
  test(`slot of ${JSON.stringify(v.id)} seed=${v.seed} m=${v.m} r=${v.r}`, async () => {
    const key = await keyOf(v.id);
    assert.deepEqual(key, { h1: v.h1, h2: v.h2 });
    const slot = ribbonSlot(key, BigInt(v.seed), v.m, v.r);
    assert.equal(slot.start, v.start);
    assert.equal(slot.coeff, BigInt(`0x${v.coeff}`));
    assert.equal(slot.fp, v.fp);
  });
}

for (const v of vectors.filters) {
  test(`ribbon of ${v.ids.length} IDs r=${v.r}: members true, absent IDs as published`, async () => {
    const ribbon = Ribbon.fromBytes(fromHex(v.body));
    assert.equal(ribbon.r, v.r);
    assert.equal(ribbon.n, v.ids.length);
    for (const id of v.ids) assert.ok(await ribbon.mayContain(id), id);
    for (const a of v.absent) assert.equal(await ribbon.mayContain(a.id), a.contains, a.id);
  });
}

const body = () => fromHex(vectors.filters[1].body);

for (const [offset, value, why] of [
  [0, 0x58, /magic/],
  [4, 2, /version 2/],
  [5, 0, /r = 0/],
  [6, 1, /reserved/],
  [12, 63, /m = 63/],
]) {
  test(`a body with byte ${offset} = ${value} is refused (${why.source})`, () => {
    const broken = body();
    broken[offset] = value;
    assert.throws(() => Ribbon.fromBytes(broken), (e) => e instanceof DecodeError && why.test(e.message));
  });
}

test("a wrong length and set padding bits are refused", () => {
  assert.throws(() => Ribbon.fromBytes(body().subarray(0, -1)), /expected/);
  assert.throws(() => Ribbon.fromBytes(new Uint8Array(4)), /shorter than the header/);
  // r = 5, m = 65: 325 bits, so the last byte has 3 padding bits.
  const padded = new Uint8Array(24 + 41);
  padded.set([0x42, 0x43, 0x52, 0x31, 1, 5, 0, 0]);
  padded[12] = 65;
  assert.equal(Ribbon.fromBytes(padded).m, 65);
  padded[padded.length - 1] = 0x80;
  assert.throws(() => Ribbon.fromBytes(padded), /padding/);
});

test("Client#ribbon asks for the hour's .ribbon at the fpp given and keeps it", async () => {
  const seen = [];
  const fetch = async (url) => {
    seen.push(url);
    return new Response(fromHex(vectors.filters[3].body), { status: 200 });
  };
  const client = new Client("http://bloomcast.test", { fetch });
  const first = await client.ribbon("2008-09-03T05:00:00Z", { fpp: 2 ** -10 });
  const again = await client.ribbon("2008-09-03T05:30:00Z", { fpp: 2 ** -10 });
  assert.deepEqual(seen, ["http://bloomcast.test/2008/09/03/05.ribbon?fpp=9.765625e-4"]);
  assert.equal(again, first);
  assert.ok(await first.mayContain(vectors.filters[3].ids[0]));
});

test("the cheapest form is the Rust SDK's", () => {
  // The same figures as src/client/choice.rs's tests.
  assert.equal(cheapestForm(280, 0.01, 45754).r, 23);
  assert.equal(cheapestForm(0, 0.01, 45754).form, "bloom");
  assert.equal(cheapestForm(3000, 0.01, 45754, 0).r, 4);
  assert.equal(cheapestForm(5, 0.01, 1, 0).form, "bloom");
  assert.deepEqual([1, 100, 45754, 1e7].map((f) => cheapestForm(300, 0.01, f).r), [7, 14, 23, 24]);
  assert.equal(cheapestForm(3000, 0.01, 45754, 0).bytes, 24 + Math.ceil((4 * 3211) / 8));
});

test("changedSince by hour reads closed hours as ribbons at the chosen precision, the open hour as v1", async () => {
  const members = vectors.filters[3].ids; // 200 IDs, r = 10
  const open = Filter.empty(1024, 7);
  const seen = [];
  const fetch = async (url) => {
    const path = new URL(url).pathname + new URL(url).search;
    seen.push(path);
    if (path === "/") {
      return Response.json({
        current: { hour: "2008-09-03T06:00:00Z" }, target_fpp: 0.01, capacity: 3000,
        hours: [{ hour: "2008-09-03T05:00:00Z", count: 200, complete: true }],
      });
    }
    if (path.startsWith("/2008/09/03/05.ribbon")) return new Response(fromHex(vectors.filters[3].body));
    if (path === "/2008/09/03/06") {
      return Response.json({ hour: "2008-09-03T06:00:00Z", complete: false, count: 0, m: 1024, k: 7,
        hash: "sha1-km32", fpp: 0, filter: open.toHex() });
    }
    return new Response("{}", { status: 404 });
  };
  // The client's clock in the stub's open hour (2008), for its lag bound.
  const client = new Client("http://bloomcast.test", { fetch, clock: () => Date.parse("2008-09-03T06:10:00Z") });
  const followed = [...members.slice(0, 5), "absent:0", "absent:1"];
  const changes = await client.changedSince(followed, "2008-09-03T05:00:00Z", { strategy: "hourly", fetchCost: 10240 });
  const r = cheapestForm(200, 0.01, followed.length, 10240).r;
  assert.deepEqual(seen, ["/", `/2008/09/03/05.ribbon?fpp=${(2 ** -r).toExponential()}`, "/2008/09/03/06"]);
  assert.deepEqual([...changes], [{ from: "2008-09-03T05:00:00Z", to: "2008-09-03T05:00:00Z", ids: members.slice(0, 5) }]);
  assert.deepEqual([changes.from, changes.to], ["2008-09-03T05:00:00Z", "2008-09-03T06:00:00Z"]);
});
