// Verifiable history (PROTOCOL.md section 11) against the published vectors the Rust and
// Python clients check too (docs/chain-vectors.json, docs/rotation-vectors.json, with the
// successions of docs/trust-vectors.json): the same bytes verify, and a changed byte,
// signature, hour, link or key is refused naming the hour. A runtime without WebCrypto
// Ed25519 gets MissingDependency. The rest of "Trust": test/trust.test.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Filter } from "../bloomcast.js";
import {
  Verifier,
  VerificationError,
  MissingDependency,
  GENESIS,
  digest,
  header,
  hourIndex,
  signedMessage,
  keyId,
  parseSignature,
  parseKeys,
  checkExtends,
  fromHex,
  toHex,
} from "../verify.js";

const read = (name) => JSON.parse(readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8"));
const chain = read("chain-vectors.json");
const rotation = read("rotation-vectors.json");
// The same keys over the same hours (key 1: 13-14, key 2: 15-16), their succession signed
// both ways, and key 3 after them.
const trust = read("trust-vectors.json");
const OTHER_KEY = rotation.keys[1].public_key; // RFC 8032 test 2
const check = (verifier, h, { bytes = fromHex(h.bin_hex), hour = h.hour, signature = h.signature } = {}) =>
  verifier.check(hour, bytes, h.prev, signature);
const naming = (hour, text = "") => (e) => e instanceof VerificationError && e.message.includes(hour) && e.message.includes(text);

test("digests, headers, hour indexes and signed messages match the chain vectors", async () => {
  assert.equal(toHex(GENESIS), chain.genesis);
  let prev = GENESIS;
  for (const h of chain.hours) {
    const filter = Filter.empty(h.m, h.k);
    for (const id of h.ids) await filter.insert(id);
    assert.equal(filter.toHex(), h.bin_hex);
    const d = await digest(filter.bytes);
    assert.equal(toHex(d), h.digest);
    assert.equal(toHex(prev), h.prev);
    assert.equal(toHex(await header(d, prev)), h.header);
    assert.equal(hourIndex(h.hour), h.index);
    assert.equal(toHex(signedMessage(h.index, fromHex(h.header))), h.signed_message);
    prev = fromHex(h.header);
  }
});

test("every chain vector hour verifies and links", async () => {
  const verifier = await Verifier.create(chain.public_key);
  for (const h of chain.hours) assert.equal(toHex(await check(verifier, h)), h.header);
  assert.deepEqual([...(await verifier.checkChain(chain.hours)).keys()], chain.hours.map((h) => h.hour));
});

test("a flipped bit is refused naming the hour", async () => {
  const verifier = await Verifier.create(chain.public_key);
  const h = chain.hours[1];
  const bytes = fromHex(h.bin_hex);
  bytes[0] ^= 1;
  await assert.rejects(check(verifier, h, { bytes }), naming(h.hour, "does not verify"));
});

test("a tampered signature is refused naming the hour", async () => {
  const verifier = await Verifier.create(chain.public_key);
  const h = chain.hours[2];
  const signature = (h.signature[0] === "0" ? "1" : "0") + h.signature.slice(1);
  await assert.rejects(check(verifier, h, { signature }), naming(h.hour, "does not verify"));
  await assert.rejects(check(verifier, h, { signature: null }), naming(h.hour, "not signed"));
});

test("a document whose filter does not hash to its digest is refused", async () => {
  const verifier = await Verifier.create(chain.public_key);
  const h = chain.hours[1];
  const wrong = chain.hours[2].digest;
  await assert.rejects(verifier.check(h.hour, fromHex(h.bin_hex), h.prev, h.signature, wrong), naming(h.hour, "bytes were altered"));
  assert.equal(toHex(await verifier.check(h.hour, fromHex(h.bin_hex), h.prev, h.signature, h.digest.toUpperCase())), h.header);
});

test("a swapped hour is refused", async () => {
  const verifier = await Verifier.create(chain.public_key);
  const [, one, two] = chain.hours;
  await assert.rejects(check(verifier, two, { hour: one.hour }), naming(one.hour));
});

test("a dropped hour breaks the chain", async () => {
  const verifier = await Verifier.create(chain.public_key);
  const entries = chain.hours.filter((_, i) => i !== 1);
  await assert.rejects(verifier.checkChain(entries), naming(entries[1].hour, "missing from the chain"));
  const unlinked = await Verifier.create(chain.public_key);
  await check(unlinked, chain.hours[0]);
  const forged = { ...chain.hours[1], prev: chain.hours[2].header };
  await assert.rejects(check(unlinked, forged), naming(forged.hour, "does not follow"));
});

test("another key is refused", async () => {
  const other = await Verifier.create(OTHER_KEY);
  const h = chain.hours[0];
  await assert.rejects(check(other, h), naming(h.hour, "does not verify"));
  await assert.rejects(other.checkChain(chain.hours), naming(h.hour, "does not verify"));
});

test("a public key that is not 64 hex digits is refused at once", async () => {
  await assert.rejects(Verifier.create(chain.public_key.slice(2)), TypeError);
  await assert.rejects(Verifier.create("zz".repeat(32)), TypeError);
});

test("key ids and Bloom-Signature fields match the rotation vectors", async () => {
  for (const k of rotation.keys) assert.equal(await keyId(fromHex(k.public_key)), k.id);
  for (const h of rotation.hours) {
    assert.deepEqual(parseSignature(h.bloom_signature), { signature: h.signature, keyId: h.key_id });
  }
  assert.deepEqual(parseSignature(rotation.hours[0].signature), { signature: rotation.hours[0].signature, keyId: null });
  assert.deepEqual(parseSignature(" ab ;x=1; KEYID=0102 "), { signature: "ab", keyId: "0102" });
});

async function rotated(from = trust.keys[1].public_key) {
  const verifier = await Verifier.create(from);
  assert.equal(await verifier.useKeys(trust.keys), true);
  return verifier;
}

test("each hour verifies under the key listed for it, from any key of a signed succession", async () => {
  for (const k of trust.keys) {
    const verifier = await rotated(k.public_key);
    for (const [i, h] of chain.hours.entries()) {
      assert.equal(toHex(await check(verifier, h, { signature: rotation.hours[i].bloom_signature })), h.header, k.id);
    }
  }
});

test("without signed successions, the hours of a key the given key did not vouch for are refused naming it", async () => {
  // rotation-vectors.json lists its keys as before successions were signed.
  const [one, two] = rotation.keys;
  const fromOne = await Verifier.create(one.public_key);
  assert.equal(await fromOne.useKeys(rotation.keys), true);
  await check(fromOne, chain.hours[0], { signature: rotation.hours[0].bloom_signature });
  const later = chain.hours[2];
  await assert.rejects(
    check(fromOne, later, { signature: rotation.hours[2].bloom_signature }),
    naming(later.hour, `listed under key ${two.id}, which is refused: no key you trust vouched for it`),
  );
  const fromTwo = await Verifier.create(two.public_key);
  await fromTwo.useKeys(rotation.keys);
  await assert.rejects(
    check(fromTwo, chain.hours[0], { signature: rotation.hours[0].bloom_signature }),
    naming(chain.hours[0].hour, `listed under key ${one.id}, which is refused: it is not acknowledged by the keys you trust`),
  );
});

test("a signature by a key listed for other hours is refused", async () => {
  const verifier = await rotated();
  const byHour = new Map(chain.hours.map((h) => [h.hour, h]));
  for (const r of rotation.refused) {
    await assert.rejects(check(verifier, byHour.get(r.hour), { signature: r.bloom_signature }), naming(r.hour, r.why));
  }
});

test("a key list replaces a pinned one only if it extends it", async () => {
  const pinned = await parseKeys(rotation.pinned);
  const verified = hourIndex(rotation.verified);
  for (const c of rotation.extending) {
    const next = await parseKeys(c.keys);
    if (c.accepted) assert.doesNotThrow(() => checkExtends(next, pinned, verified), c.why);
    else assert.throws(() => checkExtends(next, pinned, verified), /does not extend/, c.why);
  }
});

test("a list with a wrong id or overlapping keys is refused", async () => {
  const wrong = structuredClone(rotation.keys);
  wrong[0].id = "00".repeat(8);
  const overlapping = structuredClone(rotation.keys);
  overlapping[0].last_hour = overlapping[1].first_hour;
  for (const bad of [wrong, overlapping]) {
    await assert.rejects(parseKeys(bad), (e) => e instanceof VerificationError && /key list is refused/.test(e.message));
  }
});

test("a key list that does not name the key given is refused, naming the key given", async () => {
  const verifier = await Verifier.create(trust.keys[2].public_key); // RFC 8032 test 3
  await assert.rejects(
    verifier.useKeys(rotation.keys),
    (e) => e instanceof VerificationError && e.message.includes(`does not list the key you trust (${trust.keys[2].id})`),
  );
  // No list at all (a mirror without the document): the key given alone, for every hour.
  assert.equal(await verifier.useKeys([]), false);
  const h = chain.hours[0];
  await assert.rejects(check(verifier, h, { signature: rotation.hours[0].signature }), naming(h.hour, "does not verify"));
});

/** A WebCrypto that hashes but has no Ed25519, as older browsers answer. */
const subtleWithoutEd25519 = {
  digest: (algorithm, data) => crypto.subtle.digest(algorithm, data),
  verify: () => Promise.reject(new Error("unreachable")),
  importKey: async (format, key, algorithm) => {
    throw new DOMException(`Unrecognized algorithm name: ${algorithm.name}`, "NotSupportedError");
  },
};

test("a runtime without WebCrypto Ed25519 gets a clear MissingDependency", async () => {
  for (const subtle of [subtleWithoutEd25519, { digest: subtleWithoutEd25519.digest }, null]) {
    await assert.rejects(
      Verifier.create(chain.public_key, { subtle }),
      (e) => e instanceof MissingDependency && e.code === "missing_dependency" && /Ed25519|WebCrypto/.test(e.message),
    );
  }
});

test("an exact body's signed message is domain, hour index, header and body digest (section 14)", async () => {
  const { exactMessage, EXACT_DOMAIN } = await import("../verify.js");
  const h = chain.hours[1];
  const bodyDigest = await digest(new Uint8Array([1, 2, 3]));
  const message = exactMessage(hourIndex(h.hour), fromHex(h.header), bodyDigest);
  assert.equal(message.length, 18 + 8 + 32 + 32);
  assert.equal(new TextDecoder().decode(EXACT_DOMAIN), "bloomcast-exact-v1");
  assert.equal(toHex(message.subarray(0, 18)), toHex(EXACT_DOMAIN));
  assert.equal(new DataView(message.buffer).getBigInt64(18, false), BigInt(h.index));
  assert.equal(toHex(message.subarray(26, 58)), h.header);
  assert.equal(toHex(message.subarray(58)), toHex(bodyDigest));
  // Hours before 1970 are negative, two's complement.
  assert.equal(toHex(exactMessage(-1, GENESIS, GENESIS).subarray(18, 26)), "ffffffffffffffff");
});
