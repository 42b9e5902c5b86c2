// PROTOCOL.md section 11, "Trust" and "Derived forms", against docs/trust-vectors.json
// (computed by an independent Python transcription, checked by the Rust code too): the
// exact vouch, acknowledgement, checkpoint and open-hour messages; from any key of a
// signed succession all are trusted; the forged list (the trusted key retired, a mirror's
// own key after it, vouched for by itself) has its hours refused naming that key; a
// checkpoint and an open-hour version verify only as made, and a version older than the
// freshness bound is refused; a derived form's signature verifies only for its form.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  Verifier,
  VerificationError,
  FORM_DOMAINS,
  ackMessage,
  checkpointMessage,
  digest,
  formMessage,
  fromHex,
  hourIndex,
  openMessage,
  parseKeys,
  parseOpenSignature,
  toHex,
  trustedRun,
  vouchMessage,
} from "../verify.js";
import { OPEN_FRESHNESS_SECONDS } from "../bloomcast.js";

const read = (name) => JSON.parse(readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8"));
const trust = read("trust-vectors.json");
const chain = read("chain-vectors.json");
const rotation = read("rotation-vectors.json");
const [one, two, three] = trust.keys;
const naming = (text) => (e) => e instanceof VerificationError && e.message.includes(text);

/** Signs `message` with the seed (hex) of one of the vectors' keys: what a publisher does. */
async function sign(seedHex, message) {
  const key = await crypto.subtle.importKey("pkcs8", fromHex(`302e020100300506032b657004220420${seedHex}`), { name: "Ed25519" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, message));
}

async function trusting(from, keys = trust.keys) {
  const verifier = await Verifier.create(from.public_key);
  assert.equal(await verifier.useKeys(keys), true);
  return verifier;
}

test("vouch and acknowledgement messages are the vectors', and their signatures verify under the keys that made them", async () => {
  for (const [i, k] of trust.keys.entries()) {
    if (i === 0) continue;
    const prev = trust.keys[i - 1];
    const first = hourIndex(k.first_hour);
    const vouch = vouchMessage(fromHex(k.public_key), first);
    const ack = ackMessage(fromHex(prev.public_key), first);
    assert.equal(toHex(vouch), k.vouch_message, k.id);
    assert.equal(toHex(ack), k.ack_message, k.id);
    const key = (hex) => crypto.subtle.importKey("raw", fromHex(hex), { name: "Ed25519" }, false, ["verify"]);
    assert.ok(await crypto.subtle.verify({ name: "Ed25519" }, await key(prev.public_key), fromHex(k.vouch), vouch), `${k.id}: vouch`);
    assert.ok(await crypto.subtle.verify({ name: "Ed25519" }, await key(k.public_key), fromHex(k.ack), ack), `${k.id}: ack`);
  }
});

test("from any key of a signed succession, every key of it is trusted", async () => {
  const keys = await parseKeys(trust.keys);
  for (const k of trust.keys) {
    const run = await trustedRun(keys, fromHex(k.public_key));
    assert.deepEqual(keys.slice(run.first, run.last + 1).map((x) => x.id), trust.trusted_from_any, k.id);
    const verifier = await trusting(k);
    assert.deepEqual(verifier.trustedKeys().map((x) => x.id), trust.trusted_from_any);
  }
});

test("the forged list's key, which the trusted key never vouched for, is refused naming it for its hours", async () => {
  const verifier = await trusting(one, trust.forged);
  const forger = trust.forged[1];
  assert.deepEqual(verifier.trustedKeys().map((k) => k.id), [one.id]);
  const refused = trust.forged_refused_hour;
  assert.throws(
    () => verifier.keyFor(hourIndex(refused), refused, forger.id),
    naming(`hour ${refused}: it is listed under key ${forger.id}, which is refused: no key you trust vouched for it`),
  );
  // The trusted key's own hours still verify under it.
  assert.equal(verifier.keyFor(hourIndex(one.first_hour), one.first_hour, one.id).id, one.id);
  // A list that does not name the key given at all vouches for nothing.
  const other = await Verifier.create(two.public_key);
  await assert.rejects(other.useKeys(trust.forged), naming(`it does not list the key you trust (${two.id})`));
});

test("a vouch binds its first hour, and each direction needs its own signature", async () => {
  const moved = structuredClone(trust.keys);
  // Key 2 listed from an hour later than the one its vouch and acknowledgement name.
  moved[0].last_hour = "2025-12-20T15:00:00Z";
  moved[1].first_hour = "2025-12-20T16:00:00Z";
  const fromOne = await trusting(one, moved);
  assert.deepEqual(fromOne.trustedKeys().map((k) => k.id), [one.id], "signed for another first hour");
  const forwardOnly = structuredClone(trust.keys);
  forwardOnly[1].ack = null;
  assert.deepEqual((await trusting(one, forwardOnly)).trustedKeys().map((k) => k.id), trust.trusted_from_any);
  const fromTwo = await trusting(two, forwardOnly);
  assert.deepEqual(fromTwo.trustedKeys().map((k) => k.id), [two.id, three.id], "no acknowledgement of key 1");
  assert.throws(() => fromTwo.keyFor(hourIndex(one.first_hour), one.first_hour, null), naming("it is not acknowledged by the keys you trust"));
});

test("a succession signature that is not 128 hex digits makes the list refused", async () => {
  const bad = structuredClone(trust.keys);
  bad[1].vouch = "00";
  const verifier = await Verifier.create(one.public_key);
  await assert.rejects(verifier.useKeys(bad), naming(`key ${two.id}: its vouch is not 128 hex digits`));
});

test("the checkpoint's message is the vector's and it verifies under the key listed for its hour, only as made", async () => {
  const c = trust.checkpoint;
  assert.equal(toHex(checkpointMessage(c.made, hourIndex(c.hour), fromHex(c.header))), c.message);
  for (const from of trust.keys) {
    const checked = await (await trusting(from)).checkCheckpoint(c);
    assert.deepEqual([checked.hour, toHex(checked.header), checked.made, checked.keyId], [c.hour, c.header, c.made, c.key_id]);
  }
  const verifier = await trusting(one);
  const later = new Date(Date.parse(c.hour) + 3600e3).toISOString().replace(".000Z", "Z");
  for (const altered of [{ made: c.made + 3600 }, { hour: later }, { header: "00".repeat(32) }]) {
    await assert.rejects(verifier.checkCheckpoint({ ...c, ...altered }), naming("(checkpoint): "), JSON.stringify(altered));
  }
  await assert.rejects(verifier.checkCheckpoint({ ...c, key_id: one.id }), naming(`signed by key ${one.id}, a key listed for other hours`));
  await assert.rejects(verifier.checkCheckpoint({ ...c, signature: null }), naming("signature missing"));
  // Its signer outside the keys trusted: refused naming it.
  const forged = await trusting(one, [trust.forged[0], { ...trust.forged[1], last_hour: null }]);
  await assert.rejects(forged.checkCheckpoint(c), naming(`listed under key ${trust.forged[1].id}, which is refused`));
});

test("a checkpoint whose header is not the chain's for its hour is refused", async () => {
  // The vector's header is not chain-vectors.json's for 16:00: a verifier that checked
  // that hour refuses it.
  const verifier = await trusting(two);
  const h = chain.hours[3];
  await verifier.check(h.hour, fromHex(h.bin_hex), h.prev, rotation.hours[3].bloom_signature);
  await assert.rejects(verifier.checkCheckpoint(trust.checkpoint), naming("the checkpoint's header is not the chain's for that hour"));
  // One the publisher signed over that header passes.
  const seed = trust.seeds[two.id];
  const made = trust.checkpoint.made;
  const signature = toHex(await sign(seed, checkpointMessage(made, h.index, fromHex(h.header))));
  const good = { hour: h.hour, header: h.header, made, signature, key_id: two.id };
  assert.equal((await verifier.checkCheckpoint(good)).hour, h.hour);
});

test("the open hour's message, header and signature are the vectors', and a version past the freshness bound is refused", async () => {
  const o = trust.open;
  const bytes = fromHex(o.filter_hex);
  assert.equal(toHex(await digest(bytes)), o.digest);
  assert.equal(toHex(openMessage(hourIndex(o.hour), o.made, fromHex(o.digest))), o.message);
  assert.deepEqual(parseOpenSignature(o.header_value), { signature: o.signature, keyId: o.key_id, made: o.made });
  assert.equal(OPEN_FRESHNESS_SECONDS, 600);
  const verifier = await trusting(one);
  assert.equal(await verifier.checkOpen(o.hour, bytes, o.header_value, o.made + 5, 600), o.made);
  assert.equal(await verifier.checkOpen(o.hour, bytes, o.header_value, o.made + 600, 600), o.made);
  await assert.rejects(
    verifier.checkOpen(o.hour, bytes, o.header_value, o.made + 601, 600),
    naming(`hour ${o.hour} (open): this version was made 601 s ago, longer than the freshness bound of 600 s`),
  );
  const flipped = Uint8Array.from(bytes);
  flipped[0] ^= 1;
  await assert.rejects(verifier.checkOpen(o.hour, flipped, o.header_value, o.made, 600), naming(`hour ${o.hour} (open): the signature does not verify`));
  const otherTime = o.header_value.replace(`made=${o.made}`, `made=${o.made + 60}`);
  await assert.rejects(verifier.checkOpen(o.hour, bytes, otherTime, o.made + 60, 600), naming("does not verify"));
  const otherHour = new Date(Date.parse(o.hour) - 3600e3);
  await assert.rejects(verifier.checkOpen(otherHour, bytes, o.header_value, o.made, 600), naming("signed by key"));
  await assert.rejects(verifier.checkOpen(o.hour, bytes, null, o.made, 600), (e) => naming("(open): Bloom-Open-Signature missing")(e) && e.unsigned);
});

test("a derived form's signature covers its domain, hour, header and body, and verifies as no other form", async () => {
  const h = chain.hours[1];
  const body = new TextEncoder().encode("a ribbon body, as signed");
  const bodyDigest = await digest(body);
  for (const [form, domain] of Object.entries({ exact: "bloomcast-exact-v1", ribbon: "bloomcast-ribbon-v1", ribbon2: "bloomcast-ribbon2-v1" })) {
    assert.equal(new TextDecoder().decode(FORM_DOMAINS[form]), domain);
    const message = formMessage(form, h.index, fromHex(h.header), bodyDigest);
    assert.equal(message.length, domain.length + 8 + 32 + 32, form);
    assert.equal(toHex(message), toHex(new TextEncoder().encode(domain)) + h.index.toString(16).padStart(16, "0") + h.header + toHex(bodyDigest));
  }
  const verifier = await trusting(one);
  const signature = toHex(await sign(trust.seeds[one.id], formMessage("ribbon", h.index, fromHex(h.header), bodyDigest)));
  const value = `${signature}; keyid="${one.id}"`;
  await verifier.checkForm("ribbon", h.hour, body, fromHex(h.header), value);
  for (const other of ["exact", "ribbon2"]) {
    await assert.rejects(verifier.checkForm(other, h.hour, body, fromHex(h.header), value), naming(`hour ${h.hour}: the ${other === "exact" ? "exact body" : "ribbon2 body"}'s signature does not verify`));
  }
  await assert.rejects(verifier.checkForm("ribbon", chain.hours[0].hour, body, fromHex(chain.hours[0].header), value), naming("does not verify"));
  await assert.rejects(verifier.checkForm("ribbon", h.hour, Uint8Array.from([...body, 0]), fromHex(h.header), value), naming("the ribbon's signature does not verify"));
  // Nor as the hour's own chain signature over the same header.
  await assert.rejects(verifier.check(h.hour, fromHex(h.bin_hex), h.prev, value), naming("does not verify"));
  await assert.rejects(verifier.checkForm("ribbon", h.hour, body, fromHex(h.header), null), (e) => e.unsigned && naming("missing")(e));
});
