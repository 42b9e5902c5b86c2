// `Client` with a `pubkey` against a fake source built from the published vectors alone
// (no binary needed): the hours of docs/chain-vectors.json signed as
// docs/rotation-vectors.json says (key 1: 13-14, key 2: 15-16), the key list of
// docs/trust-vectors.json (successions signed both ways, key 3 from 17), its open hour
// 17:00 signed by key 3, and a checkpoint of 16:00 signed here with key 2's seed. An
// honest source verifies from any of the three keys and the answer says what it covers;
// each way a source can lie is refused, naming what failed, or reported.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Changes, Client, StaleError, VerificationError, SHA1_KM32, PUBLICATION_LAG_HOURS } from "../bloomcast.js";
import { checkpointMessage, fromHex, hourIndex, toHex } from "../verify.js";

const read = (name) => JSON.parse(readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8"));
const chain = read("chain-vectors.json");
const rotation = read("rotation-vectors.json");
const trust = read("trust-vectors.json");
const pathOf = (hour) => `/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;
const [H13, H14, H15, H16] = chain.hours.map((h) => h.hour);
const OPEN = trust.open.hour; // 17:00
const [one, two, three] = trust.keys;
const ALL = chain.hours.flatMap((h) => h.ids);
// The clients' clock: a minute after the open hour's version was made (18:01:40, in the
// hour after it: the source's current hour is an hour behind, within the lag bound).
const NOW = (trust.open.made + 60) * 1000;

async function sign(seedHex, message) {
  const key = await crypto.subtle.importKey("pkcs8", fromHex(`302e020100300506032b657004220420${seedHex}`), { name: "Ed25519" }, false, ["sign"]);
  return toHex(new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, message)));
}

/** A checkpoint of `hour` (a chain vector hour) by key 2, made at `made` (Unix seconds). */
async function checkpointOf(hour, made) {
  const h = chain.hours.find((x) => x.hour === hour);
  const signature = await sign(trust.seeds[two.id], checkpointMessage(made, h.index, fromHex(h.header)));
  return { hour, header: h.header, made, signature, key_id: two.id };
}

/**
 * The fake source. `keys`: the well-known list; `current`: the index's current hour;
 * `checkpoint`: its document (null: 404); `open`: "signed", "unsigned" or "zeroed" (the
 * bytes changed, the signature kept); `count`: a sealed hour's JSON `count` to serve.
 */
function source({ keys = trust.keys, current = OPEN, checkpoint = null, open = "signed", count = null } = {}) {
  const seen = [];
  const fetch = async (url) => {
    const { pathname, search } = new URL(url);
    seen.push(pathname + search);
    const json = (body, status = 200, headers = {}) => Response.json(body, { status, headers });
    if (pathname === "/") {
      const listed = [...chain.hours.map((h) => h.hour), OPEN].filter((h) => h <= current).reverse();
      return json({ current: { hour: current }, target_fpp: 0.01, capacity: 3000, hours: listed.map((hour) => ({ hour, complete: hour !== OPEN })), urls: { checkpoint: "/checkpoint" } });
    }
    if (pathname === "/.well-known/bloomcast.json") return json({ public_key: keys.at(-1).public_key, keys });
    if (pathname === "/checkpoint") return checkpoint ? json(checkpoint) : json({ error: "not_found", message: "none" }, 404);
    if (pathname.startsWith("/chain/")) {
      const at = chain.hours.findIndex((h) => pathOf(h.hour) === pathname.slice(6));
      const entries = chain.hours.map((h, i) => ({ hour: h.hour, digest: h.digest, prev: h.prev, header: h.header, signature: rotation.hours[i].signature, key_id: rotation.hours[i].key_id }));
      return at < 0 ? json([]) : json(entries.slice(at).filter((e) => e.hour <= current));
    }
    if (pathname === pathOf(OPEN)) {
      const hex = open === "zeroed" ? "000000" : trust.open.filter_hex;
      const headers = open === "unsigned" ? {} : { "bloom-open-signature": trust.open.header_value };
      return json({ hour: OPEN, complete: false, count: 12, m: 24, k: 3, hash: SHA1_KM32, fpp: 0.5, filter: hex }, 200, headers);
    }
    const i = chain.hours.findIndex((h) => pathOf(h.hour) === pathname);
    if (i < 0) return json({ error: "not_found", message: "no such hour" }, 404);
    const h = chain.hours[i];
    const doc = { hour: h.hour, complete: true, count: count ?? h.ids.length, m: h.m, k: h.k, hash: SHA1_KM32, fpp: 0.01, filter: h.bin_hex, digest: h.digest };
    return json(doc, 200, { "bloom-prev-header": h.prev, "bloom-signature": rotation.hours[i].bloom_signature });
  };
  return { fetch, seen };
}

const client = (src, key = one, options = {}) => new Client("http://source.test", { fetch: src.fetch, pubkey: key.public_key, clock: () => NOW, ...options });
const naming = (...texts) => (e) => e instanceof VerificationError && texts.every((t) => e.message.includes(t));

test("an honest source verifies from any key of a signed succession, and the answer says what it covers", async () => {
  const checkpoint = await checkpointOf(H16, trust.open.made);
  for (const key of [one, two, three]) {
    const changes = await client(source({ checkpoint }), key).changedSince(ALL, H13, { strategy: "hourly" });
    assert.ok(changes instanceof Changes && Array.isArray(changes));
    assert.deepEqual(new Set(changes.flatMap((c) => c.ids)), new Set(ALL), key.id);
    assert.deepEqual([changes.from, changes.to, changes.unverified, changes.stale], [H13, OPEN, [], null], key.id);
    assert.deepEqual(changes.checkpoint, { hour: H16, made: trust.open.made, header: chain.hours[3].header, keyId: two.id });
  }
});

test("a source listing the trusted key retired and a key of its own after it is refused, naming that key", async () => {
  const forger = trust.forged[1];
  const src = source({ keys: trust.forged });
  const c = client(src, one);
  // The trusted key's own hours still verify.
  assert.equal((await c.hour(H13)).verified, true);
  await assert.rejects(c.hour(H15), naming(H15, `listed under key ${forger.id}, which is refused: no key you trust vouched for it`));
  await assert.rejects(client(src, one).changedSince(ALL, H13), naming(H15, forger.id));
  await assert.rejects(client(src, one).verifyChain(H13), naming(forger.id));
  // From a key the forged list does not name at all, the list itself is refused.
  await assert.rejects(client(src, two).hour(H13), naming(`does not list the key you trust (${two.id})`));
});

test("a source withholding the hours its publisher's checkpoint names is stale, naming the hour, unless accepted", async () => {
  const checkpoint = await checkpointOf(H16, trust.open.made);
  // Its index ends at 14:00, an hour the lag bound alone lets pass (17:00 is the client's).
  const src = source({ current: H14, checkpoint });
  const stale = await client(src).changedSince(ALL, H13).then(
    () => assert.fail("answered"),
    (e) => e,
  );
  assert.ok(stale instanceof StaleError && stale.code === "stale", String(stale));
  assert.match(stale.message, new RegExp(`withholds hours: .* names ${H16} as sealed, but this source's current hour, ${H14}, is older`));
  assert.deepEqual([stale.newest, stale.checkpoint], [H14, H16]);
  // The answer it gave all the same: what it read, and only that.
  assert.deepEqual([stale.answer.from, stale.answer.to], [H13, H14]);
  const found = new Set(stale.answer.flatMap((c) => c.ids));
  assert.ok([...chain.hours[0].ids, ...chain.hours[1].ids].every((id) => found.has(id)), [...found].join(" "));
  const accepted = await client(src).changedSince(ALL, H13, { acceptStale: true });
  assert.ok(accepted.stale instanceof StaleError && accepted.to === H14);
});

