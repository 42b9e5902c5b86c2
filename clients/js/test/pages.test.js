// The paged form (`.pages`, PROTOCOL.md section 12, "Huge hours by the page") without a
// server: paged bodies put together here from the version 2 bodies of
// docs/ribbon2-vectors.json and signed with a key made here, decoded, queried and
// verified page by page (and refused once altered); where a key's page is; what reading by
// the page is predicted to cost, and when the planner takes it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  Page,
  Pages,
  PagesHeader,
  DecodeError,
  ProtocolError,
  VerificationError,
  cheapestForm,
  cheapestPages,
  cheapestPlan,
  keyOf,
  pageOf,
  pagesFor,
  pagesOfKeys,
  pagesPredictedBytes,
  pagesPredictedSlotBytes,
} from "../bloomcast.js";
import { Verifier, FORM_DOMAINS, formMessage, signedPage, digest, keyId, toHex } from "../verify.js";

const vectors = JSON.parse(readFileSync(new URL("../../../docs/ribbon2-vectors.json", import.meta.url), "utf8"));
const members = (f) => Array.from({ length: f.members.count }, (_, i) => `${f.members.prefix}${f.members.first + f.members.step * i}`);
const bodyOf = (f) => Uint8Array.from(Buffer.from(f.body, "hex"));
// Version 2 bodies at the grade (6, 185) (that of 0.01): 3 members, and none.
const THREE = vectors.filters.find((f) => f.k === 6 && f.split === 185 && f.members.count === 3);
const EMPTY = vectors.filters.find((f) => f.k === 6 && f.split === 185 && f.members.count === 0);
const HOUR = 500_000; // 2027-01-15T08Z
const HOUR_NAME = new Date(HOUR * 3600e3).toISOString().replace(".000Z", "Z");

/** A paged body of `bodies` (one per page) at (k, split) for hour `hour`, each slot `pad`
 * bytes past the longest body, signed by `sign` (a function of the bytes signed) or not. */
async function paged(bodies, { k = 6, split = 185, n, hour = HOUR, pad = 3, chain = new Uint8Array(32).fill(7), keyIdHex = null, sign = null } = {}) {
  const slot = 66 + Math.max(...bodies.map((b) => b.length)) + pad;
  const out = new Uint8Array(72 + bodies.length * slot);
  const view = new DataView(out.buffer);
  out.set([0x42, 0x43, 0x50, 0x31], 0);
  out[4] = k;
  out[5] = split;
  view.setBigInt64(8, BigInt(hour), false);
  if (keyIdHex) {
    out.set(chain, 16);
    out.set(Buffer.from(keyIdHex, "hex"), 48);
  }
  view.setBigUint64(56, BigInt(n), false);
  view.setUint32(64, bodies.length, false);
  view.setUint32(68, slot, false);
  for (const [p, body] of bodies.entries()) {
    const at = 72 + p * slot;
    view.setUint16(at + 64, body.length, false);
    out.set(body, at + 66);
  }
  if (sign) {
    const header = out.slice(0, 72);
    for (let p = 0; p < bodies.length; p++) {
      const at = 72 + p * slot;
      const message = formMessage("page", hour, chain, await digest(signedPage(header, p, out.subarray(at, at + slot))));
      out.set(await sign(message), at);
    }
  }
  return out;
}

/** A key made here: `{ hex, id, sign }`. */
async function signer() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  return {
    hex: toHex(raw),
    id: await keyId(raw),
    sign: async (message) => new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, message)),
  };
}

const slotOf = (body, p) => {
  const header = PagesHeader.parse(body);
  const { start, end } = header.slotRange(p);
  return body.slice(start, end);
};

