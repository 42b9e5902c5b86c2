// Every entry of docs/test-vectors.json, plus the decoding rules of PROTOCOL.md section 6.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Filter, keyOf, positions, optimalParams, sizedParams, expectedFpp, parseDocument, DecodeError, SHA1_KM32 } from "../bloomcast.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/test-vectors.json", import.meta.url), "utf8"));

test("the vectors use the one hash scheme", () => {
  assert.equal(vectors.hash, SHA1_KM32);
});

for (const v of vectors.keys) {
  test(`key ${JSON.stringify(v.id).slice(0, 40)} m=${v.m} k=${v.k}`, async () => {
    const key = await keyOf(v.id);
    assert.equal(key.h1, v.h1);
    assert.equal(key.h2, v.h2);
    assert.deepEqual(positions(key, v.m, v.k), v.positions);
  });
}

for (const v of vectors.filters) {
  test(`filter of ${v.ids.length} IDs m=${v.m} k=${v.k}`, async () => {
    const filter = Filter.empty(v.m, v.k);
    for (const id of v.ids) await filter.insert(id);
    assert.equal(filter.toHex(), v.hex);
    const decoded = Filter.fromHex(v.hex, v.m, v.k);
    for (const id of v.ids) assert.ok(await decoded.mayContain(id), id);
    assert.ok(Math.abs(decoded.fpp() - v.fpp) <= v.fpp * 1e-9, `fpp ${decoded.fpp()} vs ${v.fpp}`);
  });
}

for (const v of vectors.sizing) {
  test(`sizing n=${v.n} p=${v.p}`, () => {
    assert.deepEqual(optimalParams(v.n, v.p), { m: v.m, k: v.k });
  });
}

for (const v of vectors.sized) {
  test(`the rule for n=${v.n} p=${v.p}`, () => {
    assert.deepEqual(sizedParams(v.n, v.p), { m: v.m, k: v.k });
    const e = expectedFpp(v.m, v.k, Math.max(v.n, 1));
    assert.ok(Math.abs(e - v.expected) <= v.expected * 1e-9, `${e} vs ${v.expected}`);
  });
}

test("the decoding rules of section 6 reject bad filters", () => {
  const good = { complete: true, count: 1, m: 100, k: 7, hash: SHA1_KM32, fpp: 8e-9, filter: "04001040400001000400100000" };
  assert.equal(parseDocument(good).filter.setBits(), 7);
  const bad = [
    { hash: "SHA1-KM32" },
    { m: 7 },
    { m: 4294967296 },
    { k: 0 },
    { k: 65 },
    { filter: "0400104040000100040010000" },
    { filter: "04001040400001000400100000zz" },
    { filter: "04001040400001000400100G00" },
    { filter: "04001040400001000400100010" },
    { filter: "0A001040400001000400100000" },
    { complete: "true" },
    { count: undefined },
  ];
  for (const change of bad) {
    assert.throws(() => parseDocument({ ...good, ...change }), DecodeError, JSON.stringify(change));
  }
  // Raw hex may carry a trailing newline and upper case.
  assert.equal(Filter.fromHex("04001040400001000400100000\n".toUpperCase(), 100, 7, { lenient: true }).setBits(), 7);
});
