// Every entry of docs/exact-vectors.json, and the decoding rules of PROTOCOL.md section 14.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Exact, exactRow, exactSalt, exactSelector, mix64, keyOf, DecodeError } from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/exact-vectors.json", import.meta.url), "utf8"));

const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));

test("the vectors use the one hash scheme", () => {
  assert.equal(vectors.hash, "sha1-km32");
});

for (const v of vectors.rows) {
  test(`row of ${JSON.stringify(v.id).slice(0, 30)} tag=${v.tag} seed=${v.seed} m=${v.m}`, async () => {
    const key = await keyOf(v.id);
    assert.deepEqual(key, { h1: v.h1, h2: v.h2 });
    const row = exactRow(key, v.tag, v.seed, v.m);
    assert.equal(row.salt, BigInt(`0x${v.salt}`), "salt");
    assert.equal(exactSalt(v.tag, v.seed), BigInt(`0x${v.salt}`), "exactSalt");
    assert.equal(row.selector, v.selector, "selector");
    assert.equal(exactSelector(key), v.selector, "exactSelector");
    assert.equal(row.start, v.start, "start");
    assert.equal(v.coeff.length, 32);
    assert.equal(row.coeff, BigInt(`0x${v.coeff}`), "coeff");
    assert.equal(v.fingerprint.length, 16);
    assert.equal(row.fingerprint, BigInt(`0x${v.fingerprint}`), "fingerprint");
  });
}

test("the query's 32-bit arithmetic is section 14's 64-bit formulas on many keys", () => {
  // exactRow computes with 32-bit halves; this is the BigInt transcription of the section.
  const G = 0x9e3779b97f4a7c15n;
  const M = (1n << 64n) - 1n;
  const salt = (tag, seed) => mix64((BigInt(tag) << 32n) | BigInt(seed));
  let state = 987654321n;
  const ms = [0, 1, 2, 31, 32, 33, 63, 64, 65, 95, 96, 127, 128, 129, 1000, 2 ** 20, 2 ** 32 - 1];
  for (let i = 0; i < 3000; i++) {
    state = (state + G) & M;
    const z = mix64(state);
    const extreme = [{ h1: 0, h2: 0 }, { h1: 0xffffffff, h2: 0xffffffff }, { h1: 0x80000000, h2: 1 }][i];
    const key = extreme ?? { h1: Number(z >> 32n), h2: Number(z & 0xffffffffn) };
    const big = (BigInt(key.h1) << 32n) | BigInt(key.h2);
    const tag = 1 + (i % 3);
    const seed = Number(mix64(z) & 0xffffffffn);
    const m = i < ms.length ? ms[i] : Number(mix64(z ^ 1n) % 5000000n);
    const a = mix64(big ^ salt(tag, seed));
    const b = mix64(a ^ G);
    const c = mix64(b ^ G);
    const d = mix64(c ^ G);
    const w = Math.min(m, 128);
    const mask = (1n << BigInt(w)) - 1n;
    const row = exactRow(key, tag, seed, m);
    assert.equal(row.salt, salt(tag, seed));
    assert.equal(row.selector, Number(mix64(big ^ salt(4, 0)) >> 56n));
    assert.equal(row.start, Number((a * BigInt(m - w + 1)) >> 64n));
    assert.equal(row.coeff, m === 0 ? 0n : (((c << 64n) | b) & mask) | 1n, `m=${m}`);
    assert.equal(row.fingerprint, d);
  }
});

for (const v of vectors.bodies) {
  test(`exact body over ${v.universe} IDs, ${v.changed.length} changed${v.complemented ? " (complemented)" : ""}: every ID answers exactly`, async () => {
    const exact = Exact.fromBytes(fromHex(v.body));
    assert.equal(exact.k, v.k);
    assert.equal(exact.split, v.split);
    assert.equal(exact.universe, v.universe);
    assert.equal(exact.changedCount, v.changed.length);
    assert.equal(typeof v.complemented, "boolean");
    assert.equal(exact.complemented, v.complemented);
    assert.equal(fromHex(v.body)[4], v.complemented ? 2 : 1);
    assert.deepEqual(exact.rows, v.rows);
    assert.deepEqual(exact.seeds, v.seeds);
    assert.equal(exact.size, v.body.length / 2);
    const changed = new Set(v.changed);
    for (let i = 0; i < v.universe; i++) {
      const id = `u:${i}`;
      assert.equal(await exact.changed(id), changed.has(id), id);
    }
    // The sync key-based query answers alike.
    const key = await keyOf("u:0");
    assert.equal(exact.changedKey(key), changed.has("u:0"));
  });
}