test("a key's page is floor((key mod 2^56) * P / 2^56), as BigInt arithmetic says", async () => {
  assert.equal(pageOf({ h1: 0, h2: 0 }, 1000), 0);
  // The top byte of the key is not part of it; the low 56 bits all ones are the last page.
  assert.equal(pageOf({ h1: 0xffffffff, h2: 0xffffffff }, 2 ** 32 - 1), 2 ** 32 - 2);
  assert.equal(pageOf({ h1: 0xff800000, h2: 0 }, 2), 1);
  assert.equal(pageOf({ h1: 0x00800000, h2: 0 }, 2), 1);
  assert.equal(pageOf({ h1: 0x007fffff, h2: 0xffffffff }, 2), 0);
  for (let i = 0; i < 500; i++) {
    const key = await keyOf(`user:${i}`);
    const low = ((BigInt(key.h1) << 32n) | BigInt(key.h2)) % 2n ** 56n;
    for (const pages of [1, 7, 1563, 156250, 2 ** 32 - 1]) {
      const page = pageOf(key, pages);
      assert.equal(BigInt(page), (low * BigInt(pages)) / 2n ** 56n);
      assert.ok(page >= 0 && page < pages);
    }
  }
  assert.deepEqual([pagesFor(0), pagesFor(1), pagesFor(64), pagesFor(65), pagesFor(100_000)], [1, 1, 1, 2, 1563]);
  const keys = await Promise.all(["a", "b", "c", "a"].map(keyOf));
  assert.deepEqual(pagesOfKeys(keys, 1), [0]);
  assert.ok(pagesOfKeys(keys, 1000).length <= 3);
});

test("a paged body decodes, and a key answers as its page's version 2 body", async () => {
  const body = await paged([bodyOf(THREE)], { n: 3 });
  const whole = Pages.fromBytes(body);
  assert.deepEqual([whole.header.k, whole.header.split, whole.header.hour, whole.n, whole.header.pages], [6, 185, HOUR, 3, 1]);
  assert.equal(whole.header.signed, false);
  assert.equal(whole.header.keyId, "0000000000000000");
  assert.equal(whole.fpp, 2 ** -6 * (1 - 185 / 512));
  assert.ok(whole.complete);
  for (const id of members(THREE)) assert.ok(await whole.contains(id), id);
  for (const { id, contains } of THREE.absent ?? []) assert.equal(await whole.contains(id), contains, id);
  // Read alone, from its slot, page 0 answers the same.
  const header = PagesHeader.parse(body.subarray(0, 72));
  const alone = new Pages(header);
  alone.pages.set(0, Page.parse(header, 0, slotOf(body, 0)));
  for (let i = 0; i < 300; i++) assert.equal(await alone.contains(`probe:${i}`), await whole.contains(`probe:${i}`));
  // A key whose page was not read is no answer.
  const two = Pages.fromBytes(await paged([bodyOf(THREE), bodyOf(EMPTY)], { n: 3 }));
  const partial = new Pages(two.header);
  partial.pages.set(0, two.pages.get(0));
  let unread = null;
  for (let i = 0; !unread; i++) {
    const key = await keyOf(`probe:${i}`);
    if (!partial.has(key)) unread = key;
  }
  assert.throws(() => partial.containsKey(unread), ProtocolError);
});

test("a decoder refuses a header, slot or body the format rules out", async () => {
  const body = await paged([bodyOf(THREE), bodyOf(EMPTY)], { n: 3, pad: 4 });
  const header = PagesHeader.parse(body);
  const altered = (at, value, bytes = body) => {
    const copy = bytes.slice();
    copy[at] = value;
    return copy;
  };
  assert.throws(() => PagesHeader.parse(body.subarray(0, 71)), DecodeError);
  assert.throws(() => PagesHeader.parse(altered(3, 0x32)), /magic/);
  assert.throws(() => PagesHeader.parse(altered(4, 32)), /no such grade/);
  assert.throws(() => PagesHeader.parse(altered(7, 1)), /no such grade/);
  assert.throws(() => PagesHeader.parse(altered(67, 0)), /at least one page/); // P = 0
  assert.throws(() => Pages.fromBytes(body.subarray(0, body.length - 1)), /bytes where the header says/);
  assert.throws(() => Pages.fromBytes(altered(63, 4)), /hold 3 keys where the header says 4/);
  const slot = slotOf(body, 1);
  const length = (slot[64] << 8) | slot[65];
  // L past the slot's end.
  assert.throws(() => Page.parse(header, 1, altered(65, header.slot - 65, slot)), /overrun/);
  // Padding that is not zero.
  assert.throws(() => Page.parse(header, 1, altered(slot.length - 1, 1, slot)), /padding is not zero/);
  // A body of another grade than the header's.
  assert.throws(() => Page.parse(header, 1, altered(66 + 4, 7, slot)), /grade/);
  // A malformed body, a slot of another size, no such page.
  assert.throws(() => Page.parse(header, 1, altered(66, 0, slot)), /BCR2/);
  assert.throws(() => Page.parse(header, 1, slot.subarray(1)), /slot has/);
  assert.throws(() => Page.parse(header, 2, slot), /no such page/);
  assert.ok(Page.parse(header, 1, slot).n === 0 && length === EMPTY.body.length / 2);
});

