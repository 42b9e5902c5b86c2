// Every entry of docs/ribbon2-vectors.json, the decoding rules of PROTOCOL.md section 12
// ("Version 2"), and the client's choice of version 2 where the index lists it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  Client,
  Filter,
  Ribbon2,
  ribbon2Row,
  ribbon2Route,
  ribbon2Bytes,
  gradeForFpp,
  cheapestForm,
  mix64,
  keyOf,
  DecodeError,
} from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/ribbon2-vectors.json", import.meta.url), "utf8"));

const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const hex = (value, digits) => value.toString(16).padStart(digits, "0");
const membersOf = ({ members: m }) => Array.from({ length: m.count }, (_, i) => `${m.prefix}${m.first + i * m.step}`);

// --- Section 12's query transcribed with BigInts, bit by bit (as vectors.rs does) ---------

const M64 = (1n << 64n) - 1n;
const G = 0x9e3779b97f4a7c15n;
const salt = (tag, seed) => mix64((BigInt(tag) << 32n) | BigInt(seed));
const key64 = (key) => (BigInt(key.h1) << 32n) | BigInt(key.h2);

function transcribedRow(key, partA, seed, m) {
  const e = mix64(key ^ 0x2545f4914f6cdd1dn);
  const u = e ^ salt(partA ? 1 : 2, seed);
  const [b, c, d] = [0n, 1n, 2n].map((i) => mix64(u ^ ((G * i) & M64)));
  const w = BigInt(Math.min(m, 128));
  const start = (b * (BigInt(m) - w + 1n)) >> 64n;
  let coeff = c | (d << 64n);
  coeff &= (1n << w) - 1n;
  if (w > 0n) coeff |= 1n;
  return { start: Number(start), coeff, fingerprint: e };
}

function transcribedRoute(key, split, sA, sB) {
  const h = key;
  const inA = h >> 56n < BigInt(split);
  const count = BigInt(inA ? sA : sB);
  return { inA, shard: Number(((h & ((1n << 56n) - 1n)) * count) >> 56n) };
}

function transcribedContains(body, key) {
  const k = body[4];
  const split = body[5];
  let at = 6;
  const varint = () => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = body[at++];
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return v;
    }
  };
  varint(); // n
  const sA = varint();
  const sB = varint();
  const shards = [];
  for (let i = 0; i < sA + sB; i++) shards.push([varint(), body[at++]]);
  const { inA, shard } = transcribedRoute(key, split, sA, sB);
  if ((inA && sA === 0) || (!inA && sB === 0)) return false;
  const index = inA ? shard : sA + shard;
  const bitsOf = (i) => (i < sA ? k + 1 : k);
  let offset = 0;
  for (let i = 0; i < index; i++) offset += shards[i][0] * bitsOf(i);
  const [m, seed] = shards[index];
  const bits = bitsOf(index);
  const { start, coeff, fingerprint } = transcribedRow(key, inA, seed, m);
  const bit = (t) => (body[at + Math.floor(t / 8)] >> t % 8) & 1;
  for (let b = 0; b < bits; b++) {
    let parity = 0;
    for (let j = 0; j < 128; j++) if ((coeff >> BigInt(j)) & 1n) parity ^= bit(offset + b * m + start + j);
    if (BigInt(parity) !== ((fingerprint >> BigInt(b)) & 1n)) return false;
  }
  return true;
}

// --- Vectors -------------------------------------------------------------------------------

test("the vectors use the one hash scheme", () => {
  assert.equal(vectors.hash, "sha1-km32");
});

for (const v of vectors.rows) {
  test(`row of ${JSON.stringify(v.id)} part ${v.part} seed=${v.seed} m=${v.m}, and its route`, async () => {
    const key = await keyOf(v.id);
    assert.deepEqual(key, { h1: v.h1, h2: v.h2 });
    const row = ribbon2Row(key, v.part, v.seed, v.m);
    assert.equal(row.start, v.start);
    assert.equal(hex(row.coeff, 32), v.coeff);
    assert.equal(hex(row.fingerprint, 16), v.fingerprint);
    const { split, sA, sB, part, shard } = v.route;
    assert.deepEqual(ribbon2Route(key, split, sA, sB), { part, shard });
  });
}

for (const g of vectors.grades) {
  test(`grade of fpp ${g.fpp}: k=${g.k} split=${g.split}`, () => {
    assert.deepEqual(gradeForFpp(g.fpp), { k: g.k, split: g.split, fpp: g.grade_fpp });
  });
}