// Universe 300: rows 8, 4, 27 at k = 3 (71 solution bits, one padding bit).
const body = () => fromHex(vectors.bodies.find((v) => v.universe === 300).body);
const vector = (universe, complemented) => vectors.bodies.find((v) => v.universe === universe && v.complemented === complemented);
// A body from header fields, as section 14 lays it out: magic, version, k, split, then
// eight LEB128 varints, then the solution bytes.
const MAGIC = [0x42, 0x43, 0x58, 0x31];
const leb = (v) => {
  const out = [];
  do {
    let b = v % 128;
    v = Math.floor(v / 128);
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
};
const make = (k, split, fields, solution) => Uint8Array.from([...MAGIC, 1, k, split, ...fields.flatMap(leb), ...solution]);

for (const [offset, value, why] of [
  [0, 0x58, /magic/],
  [3, 0x32, /magic/],
  [4, 0, /version 0 \(this client knows 1 and 2\)/],
  [4, 3, /version 3 \(this client knows 1 and 2\)/],
  [4, 255, /version 255 \(this client knows 1 and 2\)/],
  [5, 32, /k = 32 exceeds 31/],
  [5, 255, /k = 255 exceeds 31/],
]) {
  test(`an exact body with byte ${offset} = ${value} is refused (${why.source})`, () => {
    const broken = body();
    broken[offset] = value;
    assert.throws(() => Exact.fromBytes(broken), (e) => e instanceof DecodeError && why.test(e.message));
  });
}

test("split is one byte: 255 is allowed", () => {
  const edge = body();
  edge[6] = 255;
  assert.equal(Exact.fromBytes(edge).split, 255);
});

test("the header's varints are minimal and below 2^32", () => {
  const good = make(0, 0, [3, 1, 0, 0, 3, 0, 0, 0], [0]);
  assert.deepEqual(Exact.fromBytes(good).rows, [0, 0, 3]);
  const cases = [
    [Uint8Array.from([...MAGIC, 1, 0, 0, 0x80, 0x00]), /N is not minimally encoded/],
    [Uint8Array.from([...MAGIC, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f]), /N is 2\^32 or more/],
    [Uint8Array.from([...MAGIC, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), /N is longer than 5 bytes/],
    [Uint8Array.from([...MAGIC, 1, 0, 0, 3, 1]), /the header ends inside mA/],
    [new Uint8Array(6), /shorter than the header/],
  ];
  for (const [bytes, why] of cases) {
    assert.throws(() => Exact.fromBytes(bytes), (e) => e instanceof DecodeError && why.test(e.message), why.source);
  }
});

test("part B rows when k = 0 are refused", () => {
  assert.equal(Exact.fromBytes(make(0, 0, [3, 1, 0, 0, 3, 0, 0, 0], [0])).k, 0);
  const broken = make(0, 0, [3, 1, 0, 1, 3, 0, 0, 0], [0]);
  assert.throws(() => Exact.fromBytes(broken), (e) => e instanceof DecodeError && /mB = 1 .*k = 0/.test(e.message));
});

test("a wrong length and set padding bits are refused", () => {
  const good = body();
  assert.equal(Exact.fromBytes(good).rows.join(), "8,4,27");
  const n = good.length;
  assert.throws(() => Exact.fromBytes(good.subarray(0, -1)), (e) => e instanceof DecodeError && new RegExp(`length ${n - 1}, expected ${n}`).test(e.message));
  const longer = new Uint8Array(n + 1);
  longer.set(good);
  assert.throws(() => Exact.fromBytes(longer), new RegExp(`length ${n + 1}, expected ${n}`));
  const padded = body();
  padded[padded.length - 1] |= 0x80;
  assert.throws(() => Exact.fromBytes(padded), (e) => e instanceof DecodeError && /padding bits/.test(e.message));
});

test("the empty body (no universe) decodes and answers false", async () => {
  const exact = Exact.fromBytes(fromHex(vectors.bodies[0].body));
  assert.equal(exact.universe, 0);
  assert.equal(await exact.changed("anything"), false);
  assert.equal(exact.fpp(), 0);
});

// --- Version 2: complemented bodies ------------------------------------------------------

test("the vectors hold complemented bodies exactly where more than half the universe changed", () => {
  const held = vectors.bodies.filter((v) => v.complemented).map((v) => `${v.universe}/${v.changed.length}`);
  for (const want of ["20/17", "400/332", "3000/3000"]) assert.ok(held.includes(want), want);
  for (const v of vectors.bodies) assert.equal(v.complemented, 2 * v.changed.length > v.universe, `${v.universe}`);
});

test("a complemented body decodes and answers exactly, by key and by ID", async () => {
  const v = vector(400, true);
  const exact = Exact.fromBytes(fromHex(v.body));
  // r is the IDs that changed, not the (fewer) unchanged ones its levels hold.
  assert.deepEqual([exact.complemented, exact.universe, exact.changedCount], [true, 400, 332]);
  const changed = new Set(v.changed);
  for (let i = 0; i < 400; i++) {
    const id = `u:${i}`;
    const key = await keyOf(id);
    const answers = [await exact.changed(id), exact.changedKey(key), exact.containsKey(key), await exact.mayContain(id)];
    assert.deepEqual(answers, Array(4).fill(changed.has(id)), id);
  }
  // Every ID changed: the levels hold nothing, the body is its header, every ID answers changed.
  const every = Exact.fromBytes(fromHex(vector(3000, true).body));
  assert.deepEqual([every.complemented, every.rows], [true, [0, 0, 0]]);
  for (let i = 0; i < 3000; i++) assert.equal(await every.changed(`u:${i}`), true, `u:${i}`);
});

for (const universe of [...new Set(vectors.bodies.filter((v) => !v.complemented).map((v) => v.universe))]) {
  test(`version 2 negates every answer of the version 1 body over ${universe} IDs`, async () => {
    // Byte 4 alone says whether the levels' answers are negated: the rest of the body,
    // its header included, reads the same.
    const bytes = fromHex(vector(universe, false).body);
    const plain = Exact.fromBytes(bytes);
    const flippedBytes = bytes.slice();
    flippedBytes[4] = 2;
    const flipped = Exact.fromBytes(flippedBytes);
    assert.deepEqual([plain.complemented, flipped.complemented], [false, true]);
    for (const field of ["k", "split", "universe", "changedCount", "rows", "seeds", "size"]) {
      assert.deepEqual(flipped[field], plain[field], field);
    }
    const ids = [...Array.from({ length: universe }, (_, i) => `u:${i}`), ...Array.from({ length: 50 }, (_, i) => `nobody:${i}`)];
    for (const id of ids) {
      const key = await keyOf(id);
      assert.equal(await flipped.changed(id), !(await plain.changed(id)), id);
      assert.equal(flipped.containsKey(key), !plain.containsKey(key), id);
    }
  });
}