test("each page verifies alone under the key listed for its hour, and nothing altered does", async () => {
  const key = await signer();
  const chain = crypto.getRandomValues(new Uint8Array(32));
  const body = await paged([bodyOf(THREE), bodyOf(EMPTY)], { n: 3, chain, keyIdHex: key.id, sign: key.sign });
  const header = PagesHeader.parse(body);
  assert.ok(header.signed && header.keyId === key.id && toHex(header.chainHeader) === toHex(chain));
  const verifier = await Verifier.create(key.hex);
  for (const p of [0, 1]) await verifier.checkPage(HOUR_NAME, header, p, slotOf(body, p));
  assert.equal(new TextDecoder().decode(FORM_DOMAINS.page), "bloomcast-page-v1");

  const refused = (promise, pattern, unsigned = false) =>
    assert.rejects(promise, (e) => e instanceof VerificationError && pattern.test(e.message) && e.unsigned === unsigned);
  const flip = (bytes, at) => {
    const copy = bytes.slice();
    copy[at] ^= 1;
    return copy;
  };
  const slot = slotOf(body, 0);
  // Its body, its length, its padding, its signature: each altered byte fails.
  for (const at of [66 + 10, 65, slot.length - 1, 3]) {
    await refused(verifier.checkPage(HOUR_NAME, header, 0, flip(slot, at)), /page 0's signature does not verify/);
  }
  // A page verified as another page, or under another header (n, the grade, the chain header).
  await refused(verifier.checkPage(HOUR_NAME, header, 1, slotOf(body, 0).slice(0, header.slot)), /page 1's signature/);
  for (const at of [63, 5, 20]) await refused(verifier.checkPage(HOUR_NAME, flip(body.subarray(0, 72), at), 0, slot), /signature does not verify/);
  // Another hour's pages, or the hour asked named by a header that is not its.
  await refused(verifier.checkPage(new Date((HOUR + 1) * 3600e3), header, 0, slot), /another hour's pages/);
  // Signed by a key not listed for the hour.
  const other = await signer();
  await refused((await Verifier.create(other.hex)).checkPage(HOUR_NAME, header, 0, slot), new RegExp(`signed by key ${key.id}`));
  // A chain header other than the one this verifier checked for the hour.
  const known = await Verifier.create(key.hex);
  known.headers.set(HOUR, { prev: new Uint8Array(32), header: new Uint8Array(32).fill(1) });
  await refused(known.checkPage(HOUR_NAME, header, 0, slot), /not the chain's/);
  // Unsigned: a zero signature, or no key id at all.
  const zeroed = slot.slice();
  zeroed.fill(0, 0, 64);
  await refused(verifier.checkPage(HOUR_NAME, header, 0, zeroed), /page 0 is unsigned/, true);
  const unsigned = await paged([bodyOf(THREE)], { n: 3 });
  await refused(verifier.checkPage(HOUR_NAME, unsigned.subarray(0, 72), 0, slotOf(unsigned, 0)), /pages are unsigned/, true);
});

test("a slot is predicted from n and the grade, as the Rust SDK's Pages::predicted_slot_bytes", () => {
  // A million keys: 15,625 pages of 64 on average, the fullest taken as 64 + 5 * 8 + 2.
  assert.equal(pagesPredictedSlotBytes(1_000_000, 7), 66 + 13 + Math.ceil((106 * 7) / 8));
  assert.equal(pagesPredictedSlotBytes(1_000_000, 6, 185), 66 + 13 + Math.ceil((106 * (6 + 185 / 256)) / 8));
  assert.equal(pagesPredictedSlotBytes(0, 7), 79);
  assert.equal(pagesPredictedBytes(1_000_000, 7), 72 + 15625 * pagesPredictedSlotBytes(1_000_000, 7));
  // The protocol's example: about 160 bytes a slot at 1%.
  const slot = pagesPredictedSlotBytes(10_000_000, 6, 185);
  assert.ok(slot > 150 && slot < 175, `${slot}`);
});

test("reading by the page is chosen for a few IDs of a huge hour, and the whole form for many", async () => {
  const few = await Promise.all(["user:1", "user:2", "user:3", "user:4", "user:5"].map(keyOf));
  const choice = cheapestForm(10_000_000, 0.01, few.length, 10240, { ribbon2: true, pages: true, keys: few });
  assert.equal(choice.form, "pages", JSON.stringify(choice));
  assert.equal(choice.pages, 156_250);
  assert.equal(choice.needed, 5);
  // The protocol's figure: 72 + needed * (slot + 400 + 4096) + 400 (each page with its
  // headers and its round trip), against the whole form.
  assert.equal(choice.bytes + 400, 72 + 5 * (choice.slot + 400 + 4096) + 400);
  assert.equal(choice.otherwise.form, "ribbon2");
  assert.ok(choice.otherwise.bytes > 100 * choice.bytes);
  assert.equal(choice.fpp, 2 ** -choice.k);
  // Without keys, the pages 5 random IDs are expected on (about 5 of 156,250).
  const guessed = cheapestForm(10_000_000, 0.01, 5, 10240, { ribbon2: true, pages: true });
  assert.ok(guessed.form === "pages" && Math.abs(guessed.needed - 5) < 0.01, JSON.stringify(guessed));
  // Not offered without version 2, without `pages`, or where ribbons are not read.
  for (const options of [{ ribbon2: false, pages: true }, { ribbon2: true }, { ribbon2: true, pages: true, ribbons: false }]) {
    assert.notEqual(cheapestForm(10_000_000, 0.01, 5, 10240, options).form, "pages", JSON.stringify(options));
  }
  // Following 40,000 IDs, most pages are needed: the whole body costs less.
  assert.notEqual(cheapestForm(1_000_000, 0.01, 40_000, 10240, { ribbon2: true, pages: true }).form, "pages");
  // A small hour is cheaper whole.
  assert.notEqual(cheapestForm(500, 0.01, 3, 10240, { ribbon2: true, pages: true }).form, "pages");
  // A static mirror holds its pages at the target's grade only, asked for without ?fpp=.
  const mirrored = cheapestPages(10_000_000, 0.01, 5, 10240, { mirror: true, keys: few });
  assert.deepEqual([mirrored.k, mirrored.split, mirrored.atTarget], [6, 185, true]);
  // With an exact body a registered reader takes it when it costs less than the pages.
  const exact = cheapestForm(10_000_000, 0.01, 5, 10240, { ribbon2: true, pages: true, keys: few, exact: 100, registered: true });
  assert.deepEqual([exact.form, exact.otherwise.form], ["exact", "pages"]);
});

test("the planner weighs pages for hour by hour: a few IDs of huge hours are read by the page", async () => {
  const keys = await Promise.all(["a", "b", "c"].map(keyOf));
  const hours = Array.from({ length: 24 }, () => ({ count: 1_000_000, open: false }));
  hours.push({ count: 10, open: true });
  const options = { targetFpp: 0.01, capacity: 3000, followed: 3, ribbon2: true };
  const without = cheapestPlan(hours, options);
  const withPages = cheapestPlan(hours, { ...options, pages: true, keys });
  assert.equal(without.plan, "compact");
  assert.equal(withPages.plan, "hourly");
  assert.ok(withPages.hourly < without.hourly / 10, JSON.stringify([withPages, without]));
  assert.equal(withPages.compact, without.compact);
});