test("a source whose checkpoint was made longer ago than the lag bound is stale", async () => {
  const made = trust.open.made - PUBLICATION_LAG_HOURS * 3600 - 60;
  const src = source({ checkpoint: await checkpointOf(H16, made) });
  await assert.rejects(
    client(src).changedSince(ALL, H13),
    (e) => e instanceof StaleError && e.message.includes(`checkpoint it serves (of ${H16}) was made at ${new Date(made * 1000).toISOString()}`),
  );
});

test("a source whose newest hour starts more than the lag bound before the client's clock is stale, with or without a key", async () => {
  const later = NOW + 3 * 3600e3; // the source's current hour, 17:00, is 4 hours behind
  const src = source();
  for (const pubkey of [one.public_key, null]) {
    const stale = await new Client("http://source.test", { fetch: src.fetch, pubkey, clock: () => later })
      .changedSince(ALL, H13, { strategy: "hourly" })
      .then(() => assert.fail("answered"), (e) => e);
    assert.ok(stale instanceof StaleError, String(stale));
    assert.ok(stale.message.includes(`this source's current hour, ${OPEN}, starts more than 2 hours before this client's current hour, 2025-12-20T21:00:00Z`), stale.message);
    // With a key, its open hour's version is as old (made 3 hours before the client's
    // clock): not read, and the answer says it ends before it.
    assert.deepEqual([stale.answer.from, stale.answer.to], [H13, pubkey ? H16 : OPEN], String(pubkey));
  }
});