for (const [i, f] of vectors.filters.entries()) {
  test(`ribbon2 #${i} of ${f.members.count} IDs at fpp ${f.fpp}: members true, absent IDs as published`, async () => {
    const ribbon = Ribbon2.fromBytes(fromHex(f.body));
    assert.equal(ribbon.n, f.members.count);
    assert.equal(ribbon.k, f.k);
    assert.equal(ribbon.split, f.split);
    assert.deepEqual(ribbon.shards, f.shards);
    assert.equal(ribbon.fpp, 2 ** -f.k * (1 - f.split / 512));
    assert.ok(ribbon.fpp <= f.fpp);
    assert.equal(ribbon.size, f.body.length / 2);
    for (const id of membersOf(f)) assert.ok(await ribbon.contains(id), id);
    for (const a of f.absent) {
      assert.equal(await ribbon.contains(a.id), a.contains, a.id);
      assert.equal(await ribbon.mayContain(a.id), a.contains, a.id);
    }
  });
}

test("the 32-bit query is the BigInt transcription of section 12 on many keys, shards and sizes", () => {
  let state = 99n;
  const next = () => {
    state = (state + G) & M64;
    return mix64(state);
  };
  for (let i = 0; i < 3000; i++) {
    const z = next();
    const key = { h1: Number(z >> 32n), h2: Number(z & 0xffffffffn) };
    const r = next();
    const seed = Number(r & 0xffn);
    // Dense (m <= 128), banded, and near the 2^32 limit of m.
    const m = [Number((r >> 8n) % 129n), 129 + Number((r >> 16n) % 100000n), 4294967295 - Number((r >> 8n) % 1000n)][i % 3];
    const partA = i % 2 === 0;
    const got = ribbon2Row(key, partA ? "A" : "B", seed, m);
    const want = transcribedRow(key64(key), partA, seed, m);
    assert.deepEqual(got, want, `key ${hex(z, 16)} seed ${seed} m ${m}`);
    // Shard counts up to 2^32 - 1: the route's 88-bit product.
    const split = Number((r >> 24n) & 0xffn);
    const sA = [1, 2, 4294967295, Number(r >> 32n)][i % 4];
    const sB = [3, 4294967295, 7, Number((r >> 8n) & 0xffffffn)][i % 4];
    const route = transcribedRoute(key64(key), split, sA, sB);
    assert.deepEqual(ribbon2Route(key, split, sA, sB), { part: route.inA ? "A" : "B", shard: route.shard });
  }
});

test("the decoder answers as the bit-by-bit transcription for keys in and out of every vector body", async () => {
  let state = 7n;
  for (const f of vectors.filters) {
    const body = fromHex(f.body);
    const ribbon = Ribbon2.fromBytes(body);
    const keys = await Promise.all(membersOf(f).slice(0, 200).map(keyOf));
    for (let i = 0; i < 300; i++) {
      state = mix64(state + 1n);
      keys.push({ h1: Number(state >> 32n), h2: Number(state & 0xffffffffn) });
    }
    for (const key of keys) assert.equal(ribbon.containsKey(key), transcribedContains(body, key64(key)), JSON.stringify(key));
  }
});

test("gradeForFpp: powers of two take split 0, the float is guarded, and the range is 2^-31 .. 1", () => {
  for (let k = 1; k <= 31; k++) assert.deepEqual(gradeForFpp(2 ** -k), { k, split: 0, fpp: 2 ** -k });
  for (let k = 1; k <= 30; k++) {
    // Just below a power of two: still k, the largest split.
    const below = gradeForFpp(2 ** -k * (1 - 2 ** -40));
    assert.equal(below.k, k);
    assert.equal(below.split, 1);
    // Just above 2^-(k+1): split would be 256, which is k + 1 bits, split 0.
    const above = gradeForFpp(2 ** -(k + 1) * (1 + 2 ** -20));
    assert.deepEqual([above.k, above.split], [k + 1, 0]);
    // Further above: k bits in part B, nearly every key in part A.
    assert.deepEqual([gradeForFpp(2 ** -(k + 1) * (1 + 2 ** -8)).k, gradeForFpp(2 ** -(k + 1) * (1 + 2 ** -8)).split], [k, 255]);
    assert.deepEqual([gradeForFpp(2 ** -(k + 1) * (1 + 2 ** -7)).k, gradeForFpp(2 ** -(k + 1) * (1 + 2 ** -7)).split], [k, 254]);
  }
  for (let q = 16; q <= 96; q++) {
    const p = 2 ** -(q / 4);
    const g = gradeForFpp(p);
    assert.ok(g.fpp <= p && g.fpp > p * (1 - 1 / 256), `${p}: ${JSON.stringify(g)}`);
    assert.ok(g.split >= 0 && g.split < 256);
  }
  for (const p of [1, 0, -0.5, 2 ** -32, NaN, Infinity, 1.5]) assert.throws(() => gradeForFpp(p), RangeError, String(p));
  assert.deepEqual(gradeForFpp(2 ** -31), { k: 31, split: 0, fpp: 2 ** -31 });
  assert.equal(gradeForFpp(0.999).k, 0);
});

