// Reading hours by the page (`.pages`, PROTOCOL.md section 12, "Huge hours by the page")
// against a real `bloomcast serve`: two closed hours seeded before it starts
// (examples/seed_closed_hour: `small:0` .. `small:2999` three hours ago, `big:0` ..
// `big:99999` two hours ago), sealed and signed at its start. Every seeded ID answers true
// by its page; absent IDs answer as the whole paged body at the same grade (and are
// flagged about as often as by the `.ribbon2` body, at the grade's fpp); a page
// altered on its way is refused with the key, one unsigned is not used (the hour is read
// whole); a few IDs of the 100,000 cost a small part of the whole body, which `changedSince`
// weighs hour by hour; a static mirror of the server is read the same way. Skipped without
// the binary and the example (`cargo build --bins --examples`), unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Pages, ProtocolError, VerificationError, hourPath, keyOf } from "../bloomcast.js";
import { Verifier } from "../verify.js";
import { startServer, binary, example, skipUnless, NO_BINARY } from "../support/server.js";
import { serveMirror } from "../support/static.js";

const skip =
  skipUnless(binary(), NO_BINARY) ||
  skipUnless(example("seed_closed_hour"), "no examples/seed_closed_hour: run `cargo build --bins --examples` first");
const SMALL = Array.from({ length: 3000 }, (_, i) => `small:${i}`);
const ABSENT = Array.from({ length: 20000 }, (_, i) => `absent:${i}`);

let work;
let server;
let publicKey;
let small; // RFC 3339
let big;

