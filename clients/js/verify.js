// Verifiable history (docs/PROTOCOL.md section 11): digests, the hour chain and Ed25519
// signatures, checked with WebCrypto alone (SHA-256 and "Ed25519" of `crypto.subtle`).
// A port of the Python client's verify.py: the same checks, refusals and messages.
//
// A module of its own, loaded by `Client` only when given a `pubkey`: the dashboard serves
// bloomcast.js as one file, which must not import anything. Types: verify.d.ts.
import { VerificationError, MissingDependency } from "./bloomcast.js";

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

/** The 90 bytes an exact body's signature covers (section 14): domain, hour index (8 bytes
 * big-endian, signed), the hour's chain header, SHA-256 of the body. */
export function exactMessage(index, header_, bodyDigest) {
  const out = new Uint8Array(90);
  out.set(EXACT_DOMAIN, 0);
  new DataView(out.buffer).setBigInt64(18, BigInt(index), false);
  out.set(header_, 26);
  out.set(bodyDigest, 58);
  return out;
}

/** A key's id: the first 8 bytes of SHA-256 of its 32 bytes, 16 hex digits. */
export async function keyId(publicKey, subtle = defaultSubtle()) {
  return toHex((await digest(publicKey, subtle)).subarray(0, 8));
}

/**
 * A `Bloom-Signature` value as `{signature, keyId}` (hex; `keyId` null when absent). The
 * signature comes first, then `;`-separated parameters; `keyid` is read (quoted or not,
 * any case), others are ignored.
 */
export function parseSignature(value) {
  if (value === null || value === undefined) return { signature: null, keyId: null };
  const [first, ...params] = value.split(";");
  let named = null;
  for (const param of params) {
    const at = param.indexOf("=");
    const name = (at < 0 ? param : param.slice(0, at)).trim().toLowerCase();
    if (name === "keyid") named = (at < 0 ? "" : param.slice(at + 1)).trim().replace(/^"|"$/g, "").toLowerCase();
  }
  return { signature: first.trim(), keyId: named };
}

function refuse(message) {
  return new VerificationError(`the publisher's key list is refused: ${message}`);
}

/**
 * The well-known document's `keys` as `[{first, last, publicKey, id}]` (hour indexes,
 * `last` null for the current key), oldest first, checked: ids match, ranges ordered and
 * apart, only the newest open. Throws `VerificationError` otherwise.
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

function unhex(text, size, name, what) {
  const raw = fromHex(text ?? "");
  if (!raw || raw.length !== size) {
    throw new VerificationError(`hour ${name}: ${what} missing or not ${size} bytes of hex: not signed`);
  }
  return raw;
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
 * Checks closed hours against the publisher's key, and the chain links between the
 * hours it has checked. After `useKeys` with the well-known document's `keys` naming
 * that key, each hour is checked against the key listed for it, and a signature naming
 * a key listed for other hours is refused. Build one with `Verifier.create`.
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
    /** The keys trusted: the key given for every hour, until `useKeys` adopts a list. */
    this.keys = [{ first: null, last: null, publicKey: given, id: givenId }];
    /** hour index → {prev, header} of every hour verified, to check links both ways. */
    this.headers = new Map();
    this.imported = new Map();
  }

  /** Adopts the publisher's key list (the well-known `keys`) if it names the key given;
   * otherwise the key given alone stays trusted. Resolves to whether it was adopted. */
  async useKeys(listed) {
    const keys = await parseKeys(listed ?? [], this.subtle);
    if (!keys.some((k) => equal(k.publicKey, this.given))) return false;
    this.keys = keys;
    return true;
  }

  keyFor(index, name, named) {
    const listed = this.keys.find((k) => (k.first === null || k.first <= index) && (k.last === null || index <= k.last));
    if (!listed) throw new VerificationError(`hour ${name}: no key is listed for this hour`);
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

  async signatureOk(index, header_, signature, listed) {
    return this.subtle.verify(ED25519, await this.importedKey(listed), signature, signedMessage(index, header_));
  }

  /**
   * Verifies one hour (a Date or RFC 3339 string) whose filter bytes are `bytes`, given
   * the response's `Bloom-Prev-Header` and `Bloom-Signature` and, for a JSON document,
   * its `digest`. Resolves to the hour's header.
   * @throws VerificationError naming the hour
   */
  async check(hour, bytes, prevHex, signatureHex, listedDigest = null) {
    const index = hourIndex(hour);
    const name = hourName(index);
    const prev = unhex(prevHex, 32, name, "Bloom-Prev-Header");
    const parsed = parseSignature(signatureHex);
    const signature = unhex(parsed.signature, 64, name, "Bloom-Signature");
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
   * Verifies an exact body (section 14) of the hour `hour` (a Date or RFC 3339 string):
   * its `Bloom-Signature` over "bloomcast-exact-v1" || index || header || SHA-256(bytes),
   * with the key listed for the hour; `headerBytes` is the hour's chain header (32 bytes,
   * from a verified v1 hour or chain entry).
   * @throws VerificationError naming the hour
   */
  async checkExact(hour, bytes, headerBytes, signatureHex) {
    const index = hourIndex(hour);
    const name = hourName(index);
    if (!(headerBytes instanceof Uint8Array) || headerBytes.length !== 32) {
      throw new VerificationError(`hour ${name}: no 32-byte chain header to verify its exact body against`);
    }
    const parsed = parseSignature(signatureHex);
    const signature = unhex(parsed.signature, 64, name, "the exact body's Bloom-Signature");
    const listed = this.keyFor(index, name, parsed.keyId);
    const message = exactMessage(index, headerBytes, await digest(bytes, this.subtle));
    if (!(await this.subtle.verify(ED25519, await this.importedKey(listed), signature, message))) {
      throw new VerificationError(`hour ${name}: the exact body's signature does not verify with the public key given: the bytes were altered or belong to another hour`);
    }
  }

  /** The header of an hour this verifier has checked (`check`), or null. */
  headerOf(hour) {
    return this.headers.get(hourIndex(hour))?.header ?? null;
  }

  /**
   * Verifies a `/chain` listing (its entries, oldest first): headers, signatures and
   * links; a gap must restart from the genesis value. Resolves to a Map of hour name →
   * digest, to compare with each hour's filter.
   * @throws VerificationError naming the hour
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
      const signature = unhex(e.signature, 64, name, "signature");
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
      out.set(name, d);
      last = { index, header: h };
    }
    return out;
  }
}
