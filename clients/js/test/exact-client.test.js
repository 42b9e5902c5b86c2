// Client#exact and changedSince's choice of exact hours (PROTOCOL.md section 14) against
// a stub server (node:http) publishing the hours of docs/chain-vectors.json, three of them
// with an exact body of docs/exact-vectors.json (signed with the chain's key, RFC 8032's
// test 1): the client picks exact where it pays and then answers exactly, forcing exact
// without a universe is refused, and a body altered on the way is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import {
  Client,
  Exact,
  Filter,
  DecodeError,
  ProtocolError,
  Refined,
  StatusError,
  VerificationError,
  cheapestForm,
  cheapestPlan,
  cheapestWithin,
  floorBits,
  keyOf,
  sizedParams,
  universeAtMost,
  SHA1_KM32,
} from "../bloomcast.js";
import { exactMessage, fromHex, toHex, hourIndex, keyId } from "../verify.js";

const read = (name) => JSON.parse(readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8"));
const chain = read("chain-vectors.json");
const vectors = read("exact-vectors.json");
const pathOf = (hour) => `/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;

const [H13, H14, H15, H16] = chain.hours.map((h) => h.hour);
const OPEN = "2025-12-20T17:00:00Z";
// The clients' clock: ten minutes into the stub's open hour.
const clock = () => Date.parse(OPEN) + 600e3;
// Exact bodies: H14 over u:0..u:299 (12 changed), H15 over u:0..u:999 (200 changed),
// H16 over u:0..u:1999 (1000 changed; not in the index's hours).
const EXACT = {
  [H14]: vectors.bodies.find((v) => v.universe === 300),
  [H15]: vectors.bodies.find((v) => v.universe === 1000),
  [H16]: vectors.bodies.find((v) => v.universe === 2000),
};
const FOLLOWED = Array.from({ length: 300 }, (_, i) => `u:${i}`); // in every universe above

const signingKey = crypto.subtle.importKey(
  "pkcs8",
  fromHex(`302e020100300506032b657004220420${chain.seed}`),
  { name: "Ed25519" },
  false,
  ["sign"],
);

async function signExact(hour, body) {
  const h = chain.hours.find((x) => x.hour === hour);
  const message = exactMessage(hourIndex(hour), fromHex(h.header), createHash("sha256").update(body).digest());
  return toHex(new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, await signingKey, message)));
}

const reprDigest = (bytes) => `sha-256=:${createHash("sha256").update(bytes).digest("base64")}:`;

/** v1 documents of the exact hours, their filters holding the IDs that changed (sized as a server sizes them at 0.01). */
async function consistentHours() {
  const docs = {};
  for (const [hour, v] of Object.entries(EXACT)) {
    const { m, k } = sizedParams(v.changed.length, 0.01);
    const filter = Filter.empty(m, k);
    for (const id of v.changed) await filter.insert(id);
    docs[hour] = { hour, complete: true, count: v.changed.length, m, k, hash: SHA1_KM32, fpp: filter.fpp(), filter: filter.toHex() };
  }
  return docs;
}

/**
 * A stub bloomcast server. `exactSince`: the index's exact_since (null: no universe).
 * `tamper`: "body" flips a bit of every exact body after its Repr-Digest is computed;
 * "resigned" flips it before (a consistent body whose signature no longer verifies).
 * `consistent`: the exact hours' v1 filters hold the IDs their exact bodies say changed
 * (else they are the chain vectors' hours, which an exact body alone answers without).
 * `range`: headers of `/since/YYYY/MM/DD/HH.exact` from H14 (section 14, "Ranges"), served
 * with H16's body (its universe, 2,000 IDs, holds the others'); a header null is left
 * out. Without it the since-range is 404. `listed`: maps each hour the index lists (as
 * planning reads them; the bodies served are the same). `refuse`: every sealed hour's
 * exact body is 406 (a build over the server's budget).
 */
async function stub({ exactSince = H14, tamper = null, signed = false, countHeader = null, consistent = false, range = null, listed = (h) => h, refuse = false } = {}) {
  const v1 = consistent ? await consistentHours() : {};
  const seen = [];
  const index = {
    service: "bloomcast", protocol: 1, hash: SHA1_KM32, target_fpp: 0.01, capacity: 3000, retention_hours: 720,
    genesis: H13, current: { hour: OPEN, url: pathOf(OPEN) }, exact_since: exactSince,
    hours: [
      { hour: OPEN, url: pathOf(OPEN), count: 0, complete: false },
      { hour: H15, url: pathOf(H15), count: 200, complete: true, exact_bytes: EXACT[H15].body.length / 2 },
      { hour: H14, url: pathOf(H14), count: 12, complete: true, exact_bytes: EXACT[H14].body.length / 2 },
    ].map(listed),
  };
  const open = Filter.empty(1024, 7);
  const server = createServer(async (req, res) => {
    const { pathname } = new URL(req.url, "http://stub");
    seen.push(req.url);
    const json = (body, status = 200, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    };
    const notFound = () => json({ error: "not_found", message: "no such hour" }, 404);
    if (pathname === "/") return json(index);
    if (pathname === "/.well-known/bloomcast.json") return notFound();
    if (pathname.startsWith("/chain/")) {
      const h = chain.hours.find((x) => pathOf(x.hour) === pathname.slice(6));
      if (!h) return notFound();
      return json([{ hour: h.hour, digest: h.digest, prev: h.prev, header: h.header, signature: h.signature, key_id: null }]);
    }
    if (pathname === pathOf(OPEN)) {
      return json({ hour: OPEN, complete: false, count: 0, m: 1024, k: 7, hash: SHA1_KM32, fpp: 0, filter: open.toHex() });
    }
    if (pathname === `${pathOf(OPEN)}.exact`) return json({ error: "not_acceptable", message: "the open hour has no exact body" }, 406);
    if (pathname === `/since${pathOf(H14)}.exact` && range) {
      const v = EXACT[H16];
      const body = fromHex(v.body);
      const headers = {
        "content-type": "application/vnd.bloomcast.exact",
        "repr-digest": reprDigest(body),
        "bloom-from": H14,
        "bloom-to": H16,
        "bloom-count": String(v.changed.length),
        "bloom-universe": String(v.universe),
        ...range,
      };
      res.writeHead(200, Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== null)));
      return res.end(body);
    }
    const exact = /^(\/\d{4}\/\d{2}\/\d{2}\/\d{2})\.exact$/.exec(pathname);
    if (exact) {
      const hour = chain.hours.find((x) => pathOf(x.hour) === exact[1])?.hour;
      const v = EXACT[hour];
      if (!v || exactSince === null) return notFound();
      if (refuse) return json({ error: "not_acceptable", message: "the exact form needs more memory to build than this server's build budget" }, 406);
      let body = fromHex(v.body);
      if (tamper === "resigned") body[body.length - 1] ^= 1;
      const headers = {
        "content-type": "application/vnd.bloomcast.exact",
        "repr-digest": reprDigest(body),
        "bloom-hour": hour,
        "bloom-count": countHeader ?? String(v.changed.length),
        "bloom-universe": String(v.universe),
        "bloom-complete": "true",
      };
      if (signed) {
        const h = chain.hours.find((x) => x.hour === hour);
        headers["bloom-signature"] = `${await signExact(hour, fromHex(v.body))}; keyid="${await keyId(fromHex(chain.public_key))}"`;
        headers["bloom-prev-header"] = h.prev;
      }
      if (tamper === "body") {
        body = Uint8Array.from(body);
        body[body.length - 1] ^= 1;
      }
      res.writeHead(200, headers);
      return res.end(body);
    }
    const h = chain.hours.find((x) => pathOf(x.hour) === pathname);
    if (h && v1[h.hour]) return json(v1[h.hour]);
    if (h) {
      const headers = signed ? { "bloom-prev-header": h.prev, "bloom-signature": h.signature } : {};
      return json({ hour: h.hour, complete: true, count: h.ids.length, m: h.m, k: h.k, hash: SHA1_KM32, fpp: 0.01, filter: h.bin_hex, digest: h.digest }, 200, headers);
    }
    return notFound(); // ribbons: none served here
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, seen, close: () => new Promise((ok) => server.close(ok)) };
}

async function withStub(options, body) {
  const server = await stub(options);
  try {
    return await body(server);
  } finally {
    await server.close();
  }
}

/** What changedSince must answer for FOLLOWED from H13: exactly the changed IDs of each exact hour. */
const expected = [H14, H15, H16]
  .map((hour) => ({ from: hour, to: hour, ids: FOLLOWED.filter((id) => EXACT[hour].changed.includes(id)), exact: true }))
  .filter((c) => c.ids.length);

test("Client#exact fetches the hour's .exact, checks it, and keeps it", () =>
  withStub({}, async ({ base, seen }) => {
    const client = new Client(base, { clock });
    const exact = await client.exact(H15);
    assert.ok(exact instanceof Exact);
    assert.equal(exact.hour, H15);
    assert.equal(exact.universe, 1000);
    assert.equal(exact.changedCount, 200);
    for (let i = 0; i < 1000; i++) assert.equal(await exact.changed(`u:${i}`), i % 5 === 0, `u:${i}`);
    assert.equal(await client.exact("2025-12-20T15:59:00Z"), exact);
    assert.deepEqual(seen, ["/2025/12/20/15.exact"]);
  }));

test("no exact body is null (404), the open hour a StatusError 406", () =>
  withStub({}, async ({ base }) => {
    const client = new Client(base, { clock });
    assert.equal(await client.exact(H13), null);
    await assert.rejects(client.exact(OPEN), (e) => e instanceof StatusError && e.status === 406);
  }));

test("Client#sinceExact reads a since-range's exact body, checked against its headers, never kept", () =>
  withStub({ range: {} }, async ({ base, seen }) => {
    const client = new Client(base, { clock, registered: true });
    const { exact, from, to } = await client.sinceExact("2025-12-20T14:30:00Z");
    assert.ok(exact instanceof Exact);
    assert.deepEqual([from, to, exact.universe, exact.changedCount], [H14, H16, 2000, EXACT[H16].changed.length]);
    for (const id of ["u:0", "u:1", "u:1999"]) assert.equal(await exact.changed(id), EXACT[H16].changed.includes(id), id);
    await client.sinceExact(H14);
    assert.deepEqual(seen, [`/since${pathOf(H14)}.exact`, `/since${pathOf(H14)}.exact`]);
    // From an hour it does not serve (before exact_since here), a StatusError 404.
    await assert.rejects(client.sinceExact(H13), (e) => e instanceof StatusError && e.status === 404);
  }));

test("Client#sinceExact refuses a range not from the hour asked, one naming no hours, and a count not the body's", async () => {
  const cases = [
    [{ "bloom-from": H15 }, ProtocolError, /covers .*15:00:00Z .. .*16:00:00Z, not a range from .*14:00:00Z/],
    [{ "bloom-to": H13 }, ProtocolError, /not a range from/],
    [{ "bloom-from": null, "bloom-to": null }, ProtocolError, /no Bloom-From and Bloom-To/],
    [{ "bloom-from": "2025-12-20T14:30:00Z" }, ProtocolError, /bloom-from is not an hour/],
    [{ "bloom-count": "999" }, DecodeError, /bloom-count says 999/],
    [{ "bloom-universe": "300" }, DecodeError, /bloom-universe says 300/],
    [{ "repr-digest": reprDigest(new Uint8Array([1])) }, DecodeError, /Repr-Digest/i],
  ];
  for (const [range, type, message] of cases) {
    await withStub({ range }, async ({ base }) => {
      const client = new Client(base, { clock, registered: true });
      await assert.rejects(client.sinceExact(H14), (e) => e instanceof type && message.test(e.message), JSON.stringify(range));
    });
  }
  // One hour named by Bloom-Hour alone is that hour, first and last.
  await withStub({ range: { "bloom-from": null, "bloom-to": null, "bloom-hour": H14 } }, async ({ base }) => {
    const { from, to } = await new Client(base, { clock }).sinceExact(H14);
    assert.deepEqual([from, to], [H14, H14]);
  });
});

test('"auto" bounds an exact range by the universe of the newest complete hour the index lists with a count and exact_bytes', async () => {
  // From H14: H14 (12, 25 bytes) and H15 (200, 116 bytes) as listed, H16 not listed (taken
  // as 3,000, the v1 body's predicted bytes), the open hour. At 1 KiB a wasted fetch the
  // v1 union (7.3 KB) is below the exact bodies summed (8.3 KB with the open hour), not
  // below the bound of H15's universe: N = 1,967, the range's 3,212 in it at most 1.15 x
  // floorBits(1967, 983) bits (4.7 KB with the open hour).
  const bytes = EXACT[H15].body.length / 2;
  const n = universeAtMost(200, bytes);
  assert.ok(floorBits(n, 200) <= 8 * bytes && floorBits(n + 1, 200) > 8 * bytes, `${n}`);
  assert.ok(n >= EXACT[H15].universe, `${n}`); // at least the universe H15's body was built for
  const planned = (universe) =>
    cheapestPlan(
      [
        { count: 12, open: false, heldFpp: null, exact: EXACT[H14].body.length / 2 },
        { count: 200, open: false, heldFpp: null, exact: bytes },
        { count: null, open: false, heldFpp: null, exact: true },
        { count: 0, open: true, cachedCount: null },
      ],
      { targetFpp: 0.01, capacity: 3000, followed: FOLLOWED.length, fetchCost: 1024, registered: true, universe },
    );
  assert.equal(planned(null).plan, "union", JSON.stringify(planned(null)));
  assert.equal(planned(n).plan, "exact", JSON.stringify(planned(n)));
  const auto = { strategy: "auto", fetchCost: 1024 };
  // The newest complete hour listed gives it: not the open hour, were it listed with an
  // exact size (which, read, would allow a universe of 2^40: no bound worth it).
  assert.equal(universeAtMost(5, 1e6), 2 ** 40);
  for (const listed of [(h) => h, (h) => (h.hour === OPEN ? { ...h, count: 5, exact_bytes: 1e6 } : h)]) {
    await withStub({ range: {}, listed }, async ({ base, seen }) => {
      const changes = await new Client(base, { clock, registered: true }).changedSince(FOLLOWED, H14, auto);
      assert.ok(seen.includes(`/since${pathOf(H14)}.exact`), seen.join(" "));
      assert.deepEqual(changes[0], { from: H14, to: H16, ids: FOLLOWED.filter((id) => EXACT[H16].changed.includes(id)), exact: true });
    });
  }
  // No complete hour listed with both: no bound, the v1 union (which this stub does not
  // serve); nor from the open hour, were it listed with them.
  const open = (h) => (h.hour === OPEN ? { ...h, count: 5, exact_bytes: 1e6 } : h);
  for (const listed of [(h) => open({ ...h, complete: false }), ({ exact_bytes, ...h }) => h]) {
    await withStub({ range: {}, listed }, async ({ base, seen }) => {
      await assert.rejects(new Client(base, { clock, registered: true }).changedSince(FOLLOWED, H14, auto), StatusError);
      assert.ok(!seen.some((p) => p.endsWith(".exact")), seen.join(" "));
      assert.ok(seen.some((p) => p.startsWith(`/since${pathOf(H14)}`)), seen.join(" "));
    });
  }
});

test("changedSince by hour stops asking for exact bodies as large as one the server refused (406)", () =>
  withStub({ refuse: true, consistent: true }, async ({ base, seen }) => {
    const client = new Client(base, { clock, registered: true });
    const changes = await client.changedSince(FOLLOWED, H13, { strategy: "hourly" });
    // Every changed ID found in the v1 filters (no false negative), none read exact.
    const found = new Set([...changes].flatMap((c) => c.ids));
    for (const hour of [H14, H15, H16]) for (const id of FOLLOWED.filter((i) => EXACT[hour].changed.includes(i))) assert.ok(found.has(id), id);
    assert.ok([...changes].every((c) => !c.exact), JSON.stringify([...changes]));
    // H14 (12 IDs) refused; H15 (200) and H16 (not listed: the capacity) are at least as large.
    assert.deepEqual(seen.filter((p) => p.endsWith(".exact")), [`${pathOf(H14)}.exact`]);
  }));

test("changedSince by hour reads sealed hours from exact_since as exact bodies alone for IDs declared registered", () =>
  withStub({}, async ({ base, seen }) => {
    const client = new Client(base, { clock, registered: true });
    const changes = await client.changedSince(FOLLOWED, H13, { strategy: "hourly" });
    assert.deepEqual([...changes], expected);
    assert.deepEqual([changes.from, changes.to], [H13, OPEN]);
    const exacts = seen.filter((p) => p.endsWith(".exact"));
    assert.deepEqual(exacts, [H14, H15, H16].map((h) => `${pathOf(h)}.exact`));
    // The hour before exact_since in its cheapest other form (no ribbon here: v1), the open hour v1.
    assert.ok(seen.includes(pathOf(H13)) && seen.includes(pathOf(OPEN)), seen.join(" "));
    assert.ok(!seen.some((p) => p.startsWith(`${pathOf(OPEN)}.`)), seen.join(" "));
  }));

test("form: exact reads every sealed hour exact, even with the union strategy", () =>
  withStub({}, async ({ base, seen }) => {
    const client = new Client(base, { clock, registered: true });
    assert.deepEqual([...(await client.changedSince(FOLLOWED, H14, { form: "exact" }))], expected);
    assert.ok(!seen.some((p) => p.startsWith("/since")), seen.join(" "));
    await assert.rejects(
      client.changedSince(FOLLOWED, H13, { form: "exact" }),
      (e) => e instanceof ProtocolError && e.message.includes(`before the first exact hour, ${H14}`),
    );
    await assert.rejects(client.changedSince(FOLLOWED, H14, { form: "bloom" }), TypeError);
  }));

test("forcing exact without a universe is refused clearly; auto reads the other forms", () =>
  withStub({ exactSince: null }, async ({ base, seen }) => {
    const client = new Client(base, { clock });
    await assert.rejects(
      client.changedSince(FOLLOWED, H14, { strategy: "hourly", form: "exact" }),
      (e) => e instanceof ProtocolError && /exact_since is null/.test(e.message),
    );
    const changes = await client.changedSince(chain.hours[1].ids, H13, { strategy: "hourly" });
    // v1 filters: H14's ID, and false positives (H15's filter of 13 bits flags it too).
    assert.deepEqual(changes[0], { from: H14, to: H14, ids: chain.hours[1].ids });
    assert.ok(changes.every((c) => !c.exact));
    assert.ok(!seen.some((p) => p.endsWith(".exact")), seen.join(" "));
  }));

test("an exact body altered on its way fails its Repr-Digest and is not kept", () =>
  withStub({ tamper: "body" }, async ({ base }) => {
    const client = new Client(base, { clock, registered: true });
    await assert.rejects(client.exact(H15), (e) => e instanceof DecodeError && /Repr-Digest/.test(e.message) && e.message.includes("15.exact"));
    assert.equal(client.cache.size, 0);
    await assert.rejects(client.changedSince(FOLLOWED, H14, { strategy: "hourly" }), /Repr-Digest/);
  }));

test("Bloom-Count must be the body's", () =>
  withStub({ countHeader: "7" }, async ({ base }) => {
    await assert.rejects(new Client(base, { clock }).exact(H15), (e) => e instanceof DecodeError && /bloom-count says 7, the body 200/.test(e.message));
  }));

test("with a pubkey an exact body is verified against its hour's chain header", () =>
  withStub({ signed: true }, async ({ base, seen }) => {
    const client = new Client(base, { clock, pubkey: chain.public_key, registered: true });
    assert.equal((await client.exact(H15)).universe, 1000);
    assert.ok(seen.includes(`/chain${pathOf(H15)}?limit=1`), seen.join(" "));
    // A verifying client reads exact hours too (they are signed), hour by hour. The stub's
    // open hour carries no Bloom-Open-Signature: answered, and said to be unverified.
    const changes = await client.changedSince(FOLLOWED, H13);
    assert.deepEqual([...changes], expected);
    assert.deepEqual([changes.from, changes.to, changes.unverified, changes.checkpoint], [H13, OPEN, [OPEN], null]);
    assert.ok(!seen.some((p) => p.startsWith("/since")), seen.join(" "));
  }));

test("with a pubkey an exact body that is not the one signed is refused naming the hour", () =>
  withStub({ signed: true, tamper: "resigned" }, async ({ base }) => {
    const client = new Client(base, { clock, pubkey: chain.public_key });
    await assert.rejects(client.exact(H14), (e) => e instanceof VerificationError && e.message.includes(H14) && /exact body/.test(e.message));
    assert.equal(client.cache.size, 0);
  }));

test("with a pubkey an unsigned exact body is refused, as unsigned, naming the hour and its sidecar", () =>
  withStub({ signed: false }, async ({ base }) => {
    const client = new Client(base, { clock, pubkey: chain.public_key });
    await assert.rejects(
      client.exact(H15),
      (e) => e instanceof VerificationError && e.unsigned && e.message.includes(H15) && e.message.includes("15.exact.sig") && /without a signature/.test(e.message),
    );
    assert.equal(client.cache.size, 0);
  }));

test("for IDs declared registered, exact alone is chosen when its bytes are no more than the cheapest other form's sum", () => {
  const registered = true;
  const other = cheapestForm(200, 0.01, 300, 10240);
  assert.equal(cheapestForm(200, 0.01, 300, 10240, { exact: Math.floor(other.expected), registered }).form, "exact");
  const picked = cheapestForm(200, 0.01, 300, 10240, { exact: 138, registered });
  assert.deepEqual([picked.form, picked.bytes, picked.fpp, picked.expected, picked.otherwise], ["exact", 138, 0, 138, other]);
  assert.equal(cheapestForm(200, 0.01, 300, 10240, { exact: Math.ceil(other.expected) + 1, registered }).form, other.form);
  // Not listed: the v1 body's predicted bytes, no more than v1's own sum.
  const v1 = cheapestForm(200, 0.01, 300, 10240, { ribbons: false });
  assert.equal(v1.form, "bloom");
  assert.equal(cheapestForm(200, 0.01, 300, 10240, { exact: true, registered }).bytes, v1.bytes);
  assert.equal(cheapestForm(200, 0.01, 300, 10240, { exact: true, ribbons: false, registered }).form, "exact");
  // Following one ID at no fetch cost, a tiny ribbon or v1 filter beats a large exact body.
  assert.notEqual(cheapestForm(5, 0.01, 1, 0, { exact: 100000, registered }).form, "exact");
});

test("for IDs not declared registered, an exact body only refines a form at the target, counting both bodies", () => {
  // The same choice as above, not declared: never exact alone.
  const other = cheapestForm(200, 0.01, 300, 10240);
  assert.notEqual(cheapestForm(200, 0.01, 300, 10240, { exact: 138 }).form, "exact");
  const under = cheapestWithin(200, 0.01);
  assert.ok(under.fpp <= 0.01 && under.form === "ribbon" && under.r === 7, JSON.stringify(under));
  // A refinement costs the filter at the target, the exact body and a second response.
  const dear = cheapestForm(200, 0.01, 300, 10 ** 7, { exact: 138 });
  assert.deepEqual(
    [dear.form, dear.under, dear.exactBytes, dear.bytes, dear.expected, dear.otherwise.form],
    ["refined", under, 138, under.bytes + 138, under.bytes + 138 + 400, "ribbon"],
  );
  assert.equal(cheapestForm(200, 0.01, 300, 10240, { exact: Math.floor(other.expected) }).form, other.form);
  // Without ribbons (a verifying client reading a source that does not sign them), v1.
  const verifying = cheapestForm(200, 0.01, 300, 10240, { exact: 138, ribbons: false });
  assert.deepEqual([verifying.form, verifying.under.form], ["refined", "bloom"]);
});

/** IDs outside every universe that H15's exact body alone calls changed (its answer for them
 * is arbitrary) and its filter at 0.01 does not hold. */
async function wronglyExact(client) {
  const exact = await client.exact(H15);
  const filter = (await client.hour(H15)).filter;
  const wrong = [];
  for (let i = 0; i < 1000; i++) {
    const key = await keyOf(`nobody:${i}`);
    if (exact.changedKey(key) && !filter.containsKey(key)) wrong.push(`nobody:${i}`);
  }
  return wrong;
}

/** Checks a refined reading: per hour, the universe's IDs exactly; H15 none of `wrong`
 * (in the other hours they are outside the universe too, flagged only where both say so). */
function assertRefined(changes, wrong) {
  for (const want of expected) {
    const got = changes.find((c) => c.from === want.from);
    assert.ok(got?.refined, JSON.stringify(got));
    assert.deepEqual(got.ids.filter((id) => id.startsWith("u:")), want.ids, want.from);
  }
  assert.ok(!changes.find((c) => c.from === H15).ids.some((id) => wrong.includes(id)));
}

test("for IDs not declared registered an exact body refines the hour's filter: exact for the universe, none of the wrong ones", () =>
  withStub({ consistent: true }, async ({ base, seen }) => {
    const wrong = await wronglyExact(new Client(base, { clock }));
    assert.ok(wrong.length > 100, `${wrong.length}`);
    const ids = [...FOLLOWED, ...wrong];

    seen.length = 0;
    assertRefined(await new Client(base, { clock }).changedSince(ids, H14, { form: "exact" }), wrong);
    // Each sealed hour: its exact body and a filter at the target (no ribbon here: v1).
    for (const hour of [H14, H15, H16]) assert.ok(seen.includes(`${pathOf(hour)}.exact`) && seen.includes(pathOf(hour)), seen.join(" "));
    // Chosen without forcing, where the waste it saves is dear.
    assertRefined(await new Client(base, { clock }).changedSince(ids, H14, { strategy: "hourly", fetchCost: 10 ** 7 }), wrong);
    // Declared registered (falsely), the exact bodies alone flag the wrong ones.
    const alone = await new Client(base, { clock, registered: true }).changedSince(ids, H14, { form: "exact" });
    assert.deepEqual(alone.find((c) => c.from === H15).ids, [...expected.find((c) => c.from === H15).ids, ...wrong]);
  }));

test("an exact body held is answered from alone only for IDs declared registered", () =>
  withStub({ consistent: true }, async ({ base }) => {
    const client = new Client(base, { clock });
    const exact = await client.exact(H15);
    assert.equal(client.heldHour(H15), null, "no filter held to refine");
    await client.hour(H15);
    const held = client.heldHour(H15);
    assert.ok(held instanceof Refined && held.exact === exact && held.fpp() <= 0.01);
    const declared = new Client(base, { clock, registered: true });
    await declared.exact(H15);
    assert.ok(declared.heldHour(H15) instanceof Exact);
  }));
