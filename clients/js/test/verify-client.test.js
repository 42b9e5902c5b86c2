// `Client` with a `pubkey` against a fake server publishing the hours of
// docs/chain-vectors.json (signed as docs/rotation-vectors.json says when `rotated`, its
// key list that of docs/trust-vectors.json, whose successions are signed both ways):
// every closed hour is verified before it is returned or cached, in every representation,
// from its headers or (a static mirror) its chain entry; a tampered one is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Client, VerificationError, MissingDependency, SHA1_KM32 } from "../bloomcast.js";

const read = (name) => JSON.parse(readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8"));
const chain = read("chain-vectors.json");
const rotation = read("rotation-vectors.json");
const trust = read("trust-vectors.json");
const NEWEST = chain.hours.at(-1).hour;
// The clients' clock: in the hour after the newest sealed one, the fake server's open hour.
const clock = () => Date.parse(NEWEST) + 3600e3 + 600e3;
const pathOf = (hour) => `/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}`;

/** A fetch answering like a bloomcast server holding the vector hours (all sealed). */
function fakeServer({ rotated = false, mirror = false, tamper = null, wellKnown = true } = {}) {
  const seen = [];
  const signatureOf = (i) => (rotated ? rotation.hours[i].bloom_signature : chain.hours[i].signature);
  const entries = chain.hours.map((h, i) => ({
    hour: h.hour,
    digest: h.digest,
    prev: h.prev,
    header: h.header,
    signature: rotated ? rotation.hours[i].signature : h.signature,
    key_id: rotated ? rotation.hours[i].key_id : null,
  }));
  const fetch = async (url) => {
    const { pathname, search } = new URL(url);
    seen.push(pathname + search);
    const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
    if (pathname === "/") {
      const current = new Date(Date.parse(NEWEST) + 3600e3).toISOString().replace(".000Z", "Z");
      return json({ current: { hour: current }, hours: [], static: mirror, urls: {} });
    }
    if (pathname === "/.well-known/bloomcast.json") {
      return wellKnown ? json({ public_key: trust.keys[1].public_key, keys: rotated ? trust.keys.slice(0, 2).map((k, i) => (i === 1 ? { ...k, last_hour: null } : k)) : [] }) : json({ error: "not_found", message: "no" }, 404);
    }
    if (pathname.startsWith("/chain/")) {
      const from = entries.findIndex((e) => pathOf(e.hour) === pathname.slice(6));
      const limit = Number(new URLSearchParams(search).get("limit") ?? 168);
      return from < 0 ? json({ error: "not_found", message: "no" }, 404) : json(entries.slice(from, from + limit));
    }
    const [, hourPath, suffix = ""] = /^(\/\d{4}\/\d{2}\/\d{2}\/\d{2})(\.hex|\.bin)?$/.exec(pathname) ?? [];
    const i = chain.hours.findIndex((h) => pathOf(h.hour) === hourPath);
    if (i < 0) return json({ error: "not_found", message: "no" }, 404);
    const h = chain.hours[i];
    const hex = tamper === h.hour ? (h.bin_hex[0] === "0" ? "1" : "0") + h.bin_hex.slice(1) : h.bin_hex;
    const meta = { complete: true, count: h.ids.length, m: h.m, k: h.k, hash: SHA1_KM32, fpp: 0.01, hour: h.hour };
    const signed = mirror ? {} : { "bloom-prev-header": h.prev, "bloom-signature": signatureOf(i) };
    if (suffix === "") return new Response(JSON.stringify({ ...meta, filter: hex, digest: h.digest }), { headers: signed });
    const headers = { ...signed, "bloom-complete": "true", "bloom-count": String(meta.count), "bloom-m": String(h.m), "bloom-k": String(h.k), "bloom-hash": SHA1_KM32, "bloom-fpp": "0.01", "bloom-hour": h.hour };
    const body = suffix === ".hex" ? hex : Uint8Array.from(hex.match(/../g).map((b) => parseInt(b, 16)));
    return new Response(body, { headers });
  };
  return { fetch, seen };
}

test("a client with a pubkey verifies each closed hour in every representation", async () => {
  for (const repr of ["json", "hex", "bin"]) {
    const server = fakeServer();
    const client = new Client("http://fake", { clock, repr, fetch: server.fetch, pubkey: chain.public_key });
    for (const h of chain.hours) {
      const fetched = await client.hour(h.hour);
      for (const id of h.ids) assert.ok(await fetched.mayContain(id), `${repr}: ${id}`);
    }
    assert.equal(server.seen.filter((p) => p === "/.well-known/bloomcast.json").length, 1, repr);
  }
});

test("a tampered hour is refused naming it, and not cached", async () => {
  const hour = chain.hours[2].hour;
  for (const repr of ["json", "bin"]) {
    const client = new Client("http://fake", { clock, repr, fetch: fakeServer({ tamper: hour }).fetch, pubkey: chain.public_key });
    await assert.rejects(client.hour(hour), (e) => e instanceof VerificationError && e.message.includes(hour));
    assert.equal(client.cache.size, 0, repr);
  }
});

test("hours signed by the wrong key are refused", async () => {
  const client = new Client("http://fake", { clock, fetch: fakeServer({ wellKnown: false }).fetch, pubkey: rotation.keys[1].public_key });
  await assert.rejects(client.hour(chain.hours[0].hour), (e) => e instanceof VerificationError && /does not verify/.test(e.message));
});

test("with a rotated key list each hour verifies under the key listed for it", async () => {
  const client = new Client("http://fake", { clock, fetch: fakeServer({ rotated: true }).fetch, pubkey: rotation.keys[1].public_key });
  for (const h of chain.hours) assert.equal((await client.hour(h.hour)).meta.hour, h.hour);
});

test("a static mirror's hour is verified from its chain entry", async () => {
  const server = fakeServer({ mirror: true, rotated: true, wellKnown: false });
  const client = new Client("http://fake", { clock, fetch: server.fetch, pubkey: rotation.keys[0].public_key });
  assert.equal((await client.hour(chain.hours[0].hour)).meta.hour, chain.hours[0].hour);
  assert.ok(server.seen.includes(`/chain${pathOf(chain.hours[0].hour)}?limit=1`));
  // Without the key list, the key given alone: the hours the other key signed fail.
  await assert.rejects(client.hour(chain.hours[3].hour), (e) => e instanceof VerificationError && e.message.includes(chain.hours[3].hour));
});

test("verifyChain verifies the listing, then every listed hour's filter", async () => {
  const client = new Client("http://fake", { clock, fetch: fakeServer({ rotated: true }).fetch, pubkey: rotation.keys[0].public_key });
  const verified = await client.verifyChain(chain.hours[1].hour);
  assert.deepEqual([...verified], chain.hours.slice(1).map((h) => h.hour));
  assert.deepEqual([verified.checkpoint, verified.stale], [null, null], "the fake has no checkpoint");
  const tampered = new Client("http://fake", { clock, fetch: fakeServer({ tamper: chain.hours[3].hour }).fetch, pubkey: chain.public_key });
  await assert.rejects(tampered.verifyChain(chain.hours[0].hour), (e) => e instanceof VerificationError && e.message.includes(chain.hours[3].hour));
  await assert.rejects(new Client("http://fake", { clock, fetch: fakeServer().fetch }).verifyChain(chain.hours[0].hour), /pubkey/);
});

test("changedSince with a pubkey reads verified hours, never the union, and says which hours it read", async () => {
  const server = fakeServer();
  const base = server.fetch;
  const last = chain.hours.at(-1);
  const fetch = (url) =>
    new URL(url).pathname === "/"
      ? Promise.resolve(new Response(JSON.stringify({ current: { hour: last.hour }, hours: [] })))
      : base(url);
  const client = new Client("http://fake", { clock, fetch, pubkey: chain.public_key });
  const ids = [...chain.hours.flatMap((h) => h.ids)];
  const changed = await client.changedSince(ids, chain.hours[0].hour);
  assert.deepEqual(new Set(changed.flatMap((c) => c.ids)), new Set(ids));
  assert.deepEqual([changed.from, changed.to, changed.unverified, changed.checkpoint, changed.stale], [chain.hours[0].hour, last.hour, [], null, null]);
  // Ribbons are signed too, but this server has none (404): each hour's v1 filter.
  assert.ok(!server.seen.some((p) => p.startsWith("/since")), server.seen.join(" "));
  assert.ok(chain.hours.every((h) => server.seen.includes(pathOf(h.hour))), server.seen.join(" "));
});

test("a runtime without WebCrypto Ed25519 gets MissingDependency from the first closed hour", async () => {
  const subtle = {
    digest: (algorithm, data) => crypto.subtle.digest(algorithm, data),
    verify: () => Promise.reject(new Error("unreachable")),
    importKey: async () => {
      throw new DOMException("Unrecognized algorithm name", "NotSupportedError");
    },
  };
  const client = new Client("http://fake", { clock, fetch: fakeServer().fetch, pubkey: chain.public_key, subtle });
  await assert.rejects(client.hour(chain.hours[0].hour), (e) => e instanceof MissingDependency && /Ed25519/.test(e.message));
  assert.throws(() => new Client("http://fake", { clock, pubkey: "not-a-key" }), TypeError);
});