test("a checkpoint that does not verify, or whose header is not the chain's, is refused", async () => {
  const checkpoint = await checkpointOf(H16, trust.open.made);
  await assert.rejects(client(source({ checkpoint: { ...checkpoint, made: checkpoint.made + 1 } })).changedSince(ALL, H13), naming(`${H16} (checkpoint)`, "does not verify"));
  // Signed, but over another header than the chain's for 16:00: caught once the hour is read.
  const h = chain.hours[3];
  const header = "11".repeat(32);
  const forged = { ...checkpoint, header, signature: await sign(trust.seeds[two.id], checkpointMessage(checkpoint.made, h.index, fromHex(header))) };
  await assert.rejects(client(source({ checkpoint: forged })).changedSince(ALL, H13), naming(`${H16} (checkpoint)`, "not the chain's"));
});

test("the open hour is verified by its Bloom-Open-Signature: altered bytes and old versions are refused", async () => {
  await assert.rejects(client(source({ open: "zeroed" })).changedSince(ALL, H13), naming(`${OPEN} (open)`, "does not verify"));
  const late = client(source(), one, { clock: () => (trust.open.made + 601) * 1000 });
  await assert.rejects(late.hour(OPEN), naming(`${OPEN} (open)`, "made 601 s ago, longer than the freshness bound of 600 s"));
  // The bound is the client's to set.
  assert.equal((await client(source(), one, { clock: () => (trust.open.made + 601) * 1000, openFreshness: 900 }).hour(OPEN)).verified, true);
});

test("an open hour without a signature is answered and listed unverified, and refused when asked for alone", async () => {
  const src = source({ open: "unsigned" });
  const changes = await client(src).changedSince(ALL, H13);
  assert.deepEqual(changes.unverified, [OPEN]);
  assert.deepEqual([changes.from, changes.to], [H13, OPEN]);
  await assert.rejects(client(src).hour(OPEN), (e) => naming(`${OPEN} (open)`, "Bloom-Open-Signature missing")(e) && e.unsigned);
  // Without a key nothing is verified: `unverified` is null, not an empty list.
  const plain = await new Client("http://source.test", { fetch: src.fetch, clock: () => NOW }).changedSince(ALL, H13, { strategy: "hourly" });
  assert.equal(plain.unverified, null);
});

test("a sealed hour whose JSON count was edited below what its bits need is refused naming the hour", async () => {
  await assert.rejects(client(source({ count: 0 })).hour(H14), naming(H14, "its count, 0, is fewer IDs than its filter's", "the count was altered"));
});