// --- Damaged bodies ------------------------------------------------------------------------

const BCR2 = [0x42, 0x43, 0x52, 0x32];
const small = () => fromHex(vectors.filters[1].body); // 3 IDs, k = 6, split = 185, one shard a part
const kZero = () => fromHex(vectors.filters[5].body); // k = 0, split = 205: part B has no rows

for (const [name, make, why] of [
  ["a body shorter than the header", () => Uint8Array.of(...BCR2, 6), /shorter than the header/],
  ["another magic", () => Object.assign(small(), { 3: 0x31 }), /magic/],
  ["k = 32", () => Object.assign(small(), { 4: 32, 5: 0 }), /k = 32/],
  ["k = 31 with a split", () => Uint8Array.of(...BCR2, 31, 1, 0, 0, 0), /k = 31, split = 1/],
  ["sA nonzero with split 0", () => Uint8Array.of(...BCR2, 6, 0, 1, 1, 0, 1, 0), /sA = 1 with split = 0/],
  ["a varint not minimally encoded", () => Uint8Array.of(...BCR2, 6, 185, 0x80, 0x00, 0, 0), /n is not minimally encoded/],
  ["a varint of 2^32", () => Uint8Array.of(...BCR2, 6, 185, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0), /n is 2\^32 or more/],
  ["a varint longer than 5 bytes", () => Uint8Array.of(...BCR2, 6, 185, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0), /sA is longer than 5 bytes/],
  ["a header ending inside a varint", () => Uint8Array.of(...BCR2, 6, 185, 0, 0, 0x81), /ends inside sB/],
  ["a header ending inside a shard", () => Uint8Array.of(...BCR2, 6, 185, 0, 0, 1, 0x80, 0x01), /ends inside shard 0's seed/],
  ["more shards than the header holds", () => Uint8Array.of(...BCR2, 6, 185, 9, 5, 5, 1, 0), /10 shards do not fit/],
  ["a part B with rows at k = 0", () => Object.assign(kZero(), { 13: 1 }), /part B has m = 1 with k = 0/],
  ["a solution a byte short", () => small().subarray(0, -1), /expected 3/],
  ["a solution a byte long", () => Uint8Array.of(...small(), 0), /expected 3/],
  ["a padding bit set", () => Object.assign(small(), { 15: 0x12 }), /padding bits past the 20 solution bits/],
]) {
  test(`a ribbon2 body with ${name} is refused`, () => {
    assert.throws(() => Ribbon2.fromBytes(make()), (e) => e instanceof DecodeError && why.test(e.message));
  });
}

test("the edges of a valid header decode: no key, k = 31, an ArrayBuffer", async () => {
  const empty = Ribbon2.fromBytes(Uint8Array.of(...BCR2, 31, 0, 0, 0, 0));
  assert.deepEqual([empty.n, empty.k, empty.split, empty.fpp], [0, 31, 0, 2 ** -31]);
  assert.equal(await empty.contains("user:1000"), false);
  const small3 = Ribbon2.fromBytes(small().buffer);
  assert.ok(await small3.contains("user:1000"));
  // The last byte's padding is its top 4 bits: the low ones are solution.
  assert.equal(small()[15], 0x01);
});

// --- The client ----------------------------------------------------------------------------

test("Client#ribbon2 asks for the hour's .ribbon2 as version 2 at the fpp given, and keeps it", async () => {
  const seen = [];
  const f = vectors.filters[3];
  const fetch = async (url, init) => {
    seen.push([url, init?.headers?.accept]);
    return new Response(fromHex(f.body), { status: 200, headers: { "content-type": "application/vnd.bloomcast.ribbon; v=2" } });
  };
  const client = new Client("http://bloomcast.test", { fetch });
  const first = await client.ribbon2("2008-09-03T05:00:00Z", { fpp: 0.001 });
  const again = await client.ribbon2("2008-09-03T05:59:00Z", { fpp: 0.001 });
  const target = await client.ribbon2("2008-09-03T05:00:00Z");
  assert.deepEqual(seen, [
    ["http://bloomcast.test/2008/09/03/05.ribbon2?fpp=1e-3", "application/vnd.bloomcast.ribbon; v=2"],
    ["http://bloomcast.test/2008/09/03/05.ribbon2", "application/vnd.bloomcast.ribbon; v=2"],
  ]);
  assert.equal(again, first);
  assert.ok(target instanceof Ribbon2);
  assert.equal(client.stats.cacheHits, 1);
  assert.ok(await first.contains(membersOf(f)[0]));
});

test("Client#ribbon2 checks Repr-Digest and refuses a damaged body", async () => {
  const body = fromHex(vectors.filters[2].body);
  const digest = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", body))));
  const serve = (bytes, header) => async () => new Response(bytes, { headers: { "repr-digest": `sha-256=:${header}:` } });
  const good = new Client("http://bloomcast.test", { fetch: serve(body, digest) });
  assert.ok((await good.ribbon2("2008-09-03T05:00:00Z")) instanceof Ribbon2);
  const altered = Uint8Array.from(body);
  altered[altered.length - 1] ^= 1;
  const bad = new Client("http://bloomcast.test", { fetch: serve(altered, digest) });
  await assert.rejects(bad.ribbon2("2008-09-03T05:00:00Z"), (e) => e instanceof DecodeError && /Repr-Digest/.test(e.message));
  const broken = new Client("http://bloomcast.test", { fetch: async () => new Response(fromHex(vectors.filters[1].body).subarray(0, -1)) });
  await assert.rejects(broken.ribbon2("2008-09-03T05:00:00Z"), (e) => e instanceof DecodeError && /expected/.test(e.message));
});

test("the predicted size of a .ribbon2 body is within a few bytes of the vectors'", () => {
  for (const f of vectors.filters) {
    const predicted = ribbon2Bytes(f.members.count, f.k, f.split);
    const actual = f.body.length / 2;
    assert.ok(predicted >= actual - 4 && predicted <= actual + 16 + actual / 100, `${f.members.count} IDs: ${predicted} for ${actual}`);
  }
  assert.equal(ribbon2Bytes(0, 7, 0), 12);
});

test("cheapestForm offers version 2 ribbons on the grid with the option, version 1 without", () => {
  const cases = [
    [280, 45754, 10240],
    [300, 1, 10240],
    [300, 100, 10240],
    [3000, 45754, 0],
    [9000, 1000, 10240],
    [200, 7, 10240],
  ];
  for (const [count, followed, cost] of cases) {
    const v1 = cheapestForm(count, 0.01, followed, cost);
    const v2 = cheapestForm(count, 0.01, followed, cost, { ribbon2: true });
    assert.equal(v1.form, "ribbon", `${count}, ${followed}`);
    assert.equal(v2.form, "ribbon2", `${count}, ${followed}`);
    assert.ok(v2.expected < v1.expected, `${count}, ${followed}: ${v2.expected} < ${v1.expected}`);
    const q = -4 * Math.log2(v2.fpp);
    assert.ok(Number.isInteger(Math.round(q)) && Math.abs(q - Math.round(q)) < 1e-9 && q >= 16 && q <= 96, `q = ${q}`);
    assert.equal(v2.fpp, 2 ** -(Math.round(q) / 4));
    const grade = gradeForFpp(v2.fpp);
    assert.deepEqual([v2.k, v2.split, v2.gradeFpp], [grade.k, grade.split, grade.fpp]);
    assert.equal(v2.bytes, ribbon2Bytes(count, grade.k, grade.split));
    assert.equal(v2.expected, v2.bytes + followed * v2.fpp * cost);
  }
  // Following one ID at no cost a fetch: the coarsest grid point.
  assert.equal(cheapestForm(3000, 0.01, 45754, 0, { ribbon2: true }).fpp, 2 ** -4);
  // Unchanged without the option (ribbon.test.js's figures), and no ribbon at all when left out.
  assert.equal(cheapestForm(280, 0.01, 45754).r, 23);
  assert.equal(cheapestForm(280, 0.01, 45754, 10240, { ribbon2: false }).r, 23);
  assert.equal(cheapestForm(280, 0.01, 45754, 10240, { ribbon2: true, ribbons: false }).form, "bloom");
  // An exact body still wins when it costs no more (alone for IDs declared registered, else
  // refining a version 2 ribbon at the target), with version 2 as what to read otherwise.
  const exact = cheapestForm(280, 0.01, 45754, 10240, { ribbon2: true, exact: 100, registered: true });
  assert.equal(exact.form, "exact");
  assert.equal(exact.otherwise.form, "ribbon2");
  const refined = cheapestForm(280, 0.01, 45754, 10 ** 6, { ribbon2: true, exact: 100 });
  assert.deepEqual([refined.form, refined.under.form, refined.otherwise.form], ["refined", "ribbon2", "ribbon2"]);
  assert.ok(refined.under.gradeFpp <= 0.01);
});

/** A server of one closed hour (05:00, `filter`) and the open one (06:00), logging requests. */
function server(f, index, { ribbon2 = true } = {}) {
  const open = Filter.empty(1024, 7);
  const seen = [];
  const fetch = async (url) => {
    const path = new URL(url).pathname + new URL(url).search;
    seen.push(path);
    if (path === "/") {
      return Response.json({
        current: { hour: "2008-09-03T06:00:00Z" }, target_fpp: 0.01, capacity: 3000,
        hours: [{ hour: "2008-09-03T05:00:00Z", count: f.members.count, complete: true }],
        ...index,
      });
    }
    if (ribbon2 && path.startsWith("/2008/09/03/05.ribbon2")) return new Response(fromHex(f.body));
    if (path === "/2008/09/03/05" || path === "/2008/09/03/06") {
      const filter = Filter.empty(20000, 7);
      if (path === "/2008/09/03/05") for (const id of membersOf(f)) await filter.insert(id);
      const hour = path === "/2008/09/03/05" ? "2008-09-03T05:00:00Z" : "2008-09-03T06:00:00Z";
      const body = path === "/2008/09/03/05" ? filter : open;
      return Response.json({ hour, complete: hour.endsWith("05:00:00Z"), count: 0, m: body.m, k: 7, hash: "sha1-km32", fpp: 0, filter: body.toHex() });
    }
    return Response.json({ error: "not_found", message: "no such thing" }, { status: 404 });
  };
  // The client's clock in the stub's open hour (2008), for its lag bound.
  return { seen, client: new Client("http://bloomcast.test", { fetch, clock: () => Date.parse("2008-09-03T06:10:00Z") }) };
}

const f1000 = vectors.filters[3]; // 1000 IDs, k = 9, split = 250
const absentOut = f1000.absent.filter((a) => !a.contains).map((a) => a.id).slice(0, 3);
const followed = [...membersOf(f1000).slice(0, 5), ...absentOut];
const hourly = { strategy: "hourly", fetchCost: 10240 };
const hits = [{ from: "2008-09-03T05:00:00Z", to: "2008-09-03T05:00:00Z", ids: membersOf(f1000).slice(0, 5) }];

test("changedSince by hour reads closed hours as .ribbon2 where the index lists version 2", async () => {
  const { seen, client } = server(f1000, { ribbon_versions: [1, 2] });
  const changes = await client.changedSince(followed, "2008-09-03T05:00:00Z", hourly);
  const choice = cheapestForm(1000, 0.01, followed.length, 10240, { ribbon2: true });
  assert.equal(choice.form, "ribbon2");
  assert.deepEqual(seen, ["/", `/2008/09/03/05.ribbon2?fpp=${choice.fpp.toExponential()}`, "/2008/09/03/06"]);
  assert.deepEqual([...changes], hits);
});

test("changedSince by hour reads version 1 ribbons where the index lists only 1, or no versions", async () => {
  for (const index of [{ ribbon_versions: [1] }, {}]) {
    const { seen, client } = server(f1000, index);
    await client.changedSince(followed, "2008-09-03T05:00:00Z", hourly);
    const r = cheapestForm(1000, 0.01, followed.length, 10240).r;
    assert.deepEqual(seen.slice(0, 2), ["/", `/2008/09/03/05.ribbon?fpp=${(2 ** -r).toExponential()}`], JSON.stringify(index));
  }
});

test("changedSince falls back to the v1 filter when a .ribbon2 is not served (404)", async () => {
  const { seen, client } = server(f1000, { ribbon_versions: [1, 2] }, { ribbon2: false });
  const changes = await client.changedSince(followed, "2008-09-03T05:00:00Z", hourly);
  assert.equal(seen.length, 4);
  assert.match(seen[1], /^\/2008\/09\/03\/05\.ribbon2\?fpp=/);
  assert.deepEqual(seen.slice(2), ["/2008/09/03/05", "/2008/09/03/06"]);
  // The v1 filter (m = 20000 for 1000 IDs) may add an absent ID; the members are all there.
  assert.deepEqual(changes[0].ids.slice(0, 5), hits[0].ids);
});
