// Verifiable history (docs/PROTOCOL.md section 11): digests, the hour chain and Ed25519
// signatures, checked with WebCrypto alone (SHA-256 and "Ed25519" of `crypto.subtle`).
// A port of the Python client's verify.py: the same checks, refusals and messages; and
// section 11's "Trust": the keys trusted from the one given (successions signed both
// ways), checkpoints, the open hour's signatures and the derived forms' (exact bodies,
// ribbons of version 1 and 2, and each page of an hour's paged form).
//
// A module of its own, loaded by `Client` only when given a `pubkey`: the dashboard serves
// bloomcast.js as one file, which must not import anything. Types: verify.d.ts.
import { VerificationError, MissingDependency, parseDocument, PagesHeader } from "./bloomcast.js";

export { VerificationError, MissingDependency };

/** `header(h-1)` of the first hour of a chain: 32 zero bytes. */
export const GENESIS = new Uint8Array(32);
/** The 17 ASCII bytes every signed message starts with. */
export const DOMAIN = new TextEncoder().encode("bloomcast-hour-v1");

const ED25519 = { name: "Ed25519" };

function defaultSubtle() {
  return globalThis.crypto?.subtle;
}

/** Lowercase hex of bytes. */
export function toHex(bytes) {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Bytes of an even-length hex string, or null if it is not one. */
export function fromHex(text) {
  if (typeof text !== "string" || text.length % 2 || !/^[0-9a-fA-F]*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

function equal(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** SHA-256 of a filter's bytes (the `.bin` body). */
export async function digest(bytes, subtle = defaultSubtle()) {
  return new Uint8Array(await subtle.digest("SHA-256", bytes));
}

/** SHA-256(digest || prev): an hour's link in the chain. */
export async function header(digest_, prev, subtle = defaultSubtle()) {
  const both = new Uint8Array(64);
  both.set(digest_, 0);
  both.set(prev, 32);
  return new Uint8Array(await subtle.digest("SHA-256", both));
}

/** Hours since 1970-01-01T00Z of a Date or RFC 3339 string inside that hour. */
export function hourIndex(hour) {
  const ms = (hour instanceof Date ? hour : new Date(hour)).getTime();
  if (Number.isNaN(ms)) throw new TypeError(`not a time: ${hour}`);
  return Math.floor(ms / 3600e3);
}

function hourName(index) {
  return new Date(index * 3600e3).toISOString().replace(".000Z", "Z");
}

/** The 57 bytes signed: domain, hour index (8 bytes big-endian, signed), header. */
export function signedMessage(index, header_) {
  const out = new Uint8Array(57);
  out.set(DOMAIN, 0);
  new DataView(out.buffer).setBigInt64(17, BigInt(index), false);
  out.set(header_, 25);
  return out;
}

/** The 18 ASCII bytes every signed exact body's message starts with (section 14). */
export const EXACT_DOMAIN = new TextEncoder().encode("bloomcast-exact-v1");

/** The domain of each derived form's signature (section 11, "Derived forms"): the exact
 * body (section 14), the ribbon of version 1 (`.ribbon`, and `.ribbon.json`, whose
 * signature is the same) and of version 2 (`.ribbon2`), and a page of the paged form
 * (`.pages`, section 12, "Huge hours by the page"). */
export const FORM_DOMAINS = Object.freeze({
  exact: EXACT_DOMAIN,
  ribbon: new TextEncoder().encode("bloomcast-ribbon-v1"),
  ribbon2: new TextEncoder().encode("bloomcast-ribbon2-v1"),
  page: new TextEncoder().encode("bloomcast-page-v1"),
});

/** The bytes a derived form's signature covers (section 11, "Derived forms"): its domain,
 * the hour index (8 bytes big-endian, signed), the hour's chain header, SHA-256 of the
 * binary body (of a page: of `signedPage`'s bytes). */
export function formMessage(form, index, header_, bodyDigest) {
  const domain = FORM_DOMAINS[form];
  if (!domain) throw new TypeError(`a derived form is exact, ribbon, ribbon2 or page, not ${JSON.stringify(form)}`);
  return concat(domain, int64(index), header_, bodyDigest);
}

/** What page `p`'s signature is over, hashed (section 12, "Huge hours by the page"): the
 * paged body's header (its 72 bytes, as read), `p` (4 bytes, big-endian) and the page's
 * slot after its signature (length, body and padding). */
export function signedPage(header72, p, slot) {
  const index = new Uint8Array(4);
  new DataView(index.buffer).setUint32(0, p, false);
  return concat(header72, index, slot.subarray(64));
}

/** The 90 bytes an exact body's signature covers (section 14): domain, hour index (8 bytes
 * big-endian, signed), the hour's chain header, SHA-256 of the body. */
export function exactMessage(index, header_, bodyDigest) {
  return formMessage("exact", index, header_, bodyDigest);
}

const ASCII = (text) => new TextEncoder().encode(text);
/** The domains of section 11's "Trust" messages. */
export const VOUCH_DOMAIN = ASCII("bloomcast-key-v1");
export const ACK_DOMAIN = ASCII("bloomcast-key-ack-v1");
export const CHECKPOINT_DOMAIN = ASCII("bloomcast-checkpoint-v1");
export const OPEN_DOMAIN = ASCII("bloomcast-open-v1");

function int64(value) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, BigInt(value), false);
  return out;
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What a retiring key signs for its successor `next` (32 bytes), first signing the hour
 * of index `firstIndex`: "bloomcast-key-v1" || next || first hour (8 bytes big-endian). */
export function vouchMessage(next, firstIndex) {
  return concat(VOUCH_DOMAIN, next, int64(firstIndex));
}

/** What a new key signs for its predecessor `prev` (32 bytes), succeeded from the hour of
 * index `firstIndex`: "bloomcast-key-ack-v1" || prev || first hour. */
export function ackMessage(prev, firstIndex) {
  return concat(ACK_DOMAIN, prev, int64(firstIndex));
}

/** What a checkpoint signs: "bloomcast-checkpoint-v1" || made (Unix seconds, 8 bytes
 * big-endian) || the hour's index || its chain header. */
export function checkpointMessage(made, index, header_) {
  return concat(CHECKPOINT_DOMAIN, int64(made), int64(index), header_);
}

/** What a version of the open hour signs: "bloomcast-open-v1" || hour index || made ||
 * SHA-256 of the filter's bytes. */
export function openMessage(index, made, filterDigest) {
  return concat(OPEN_DOMAIN, int64(index), int64(made), filterDigest);
}

/** A key's id: the first 8 bytes of SHA-256 of its 32 bytes, 16 hex digits. */
export async function keyId(publicKey, subtle = defaultSubtle()) {
  return toHex((await digest(publicKey, subtle)).subarray(0, 8));
}

/** A signature header's value: the signature first, then `;`-separated `name=value`
 * parameters (names lowercased, values unquoted). */
function signatureFields(value) {
  const [first, ...params] = value.split(";");
  const named = new Map();
  for (const param of params) {
    const at = param.indexOf("=");
    const name = (at < 0 ? param : param.slice(0, at)).trim().toLowerCase();
    named.set(name, (at < 0 ? "" : param.slice(at + 1)).trim().replace(/^"|"$/g, ""));
  }
  return { signature: first.trim(), named };
}

/**
 * A `Bloom-Signature` value as `{signature, keyId}` (hex; `keyId` null when absent). The
 * signature comes first, then `;`-separated parameters; `keyid` is read (quoted or not,
 * any case), others are ignored.
 */
export function parseSignature(value) {
  if (value === null || value === undefined) return { signature: null, keyId: null };
  const { signature, named } = signatureFields(value);
  return { signature, keyId: named.has("keyid") ? named.get("keyid").toLowerCase() : null };
}

/**
 * A `Bloom-Open-Signature` value (`<signature>; keyid="<id>"; made=<Unix seconds>`) as
 * `{signature, keyId, made}`: `keyId` null when absent, `made` null when absent or not an
 * integer. Parsed as `parseSignature`.
 */
export function parseOpenSignature(value) {
  if (value === null || value === undefined) return { signature: null, keyId: null, made: null };
  const { signature, named } = signatureFields(value);
  const made = named.get("made");
  return {
    signature,
    keyId: named.has("keyid") ? named.get("keyid").toLowerCase() : null,
    made: made !== undefined && /^-?\d+$/.test(made) ? Number(made) : null,
  };
}

function refuse(message) {
  return new VerificationError(`the publisher's key list is refused: ${message}`);
}

/** A succession signature of the key list (`vouch`, `ack`): 64 bytes, or null when absent. */
function successionSignature(k, name) {
  const value = k[name];
  if (value === null || value === undefined) return null;
  const raw = fromHex(value);
  if (!raw || raw.length !== 64) throw refuse(`key ${k.id}: its ${name} is not 128 hex digits`);
  return raw;
}

/**
 * The well-known document's `keys` as `[{first, last, publicKey, id, vouch, ack}]` (hour
 * indexes, `last` null for the current key; `vouch` and `ack` the succession's signatures,
 * 64 bytes, or null), oldest first, checked: ids match, ranges ordered and apart, only the
 * newest open. Throws `VerificationError` otherwise.
 */
export async function parseKeys(listed, subtle = defaultSubtle()) {
  const out = [];
  for (const k of listed ?? []) {
    let entry;
    try {
      const publicKey = fromHex(k.public_key);
      entry = { first: hourIndex(k.first_hour), last: k.last_hour ? hourIndex(k.last_hour) : null, publicKey, id: k.id };
      if (!publicKey || publicKey.length !== 32 || k.id !== (await keyId(publicKey, subtle))) {
        throw refuse(`the id of ${k.public_key} is not ${k.id}`);
      }
      entry.vouch = successionSignature(k, "vouch");
      entry.ack = successionSignature(k, "ack");
    } catch (e) {
      if (e instanceof VerificationError) throw e;
      throw refuse(JSON.stringify(k));
    }
    if (entry.last !== null && entry.last < entry.first) throw refuse(`key ${k.id} ends before it starts`);
    const before = out[out.length - 1];
    if (before && (before.last === null || before.last >= entry.first)) throw refuse("keys overlap or are out of order");
    out.push(entry);
  }
  return out;
}

/**
 * Throws `VerificationError` unless the key list `next` may replace `pinned` (both as
 * `parseKeys` returns): every pinned key again with its first hour, an open one possibly
 * retired (not before `verified`, the newest hour index verified), a retired one
 * unchanged, new keys after them.
 */
export function checkExtends(next, pinned, verified = null) {
  pinned.forEach(({ first, last, publicKey, id }, i) => {
    const now = next[i];
    if (!now || !equal(now.publicKey, publicKey) || now.first !== first) {
      throw new VerificationError(`the key list does not extend the one pinned: key ${id} is missing, replaced or moved`);
    }
    if (last !== null && now.last !== last) {
      throw new VerificationError(`the key list does not extend the one pinned: key ${id} had its last hour changed`);
    }
    if (last === null && now.last !== null && verified !== null && first <= verified && now.last < verified) {
      throw new VerificationError(`the key list does not extend the one pinned: key ${id} is retired before an hour verified under it`);
    }
  });
}

/** Bytes of a hex field of `size` bytes, else a VerificationError naming the hour. A
 * field that is absent (null, undefined or empty) with `missing: "unsigned"` leaves the
 * hour unverified rather than refused: the error says so (`unsigned`). */
function unhex(text, size, name, what, { missing = "refuse" } = {}) {
  if ((text === null || text === undefined || text === "") && missing === "unsigned") {
    throw new VerificationError(`hour ${name}: ${what} missing: not signed, so it cannot be verified`, { unsigned: true });
  }
  const raw = fromHex(text ?? "");
  if (!raw || raw.length !== size) {
    throw new VerificationError(`hour ${name}: ${what} missing or not ${size} bytes of hex: not signed`);
  }
  return raw;
}

/**
 * Throws VerificationError naming the hour `name` when a filter's `count` is fewer IDs than
 * its bits need: each ID sets at most `k` bits, so a filter of `count` IDs has at most
 * `count * k` set. The count is not signed (the chain covers the filter's bytes); this
 * bound is what can be checked of it, and it catches a count edited down.
 */
export function checkCount(name, filter, count) {
  const bits = filter.setBits();
  if (bits > count * filter.k) {
    throw new VerificationError(
      `hour ${name}: its count, ${count}, is fewer IDs than its filter's ${bits} set bits need (at most k = ${filter.k} each): the count was altered`,
    );
  }
}

/** Imports a raw Ed25519 public key, telling a runtime without Ed25519 from a bad key. */
async function importKey(subtle, publicKey) {
  if (typeof subtle?.importKey !== "function" || typeof subtle?.verify !== "function") {
    throw new MissingDependency("verifying signatures needs WebCrypto (crypto.subtle), which this runtime lacks");
  }
  try {
    return await subtle.importKey("raw", publicKey, ED25519, false, ["verify"]);
  } catch (e) {
    if (e?.name === "NotSupportedError") {
      throw new MissingDependency(
        `verifying signatures needs Ed25519 in WebCrypto (crypto.subtle), which this runtime lacks (${e.message}): use Node 20+ or a browser that supports it`,
      );
    }
    throw new TypeError(`not a public key: ${toHex(publicKey)} (${e?.message})`);
  }
}

/**
 * The run of `keys` (as `parseKeys` returns) trusted from the key `given` (32 bytes), as
 * `{first, last}` indexes into `keys` (section 11, "Trust"): the key itself, each later
 * key whose `vouch` the key before it signed (for the first hour it lists), each earlier
 * key the key after it acknowledged (`ack`). Null when the list does not name `given`.
 */
export async function trustedRun(keys, given, subtle = defaultSubtle()) {
  const at = keys.findIndex((k) => equal(k.publicKey, given));
  if (at < 0) return null;
  const signed = async (signer, message, signature) =>
    signature !== null && (await subtle.verify(ED25519, await importKey(subtle, signer), signature, message));
  let last = at;
  while (last + 1 < keys.length && (await signed(keys[last].publicKey, vouchMessage(keys[last + 1].publicKey, keys[last + 1].first), keys[last + 1].vouch))) {
    last++;
  }
  let first = at;
  while (first > 0 && (await signed(keys[first].publicKey, ackMessage(keys[first - 1].publicKey, keys[first].first), keys[first].ack))) {
    first--;
  }
  return { first, last };
}

/**
 * Checks what a publisher signs against its key, and the chain links between the hours
 * it has checked: closed hours, their derived forms, checkpoints and versions of the open
 * hour. After `useKeys` with the well-known document's `keys`, each is checked against
 * the key listed for its hour, which must be trusted from the key given (section 11,
 * "Trust"); a signature naming a key listed for other hours is refused. Build one with
 * `Verifier.create`.
 */
export class Verifier {
  /**
   * @param pubkeyHex the publisher's public key, 64 hex digits
   * @param options.subtle the WebCrypto to use (default `globalThis.crypto.subtle`)
   * @throws MissingDependency where the runtime has no WebCrypto Ed25519; TypeError for a bad key
   */
  static async create(pubkeyHex, { subtle = defaultSubtle() } = {}) {
    const given = fromHex(String(pubkeyHex).trim());
    if (!given || given.length !== 32) {
      throw new TypeError(`not a public key: ${JSON.stringify(pubkeyHex)} (expected 64 hex digits, an Ed25519 public key)`);
    }
    await importKey(subtle, given);
    return new Verifier(subtle, given, await keyId(given, subtle));
  }

  constructor(subtle, given, givenId) {
    this.subtle = subtle;
    this.given = given;
    this.givenId = givenId;
    /** The keys listed: the key given for every hour, until `useKeys` adopts a list. */
    this.keys = [{ first: null, last: null, publicKey: given, id: givenId, vouch: null, ack: null }];
    /** The run of `keys` trusted, `{first, last}` (indexes). */
    this.trusted = { first: 0, last: 0 };
    /** hour index → {prev, header} of every hour verified, to check links both ways. */
    this.headers = new Map();
    this.imported = new Map();
  }

  /**
   * Adopts the publisher's key list (the well-known `keys`), trusting the keys its signed
   * successions lead to from the key given (`trustedRun`): an hour listed under any other
   * key is then refused, naming it. An absent or empty list (a mirror without the
   * document, a service that lists none) leaves the key given alone, for every hour.
   * Resolves to whether a list was adopted.
   * @throws VerificationError for a list that does not name the key given, or is malformed
   */
  async useKeys(listed) {
    const keys = await parseKeys(listed ?? [], this.subtle);
    if (!keys.length) return false;
    const run = await trustedRun(keys, this.given, this.subtle);
    if (!run) {
      throw refuse(`it does not list the key you trust (${this.givenId}), so nothing it says is vouched for`);
    }
    this.keys = keys;
    this.trusted = run;
    return true;
  }

  /** The trusted keys, oldest first (`useKeys`: the run trusted from the key given). */
  trustedKeys() {
    return this.keys.slice(this.trusted.first, this.trusted.last + 1);
  }

  /** The trusted key listed for the hour of index `index` (named `name` in errors), which
   * a signature naming the key `named` (a key id, or null) must be made by. */
  keyFor(index, name, named) {
    const at = this.keys.findIndex((k) => (k.first === null || k.first <= index) && (k.last === null || index <= k.last));
    if (at < 0) throw new VerificationError(`hour ${name}: no key is listed for this hour`);
    const listed = this.keys[at];
    if (at < this.trusted.first || at > this.trusted.last) {
      const how = at > this.trusted.last ? "no key you trust vouched for it" : "it is not acknowledged by the keys you trust";
      throw new VerificationError(
        `hour ${name}: it is listed under key ${listed.id}, which is refused: ${how} (a key is trusted only through a succession its predecessor signed; the key given is ${this.givenId})`,
      );
    }
    if (named && named !== listed.id) {
      const whose = this.keys.some((k) => k.id === named) ? "a key listed for other hours" : "a key that is not listed";
      throw new VerificationError(`hour ${name}: signed by key ${named}, ${whose}; the key listed for it is ${listed.id}`);
    }
    return listed;
  }

  async importedKey(listed) {
    let key = this.imported.get(listed.id);
    if (!key) {
      key = await importKey(this.subtle, listed.publicKey);
      this.imported.set(listed.id, key);
    }
    return key;
  }

  async signed(listed, message, signature) {
    return this.subtle.verify(ED25519, await this.importedKey(listed), signature, message);
  }

  async signatureOk(index, header_, signature, listed) {
    return this.signed(listed, signedMessage(index, header_), signature);
  }

  /**
   * Verifies one hour (a Date or RFC 3339 string) whose filter bytes are `bytes`, given
   * the response's `Bloom-Prev-Header` and `Bloom-Signature` and, for a JSON document,
   * its `digest`. Resolves to the hour's header.
   * @throws VerificationError naming the hour (`unsigned` when there was no signature or
   *   no link to check: the hour cannot be verified)
   */
  async check(hour, bytes, prevHex, signatureHex, listedDigest = null) {
    const index = hourIndex(hour);
    const name = hourName(index);
    const parsed = parseSignature(signatureHex);
    const signature = unhex(parsed.signature, 64, name, "Bloom-Signature", { missing: "unsigned" });
    const prev = unhex(prevHex, 32, name, "Bloom-Prev-Header", { missing: "unsigned" });
    const listed = this.keyFor(index, name, parsed.keyId);
    const d = await digest(bytes, this.subtle);
    if (listedDigest !== null && listedDigest !== undefined && listedDigest.toLowerCase() !== toHex(d)) {
      throw new VerificationError(`hour ${name}: the filter's digest is ${toHex(d)}, but the document says ${listedDigest}: the bytes were altered`);
    }
    const known = this.headers.get(index - 1);
    if (known && !equal(known.header, prev)) {
      throw new VerificationError(`hour ${name}: its chain link does not follow the previous hour's header`);
    }
    const h = await header(d, prev, this.subtle);
    const mine = this.headers.get(index);
    if (mine && !equal(mine.header, h)) {
      throw new VerificationError(`hour ${name}: the filter's digest is not the chain's: the bytes were altered`);
    }
    if (!(await this.signatureOk(index, h, signature, listed))) {
      throw new VerificationError(`hour ${name}: the signature does not verify with the public key given`);
    }
    const after = this.headers.get(index + 1);
    if (after && !equal(after.prev, h)) {
      throw new VerificationError(`hour ${name}: the next hour, verified before, links to another header`);
    }
    this.headers.set(index, { prev, header: h });
    return h;
  }

  /**
   * Verifies a saved JSON document of a sealed hour (section 4) offline, given the
   * `Bloom-Prev-Header` and `Bloom-Signature` its response carried (`prev`, `signature`,
   * saved beside it): decodes it (DecodeError), checks its `count` against its bits
   * (`checkCount`), then its digest, signature and link as `check`. Resolves to the
   * hour's header.
   * @throws VerificationError naming the hour and what failed (`unsigned` without the
   *   headers: a saved body alone carries no signature, so it cannot be verified)
   */
  async checkDocument(doc, { prev = null, signature = null } = {}) {
    const { meta, filter } = parseDocument(doc);
    if (!meta.hour) throw new VerificationError("the document names no hour: only hours are signed (days and since ranges are unions)");
    if (!meta.complete) {
      throw new VerificationError(`hour ${meta.hour}: the document is of the open hour, whose versions are signed with Bloom-Open-Signature (checkOpen)`);
    }
    checkCount(meta.hour, filter, meta.count);
    return this.check(meta.hour, filter.bytes, prev, signature, meta.digest ?? null);
  }

  /**
   * Verifies a derived form of the hour `hour` (a Date or RFC 3339 string; section 11,
   * "Derived forms"): `form` "exact", "ribbon" (`.ribbon`, and `.ribbon.json` whose body
   * is the bytes its `filter` decodes to) or "ribbon2", whose binary body is `bytes` and
   * whose `Bloom-Signature` (or `.sig` sidecar) is `signatureHex`, over the hour's chain
   * header `headerBytes` (32 bytes, from a verified v1 hour or chain entry), with the key
   * listed for the hour.
   * @throws VerificationError naming the hour and the form (`unsigned` without a signature)
   */
  async checkForm(form, hour, bytes, headerBytes, signatureHex) {
    const index = hourIndex(hour);
    const name = hourName(index);
    const what = FORM_NAMES[form];
    if (!what) throw new TypeError(`a derived form is exact, ribbon, ribbon2 or page, not ${JSON.stringify(form)}`);
    if (!(headerBytes instanceof Uint8Array) || headerBytes.length !== 32) {
      throw new VerificationError(`hour ${name}: no 32-byte chain header to verify its ${what} against`, { unsigned: true });
    }
    const parsed = parseSignature(signatureHex);
    const signature = unhex(parsed.signature, 64, name, `the ${what}'s Bloom-Signature`, { missing: "unsigned" });
    const listed = this.keyFor(index, name, parsed.keyId);
    const message = formMessage(form, index, headerBytes, await digest(bytes, this.subtle));
    if (!(await this.signed(listed, message, signature))) {
      throw new VerificationError(
        `hour ${name}: the ${what}'s signature does not verify with the public key given: the bytes were altered or belong to another hour or form`,
      );
    }
  }

  /**
   * Checks the header of an hour's paged body (section 12, "Huge hours by the page") read
   * for the hour `hour` (a Date or RFC 3339 string), a `PagesHeader` or its 72 bytes: it
   * names that hour, a signing key (else `unsigned`: its pages cannot be verified), the
   * key listed for the hour, and, where this verifier has checked the hour, its chain
   * header. Resolves to the key listed.
   * @throws VerificationError naming the hour
   */
  async checkPagesHeader(hour, header) {
    const h = header instanceof PagesHeader ? header : PagesHeader.parse(header);
    const index = hourIndex(hour);
    const name = hourName(index);
    if (h.hour !== index) {
      throw new VerificationError(`hour ${name}: its paged body's header names hour ${hourName(h.hour)}: another hour's pages`);
    }
    if (!h.signed) {
      throw new VerificationError(`hour ${name}: its pages are unsigned (no key id in their header), so they cannot be verified`, { unsigned: true });
    }
    const listed = this.keyFor(index, name, h.keyId);
    const known = this.headers.get(index);
    if (known && !equal(known.header, h.chainHeader)) {
      throw new VerificationError(`hour ${name}: the chain header its pages carry is not the chain's for that hour`);
    }
    return listed;
  }

  /**
   * Verifies page `p` of the hour `hour`'s paged body whose header is `header` (a
   * `PagesHeader` or its 72 bytes) from its slot's bytes `slot`: the header as
   * `checkPagesHeader`, then the page's signature (the slot's first 64 bytes) by the key
   * listed for the hour over `"bloomcast-page-v1"`, the hour's index and the chain header
   * the body carries (the key signed it only in this hour's place in the chain), and
   * SHA-256 of `signedPage`. A zero signature is `unsigned`.
   * @throws VerificationError naming the hour and the page
   */
  async checkPage(hour, header, p, slot) {
    const h = header instanceof PagesHeader ? header : PagesHeader.parse(header);
    const listed = await this.checkPagesHeader(hour, h);
    const index = hourIndex(hour);
    const name = hourName(index);
    if (!(slot instanceof Uint8Array) || slot.length !== h.slot || !Number.isInteger(p) || p < 0 || p >= h.pages) {
      throw new VerificationError(`hour ${name}: page ${p} is not a slot of its paged body (${h.pages} pages of ${h.slot} bytes)`);
    }
    const signature = slot.subarray(0, 64);
    if (signature.every((b) => b === 0)) {
      throw new VerificationError(`hour ${name}: page ${p} is unsigned (a zero signature), so it cannot be verified`, { unsigned: true });
    }
    const message = formMessage("page", index, h.chainHeader, await digest(signedPage(h.bytes, p, slot), this.subtle));
    if (!(await this.signed(listed, message, signature))) {
      throw new VerificationError(
        `hour ${name}: page ${p}'s signature does not verify with the public key given: the bytes were altered or belong to another hour, page or grade`,
      );
    }
  }

  /** `checkForm("exact", ...)`: an exact body (section 14). */
  checkExact(hour, bytes, headerBytes, signatureHex) {
    return this.checkForm("exact", hour, bytes, headerBytes, signatureHex);
  }

  /**
   * Verifies a checkpoint (`GET /checkpoint`, a static mirror's `checkpoint.json`; section
   * 11, "Trust"): its signature over made, hour and header by the trusted key listed for
   * its hour, and its header against the chain's when this verifier has checked that hour.
   * Resolves to `{hour, header, made, keyId}` (`hour` RFC 3339, `header` 32 bytes).
   * @throws VerificationError naming the checkpoint's hour
   */
  async checkCheckpoint(doc) {
    const hourText = doc?.hour;
    let index;
    try {
      index = hourIndex(hourText);
    } catch {
      throw new VerificationError(`checkpoint: no readable hour (${JSON.stringify(hourText)})`);
    }
    const name = `${hourName(index)} (checkpoint)`;
    if (!Number.isSafeInteger(doc.made)) throw new VerificationError(`hour ${name}: made is not a Unix time in seconds`);
    const h = unhex(doc.header, 32, name, "header");
    const signature = unhex(doc.signature, 64, name, "signature");
    const listed = this.keyFor(index, name, typeof doc.key_id === "string" ? doc.key_id.toLowerCase() : null);
    if (!(await this.signed(listed, checkpointMessage(doc.made, index, h), signature))) {
      throw new VerificationError(`hour ${name}: the checkpoint's signature does not verify with the public key given`);
    }
    const known = this.headers.get(index);
    if (known && !equal(known.header, h)) {
      throw new VerificationError(`hour ${name}: the checkpoint's header is not the chain's for that hour`);
    }
    return { hour: hourName(index), header: h, made: doc.made, keyId: listed.id };
  }

  /**
   * Verifies a version of the open hour `hour` whose filter bytes are `bytes`, given its
   * `Bloom-Open-Signature` value (section 11, "Trust"), made at most `freshness` seconds
   * before `now` (Unix seconds). Resolves to its `made`.
   * @throws VerificationError naming the hour (`unsigned` without a signature); a version
   *   made longer ago than the bound is refused: a replay would hide the changes since
   */
  async checkOpen(hour, bytes, signatureValue, now, freshness, listedDigest = null) {
    const index = hourIndex(hour);
    const name = `${hourName(index)} (open)`;
    const parsed = parseOpenSignature(signatureValue);
    const signature = unhex(parsed.signature, 64, name, "Bloom-Open-Signature", { missing: "unsigned" });
    if (parsed.made === null) throw new VerificationError(`hour ${name}: Bloom-Open-Signature names no made time`);
    const listed = this.keyFor(index, name, parsed.keyId);
    const d = await digest(bytes, this.subtle);
    if (listedDigest !== null && listedDigest !== undefined && listedDigest.toLowerCase() !== toHex(d)) {
      throw new VerificationError(`hour ${name}: the filter's digest is ${toHex(d)}, but the document says ${listedDigest}: the bytes were altered`);
    }
    if (!(await this.signed(listed, openMessage(index, parsed.made, d), signature))) {
      throw new VerificationError(`hour ${name}: the signature does not verify with the public key given: the bytes were altered`);
    }
    const age = Math.floor(now) - parsed.made;
    if (age > freshness) {
      throw new VerificationError(
        `hour ${name}: this version was made ${age} s ago, longer than the freshness bound of ${freshness} s: an old version replayed would hide the changes since`,
        { outdated: true },
      );
    }
    return parsed.made;
  }

  /**
   * Verifies the filter bytes of an hour whose header this verifier has checked already
   * (`check`, `checkChain`): `SHA-256(digest || prev)` must be that header (and the
   * document's `digest`, when given, the bytes'). Resolves to the header.
   * @throws VerificationError naming the hour
   */
  async checkListed(hour, bytes, listedDigest = null) {
    const index = hourIndex(hour);
    const name = hourName(index);
    const known = this.headers.get(index);
    if (!known) throw new VerificationError(`hour ${name}: no verified chain entry to check it against`, { unsigned: true });
    const d = await digest(bytes, this.subtle);
    if (listedDigest !== null && listedDigest !== undefined && listedDigest.toLowerCase() !== toHex(d)) {
      throw new VerificationError(`hour ${name}: the filter's digest is ${toHex(d)}, but the document says ${listedDigest}: the bytes were altered`);
    }
    if (!equal(await header(d, known.prev, this.subtle), known.header)) {
      throw new VerificationError(`hour ${name}: the filter's digest is not the chain's: the bytes were altered`);
    }
    return known.header;
  }

  /** The header of an hour this verifier has checked (`check`, `checkChain`), or null. */
  headerOf(hour) {
    return this.headers.get(hourIndex(hour))?.header ?? null;
  }

  /**
   * Verifies a `/chain` listing (its entries, oldest first): headers, signatures and
   * links; a gap must restart from the genesis value. Each entry's header is kept
   * (`headerOf`). Resolves to a Map of hour name → digest, to compare with each hour's
   * filter.
   * @throws VerificationError naming the hour (`unsigned` for an entry without a signature)
   */
  async checkChain(entries) {
    const out = new Map();
    let last = null;
    for (const e of entries) {
      const index = hourIndex(e.hour);
      const name = hourName(index);
      const d = unhex(e.digest, 32, name, "digest");
      const prev = unhex(e.prev, 32, name, "prev");
      const h = unhex(e.header, 32, name, "header");
      const signature = unhex(e.signature, 64, name, "signature", { missing: "unsigned" });
      const listed = this.keyFor(index, name, e.key_id);
      if (!equal(await header(d, prev, this.subtle), h)) {
        throw new VerificationError(`hour ${name}: the listed header is not SHA-256(digest || prev)`);
      }
      if (last) {
        if (last.index + 1 === index && !equal(last.header, prev)) {
          throw new VerificationError(`hour ${name}: its chain link does not follow the previous hour's header`);
        }
        if (last.index + 1 !== index && !equal(prev, GENESIS)) {
          throw new VerificationError(`hour ${name}: the hours before it are missing from the chain`);
        }
      }
      if (!(await this.signatureOk(index, h, signature, listed))) {
        throw new VerificationError(`hour ${name}: the signature does not verify with the public key given`);
      }
      const known = this.headers.get(index);
      if (known && !equal(known.header, h)) {
        throw new VerificationError(`hour ${name}: the chain's header is not that of the hour verified before`);
      }
      this.headers.set(index, { prev, header: h });
      out.set(name, d);
      last = { index, header: h };
    }
    return out;
  }
}

const FORM_NAMES = { exact: "exact body", ribbon: "ribbon", ribbon2: "ribbon2 body", page: "page" };