const run = (file, args, env = {}) =>
  new Promise((resolve, reject) =>
    execFile(file, args, { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      error ? reject(new Error(`${file} ${args.join(" ")}: ${error.message}\n${stderr}`)) : resolve(stdout.trim()),
    ),
  );
const hourOf = (path) => `${path.slice(1, 11).replaceAll("/", "-")}T${path.slice(12, 14)}:00:00Z`;

before(async () => {
  if (skip) return;
  work = mkdtempSync(join(tmpdir(), "bloomcast-js-pages-"));
  const dir = join(work, "data");
  small = hourOf(await run(example("seed_closed_hour"), [dir, "3000", "3", "small"]));
  big = hourOf(await run(example("seed_closed_hour"), [dir, "100000", "2", "big"]));
  server = await startServer({ dir });
  publicKey = (await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json()).public_key;
});

after(async () => {
  await server?.stop({ purge: true });
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A client of `base` recording what it asks (`seen`: path and query, with the Range). */
function recording(base, options = {}, wrap = fetch) {
  const seen = [];
  const client = new Client(base, {
    ...options,
    fetch: (url, init) => {
      seen.push({ url: String(url).slice(base.length), range: init?.headers?.range ?? null });
      return wrap(url, init);
    },
  });
  return { client, seen };
}

const pagesOf = (seen, hour) => seen.filter((s) => s.url.startsWith(`${hourPath(hour)}.pages`));

test("every ID of a closed hour answers true by its page, each page verified, one request a page", { skip }, async () => {
  const { client, seen } = recording(server.base, { pubkey: publicKey });
  const read = await client.pages(small, SMALL, { fpp: 2 ** -7 });
  assert.ok(read instanceof Pages);
  assert.deepEqual([read.n, read.header.pages, read.header.k, read.header.split, read.complete], [3000, 47, 7, 0, true]);
  assert.ok(read.header.signed);
  for (const id of SMALL) assert.ok(await read.contains(id), id);
  const ranges = pagesOf(seen, small).map((s) => s.range);
  assert.equal(ranges.length, 1 + 47, "the header, then each page once");
  assert.equal(ranges[0], "bytes=0-71");
  assert.equal(new Set(ranges).size, ranges.length);
  // Held: asked again, no request.
  const before = { ...client.stats };
  assert.equal(await client.pages(small, SMALL.slice(0, 100), { fpp: 2 ** -7 }), read);
  assert.deepEqual([client.stats.requests, client.stats.cacheHits], [before.requests, before.cacheHits + 1]);

  // 500 IDs of the hour of 100,000 (1,563 pages), at the server's target.
  const some = Array.from({ length: 500 }, (_, i) => `big:${i * 199}`);
  const bigRead = await client.pages(big, some);
  assert.deepEqual([bigRead.n, bigRead.header.pages, bigRead.header.k, bigRead.header.split], [100000, 1563, 6, 185]);
  for (const id of some) assert.ok(await bigRead.contains(id), id);
  assert.ok(bigRead.pages.size < 500 && !bigRead.complete);
});

/** The whole paged body of `hour` at `fpp` (canonical spelling), decoded at once. */
async function wholePages(hour, fpp) {
  return Pages.fromBytes(await (await fetch(`${server.base}${hourPath(hour)}.pages?fpp=${fpp}`)).arrayBuffer());
}

test("absent IDs answer by the page as the whole paged body does, at every grade asked", { skip }, async () => {
  const client = new Client(server.base);
  const keys = await Promise.all(ABSENT.map(keyOf));
  for (const [fpp, canonical] of [[2 ** -4, "6.25e-2"], [0.01, "9.979248046875e-3"], [2 ** -10, "9.765625e-4"]]) {
    const pages = await client.pages(small, ABSENT, { fpp });
    const whole = await wholePages(small, canonical);
    const ribbon2 = await client.ribbon2(small, { fpp });
    assert.deepEqual([pages.fpp, pages.header.pages, pages.pages.size], [ribbon2.fpp, 47, 47]);
    let flagged = 0;
    let flaggedWhole = 0;
    keys.forEach((key, i) => {
      const answer = pages.containsKey(key);
      assert.equal(answer, whole.containsKey(key), `${fpp}: ${ABSENT[i]}`);
      if (answer) flagged++;
      if (ribbon2.containsKey(key)) flaggedWhole++;
    });
    // Other filters than the .ribbon2 body's, at its rate.
    const expected = ribbon2.fpp * ABSENT.length;
    assert.ok(flagged > 0.6 * expected && flagged < 1.4 * expected, `${fpp}: ${flagged} flagged, ${expected} expected`);
    assert.ok(flaggedWhole > 0.6 * expected && flaggedWhole < 1.4 * expected, `${fpp}: .ribbon2 ${flaggedWhole}`);
  }
  const absent = ABSENT.slice(0, 600);
  // At the target, as the server reads it first (one build of the hour's pages fewer).
  const pages = await client.pages(big, absent);
  const whole = await wholePages(big, "9.979248046875e-3");
  assert.ok(pages.pages.size > 300 && pages.pages.size < 600);
  keys.slice(0, 600).forEach((key, i) => assert.equal(pages.containsKey(key), whole.containsKey(key), absent[i]));
});

/** A fetch that passes `mutate` each page's bytes of a 206 (not the header's) of `.pages`. */
const tampering = (mutate) => async (url, init) => {
  const response = await fetch(url, init);
  if (!String(url).includes(".pages") || response.status !== 206 || init?.headers?.range === "bytes=0-71") return response;
  const body = new Uint8Array(await response.arrayBuffer());
  mutate(body);
  return new Response(body, { status: 206, headers: response.headers });
};

test("a page altered on its way is refused with the key; one unsigned is not used, and the hour is read whole", { skip }, async () => {
  // A byte of a page's solution changed: the signature fails.
  const altered = tampering((slot) => (slot[66 + 20] ^= 0x5a));
  const { client } = recording(server.base, { pubkey: publicKey }, altered);
  const refused = (e) => e instanceof VerificationError && !e.unsigned && /page \d+'s signature does not verify/.test(e.message);
  await assert.rejects(client.pages(big, ["big:1"]), refused);
  await assert.rejects(recording(server.base, { pubkey: publicKey }, altered).client.changedSince(["big:1"], big, { strategy: "pages" }), refused);
  // Without the key the alteration is not seen (it answers), which is what the key is for.
  await new Client(server.base, { fetch: altered }).pages(big, ["big:1"]);

  // The verifier on the bytes themselves: the slot as served verifies; altered, it does not.
  const url = `${server.base}${hourPath(big)}.pages`;
  const header = new Uint8Array(await (await fetch(url, { headers: { range: "bytes=0-71" } })).arrayBuffer());
  const read = await new Client(server.base).pages(big, ["big:1"]);
  const p = read.header.pageOf(await keyOf("big:1"));
  const { start, end } = read.header.slotRange(p);
  const slot = new Uint8Array(await (await fetch(url, { headers: { range: `bytes=${start}-${end - 1}` } })).arrayBuffer());
  const verifier = await Verifier.create(publicKey);
  await verifier.useKeys((await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json()).keys);
  await verifier.checkPage(big, header, p, slot);
  for (const at of [0, 64, 66 + 5, slot.length - 1]) {
    const copy = slot.slice();
    copy[at] ^= 1;
    await assert.rejects(verifier.checkPage(big, header, p, copy), VerificationError, `byte ${at}`);
  }
  await assert.rejects(verifier.checkPage(small, header, p, slot), /another hour's pages/);

  // Unsigned (a zero signature): refused alone, and changedSince reads the hour whole.
  const unsigned = tampering((slot) => slot.fill(0, 0, 64));
  await assert.rejects(new Client(server.base, { pubkey: publicKey, fetch: unsigned }).pages(big, ["big:1"]), (e) => e instanceof VerificationError && e.unsigned);
  const { client: falling, seen } = recording(server.base, { pubkey: publicKey }, unsigned);
  const changes = await falling.changedSince(["big:1", "big:2", "nobody"], big, { strategy: "pages" });
  assert.deepEqual(changes[0], { from: big, to: big, ids: ["big:1", "big:2"] });
  assert.deepEqual(changes.unverified, []);
  assert.ok(seen.some((s) => s.url.startsWith(`${hourPath(big)}.`) && !s.url.includes(".pages")), "the hour read whole");
});

test("a paged body's header naming another hour is refused", { skip }, async () => {
  const swapped = (url, init) => fetch(String(url).replace(`${hourPath(small)}.pages`, `${hourPath(big)}.pages`), init);
  await assert.rejects(new Client(server.base, { fetch: swapped }).pages(small, ["small:1"]), (e) => e instanceof ProtocolError && /another hour's pages/.test(e.message));
  await assert.rejects(new Client(server.base, { fetch: swapped, pubkey: publicKey }).pages(small, ["small:1"]), (e) => e instanceof VerificationError && /another hour's pages/.test(e.message));
});

test("a few IDs of an hour of 100,000 cost a small part of its whole body, and hour by hour reads them so", { skip }, async () => {
  const ids = ["big:7", "big:31337", "big:70000", "big:99999", "nobody"];
  const client = new Client(server.base);
  const before = { ...client.stats };
  const read = await client.pages(big, ids);
  const bytes = client.stats.bodyBytes - before.bodyBytes;
  const requests = client.stats.requests - before.requests;
  const whole = await client.ribbon2(big);
  assert.ok(requests <= 1 + ids.length, `${requests} requests`);
  assert.ok(bytes < whole.size / 50, `${bytes} bytes by the page, ${whole.size} whole`);
  assert.equal(bytes, 72 + read.pages.size * read.header.slot);
  assert.equal(client.stats.bodyBytes - before.bodyBytes - bytes, whole.size);

  for (const strategy of ["hourly", "auto", "pages"]) {
    const { client: reader, seen } = recording(server.base);
    const changes = await reader.changedSince(ids, big, { strategy });
    assert.deepEqual(changes[0], { from: big, to: big, ids: ids.slice(0, 4) }, strategy);
    const paged = pagesOf(seen, big);
    assert.ok(paged.length >= 2 && paged.length <= 1 + ids.length, `${strategy}: ${JSON.stringify(seen)}`);
    assert.ok(!seen.some((s) => s.url.startsWith(`${hourPath(big)}.ribbon`) || s.url === hourPath(big)), `${strategy}: read whole`);
    assert.ok(reader.stats.bodyBytes < whole.size / 10, `${strategy}: ${reader.stats.bodyBytes} bytes`);
  }
  // Following 200 IDs of the small hour (on most of its 47 pages), hour by hour reads it
  // whole; "pages" by the page.
  for (const [strategy, byPage] of [["hourly", false], ["pages", true]]) {
    const { client: reader, seen } = recording(server.base);
    const changes = await reader.changedSince(SMALL.slice(0, 200), small, { strategy });
    assert.equal(changes[0].ids.length, 200);
    const paged = pagesOf(seen, small).length;
    assert.ok(byPage ? paged > 40 : paged === 0, `${strategy}: ${paged} of ${seen.length} requests by the page`);
  }
});

test("a server that answers a Range with the whole body is read from it; one without pages is read whole", { skip }, async () => {
  const whole = (url, init) => {
    const headers = { ...init?.headers };
    delete headers.range;
    return fetch(url, { ...init, headers });
  };
  const { client, seen } = recording(server.base, { pubkey: publicKey }, whole);
  const ids = ["small:5", "small:2999", ...ABSENT.slice(0, 200)];
  const read = await client.pages(small, ids);
  assert.equal(pagesOf(seen, small).length, 1);
  const reference = await wholePages(small, "9.979248046875e-3");
  for (const id of ids) assert.equal(await read.contains(id), await reference.contains(id), id);
  // Pages received but not asked for are taken (verified) when asked for, with no request.
  const more = await client.pages(small, SMALL.slice(0, 500));
  for (const id of SMALL.slice(0, 500)) assert.ok(await more.contains(id));
  assert.equal(pagesOf(seen, small).length, 1);

  const none = (url, init) =>
    String(url).includes(".pages")
      ? Promise.resolve(new Response(JSON.stringify({ error: "not_found", message: "no such form" }), { status: 404, headers: { "content-type": "application/json" } }))
      : fetch(url, init);
  const { client: older, seen: asked } = recording(server.base, {}, none);
  const changes = await older.changedSince(["small:1", "big:1"], small, { strategy: "pages" });
  assert.deepEqual(changes.slice(0, 2).map((c) => c.ids), [["small:1"], ["big:1"]]);
  assert.equal(asked.filter((s) => s.url.includes(".pages")).length, 1, "asked once, then read whole");
  assert.equal(older.pagesUnserved, true);
});

test("a static mirror's pages are read at its target, by Range from its file, and verified", { skip }, async () => {
  const dir = join(work, "mirror");
  await run(binary(), ["mirror", dir, "--url", server.base]);
  const mirror = await serveMirror(dir);
  try {
    for (const strategy of ["hourly", "pages"]) {
      const { client, seen } = recording(mirror.base, { pubkey: publicKey });
      const changes = await client.changedSince(["big:3", "big:4", "nobody"], big, { strategy });
      assert.deepEqual(changes[0], { from: big, to: big, ids: ["big:3", "big:4"] }, strategy);
      assert.deepEqual(changes.unverified, []);
      const paged = pagesOf(seen, big);
      assert.ok(paged.length >= 2 && paged.every((s) => s.url === `${hourPath(big)}.pages` && s.range), JSON.stringify(seen));
    }
  } finally {
    await mirror.close();
  }
});
