// bloomcast client: an ES module with no dependencies that runs unchanged in browsers and
// in Node 20+. Written from docs/PROTOCOL.md alone: SHA-1 through WebCrypto
// (`crypto.subtle`), gzip left to `fetch` (the server's Content-Encoding), `fetch` with
// ETag revalidation for open filters and a memory cache for complete ones.
//
// Vocabulary mirrors the Rust SDK (`bloomcast::client`): `Client#hour`, `#day`, `#since`,
// `#filter`, `#index`, `#ingest`, `#changedSince`, `#ribbon`, `#exact`, `#verifyChain`; a fetched
// filter (and a `Ribbon`, the compact form of section 12) answers `mayContain`; an `Exact`
// (an exact hour, section 14) answers `changed`; a `Ribbon2` (`#ribbon2`, the compact
// form's version 2) and `Pages` (`#pages`, a huge hour read by the page with HTTP `Range`)
// answer `contains` and `mayContain`. With a
// `pubkey`, closed hours are verified (section 11) by verify.js, imported on first use.
// Types: bloomcast.d.ts; usage, with examples the tests run: README.md.

/** The only hash scheme of protocol version 1. */
export const SHA1_KM32 = "sha1-km32";

const MAX_M = 4294967295;
const HEX = /^[0-9a-f]*$/;
const HEX_LENIENT = /^[0-9a-fA-F]*$/;

/** Base of every error this module throws; `code` is machine-readable. */
export class BloomcastError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "BloomcastError";
    this.code = code;
  }
}

/** The server answered with an error status; `code` is its JSON `error` field. */
export class StatusError extends BloomcastError {
  constructor(status, code, message, retryAfter) {
    super(code, `${status} ${code}: ${message}`);
    this.name = "StatusError";
    this.status = status;
    this.serverMessage = message;
    /** Seconds, from `Retry-After` (503), else null. */
    this.retryAfter = retryAfter;
  }
}

/**
 * Hours the server could not verify (section 9): its index lists them `corrupt`, or one
 * answered 500 `corrupt`. Whether any ID changed in them is unknown, so no answer
 * covering them is given: they are never read as "no change". A `StatusError` 500
 * `corrupt` whose `hours` names them (RFC 3339, oldest first).
 */
export class CorruptHoursError extends StatusError {
  constructor(hours) {
    const names = [...hours].sort();
    super(500, "corrupt", `the server could not verify its stored data of ${names.join(", ")}: whether IDs changed then is unknown, so it is not read as no change`, null);
    this.name = "CorruptHoursError";
    this.hours = names;
  }
}

/** An error of a request for the hour named `name`, with a 500 `corrupt` said as a
 * CorruptHoursError naming it (its message names none); any other as it is. */
function ofHour(error, name) {
  const corrupt = error instanceof StatusError && !(error instanceof CorruptHoursError) && error.status === 500 && error.code === "corrupt";
  return corrupt ? new CorruptHoursError([name]) : error;
}

/**
 * The hours from `from` through `to` (Dates or epoch milliseconds) that an index
 * (`GET /`) lists as corrupt, as RFC 3339 names, oldest first. A ProtocolError for a
 * corrupt line naming no readable hour (it could be any hour).
 */
export function corruptHours(index, from, to) {
  const names = [];
  for (const line of index.hours ?? []) {
    if (line?.corrupt !== true) continue;
    const t = Date.parse(line.hour);
    if (Number.isNaN(t)) throw new ProtocolError(`index: a corrupt line names no readable hour: ${JSON.stringify(line.hour)}`);
    if (t >= +from && t <= +to) names.push(hourName(t));
  }
  return names.sort();
}

/** A filter that breaks a decoding rule of section 6; it must not be used. */
export class DecodeError extends BloomcastError {
  constructor(message) {
    super("decode", message);
    this.name = "DecodeError";
  }
}

/** An answer that does not follow the protocol, or a question no server can answer. */
export class ProtocolError extends BloomcastError {
  constructor(message) {
    super("protocol", message);
    this.name = "ProtocolError";
  }
}

/**
 * Something signed that does not verify against the publisher's key, or a key the key
 * given does not lead to (section 11); names the hour (or the key list). `unsigned`: there
 * was no signature to check (an unsigned server, or one stripped on the way), so nothing
 * was seen to be altered, but nothing was verified either. `outdated`: a version of the
 * open hour made longer ago than the freshness bound.
 */
export class VerificationError extends BloomcastError {
  constructor(message, { unsigned = false, outdated = false } = {}) {
    super("verification", message);
    this.name = "VerificationError";
    this.unsigned = unsigned;
    this.outdated = outdated;
  }
}

/** The publication lag bound (hours): a source whose newest hour starts further before
 * the client's own current hour, or whose checkpoint was made longer ago, is stale. */
export const PUBLICATION_LAG_HOURS = 2;

/** Seconds a version of the open hour may have been made before the client's clock when
 * verified with a key (the `openFreshness` option changes it). */
export const OPEN_FRESHNESS_SECONDS = 600;

/** A read answered 503 with a `Retry-After` of at most `MAX_RETRY_WAIT` seconds is tried
 * again after it, up to `READ_TRIES` tries in all (as the Rust SDK and the Python client). */
export const READ_TRIES = 3;
export const MAX_RETRY_WAIT = 5;

/**
 * An answer that may miss hours the publisher has published: the source is stale (its
 * newest hour starts more than `PUBLICATION_LAG_HOURS` before the client's current hour,
 * or its checkpoint was made longer ago than that) or withholds hours (its verified
 * checkpoint names a sealed hour after the newest it offers). Nothing it answered is
 * wrong, but changes in the hours after `newest` were not seen. `answer` holds what was
 * answered (`changedSince`'s `Changes`, `verifyChain`'s hours), as if `acceptStale` had
 * been given.
 */
export class StaleError extends BloomcastError {
  constructor(message, { newest, checkpoint = null, answer = null }) {
    super("stale", message);
    this.name = "StaleError";
    /** The newest hour the source has (RFC 3339): its index's `current`, a mirror's newest hour. */
    this.newest = newest;
    /** The hour the publisher's verified checkpoint names as its newest sealed, or null. */
    this.checkpoint = checkpoint;
    this.answer = answer;
  }
}

/** Signatures cannot be checked: this runtime's WebCrypto has no Ed25519. */
export class MissingDependency extends BloomcastError {
  constructor(message) {
    super("missing_dependency", message);
    this.name = "MissingDependency";
  }
}

const encoder = new TextEncoder();

/** The two hash halves of an ID: SHA-1 of its exact UTF-8 bytes, big-endian words 0 and 1. */
export async function keyOf(id) {
  if (typeof id !== "string") throw new TypeError("an ID is a string");
  const digest = new DataView(await crypto.subtle.digest("SHA-1", encoder.encode(id)));
  return { h1: digest.getUint32(0, false), h2: digest.getUint32(4, false) };
}

/** The `k` bit positions of a key in a filter of `m` bits (exact: below 2^38 < 2^53). */
export function positions(key, m, k) {
  const out = new Array(k);
  for (let i = 0; i < k; i++) out[i] = (key.h1 + i * key.h2) % m;
  return out;
}

/**
 * The classical `m` and `k` for `n` IDs at false-positive probability `p` (section 3),
 * assuming `k` independent probes; a server sizes by `sizedParams`, the probes' rule.
 */
export function optimalParams(n, p) {
  if (!(p > 0 && p < 1)) throw new RangeError("p must be in (0, 1)");
  const count = Math.max(n, 1);
  const m = Math.max(8, Math.ceil((-count * Math.log(p)) / (Math.LN2 * Math.LN2)));
  const k = Math.min(64, Math.max(1, Math.round((m / count) * Math.LN2)));
  return { m, k };
}

const TWO32 = 2 ** 32;
/** Up to this many bits a filter's `fpp()` is exact (section 8). */
export const EXACT_BITS = 4096;

/** The share of IDs whose `h2 mod m` is 0, which probe one bit: `ceil(2^32 / m) / 2^32`. */
function zeroStepShare(m) {
  return Math.ceil(TWO32 / m) / TWO32;
}

function gcd(a, b) {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** `a[j]`: the k-term APs that meet an absent ID's `k` positions in exactly `j >= 2` (section 3). */
function overlapCounts(k) {
  const a = new Array(k + 1).fill(0);
  const classes = (x) => [[Math.floor(k / x) + 1, k % x], [Math.floor(k / x), x - (k % x)]].filter(([, n]) => n > 0);
  for (let p = 1; p < k; p++) {
    for (let q = 1; q < k; q++) {
      if (gcd(p, q) !== 1) continue;
      for (const [len, lenClasses] of classes(q)) {
        for (const [width, widthClasses] of classes(p)) {
          const both = Math.min(len, width);
          for (let j = 2; j <= both; j++) {
            const shifts = j < both ? 2 : Math.abs(len - width) + 1;
            a[j] += 2 * lenClasses * widthClasses * shifts;
          }
        }
      }
    }
  }
  return a;
}

/** Section 8's formula at fill `f` with `n` IDs: `z f + Σ w_d f^d + w (f^k + ...)`. */
function rateAt(f, n, m, k, zero, short, full, overlaps) {
  let shortPart = 0;
  for (const [d, w] of short) shortPart += w * f ** d;
  let fullPart = f ** k;
  if (k >= 2 && m >= 2) {
    let shared = 0;
    for (let j = Math.min(k, 3); j <= k; j++) shared += overlaps[j] * f ** (k - j);
    fullPart += ((n * full) / (m * (m - 1))) * shared;
  }
  return Math.min(zero * f + shortPart + full * fullPart, 1);
}

/** Section 3's `E(m, k, n)`: the expected false-positive rate of a prime `m` holding `n` IDs. */
export function expectedFpp(m, k, n, overlaps = overlapCounts(k)) {
  const zero = zeroStepShare(m);
  const c = (zero + (1 - zero) * Math.min(k, m)) / m;
  const f = -Math.expm1(n * Math.log1p(-c));
  return rateAt(f, n, m, k, zero, [], 1 - zero, overlaps);
}

function isPrime(m) {
  if (m < 4) return m >= 2;
  if (m % 2 === 0 || m % 3 === 0) return false;
  for (let d = 5; d * d <= m; d += 6) if (m % d === 0 || m % (d + 2) === 0) return false;
  return true;
}

const LARGEST_PRIME = TWO32 - 5;

/**
 * `m` and `k` a server picks for `n` IDs at target `p` (section 3's rule): for each `k` from 1
 * (stopping 4 past the best), the smallest prime `m > max(7, 2k^2)` with `E(m, k, n) <= p`;
 * the smallest `m`, and for it the lowest `E`.
 */
export function sizedParams(n, p) {
  if (!(p > 0 && p < 1)) throw new RangeError("p must be in (0, 1)");
  const count = Math.max(n, 1);
  let best = null;
  for (let k = 1; k <= 64; k++) {
    if (best && k > best.k + 4) break;
    const overlaps = overlapCounts(k);
    const within = (m) => expectedFpp(m, k, count, overlaps) <= p;
    let lo = Math.max(8, 2 * k * k + 1);
    let hi = lo;
    let found = true;
    while (!within(Math.min(hi, LARGEST_PRIME))) {
      if (hi >= LARGEST_PRIME) {
        found = false;
        break;
      }
      lo = hi + 1;
      hi *= 2;
    }
    if (!found) continue;
    hi = Math.min(hi, LARGEST_PRIME);
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (within(mid)) hi = mid;
      else lo = mid + 1;
    }
    let m = hi;
    while (!isPrime(m)) m++;
    const rate = expectedFpp(m, k, count, overlaps);
    if (!best || m < best.m || (m === best.m && rate < best.rate)) best = { m, k, rate };
  }
  if (!best) throw new RangeError(`no filter below 2^32 bits reaches ${p}`);
  return { m: best.m, k: best.k };
}

function popcountBig(x) {
  let n = 0;
  for (const c of x.toString(2)) if (c === "1") n++;
  return n;
}

/** Section 8 up to 4,096 bits: every `(h1, h2)` residue pair, weighted by how many of the 2^32 values of a half land on it. */
function exactFpp(bytes, m, k) {
  let bits = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) bits = (bits << 8n) | BigInt(bytes[i]);
  const M = BigInt(m);
  const mask = (1n << M) - 1n;
  const q = Math.floor(TWO32 / m);
  const s = TWO32 % m;
  const low = (1n << BigInt(s)) - 1n;
  const rotated = (x, shift) => (shift === 0n ? x : ((x >> shift) | (x << (M - shift))) & mask);
  let total = 0n;
  for (let r = 0; r < m; r++) {
    let starts = bits;
    let covered = 1;
    while (covered < k && starts) {
      const add = Math.min(covered, k - covered);
      starts &= rotated(starts, BigInt((add * r) % m));
      covered += add;
    }
    if (starts) {
      const inner = BigInt(q) * BigInt(popcountBig(starts)) + BigInt(popcountBig(starts & low));
      total += BigInt(q + (r < s ? 1 : 0)) * inner;
    }
  }
  return Number(total) / (TWO32 * TWO32);
}

function totient(d) {
  let n = 0;
  for (let i = 1; i <= d; i++) if (gcd(i, d) === 1) n++;
  return n;
}

function checkParams(m, k, hash) {
  if (hash !== SHA1_KM32) throw new DecodeError(`unknown hash ${JSON.stringify(hash)}`);
  if (!Number.isInteger(m) || m < 8 || m > MAX_M) throw new DecodeError(`m out of range: ${m}`);
  if (!Number.isInteger(k) || k < 1 || k > 64) throw new DecodeError(`k out of range: ${k}`);
}

function popcount8(b) {
  b = b - ((b >> 1) & 0x55);
  b = (b & 0x33) + ((b >> 2) & 0x33);
  return (b + (b >> 4)) & 0x0f;
}

/** A Bloom filter of `m` bits and `k` positions per ID, in the wire bit layout. */
export class Filter {
  /** Checks every rule of section 6 except the hex ones (see `fromHex`). */
  constructor(m, k, bytes, hash = SHA1_KM32) {
    checkParams(m, k, hash);
    const want = Math.ceil(m / 8);
    if (!(bytes instanceof Uint8Array) || bytes.length !== want) {
      throw new DecodeError(`body is ${bytes?.length} bytes; m = ${m} needs ${want}`);
    }
    const pad = 8 * want - m;
    if (pad > 0 && bytes[want - 1] >> (8 - pad)) {
      throw new DecodeError(`bits past m = ${m} are set`);
    }
    this.m = m;
    this.k = k;
    this.hash = hash;
    this.bytes = bytes;
  }

  /** An empty filter, for building one's own. */
  static empty(m, k) {
    return new Filter(m, k, new Uint8Array(Math.ceil(m / 8)));
  }

  /** Decodes a hex body; `lenient` accepts A-F and trailing whitespace (raw `.hex`). */
  static fromHex(hex, m, k, { lenient = false, hash = SHA1_KM32 } = {}) {
    if (typeof hex !== "string") throw new DecodeError("filter is not a string");
    const body = lenient ? hex.trimEnd() : hex;
    if (body.length % 2 !== 0) throw new DecodeError("odd number of hex digits");
    if (!(lenient ? HEX_LENIENT : HEX).test(body)) throw new DecodeError("bad hex digit");
    checkParams(m, k, hash);
    if (body.length !== 2 * Math.ceil(m / 8)) {
      throw new DecodeError(`hex body is ${body.length / 2} bytes; m = ${m} needs ${Math.ceil(m / 8)}`);
    }
    const bytes = new Uint8Array(body.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(body.substr(2 * i, 2), 16);
    return new Filter(m, k, bytes, hash);
  }

  insertKey(key) {
    for (const j of positions(key, this.m, this.k)) this.bytes[j >>> 3] |= 1 << (j & 7);
  }

  containsKey(key) {
    for (let i = 0; i < this.k; i++) {
      const j = (key.h1 + i * key.h2) % this.m;
      if ((this.bytes[Math.floor(j / 8)] & (1 << (j % 8))) === 0) return false;
    }
    return true;
  }

  async insert(id) {
    this.insertKey(await keyOf(id));
  }

  /** `false` is certain; `true` is wrong with probability about `fpp()`. */
  async mayContain(id) {
    return this.containsKey(await keyOf(id));
  }

  toHex() {
    let out = "";
    for (const b of this.bytes) out += b.toString(16).padStart(2, "0");
    return out;
  }

  /** Population count of the body. */
  setBits() {
    let n = 0;
    for (const b of this.bytes) n += popcount8(b);
    return n;
  }

  /**
   * The false-positive probability of an ID never inserted, for the probes it makes
   * (section 8): exact up to 4,096 bits, estimated from the fill above.
   */
  fpp() {
    const { m, k } = this;
    if (m <= EXACT_BITS) return exactFpp(this.bytes, m, k);
    const f = this.setBits() / m;
    if (f >= 1) return 1;
    const zero = zeroStepShare(m);
    const short = [];
    for (let d = 2; d < Math.min(k, m); d++) if (m % d === 0) short.push([d, totient(d) / m]);
    const full = Math.max(1 - zero - short.reduce((sum, [, w]) => sum + w, 0), 0);
    const n = (-m / k) * Math.log(1 - f);
    return rateAt(f, n, m, k, zero, short, full, overlapCounts(k));
  }

  /** Swamidass–Baldi estimate of the distinct IDs inserted (section 8). */
  estimateCount() {
    const x = this.setBits();
    return x === this.m ? Infinity : (-this.m / this.k) * Math.log(1 - x / this.m);
  }
}

/** A filter as fetched, with what the server said about it (JSON fields or `Bloom-*` headers). */
export class Fetched {
  constructor(meta, filter, etag) {
    /** `{hour?, from?, to?, complete, count, m, k, hash, fpp}` */
    this.meta = meta;
    this.filter = filter;
    this.etag = etag;
    /** Whether it was verified against the publisher's key: a sealed hour by its chain
     * signature, a version of the open hour by its `Bloom-Open-Signature`. Never a union. */
    this.verified = false;
    /** A verified version of the open hour: when it was made (Unix seconds), else null. */
    this.made = null;
  }

  /** First and last hour covered, as RFC 3339 strings (equal for an hourly filter). */
  range() {
    if (this.meta.hour) return { from: this.meta.hour, to: this.meta.hour };
    if (this.meta.from && this.meta.to) return { from: this.meta.from, to: this.meta.to };
    throw new ProtocolError("filter names no hour or range");
  }

  mayContain(id) {
    return this.filter.mayContain(id);
  }
}

function field(doc, name, type) {
  if (typeof doc[name] !== type) throw new DecodeError(`field ${name} missing or not a ${type}`);
  return doc[name];
}

/** Decodes a JSON filter document (section 4). */
export function parseDocument(doc) {
  if (doc === null || typeof doc !== "object") throw new DecodeError("document is not an object");
  const meta = {
    complete: field(doc, "complete", "boolean"),
    count: field(doc, "count", "number"),
    m: field(doc, "m", "number"),
    k: field(doc, "k", "number"),
    hash: field(doc, "hash", "string"),
    fpp: field(doc, "fpp", "number"),
  };
  for (const name of ["hour", "from", "to", "digest"]) if (typeof doc[name] === "string") meta[name] = doc[name];
  const filter = Filter.fromHex(field(doc, "filter", "string"), meta.m, meta.k, { hash: meta.hash });
  return { meta, filter };
}

function headerInt(headers, name) {
  const v = headers.get(name)?.trim();
  if (!v || !/^\d+$/.test(v)) throw new DecodeError(`header ${name} missing or not an integer`);
  return Number(v);
}

/** Decodes the parameters of a raw (`.hex` / `.bin`) response from its `Bloom-*` headers. */
export function parseHeaders(headers) {
  const complete = headers.get("bloom-complete")?.trim();
  if (complete !== "true" && complete !== "false") throw new DecodeError("Bloom-Complete is not true/false");
  const meta = {
    complete: complete === "true",
    count: headerInt(headers, "bloom-count"),
    m: headerInt(headers, "bloom-m"),
    k: headerInt(headers, "bloom-k"),
    hash: headers.get("bloom-hash")?.trim() ?? "",
    fpp: Number(headers.get("bloom-fpp") ?? NaN),
  };
  for (const name of ["hour", "from", "to"]) {
    const v = headers.get(`bloom-${name}`);
    if (v) meta[name] = v.trim();
  }
  checkParams(meta.m, meta.k, meta.hash);
  return meta;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

// An hour as the CLIs (`bloomcast`, `bloomcast-py`) take it, UTC: 2008-09-03T05 or
// 2008/09/03/05 (which Date alone refuses or reads as local time).
const HOUR_FORMS = [/^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2})$/, /^\/?(\d{4})\/(\d{2})\/(\d{2})\/(\d{2})$/];

function toDate(hour) {
  if (typeof hour === "string") {
    for (const form of HOUR_FORMS) {
      const m = form.exec(hour.trim());
      if (!m) continue;
      const [y, mo, d, h] = m.slice(1).map(Number);
      const date = new Date(Date.UTC(y, mo - 1, d, h));
      const same = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && date.getUTCHours() === h;
      if (!same) throw new TypeError(`not a time: ${hour}`);
      return date;
    }
  }
  const date = hour instanceof Date ? hour : new Date(hour);
  if (Number.isNaN(date.getTime())) throw new TypeError(`not a time: ${hour}`);
  return date;
}

/** The URL path of the UTC hour containing `hour` (a Date or an RFC 3339 string): `/YYYY/MM/DD/HH`. */
export function hourPath(hour) {
  const d = toDate(hour);
  return `/${pad(d.getUTCFullYear(), 4)}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${pad(d.getUTCHours())}`;
}

/** The hour (a Date) of an hour path `/YYYY/MM/DD/HH`, or null for any other path. */
function hourOfPath(path) {
  const m = /^\/(\d{4})\/(\d{2})\/(\d{2})\/(\d{2})$/.exec(path);
  return m ? new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4])) : null;
}

/** The URL path of the UTC day containing `day`: `/YYYY/MM/DD`. */
export function dayPath(day) {
  return hourPath(day).slice(0, -3);
}

/** The URL path of the union from `hour` through the current hour: `/since/YYYY/MM/DD/HH`. */
export function sincePath(hour) {
  return `/since${hourPath(hour)}`;
}

const SUFFIX = { json: "", hex: ".hex", bin: ".bin" };

/** A client of one bloomcast server. */
// --- Compact filters (section 12): the ribbon body and its query ---------------------

const MASK64 = (1n << 64n) - 1n;
const RIBBON_MAGIC = [0x42, 0x43, 0x52, 0x31]; // "BCR1"

/** SplitMix64's finaliser on unsigned 64-bit BigInts, wrapping. */
export function mix64(z) {
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

// The query's mixing on pairs of 32-bit halves (hi, lo): exact with Numbers, and an
// order of magnitude faster than BigInt. `mix64` above is the reference it is tested
// against (test/ribbon.test.js).

// Results of the helpers below, in module scope rather than fresh arrays: the query
// allocates nothing (it runs once per ID and hour).
let outHi = 0;
let outLo = 0;

/** outHi, outLo = the 64-bit product of two 32-bit unsigned integers. */
function mul32(a, b) {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  // Every partial sum below stays under 2^32, so `>>>` reads it whole.
  const mid1 = a1 * b0 + ((a0 * b0) >>> 16); // <= (2^16-1)^2 + 2^16-1 < 2^32
  const mid2 = a0 * b1 + (mid1 & 0xffff); // likewise
  outHi = (a1 * b1 + (mid1 >>> 16) + (mid2 >>> 16)) >>> 0;
  outLo = Math.imul(a, b) >>> 0;
}

/** outHi, outLo = the low 64 bits of (ahi, alo) * (bhi, blo). */
function mul64(ahi, alo, bhi, blo) {
  mul32(alo, blo);
  outHi = (outHi + Math.imul(ahi, blo) + Math.imul(alo, bhi)) >>> 0;
}

/** outHi, outLo = mix64 of (hi, lo). */
function mix64Halves(hi, lo) {
  mul64((hi ^ (hi >>> 30)) >>> 0, (lo ^ ((lo >>> 30) | (hi << 2))) >>> 0, 0xbf58476d, 0x1ce4e5b9);
  let h = outHi;
  let l = outLo;
  mul64((h ^ (h >>> 27)) >>> 0, (l ^ ((l >>> 27) | (h << 5))) >>> 0, 0x94d049bb, 0x133111eb);
  h = outHi;
  l = outLo;
  outHi = (h ^ (h >>> 31)) >>> 0;
  outLo = (l ^ ((l >>> 31) | (h << 1))) >>> 0;
}

/** start, coefficient halves and fingerprint of a key, all Numbers. */
function slotHalves(key, seedHi, seedLo, m, r) {
  mix64Halves((key.h1 ^ seedHi) >>> 0, (key.h2 ^ seedLo) >>> 0);
  const ah = outHi;
  const al = outLo;
  mix64Halves((ah ^ 0x9e3779b9) >>> 0, (al ^ 0x7f4a7c15) >>> 0);
  const bh = outHi;
  const bl = outLo;
  mix64Halves((bh ^ 0x9e3779b9) >>> 0, (bl ^ 0x7f4a7c15) >>> 0);
  const cl = outLo;
  // floor(a * (m - 63) / 2^64), with m - 63 < 2^32: the carries of two 32x32 products.
  const rows = m - 63;
  mul32(al, rows);
  const p1hi = outHi;
  mul32(ah, rows);
  const start = outHi + Math.floor((outLo + p1hi) / 4294967296);
  // 2^r - 1 as a 32-bit mask (r = 32: every bit).
  return { start, coeffHi: bh, coeffLo: (bl | 1) >>> 0, fp: (cl & (2 ** r - 1)) >>> 0 };
}

/** Where a key sits in a ribbon of `m` rows built with `seed` (a BigInt): `start`, the
 * 64-bit `coeff` (BigInt) and the `r`-bit fingerprint `fp`. */
export function ribbonSlot(key, seed, m, r) {
  const s = BigInt.asUintN(64, BigInt(seed));
  const slot = slotHalves(key, Number(s >> 32n), Number(s & 0xffffffffn), m, r);
  return {
    start: slot.start,
    coeff: (BigInt(slot.coeffHi) << 32n) | BigInt(slot.coeffLo),
    fp: slot.fp,
  };
}

function parity32(x) {
  x ^= x >>> 16;
  x ^= x >>> 8;
  x ^= x >>> 4;
  return (0x6996 >>> (x & 15)) & 1;
}

/** A decoded ribbon filter: `n` keys, `m` rows of `r` bits; false-positive rate 2^-r. */
export class Ribbon {
  /** Decodes a `.ribbon` body, refusing anything section 12 rules out. */
  static fromBytes(body) {
    const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
    if (bytes.length < 24) throw new DecodeError(`${bytes.length} bytes is shorter than the header`);
    if (RIBBON_MAGIC.some((b, i) => bytes[i] !== b)) throw new DecodeError('magic is not "BCR1"');
    if (bytes[4] !== 1) throw new DecodeError(`version ${bytes[4]} (this client knows 1)`);
    const r = bytes[5];
    if (r < 1 || r > 32) throw new DecodeError(`r = ${r} outside 1..32`);
    if (bytes[6] !== 0 || bytes[7] !== 0) throw new DecodeError("reserved bytes are not zero");
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const n = view.getUint32(8, true);
    const m = view.getUint32(12, true);
    const seed = view.getBigUint64(16, true);
    if (m < 64) throw new DecodeError(`m = ${m} is below 64`);
    const bits = r * m;
    const expected = Math.ceil(bits / 8);
    if (bytes.length - 24 !== expected) {
      throw new DecodeError(`solution of ${bytes.length - 24} bytes, expected ${expected} for m = ${m}, r = ${r}`);
    }
    if (bits % 8 && bytes[bytes.length - 1] >> bits % 8) throw new DecodeError("padding bits past r*m are set");
    // Little-endian 32-bit words with two zero words past the end: every window reads whole.
    const words = new Uint32Array(Math.ceil(expected / 4) + 2);
    const padded = new Uint8Array(words.length * 4);
    padded.set(bytes.subarray(24));
    const wordView = new DataView(padded.buffer);
    for (let i = 0; i < words.length; i++) words[i] = wordView.getUint32(i * 4, true);
    return new Ribbon(n, m, r, seed, words);
  }

  constructor(n, m, r, seed, words) {
    this.n = n;
    this.m = m;
    this.r = r;
    /** The seed construction succeeded with (a BigInt). */
    this.seed = seed;
    this.seedHi = Number(seed >> 32n);
    this.seedLo = Number(seed & 0xffffffffn);
    this.words = words;
  }

  /** The false-positive probability, 2^-r. */
  fpp() {
    return 2 ** -this.r;
  }

  /** Whether the key `{h1, h2}` may be in the set: never false for a member. */
  containsKey(key) {
    const { start, coeffHi: hi, coeffLo: lo, fp } = slotHalves(key, this.seedHi, this.seedLo, this.m, this.r);
    const w = this.words;
    let got = 0;
    for (let b = 0; b < this.r; b++) {
      const t = b * this.m + start; // below 2^37: exact
      const i = Math.floor(t / 32);
      const sh = t % 32;
      const wlo = sh ? (w[i] >>> sh) | (w[i + 1] << (32 - sh)) : w[i];
      const whi = sh ? (w[i + 1] >>> sh) | (w[i + 2] << (32 - sh)) : w[i + 1];
      got |= parity32((wlo & lo) ^ (whi & hi)) << b;
    }
    return got >>> 0 === fp;
  }

  /** Whether the ID may be in the set (SHA-1 through WebCrypto, hence async). */
  async mayContain(id) {
    return this.containsKey(await keyOf(id));
  }
}

// --- Exact hours (section 14): the .exact body and its query --------------------------

const EXACT_MAGIC = [0x42, 0x43, 0x58, 0x31]; // "BCX1"
// The version byte: the levels hold the changed keys (1), or the unchanged ones with every
// answer negated (2, "complemented": built where more than half the universe changed).
const EXACT_VERSION = 1;
const EXACT_VERSION_COMPLEMENTED = 2;
const GOLDEN_HI = 0x9e3779b9;
const GOLDEN_LO = 0x7f4a7c15;

/** salt(tag, seed) = mix64(tag << 32 | seed), as outHi, outLo. */
function saltHalves(tag, seed) {
  mix64Halves(tag >>> 0, seed >>> 0);
}

// salt(4, 0), the selector's salt: the same for every body.
saltHalves(4, 0);
const SELECTOR_SALT_HI = outHi;
const SELECTOR_SALT_LO = outLo;

/** The selector of a key (0..255): mix64(key ^ salt(4, 0)) >> 56. */
function selectorOf(h1, h2) {
  mix64Halves((h1 ^ SELECTOR_SALT_HI) >>> 0, (h2 ^ SELECTOR_SALT_LO) >>> 0);
  return outHi >>> 24;
}

// A key's row, in module scope (the query allocates nothing): start, the 128-bit coeff as
// four 32-bit limbs (c0 least significant), the low 32 bits of the fingerprint.
let rowStart = 0;
let rowC0 = 0;
let rowC1 = 0;
let rowC2 = 0;
let rowC3 = 0;
let rowFpLo = 0;
let rowFpHi = 0;

/** The mask keeping bits 0..w-1 of limb `limb` (bits 32*limb .. 32*limb+31). */
function limbMask(w, limb) {
  const bits = w - 32 * limb;
  if (bits >= 32) return 0xffffffff;
  if (bits <= 0) return 0;
  return (2 ** bits - 1) >>> 0;
}

/** row(tag, seed, m) of section 14 for the key (h1, h2), given the system's salt halves. */
function exactRowHalves(h1, h2, saltHi, saltLo, m) {
  mix64Halves((h1 ^ saltHi) >>> 0, (h2 ^ saltLo) >>> 0);
  const ah = outHi;
  const al = outLo;
  mix64Halves((ah ^ GOLDEN_HI) >>> 0, (al ^ GOLDEN_LO) >>> 0);
  const bh = outHi;
  const bl = outLo;
  mix64Halves((bh ^ GOLDEN_HI) >>> 0, (bl ^ GOLDEN_LO) >>> 0);
  const ch = outHi;
  const cl = outLo;
  mix64Halves((ch ^ GOLDEN_HI) >>> 0, (cl ^ GOLDEN_LO) >>> 0);
  rowFpHi = outHi;
  rowFpLo = outLo;
  const w = m < 128 ? m : 128;
  // floor(a * (m - w + 1) / 2^64), with m - w + 1 < 2^32: the carries of two 32x32 products.
  const span = m - w + 1;
  mul32(al, span);
  const p1hi = outHi;
  mul32(ah, span);
  rowStart = outHi + Math.floor((outLo + p1hi) / 4294967296);
  if (w === 0) {
    rowC0 = rowC1 = rowC2 = rowC3 = 0;
    return;
  }
  rowC0 = ((bl & limbMask(w, 0)) | 1) >>> 0;
  rowC1 = (bh & limbMask(w, 1)) >>> 0;
  rowC2 = (cl & limbMask(w, 2)) >>> 0;
  rowC3 = (ch & limbMask(w, 3)) >>> 0;
}

/** The parity of the 128 solution bits from bit `t` (below 2^53) under the coefficient
 * of the row just computed (rowC0..rowC3): one column's bit of the row's value. */
function windowParity(words, t) {
  const i = Math.floor(t / 32);
  const sh = t % 32;
  let x;
  if (sh === 0) {
    x = (words[i] & rowC0) ^ (words[i + 1] & rowC1) ^ (words[i + 2] & rowC2) ^ (words[i + 3] & rowC3);
  } else {
    const back = 32 - sh;
    const w1 = words[i + 1];
    const w2 = words[i + 2];
    const w3 = words[i + 3];
    x =
      (((words[i] >>> sh) | (w1 << back)) & rowC0) ^
      (((w1 >>> sh) | (w2 << back)) & rowC1) ^
      (((w2 >>> sh) | (w3 << back)) & rowC2) ^
      (((w3 >>> sh) | (words[i + 4] << back)) & rowC3);
  }
  return parity32(x);
}

/** The `bits` columns of a system whose column 0 starts at solution bit `base`, at the row
 * just computed (rowStart, rowC0..rowC3): bit j of the result is column j's parity. */
function exactValue(words, base, m, bits) {
  let got = 0;
  for (let j = 0; j < bits; j++) got |= windowParity(words, base + j * m + rowStart) << j;
  return got >>> 0;
}

const halvesToBig = (hi, lo) => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);

/** salt(tag, seed) of section 14, a BigInt. */
export function exactSalt(tag, seed) {
  saltHalves(tag, seed);
  return halvesToBig(outHi, outLo);
}

/** The selector of a key, 0..255: a key whose selector is below `split` is in part A. */
export function exactSelector(key) {
  return selectorOf(key.h1, key.h2);
}

/** The key's equation in the system `(tag, seed, m)` of section 14: `salt`, `selector`,
 * `start`, the 128-bit `coeff` and the 64-bit `fingerprint` (BigInts but for the first
 * two numbers). */
export function exactRow(key, tag, seed, m) {
  const salt = exactSalt(tag, seed);
  const selector = selectorOf(key.h1, key.h2);
  exactRowHalves(key.h1, key.h2, Number(salt >> 32n), Number(salt & 0xffffffffn), m);
  return {
    salt,
    selector,
    start: rowStart,
    coeff: (halvesToBig(rowC3, rowC2) << 64n) | halvesToBig(rowC1, rowC0),
    fingerprint: halvesToBig(rowFpHi, rowFpLo),
  };
}

/** Whether the levels of the decoded body `exact` answer 1 for the key (section 14's
 * query): it passes the filter and its retrieval bit is 1. Not negated: `changedKey` is. */
function exactHeld(exact, key) {
  const h1 = key.h1;
  const h2 = key.h2;
  const inA = exact.split > 0 && selectorOf(h1, h2) < exact.split;
  const bits = inA ? exact.k + 1 : exact.k;
  if (bits > 0) {
    const m = inA ? exact.rows[0] : exact.rows[1];
    const salt = inA ? exact.saltA : exact.saltB;
    exactRowHalves(h1, h2, salt[0], salt[1], m);
    const fp = (rowFpLo & (2 ** bits - 1)) >>> 0;
    if (exactValue(exact.words, inA ? 0 : exact.baseB, m, bits) !== fp) return false;
  }
  exactRowHalves(h1, h2, exact.saltR[0], exact.saltR[1], exact.rows[2]);
  return exactValue(exact.words, exact.baseR, exact.rows[2], 1) === 1;
}

/**
 * A decoded exact body (section 14): answers, for every ID of the universe it was built
 * over, whether it changed in the hour, with no false negative and no false positive.
 * For an ID outside that universe the answer is arbitrary (such an ID did not change in
 * the hour: every changed ID is in its hour's universe, so the worst is a false positive;
 * a complemented body, version 2, calls most such IDs changed).
 */
export class Exact {
  /** Decodes an `.exact` body, refusing anything section 14 rules out (DecodeError). */
  static fromBytes(body) {
    const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
    if (bytes.length < 7) {
      throw new DecodeError(`exact body of ${bytes.length} bytes is shorter than the header`);
    }
    if (EXACT_MAGIC.some((b, i) => bytes[i] !== b)) throw new DecodeError('exact body: magic is not "BCX1"');
    if (bytes[4] !== EXACT_VERSION && bytes[4] !== EXACT_VERSION_COMPLEMENTED) {
      throw new DecodeError(`exact body: version ${bytes[4]} (this client knows 1 and 2)`);
    }
    const complemented = bytes[4] === EXACT_VERSION_COMPLEMENTED;
    const k = bytes[5];
    if (k > 31) throw new DecodeError(`exact body: k = ${k} exceeds 31`);
    const split = bytes[6];
    // Eight minimal unsigned LEB128 varints, each below 2^32.
    let at = 7;
    const varint = (name) => {
      let value = 0;
      for (let i = 0; i < 5; i++) {
        if (at + i >= bytes.length) throw new DecodeError(`exact body: the header ends inside ${name}`);
        const b = bytes[at + i];
        value += (b & 0x7f) * 2 ** (7 * i);
        if ((b & 0x80) === 0) {
          if (i > 0 && b === 0) throw new DecodeError(`exact body: ${name} is not minimally encoded`);
          if (value >= 2 ** 32) throw new DecodeError(`exact body: ${name} is 2^32 or more`);
          at += i + 1;
          return value;
        }
      }
      throw new DecodeError(`exact body: ${name} is longer than 5 bytes`);
    };
    const [universe, changedCount, mA, mB, mR, sA, sB, sR] = ["N", "r", "mA", "mB", "mR", "sA", "sB", "sR"].map(varint);
    const header = at;
    if (k === 0 && mB !== 0) throw new DecodeError(`exact body: mB = ${mB} rows in part B, which has none when k = 0`);
    const bits = (k + 1) * mA + k * mB + mR; // below 2^38: exact
    const expected = Math.ceil(bits / 8);
    if (bytes.length - header !== expected) {
      throw new DecodeError(
        `exact body: length ${bytes.length}, expected ${header + expected} for k = ${k}, rows ${mA}, ${mB}, ${mR} (${bits} solution bits)`,
      );
    }
    if (bits % 8 && bytes[bytes.length - 1] >> bits % 8) throw new DecodeError(`exact body: padding bits past the ${bits} solution bits are set`);
    // Little-endian 32-bit words with five zero words past the end: every 128-bit window reads whole.
    const words = new Uint32Array(Math.ceil(expected / 4) + 5);
    const padded = new Uint8Array(words.length * 4);
    padded.set(bytes.subarray(header));
    const wordView = new DataView(padded.buffer);
    for (let i = 0; i < words.length; i++) words[i] = wordView.getUint32(i * 4, true);
    return new Exact({ k, split, universe, changedCount, complemented, rows: [mA, mB, mR], seeds: [sA, sB, sR], words, size: bytes.length });
  }

  constructor({ k, split, universe, changedCount, complemented = false, rows, seeds, words, size }) {
    /** Fingerprint bits of part B (part A has k + 1). */
    this.k = k;
    /** A key whose selector is below `split` is in part A. */
    this.split = split;
    /** `N`: the IDs of the universe the body answers for. */
    this.universe = universe;
    /** `r`: the IDs that changed in the hour (in a complemented body too). */
    this.changedCount = changedCount;
    /** Whether the body is version 2, built where more than half the universe changed:
     * its levels hold the unchanged IDs, and every answer is negated. */
    this.complemented = complemented;
    /** `[mA, mB, mR]`: rows of part A, part B and the retrieval level. */
    this.rows = rows;
    /** `[sA, sB, sR]`: their seeds. */
    this.seeds = seeds;
    /** The body's size in bytes. */
    this.size = size;
    this.words = words;
    saltHalves(1, seeds[0]);
    this.saltA = [outHi, outLo];
    saltHalves(2, seeds[1]);
    this.saltB = [outHi, outLo];
    saltHalves(3, seeds[2]);
    this.saltR = [outHi, outLo];
    this.baseB = (k + 1) * rows[0];
    this.baseR = this.baseB + k * rows[1];
  }

  /** Whether the key `{h1, h2}` changed in the hour (exact for keys of the universe): the
   * levels' answer, negated in a complemented body. Every other answer goes through here. */
  changedKey(key) {
    return exactHeld(this, key) !== this.complemented;
  }

  /** Whether the ID changed in the hour (SHA-1 through WebCrypto, hence async). */
  async changed(id) {
    return this.changedKey(await keyOf(id));
  }

  /** `changedKey`, under the name filters answer to (a `true` here is certain). */
  containsKey(key) {
    return this.changedKey(key);
  }

  /** `changed`, under the name filters answer to. */
  mayContain(id) {
    return this.changed(id);
  }

  /** 0: an exact body has no false positive for IDs of its universe. */
  fpp() {
    return 0;
  }
}

// --- Compact filters, version 2 (section 12, "Version 2"): the .ribbon2 body and its query

const RIBBON2_MAGIC = [0x42, 0x43, 0x52, 0x32]; // "BCR2"

// G and 2G (wrapping) as 32-bit halves: b, c, d = mix64(u ^ i*G), i = 0..2.
const G_MULTIPLES = [1n, 2n].map((i) => BigInt.asUintN(64, 0x9e3779b97f4a7c15n * i));
const G1_HI = Number(G_MULTIPLES[0] >> 32n);
const G1_LO = Number(G_MULTIPLES[0] & 0xffffffffn);
const G2_HI = Number(G_MULTIPLES[1] >> 32n);
const G2_LO = Number(G_MULTIPLES[1] & 0xffffffffn);
// The row hash's first, seed-independent step and the key's fingerprint:
// e = mix64(key ^ 0x2545f4914f6cdd1d).
const ROW2_SALT_HI = 0x2545f491;
const ROW2_SALT_LO = 0x4f6cdd1d;

/** The route of a key (h1, h2) at `split` over shards (sA, sB): sets route2InA and
 * route2Shard (the shard within its part). The key's own bits: selector key >> 56,
 * shard floor((key mod 2^56) * count / 2^56). */
let route2InA = false;
let route2Shard = 0;
function route2Halves(h1, h2, split, sA, sB) {
  const hi24 = h1 & 0xffffff;
  const lo = h2 >>> 0;
  route2InA = h1 >>> 24 < split;
  const count = route2InA ? sA : sB;
  // (hi24 * 2^32 + lo) * count / 2^56, exactly: the carry of lo * count into hi24 * count.
  mul32(lo, count);
  const carry = outHi;
  mul32(hi24, count); // below 2^56: outHi below 2^24
  const low = outLo + carry; // below 2^33
  const high = outHi + Math.floor(low / 4294967296);
  route2Shard = high * 256 + ((low >>> 0) >>> 24);
}

/** rowStart, rowC0..rowC3, rowFpHi/rowFpLo of section 12's version 2 for a key whose
 * seed-independent step e is (baseHi, baseLo), in a shard of `m` rows with salt (saltHi, saltLo). */
function ribbon2RowHalves(baseHi, baseLo, saltHi, saltLo, m) {
  const uh = (baseHi ^ saltHi) >>> 0;
  const ul = (baseLo ^ saltLo) >>> 0;
  mix64Halves(uh, ul);
  const bh = outHi;
  const bl = outLo;
  mix64Halves((uh ^ G1_HI) >>> 0, (ul ^ G1_LO) >>> 0);
  const ch = outHi;
  const cl = outLo;
  mix64Halves((uh ^ G2_HI) >>> 0, (ul ^ G2_LO) >>> 0);
  const dh = outHi;
  const dl = outLo;
  rowFpHi = baseHi;
  rowFpLo = baseLo;
  const w = m < 128 ? m : 128;
  // floor(b * (m - w + 1) / 2^64), with m - w + 1 <= 2^32 - 128: the carries of two 32x32 products.
  const span = m - w + 1;
  mul32(bl, span);
  const p1hi = outHi;
  mul32(bh, span);
  rowStart = outHi + Math.floor((outLo + p1hi) / 4294967296);
  if (w === 0) {
    rowC0 = rowC1 = rowC2 = rowC3 = 0;
    return;
  }
  rowC0 = ((cl & limbMask(w, 0)) | 1) >>> 0;
  rowC1 = (ch & limbMask(w, 1)) >>> 0;
  rowC2 = (dl & limbMask(w, 2)) >>> 0;
  rowC3 = (dh & limbMask(w, 3)) >>> 0;
}

/** Whether the `bits` columns of a shard whose solution starts at bit `base` give the
 * fingerprint `fp` at the row just computed; stops at the first column that differs. */
function ribbon2Matches(words, base, m, bits, fp) {
  for (let j = 0; j < bits; j++) {
    if (windowParity(words, base + j * m + rowStart) !== ((fp >>> j) & 1)) return false;
  }
  return true;
}

/** A key's equation in a version 2 shard `(part, seed, m)` (section 12): `start`, the
 * 128-bit `coeff` (bits 0..min(m,128)-1, bit 0 set; 0 when m = 0) and the 64-bit
 * `fingerprint` (BigInts), `part` "A" or "B". */
export function ribbon2Row(key, part, seed, m) {
  if (part !== "A" && part !== "B") throw new TypeError(`part is "A" or "B", not ${JSON.stringify(part)}`);
  saltHalves(part === "A" ? 1 : 2, seed);
  const saltHi = outHi;
  const saltLo = outLo;
  mix64Halves((key.h1 ^ ROW2_SALT_HI) >>> 0, (key.h2 ^ ROW2_SALT_LO) >>> 0);
  ribbon2RowHalves(outHi, outLo, saltHi, saltLo, m);
  return {
    start: rowStart,
    coeff: (halvesToBig(rowC3, rowC2) << 64n) | halvesToBig(rowC1, rowC0),
    fingerprint: halvesToBig(rowFpHi, rowFpLo),
  };
}

/** Where a key goes in a version 2 body of `split` with `sA` and `sB` shards: its `part`
 * ("A" when its selector is below `split`) and its `shard` within that part. */
export function ribbon2Route(key, split, sA, sB) {
  route2Halves(key.h1, key.h2, split, sA, sB);
  return { part: route2InA ? "A" : "B", shard: route2Shard };
}

/**
 * The grade of version 2 for a requested false-positive rate `p` (section 12): the
 * cheapest `(k, split)` whose rate `fpp = 2^-k * (1 - split/512)` is at most `p`, with
 * `k = floor(log2(1/p))`, `split = ceil(512 * (1 - p * 2^k))` (256: k + 1, split 0), as
 * the Rust `Grade::for_fpp` (its guard against the float's log2 included).
 * @throws RangeError unless 2^-31 <= p < 1
 */
export function gradeForFpp(p) {
  if (!(Number.isFinite(p) && p >= 2 ** -31 && p < 1)) throw new RangeError(`p must be in [2^-31, 1), not ${p}`);
  let k = Math.floor(-Math.log2(p));
  // Guard the float: 2^-k must be the largest power of two at least p.
  while (k > 0 && 2 ** -k < p) k--;
  while (2 ** -(k + 1) >= p) k++;
  let split = Math.max(0, Math.ceil(512 * (1 - p * 2 ** k)));
  if (split >= 256) {
    k += 1;
    split = 0;
  }
  if (k > 31 || (k === 31 && split !== 0)) throw new RangeError(`p = ${p} needs more than 32 fingerprint bits`);
  return { k, split, fpp: 2 ** -k * (1 - split / 512) };
}

/** A minimal unsigned LEB128 varint below 2^32 at `bytes[at]`: [value, next offset]. */
function varint32(bytes, at, name) {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (at + i >= bytes.length) throw new DecodeError(`ribbon2 body: the header ends inside ${name}`);
    const b = bytes[at + i];
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) {
      if (i > 0 && b === 0) throw new DecodeError(`ribbon2 body: ${name} is not minimally encoded`);
      if (value >= 2 ** 32) throw new DecodeError(`ribbon2 body: ${name} is 2^32 or more`);
      return [value, at + i + 1];
    }
  }
  throw new DecodeError(`ribbon2 body: ${name} is longer than 5 bytes`);
}

/**
 * A decoded compact filter of version 2 (`.ribbon2`, section 12): `n` keys at the grade
 * `(k, split)`, false-positive rate `fpp = 2^-k * (1 - split/512)`.
 */
export class Ribbon2 {
  /** Decodes a `.ribbon2` body, refusing anything section 12 rules out (DecodeError). */
  static fromBytes(body) {
    const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
    if (bytes.length < 6) throw new DecodeError(`ribbon2 body of ${bytes.length} bytes is shorter than the header`);
    if (RIBBON2_MAGIC.some((b, i) => bytes[i] !== b)) throw new DecodeError('ribbon2 body: magic is not "BCR2"');
    const k = bytes[4];
    const split = bytes[5];
    if (k > 31 || (k === 31 && split !== 0)) {
      throw new DecodeError(`ribbon2 body: k = ${k}, split = ${split}: part A would exceed 32 bits`);
    }
    let at = 6;
    let n;
    let sA;
    let sB;
    [n, at] = varint32(bytes, at, "n");
    [sA, at] = varint32(bytes, at, "sA");
    [sB, at] = varint32(bytes, at, "sB");
    if (split === 0 && sA !== 0) throw new DecodeError(`ribbon2 body: sA = ${sA} with split = 0 (part A holds no key)`);
    const total = sA + sB;
    // Every shard takes at least two header bytes: a count past that is a lie.
    if (total > (bytes.length - at) / 2) {
      throw new DecodeError(`ribbon2 body: ${total} shards do not fit in ${bytes.length} bytes`);
    }
    const rows = new Array(total);
    const offsets = new Array(total);
    const seeds = new Array(total);
    let offset = 0;
    for (let i = 0; i < total; i++) {
      let m;
      [m, at] = varint32(bytes, at, `shard ${i}'s m`);
      if (at >= bytes.length) throw new DecodeError(`ribbon2 body: the header ends inside shard ${i}'s seed`);
      const bits = i < sA ? k + 1 : k;
      if (bits === 0 && m !== 0) throw new DecodeError(`ribbon2 body: a shard of part B has m = ${m} with k = 0`);
      rows[i] = m;
      seeds[i] = bytes[at++];
      offsets[i] = offset;
      offset += m * bits; // below 2^53: exact
    }
    const expected = Math.ceil(offset / 8);
    if (bytes.length - at !== expected) {
      throw new DecodeError(
        `ribbon2 body: solutions of ${bytes.length - at} bytes, expected ${expected} for the shards' rows (${offset} solution bits)`,
      );
    }
    if (offset % 8 && bytes[bytes.length - 1] >> offset % 8) {
      throw new DecodeError(`ribbon2 body: padding bits past the ${offset} solution bits are set`);
    }
    // Little-endian 32-bit words with five zero words past the end: every 128-bit window reads whole.
    const words = new Uint32Array(Math.ceil(expected / 4) + 5);
    const padded = new Uint8Array(words.length * 4);
    padded.set(bytes.subarray(at));
    const wordView = new DataView(padded.buffer);
    for (let i = 0; i < words.length; i++) words[i] = wordView.getUint32(i * 4, true);
    return new Ribbon2({ n, k, split, shards: [sA, sB], rows, seeds, offsets, words, size: bytes.length });
  }

  constructor({ n, k, split, shards, rows, seeds, offsets, words, size }) {
    /** Keys the filter was built from. */
    this.n = n;
    /** Fingerprint bits of part B (part A has k + 1), 0..31. */
    this.k = k;
    /** 0..255: a key whose selector is below it is in part A. */
    this.split = split;
    /** The false-positive rate of the grade, 2^-k * (1 - split/512). */
    this.fpp = 2 ** -k * (1 - split / 512);
    /** `[sA, sB]`: shards of part A and of part B. */
    this.shards = shards;
    /** Each shard's rows and seed, part A's first. */
    this.rows = rows;
    this.seeds = seeds;
    /** The body's size in bytes. */
    this.size = size;
    this.words = words;
    // Per shard, precomputed: where its solution starts, and its salt's halves.
    this.offsets = offsets;
    this.salts = new Uint32Array(2 * rows.length);
    for (let i = 0; i < rows.length; i++) {
      saltHalves(i < shards[0] ? 1 : 2, seeds[i]);
      this.salts[2 * i] = outHi;
      this.salts[2 * i + 1] = outLo;
    }
  }

  /** Whether the key `{h1, h2}` may be in the set: never false for a member. */
  containsKey(key) {
    const h1 = key.h1;
    const h2 = key.h2;
    const [sA, sB] = this.shards;
    route2Halves(h1, h2, this.split, sA, sB);
    const inA = route2InA;
    if ((inA ? sA : sB) === 0) return false;
    const index = inA ? route2Shard : sA + route2Shard;
    const bits = inA ? this.k + 1 : this.k;
    if (bits === 0) return true;
    const m = this.rows[index];
    mix64Halves((h1 ^ ROW2_SALT_HI) >>> 0, (h2 ^ ROW2_SALT_LO) >>> 0);
    ribbon2RowHalves(outHi, outLo, this.salts[2 * index], this.salts[2 * index + 1], m);
    return ribbon2Matches(this.words, this.offsets[index], m, bits, rowFpLo);
  }

  /** Whether the ID may be in the set (SHA-1 through WebCrypto, hence async). */
  async contains(id) {
    return this.containsKey(await keyOf(id));
  }

  /** `contains`, under the name filters answer to. */
  mayContain(id) {
    return this.contains(id);
  }
}

// --- Huge hours by the page (section 12, "Huge hours by the page"): the .pages body ---

const PAGES_MAGIC = [0x42, 0x43, 0x50, 0x31]; // "BCP1"
/** The content type of an hour's paged form. */
export const PAGES_TYPE = "application/vnd.bloomcast.pages";
/** Bytes of a paged body's header: what `Range: bytes=0-71` reads first. */
export const PAGES_HEADER_BYTES = 72;
/** Bytes of a slot before its page's body: the signature (64) and the body's length (2). */
export const PAGE_SLOT_PREFIX = 66;
/** Keys a page holds on average: an hour of `n` keys has `max(1, ceil(n / 64))` pages. */
export const PAGE_KEYS = 64;
const LOW56 = (1n << 56n) - 1n;

/** The pages of a paged body of `n` distinct keys: `max(1, ceil(n / 64))`. */
export function pagesFor(n) {
  return Math.max(1, Math.ceil(n / PAGE_KEYS));
}

/** The page of `pages` holding the key `{h1, h2}`: `floor((key mod 2^56) * pages / 2^56)`,
 * `key` the 64-bit `h1 << 32 | h2` (exact: BigInt). */
export function pageOf(key, pages) {
  const low = ((BigInt(key.h1 >>> 0) << 32n) | BigInt(key.h2 >>> 0)) & LOW56;
  return Number((low * BigInt(pages)) >> 56n);
}

/** The header of a paged body (its first 72 bytes, big-endian): the grade of its pages,
 * the hour, its chain header and signing key id (zero when unsigned), `n`, the pages and
 * the bytes of each slot. */
export class PagesHeader {
  /** Decodes the first 72 bytes of a `.pages` body (DecodeError naming the field wrong). */
  static parse(body) {
    const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
    if (bytes.length < PAGES_HEADER_BYTES) throw new DecodeError(`pages: ${bytes.length} bytes is shorter than the header`);
    if (PAGES_MAGIC.some((b, i) => bytes[i] !== b)) throw new DecodeError('pages: magic is not "BCP1"');
    const k = bytes[4];
    const split = bytes[5];
    if (k > 31 || (k === 31 && split !== 0) || bytes[6] !== 0 || bytes[7] !== 0) {
      throw new DecodeError(`pages: k = ${k}, split = ${split}${bytes[6] || bytes[7] ? ", reserved bytes not zero" : ""}: no such grade`);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, PAGES_HEADER_BYTES);
    const hour = view.getBigInt64(8, false);
    const n = view.getBigUint64(56, false);
    if (n > BigInt(Number.MAX_SAFE_INTEGER) || hour > BigInt(Number.MAX_SAFE_INTEGER) || hour < -BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DecodeError(`pages: n = ${n}, hour ${hour}: beyond what this client reads`);
    }
    const pages = view.getUint32(64, false);
    const slot = view.getUint32(68, false);
    if (pages === 0 || slot < PAGE_SLOT_PREFIX) {
      throw new DecodeError(`pages: ${pages} pages of ${slot} bytes: at least one page of ${PAGE_SLOT_PREFIX}`);
    }
    return new PagesHeader({ bytes: bytes.slice(0, PAGES_HEADER_BYTES), k, split, hour: Number(hour), n: Number(n), pages, slot });
  }

  constructor({ bytes, k, split, hour, n, pages, slot }) {
    /** The header's 72 bytes, as read (what every page's signature covers). */
    this.bytes = bytes;
    /** The version 2 grade every page is built at. */
    this.k = k;
    this.split = split;
    /** The grade's false-positive rate, 2^-k * (1 - split/512). */
    this.fpp = 2 ** -k * (1 - split / 512);
    /** The hour's index: hours since 1970-01-01T00Z. */
    this.hour = hour;
    /** The hour's chain header (32 bytes; zero when unsigned). */
    this.chainHeader = bytes.slice(16, 48);
    /** The id of the key that signed the pages (16 hex digits; zeros when unsigned). */
    this.keyId = hexOf(bytes.subarray(48, 56));
    /** Whether the pages carry signatures (a key id is set). */
    this.signed = bytes.subarray(48, 56).some((b) => b !== 0);
    /** Distinct keys in all pages. */
    this.n = n;
    /** Pages, at least 1. */
    this.pages = pages;
    /** Bytes of each slot. */
    this.slot = slot;
  }

  /** The page holding the key `{h1, h2}`. */
  pageOf(key) {
    return pageOf(key, this.pages);
  }

  /** Page `p`'s slot in the body: bytes `start` to `end - 1`. */
  slotRange(p) {
    const start = PAGES_HEADER_BYTES + p * this.slot; // below 2^64: exact below 2^53
    return { start, end: start + this.slot };
  }

  /** Bytes of the whole body: `72 + pages * slot`. */
  bodyLength() {
    return PAGES_HEADER_BYTES + this.pages * this.slot;
  }
}

/** One page of a paged body, read from its slot: its signature and its version 2 body. */
export class Page {
  /**
   * Decodes page `index`'s slot (`header.slotRange(index)` of the body): its length `L`
   * (2 bytes, big-endian, after the 64-byte signature), its version 2 body, and zeros to
   * the end. DecodeError for a slot of another size, an `L` that overruns it, padding that
   * is not zero, or a body malformed or of another grade than the header's.
   */
  static parse(header, index, slot) {
    const bytes = slot instanceof Uint8Array ? slot : new Uint8Array(slot);
    const bad = (what) => new DecodeError(`pages: page ${index}: ${what}`);
    if (!Number.isInteger(index) || index < 0 || index >= header.pages) throw bad(`no such page (the header says ${header.pages})`);
    if (bytes.length !== header.slot) throw bad(`${bytes.length} bytes where the header says a slot has ${header.slot}`);
    const length = (bytes[64] << 8) | bytes[65];
    if (PAGE_SLOT_PREFIX + length > bytes.length) throw bad(`its ${length} body bytes overrun its slot of ${bytes.length}`);
    for (let i = PAGE_SLOT_PREFIX + length; i < bytes.length; i++) if (bytes[i] !== 0) throw bad("its padding is not zero");
    let ribbon;
    try {
      ribbon = Ribbon2.fromBytes(bytes.subarray(PAGE_SLOT_PREFIX, PAGE_SLOT_PREFIX + length));
    } catch (e) {
      throw e instanceof DecodeError ? bad(e.message) : e;
    }
    if (ribbon.k !== header.k || ribbon.split !== header.split) {
      throw bad(`grade (k ${ribbon.k}, split ${ribbon.split}) where the header says (k ${header.k}, split ${header.split})`);
    }
    return new Page(index, bytes.slice(), ribbon);
  }

  constructor(index, slot, ribbon) {
    /** The page's number. */
    this.index = index;
    /** The slot's bytes, as read (its signature covers those after the first 64). */
    this.slot = slot;
    /** The page's signature (64 bytes; zero when unsigned). */
    this.signature = slot.subarray(0, 64);
    /** The page's keys as a version 2 filter. */
    this.ribbon = ribbon;
    /** Distinct keys of the page. */
    this.n = ribbon.n;
  }

  /** Whether the key (of this page) may be in the hour. */
  containsKey(key) {
    return this.ribbon.containsKey(key);
  }
}

/**
 * A closed hour read by the page (`.pages`, section 12, "Huge hours by the page"): its
 * header and the pages read, each answering for the keys it holds exactly as the whole
 * paged body would: no false negative, any other key true at the grade's fpp (as the
 * `.ribbon2` body at that grade, though not for the same keys: its pages are other
 * filters). A key whose page was not read is a ProtocolError, never an answer: `has(key)`
 * tells.
 */
export class Pages {
  /**
   * Decodes a whole `.pages` body: its header, every page, a length of `72 + P*S` and the
   * pages' `n` adding up to the header's (DecodeError otherwise).
   */
  static fromBytes(body) {
    const bytes = body instanceof Uint8Array ? body : new Uint8Array(body);
    const header = PagesHeader.parse(bytes);
    if (bytes.length !== header.bodyLength()) {
      throw new DecodeError(`pages: ${bytes.length} bytes where the header says ${header.bodyLength()}`);
    }
    const out = new Pages(header);
    let n = 0;
    for (let p = 0; p < header.pages; p++) {
      const { start, end } = header.slotRange(p);
      const page = Page.parse(header, p, bytes.subarray(start, end));
      n += page.n;
      out.pages.set(p, page);
    }
    if (n !== header.n) throw new DecodeError(`pages: the pages hold ${n} keys where the header says ${header.n}`);
    return out;
  }

  constructor(header) {
    /** The body's header (a PagesHeader). */
    this.header = header;
    /** The pages read, by number. */
    this.pages = new Map();
    /** The grade's false-positive rate (a number, as `Ribbon2`'s). */
    this.fpp = header.fpp;
    /** Distinct keys of the hour. */
    this.n = header.n;
  }

  /** Whether the page holding the key `{h1, h2}` was read. */
  has(key) {
    return this.pages.has(this.header.pageOf(key));
  }

  /** Whether every page was read. */
  get complete() {
    return this.pages.size === this.header.pages;
  }

  /** Whether the key `{h1, h2}` may be in the hour: its page's answer. A ProtocolError when
   * its page was not read. */
  containsKey(key) {
    const p = this.header.pageOf(key);
    const page = this.pages.get(p);
    if (!page) throw new ProtocolError(`pages: page ${p} of ${this.header.pages}, which holds this key, was not read: it cannot answer for it`);
    return page.containsKey(key);
  }

  /** Whether the ID may be in the hour (SHA-1 through WebCrypto, hence async). */
  async contains(id) {
    return this.containsKey(await keyOf(id));
  }

  /** `contains`, under the name filters answer to. */
  mayContain(id) {
    return this.contains(id);
  }
}

/**
 * The slot bytes expected of an hour of `n` distinct keys paged at the grade `(k, split)`,
 * before any is read (section 12, "Huge hours by the page", "Bytes"; the Rust SDK's
 * `Pages::predicted_slot_bytes`): the slot's 66 bytes, 13 of its body's header, and the
 * fullest page's keys at the grade's bits, that page taken as the mean `n / P` and five of
 * its standard deviations (plus 2). The header read first gives the real size.
 */
export function pagesPredictedSlotBytes(n, k, split = 0) {
  const mean = n / pagesFor(n);
  const fullest = n === 0 ? 0 : mean + 5 * Math.sqrt(mean) + 2;
  return PAGE_SLOT_PREFIX + 13 + Math.ceil((fullest * (k + split / 256)) / 8);
}

/** The bytes expected of a whole paged body of `n` keys at `(k, split)`: the header and
 * `P` slots of `pagesPredictedSlotBytes` (the Rust SDK's `Pages::predicted_bytes`). */
export function pagesPredictedBytes(n, k, split = 0) {
  return PAGES_HEADER_BYTES + pagesFor(n) * pagesPredictedSlotBytes(n, k, split);
}

/** The distinct pages of `pages` the keys `{h1, h2}` are on, ascending. */
export function pagesOfKeys(keys, pages) {
  return [...new Set(keys.map((key) => pageOf(key, pages)))].sort((a, b) => a - b);
}

// --- Choosing the cheapest form of a closed hour (section 12) -------------------------

/** The default cost of a wasted fetch, in bytes. */
export const DEFAULT_FETCH_COST = 10240;

/** Rows of the server's ribbon for `n` keys (section 12, construction). */
function ribbonRows(n) {
  return Math.max(64, Math.ceil(n * (n < 10000 ? 1.065 : 1.075)) + 16);
}

/** Predicted bytes of a `.ribbon2` body of `n` keys at the grade `(k, split)`: about
 * `12 + 4*S + ceil(n*bits*1.005/8) + S*bits/2` with `bits = k + split/256` and `S`
 * shards (the header, the 0.5% and 4 rows of slack per shard), a few bytes above the
 * server's (shards of at most 128 keys have no slack). */
export function ribbon2Bytes(n, k, split) {
  const bits = k + split / 256;
  const shards = Math.ceil((n * split) / 256 / 4096) + Math.ceil((n * (1 - split / 256)) / 4096);
  return Math.ceil(12 + 4 * shards + Math.ceil((n * bits * 1.005) / 8) + (shards * bits) / 2);
}

/** Bytes of `v` as an unsigned LEB128 varint. */
function varintLength(v) {
  let length = 1;
  for (; v >= 128; v = Math.floor(v / 128)) length++;
  return length;
}

/** Rows of the first size the server tries for a version 2 shard of `n` keys: `n` while
 * dense (at most 128), else `n + ceil(0.005 n) + 4` (section 12, "Version 2", construction). */
function ribbon2ShardRows(n) {
  return n <= 128 ? n : n + Math.ceil(n * 0.005) + 4;
}

/**
 * The predicted bytes of a `.ribbon2` body of `n` keys at the grade `(k, split)` (section
 * 12, "Body bytes"): part A holding `floor(n * split / 256)` keys, each part's keys spread
 * evenly over `ceil(keys / 4096)` shards, each shard at the first size the server tries,
 * the header's varints included; the same number as the Rust SDK's
 * `Ribbon2::predicted_bytes`. A built body differs by where its keys' hashes put them
 * (within 1%; exact for one shard at split 0), and a retry (never seen) adds 0.5% of a
 * shard. What the compact plan of `cheapestPlan` counts.
 */
export function ribbon2PredictedBytes(n, k, split = 0) {
  const inA = Math.floor((n * split) / 256);
  let header = 6 + varintLength(n);
  let bits = 0;
  for (const [keys, width] of [
    [inA, k + 1],
    [n - inA, k],
  ]) {
    const shards = width === 0 ? Number(keys > 0) : Math.ceil(keys / 4096);
    header += varintLength(shards);
    for (let i = 0; i < shards; i++) {
      // The keys spread as evenly as integers allow.
      const share = Math.floor(keys / shards) + Number(i < keys % shards);
      const m = width === 0 ? 0 : ribbon2ShardRows(share);
      header += varintLength(m) + 1;
      bits += m * width;
    }
  }
  return header + Math.ceil(bits / 8);
}

/** Predicted bytes of the v1 `.bin` body (gzip) of `count` IDs at `targetFpp`, and its fpp (section 12's table). */
function v1Form(count, targetFpp) {
  const p = Math.min(Math.max(targetFpp, 1e-12), 0.5);
  const { m, k } = sizedParams(count, p);
  const fpp = count === 0 ? 0 : Math.min(p, expectedFpp(m, k, count));
  const raw = Math.ceil((m + Math.floor(m / 32)) / 8);
  return { form: "bloom", bytes: raw + 24 + Math.floor(raw / 8192), fpp };
}

/**
 * The form of a closed hour of `count` IDs minimising body bytes plus
 * `followed * fpp * fetchCost`: `{form: "bloom"}` (v1 `.bin` gzip at the target) or
 * `{form: "ribbon", r}` for r in 4..24, with its predicted `bytes`, `fpp` and `expected`
 * bytes. As the Rust SDK's `cheapest_form`.
 *
 * `exact`: the hour has an exact body (section 14) of that many bytes (the index's
 * `exact_bytes`), or `true` when its size is not listed (then the v1 body's predicted
 * bytes, which an exact body does not exceed once 1% of the universe changed). An exact
 * body answers truly only for IDs of the publisher's universe, which is never published:
 * - `registered: true` (the caller declares every ID it asks about registered): it is
 *   read alone, `{form: "exact", bytes, fpp: 0, expected, otherwise}`, when its bytes are
 *   no more than the cheapest other form's sum (it wastes no fetch);
 * - otherwise it only refines the cheapest form at the target fpp or under
 *   (`cheapestWithin`), an ID changed when both say so: `{form: "refined", under,
 *   exactBytes, bytes, fpp: 0, expected, otherwise}` when both bodies and the second
 *   response's headers (400 bytes) cost no more than that sum. Registered IDs are then
 *   answered exactly, any other at most at `under.fpp` (at most the target).
 * `otherwise` is the form to read if the exact body is not served. `ribbons: false` leaves
 * ribbons out (a verifying client reads only signed forms). `ribbon2: true` (the server's
 * index lists 2 in `ribbon_versions`) offers version 2 ribbons instead of version 1's:
 * `{form: "ribbon2", fpp, k, split, gradeFpp, bytes}` for `fpp` = 2^-b, b = 4..24 (the
 * value to send as `?fpp=`, members of the server's grade set, section 12), `(k, split)` its grade and `gradeFpp` the
 * grade's rate (at most `fpp`; `expected` counts `fpp`). `mirror: true` (a static mirror,
 * section 13): ribbons only at the service's target, the one precision a mirror holds,
 * marked `atTarget` (read without `?fpp=`, which a file server ignores).
 *
 * `pages: true` (with `ribbons` and `ribbon2`) also weighs reading the hour by the page
 * (`.pages`, section 12, "Huge hours by the page"; `cheapestPages`): `{form: "pages", ...,
 * otherwise}`, taken when strictly cheaper than the cheapest whole form (`otherwise`, read
 * when the server serves no pages). `keys`: the followed IDs' keys (`keyOf`), which name
 * the pages needed exactly; without them, the pages `followed` random IDs are expected on.
 */
export function cheapestForm(count, targetFpp, followed, fetchCost = DEFAULT_FETCH_COST, { exact, ribbons = true, ribbon2 = false, registered = false, mirror = false, pages = false, keys = null } = {}) {
  const options = approximateForms(count, targetFpp, { ribbons, ribbon2, mirror });
  let best = null;
  for (const o of options) {
    o.expected = o.bytes + followed * o.fpp * fetchCost;
    if (!best || o.expected < best.expected || (o.expected === best.expected && o.bytes < best.bytes)) best = o;
  }
  if (pages && ribbons && ribbon2) {
    const paged = cheapestPages(count, targetFpp, followed, fetchCost, { mirror, keys });
    if (paged.expected < best.expected) best = { ...paged, otherwise: best };
  }
  const exactBytes = exactBytesOf(exact, count, targetFpp);
  if (exactBytes === null) return best;
  if (registered) {
    return exactBytes <= best.expected ? { form: "exact", bytes: exactBytes, fpp: 0, expected: exactBytes, otherwise: best } : best;
  }
  const under = cheapestWithin(count, targetFpp, { ribbons, ribbon2 });
  const expected = under.bytes + exactBytes + RESPONSE_OVERHEAD;
  if (expected > best.expected) return best;
  return { form: "refined", under, exactBytes, bytes: under.bytes + exactBytes, fpp: 0, expected, otherwise: best };
}

/** Bytes of a response's status line and headers: what a second request costs besides its body. */
const RESPONSE_OVERHEAD = 400;
/** What each page's request costs beside its bytes, a round trip, weighed as bytes (as
 * the Rust SDK's PAGE_ROUND_TRIP): a client back after many huge hours takes the version
 * 2 union rather than hundreds of pages an hour. */
const PAGE_ROUND_TRIP = 4096;

/**
 * Reading a closed hour of `count` IDs by the page (`.pages`, section 12, "Huge hours by
 * the page") at the grade minimising its bytes plus `followed * fpp * fetchCost`:
 * `{form: "pages", fpp, k, split, gradeFpp, pages, needed, slot, bytes, expected}`, at
 * `fpp` = 2^-b, b = 4..24 (members of every server's grade set, the `?fpp=` to send), or,
 * `mirror: true`, at the service's target only (`atTarget`: a static mirror holds its pages
 * at that grade, read without `?fpp=`). `pages` is `max(1, ceil(count / 64))`, `needed`
 * the distinct pages of `keys` (the followed IDs' keys) among them, or without `keys` the
 * pages `followed` random IDs are expected on, `slot` `pagesPredictedSlotBytes`; `bytes`
 * the header (72) and each page's slot with its response's headers (400) and its round
 * trip (`PAGE_ROUND_TRIP`, 4096), so that `bytes` plus the first response's 400, as every
 * form's, is `72 + needed * (slot + 4496) + 400`.
 */
export function cheapestPages(count, targetFpp, followed, fetchCost = DEFAULT_FETCH_COST, { mirror = false, keys = null } = {}) {
  const pages = pagesFor(count);
  const needed = keys ? pagesOfKeys(keys, pages).length : pages * -Math.expm1(followed * Math.log1p(-1 / pages));
  const grades = mirror
    ? [{ ...gradeForFpp(Math.min(Math.max(targetFpp, 2 ** -24), 0.0625)), atTarget: true }]
    : Array.from({ length: 21 }, (_, i) => ({ ...gradeForFpp(2 ** -(i + 4)), request: 2 ** -(i + 4) }));
  let best = null;
  for (const grade of grades) {
    const slot = pagesPredictedSlotBytes(count, grade.k, grade.split);
    const bytes = PAGES_HEADER_BYTES + needed * (slot + RESPONSE_OVERHEAD + PAGE_ROUND_TRIP);
    const fpp = grade.atTarget ? grade.fpp : grade.request;
    const o = { form: "pages", fpp, k: grade.k, split: grade.split, gradeFpp: grade.fpp, pages, needed, slot, bytes, expected: bytes + followed * fpp * fetchCost };
    if (grade.atTarget) o.atTarget = true;
    if (!best || o.expected < best.expected) best = o;
  }
  return best;
}

/** Every approximate form of a closed hour `cheapestForm` weighs, with `bytes` and `fpp`.
 * `mirror`: a static mirror (section 13), which holds the compact forms at the service's
 * target only and ignores `?fpp=`: those, marked `atTarget` (asked for without `?fpp=`). */
function approximateForms(count, targetFpp, { ribbons = true, ribbon2 = false, mirror = false } = {}) {
  const options = [];
  if (ribbons && mirror) {
    if (ribbon2) {
      const { k, split, fpp } = gradeForFpp(Math.min(Math.max(targetFpp, 2 ** -24), 0.0625));
      options.push({ form: "ribbon2", fpp, k, split, gradeFpp: fpp, bytes: ribbon2Bytes(count, k, split), atTarget: true });
    } else {
      const r = Math.min(24, Math.max(4, Math.ceil(-Math.log2(targetFpp))));
      options.push({ form: "ribbon", r, bytes: 24 + Math.ceil((r * ribbonRows(count)) / 8), fpp: 2 ** -r, atTarget: true });
    }
  } else if (ribbons && ribbon2) {
    for (let b = 4; b <= 24; b++) {
      const fpp = 2 ** -b;
      const { k, split, fpp: gradeFpp } = gradeForFpp(fpp);
      options.push({ form: "ribbon2", fpp, k, split, gradeFpp, bytes: ribbon2Bytes(count, k, split) });
    }
  } else if (ribbons) {
    for (let r = 4; r <= 24; r++) {
      const bytes = 24 + Math.ceil((r * ribbonRows(count)) / 8);
      options.push({ form: "ribbon", r, bytes, fpp: 2 ** -r });
    }
  }
  options.push(v1Form(count, targetFpp));
  return options;
}

/**
 * The spelling of `fpp` in `?fpp=`: the shortest decimal in scientific notation that
 * parses back to exactly it (the server's canonical spelling of its grades, section 12:
 * `6.25e-2`, `7.8125e-3`), so that every client names one URL per grade.
 */
export function fppParam(fpp) {
  return Number(fpp).toExponential();
}

/**
 * The approximate form of a closed hour of `count` IDs with the fewest body bytes whose fpp
 * is at most `targetFpp` (the v1 filter always is): what an exact body refines for IDs not
 * declared registered (section 14, "Choosing it"). Options as `cheapestForm`'s.
 */
export function cheapestWithin(count, targetFpp, { ribbons = true, ribbon2 = false } = {}) {
  let best = null;
  for (const o of approximateForms(count, targetFpp, { ribbons, ribbon2 })) {
    if (o.fpp <= targetFpp && (!best || o.bytes < best.bytes)) best = o;
  }
  return best;
}

/** Bytes a 304 revalidation costs. */
const NOT_MODIFIED = 250;

/** Payload bytes of a v1 filter for `n` IDs at `p`: the `m` of section 3's rule, in bytes. */
function v1Payload(n, p) {
  try {
    return sizedParams(n, Math.min(Math.max(p, 1e-12), 0.5)).m / 8;
  } catch {
    return MAX_M / 8;
  }
}

/**
 * How to read a range of hours for `followed` IDs, as `changedSince` with `strategy:
 * "auto"` does (the Rust SDK's planner): whichever of four plans costs the fewest
 * expected bytes, each counting its filters' bytes, `RESPONSE_OVERHEAD` (400) per
 * response, and `followed * fpp * fetchCost` for the fetches its false positives waste:
 * - `"hourly"`: each hour on its own: a closed hour at its `cheapestForm` (with its
 *   `exact` body where it has one) plus a response, or, when a complete filter of it is
 *   held (`heldFpp`), only that filter's wasted fetches if fewer; the open hour as the v1
 *   filter sized for `max(count, capacity)`, a 304 (250 bytes) when the copy held has its
 *   count (`cachedCount`);
 * - `"union"`: one v1 `/since` union of every hour's IDs at `targetFpp`;
 * - `"compact"` (only with `ribbon2`, the index's `ribbon_versions` listing 2, and not
 *   `bloomOnly` nor `mirror`): the closed hours from `from`, the position just after the
 *   last closed hour held complete (`heldFpp` not null; 0 when none is), as one version 2
 *   since-union (`/since/...ribbon2`, PROTOCOL.md section 12, "Catching up") at the
 *   `2^-k`, k = 4..24, minimising `ribbon2PredictedBytes` of those hours' summed counts
 *   plus its wasted fetches; the hours before `from` and the open hour each as `"hourly"`
 *   counts it. None when no closed hour remains from `from` on (every closed hour held:
 *   a regular poller reads hour by hour);
 * - `"exact"` (only with `registered`, and not `bloomOnly` nor `mirror`): the same closed
 *   hours from `from` as one exact body (`/since/...exact`, PROTOCOL.md section 14,
 *   "Ranges"), counted as the sum of their exact bodies' bytes (each `exact` option's, as
 *   `cheapestForm` counts it: a range's body is at most that), which wastes no fetch, and
 *   a response; the hours before `from` and the open hour as `"hourly"` counts them. None
 *   when a closed hour from `from` on has no exact body (`exact` absent: before the
 *   index's `exact_since`), or no closed hour remains. With `universe` (at least the
 *   publisher's universe, as `universeAtMost` bounds it from an hour's exact body; null or
 *   absent: none), the body is counted as the lesser of that sum and `1.15 *
 *   floorBits(universe, min(R, floor(universe / 2))) / 8 + 47`, R the sum of those hours'
 *   counts (PROTOCOL.md section 14, "Choosing it"): where most of the universe changed,
 *   far below the sum.
 * A plan is taken only when strictly cheaper: ties go to hourly, then to the union, then
 * to the compact plan.
 *
 * `hours`: from `since` through the current hour, oldest first, each `{count, open,
 * heldFpp, cachedCount, exact}`: `count` the index's (null or absent: an hour it does not
 * list, taken as `capacity`), `open` true for the current hour, `exact` as `cheapestForm`'s
 * option. `bloomOnly`: closed hours come as v1 filters only (a verifying client: also no
 * union of either kind, which `changedSince` never plans for it). `mirror`: a static
 * mirror (section 13), which serves no unions: always `"hourly"`. `pages` and `keys`: as
 * `cheapestForm`'s, for the closed hours `"hourly"` reads (a few IDs of huge hours are
 * read by the page).
 *
 * Returns `{plan, k, from, hourly, union, compact, exact}`: the plan, the `k` the compact
 * plan reads its closed hours at (null when it cannot be read: no version 2, `bloomOnly`,
 * a mirror, no closed hour after the last one held), `from`, the index in `hours` of the
 * first of the closed hours the compact or exact plan reads as one (null when neither can
 * be read), and each plan's expected bytes (`compact` and `exact` null when they cannot be
 * read). As the Rust SDK's `cheapest_plan`, `Plan::Compact { k, from }` and `Plan::Exact
 * { from }`.
 */
export function cheapestPlan(hours, { targetFpp = 0.01, capacity = 3000, followed = 0, fetchCost = DEFAULT_FETCH_COST, ribbon2 = false, bloomOnly = false, registered = false, universe = null, mirror = false, pages = false, keys = null } = {}) {
  const p = targetFpp;
  const waste = (fpp) => followed * fpp * fetchCost;
  const countOf = (h) => h.count ?? capacity;
  const forms = new Map();
  const costs = hours.map((h) => {
    const count = countOf(h);
    if (h.open) {
      // Sized for capacity (or grown past it), filled to `count`.
      const size = Math.max(count, capacity);
      let fpp = p;
      try {
        const { m, k } = sizedParams(size, Math.min(Math.max(p, 1e-12), 0.5));
        fpp = Math.min(p, expectedFpp(m, k, count));
      } catch {
        // no filter below 2^32 bits: the target
      }
      const unchanged = h.cachedCount !== undefined && h.cachedCount !== null && h.cachedCount === h.count;
      return (unchanged ? NOT_MODIFIED : v1Payload(size, p) + RESPONSE_OVERHEAD) + waste(fpp);
    }
    const key = `${count}/${h.exact}`;
    if (!forms.has(key)) {
      const choice = cheapestForm(count, p, followed, fetchCost, { exact: h.exact, ribbons: !bloomOnly, ribbon2, registered, mirror, pages, keys });
      forms.set(key, choice.expected + RESPONSE_OVERHEAD);
    }
    const fetched = forms.get(key);
    return h.heldFpp === undefined || h.heldFpp === null ? fetched : Math.min(fetched, waste(h.heldFpp));
  });
  const hourly = costs.reduce((a, b) => a + b, 0);
  const total = hours.reduce((sum, h) => sum + countOf(h), 0);
  const union = v1Payload(total, p) + RESPONSE_OVERHEAD + waste(p);
  let k = null;
  let from = null;
  let compact = null;
  let exact = null;
  // A union of the closed hours starts after the last closed hour held complete: the hours
  // before it are read on their own (held ones answered from what is held), as hour by
  // hour reads them, and so is the open hour after it.
  const start = unionStart(hours);
  const closed = hours.slice(start).filter((h) => !h.open);
  const others = () => costs.filter((_, i) => i < start || hours[i].open).reduce((a, b) => a + b, 0);
  if (ribbon2 && !bloomOnly && !mirror && closed.length) {
    const n = closed.reduce((sum, h) => sum + countOf(h), 0);
    let best = Infinity;
    for (let b = 4; b <= 24; b++) {
      const cost = ribbon2PredictedBytes(n, b, 0) + waste(2 ** -b);
      if (cost < best) [best, k] = [cost, b];
    }
    compact = best + RESPONSE_OVERHEAD + others();
    from = start;
  }
  // For registered IDs, those closed hours as one exact body when each has one: at most
  // the sum of their exact bodies (section 14, "Ranges"), and no fetch wasted.
  if (registered && !bloomOnly && !mirror && closed.length && closed.every((h) => exactBytesOf(h.exact, countOf(h), p) !== null)) {
    let bytes = closed.reduce((sum, h) => sum + exactBytesOf(h.exact, countOf(h), p), 0);
    // Where many of the universe changed, far below the sum: at most the floor of the
    // hours' counts in the largest universe the index allows, with the body's slack.
    if (universe !== undefined && universe !== null) {
      const changed = closed.reduce((sum, h) => sum + countOf(h), 0);
      bytes = Math.min(bytes, exactBytesAtMost(universe, changed));
    }
    exact = bytes + RESPONSE_OVERHEAD + others();
    from = start;
  }
  let plan = "hourly";
  let cost = hourly;
  if (!mirror && union < cost) [plan, cost] = ["union", union];
  if (compact !== null && compact < cost) [plan, cost] = ["compact", compact];
  if (exact !== null && exact < cost) plan = "exact";
  return { plan, k, from, hourly, union, compact, exact };
}

/** An exact body read from `url`, decoded and checked against its `Repr-Digest`,
 * `Bloom-Count` and `Bloom-Universe` when sent (DecodeError naming what disagrees). */
async function checkedExact(url, headers, bytes, subtle) {
  await checkReprDigest(url, headers, bytes, subtle);
  const exact = Exact.fromBytes(bytes);
  for (const [name, value] of [["bloom-count", exact.changedCount], ["bloom-universe", exact.universe]]) {
    const sent = headers.get(name);
    if (sent !== null && sent.trim() !== String(value)) {
      throw new DecodeError(`${url}: header ${name} says ${sent.trim()}, the body ${value}`);
    }
  }
  return exact;
}

/** The hour a response header names (RFC 3339, a whole hour), as `hourName` spells it;
 * null when the header is absent, a ProtocolError naming `url` when it is not an hour. */
function hourHeader(url, headers, header) {
  const value = headers.get(header);
  if (value === null) return null;
  const date = new Date(value.trim());
  if (Number.isNaN(date.getTime()) || date.getTime() % HOUR_MS !== 0) throw new ProtocolError(`${url}: ${header} is not an hour: ${JSON.stringify(value)}`);
  return hourName(date);
}

/** Where a union of the closed hours starts in `hours` (`cheapestPlan`'s compact and
 * exact plans): just after the last closed hour held complete (`heldFpp` not null), 0 when
 * none is. */
function unionStart(hours) {
  let start = 0;
  hours.forEach((h, i) => {
    if (!h.open && h.heldFpp !== undefined && h.heldFpp !== null) start = i + 1;
  });
  return start;
}

/** The bytes of a closed hour's exact body as `cheapestForm` counts them from its `exact`
 * option (the index's `exact_bytes`, or `true`: the v1 body's predicted bytes), or null
 * when it has none. */
function exactBytesOf(exact, count, targetFpp) {
  if (exact === undefined || exact === null || exact === false) return null;
  return typeof exact === "number" ? exact : v1Form(count, targetFpp).bytes;
}

/** The bound on the publisher's universe an index gives (`universeAtMost`): from the
 * first hour its `hours` list (newest first) holds complete with an integer `count` above
 * 0 and `exact_bytes`, or null when none does (the Rust SDK's `plan_inputs`). */
function universeOfIndex(index) {
  for (const h of index.hours ?? []) {
    if (h?.complete !== true || !Number.isInteger(h.count) || !Number.isInteger(h.exact_bytes)) continue;
    const n = universeAtMost(h.count, h.exact_bytes);
    if (n !== null) return n;
  }
  return null;
}

/** `ln(n!)`, exact sums below 256 and Stirling's series above (the Rust core's
 * `ln_factorial`, term for term). */
function lnFactorial(n) {
  if (n < 256) {
    let sum = 0;
    for (let i = 2; i <= n; i++) sum += Math.log(i);
    return sum;
  }
  const x = n;
  return x * Math.log(x) - x + 0.5 * Math.log(2 * Math.PI * x) + 1 / (12 * x) - 1 / (360 * x * x * x);
}

/**
 * `log2(C(n, r))`: the bits an exact body of `r` changed IDs of a universe of `n` cannot
 * go below (PROTOCOL.md section 14), 0 when `r` is 0 or at least `n` (the Rust core's
 * `exact::floor_bits`).
 */
export function floorBits(n, r) {
  if (r === 0 || r >= n) return 0;
  return (lnFactorial(n) - lnFactorial(r) - lnFactorial(n - r)) / Math.LN2;
}

/**
 * The most IDs a universe can hold for an exact body of `bytes` to tell which `count` of
 * them changed: the largest `N` in `[count, 2^40]` with `floorBits(N, count) <= 8 * bytes`
 * (a body is never below its floor), by bisection. Null for an hour with no change (its
 * body says nothing of `N`). The Rust SDK's `universe_at_most`; what `changedSince` passes
 * `cheapestPlan` as `universe`, from the newest complete hour the index lists with a
 * `count` above 0 and its `exact_bytes`.
 */
export function universeAtMost(count, bytes) {
  if (count === 0) return null;
  const bits = 8 * bytes;
  let low = count;
  let high = 2 ** 40;
  while (low < high) {
    const mid = low + Math.ceil((high - low) / 2);
    if (floorBits(mid, count) <= bits) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** The most bytes an exact body of `r` changed IDs of a universe of at most `n` takes:
 * 1.15 times the floor (section 14's bound) and its longest header; the floor taken at
 * `min(r, floor(n / 2))`, where it is largest, so `r` may be an upper bound. */
function exactBytesAtMost(n, r) {
  return (1.15 * floorBits(n, Math.min(r, Math.floor(n / 2)))) / 8 + 47;
}

/**
 * A sealed hour read with its exact body refining an approximate filter of it (section 14,
 * "Choosing it"): an ID is changed only when both say so. Exact for IDs of the
 * publisher's universe; any other ID at most at the filter's fpp.
 */
export class Refined {
  constructor(under, exact) {
    /** The approximate filter (fetched filter's `Filter`, `Ribbon` or `Ribbon2`). */
    this.under = under;
    /** The hour's `Exact` body. */
    this.exact = exact;
  }

  containsKey(key) {
    return this.under.containsKey(key) && this.exact.changedKey(key);
  }

  async mayContain(id) {
    return this.containsKey(await keyOf(id));
  }

  /** The most an ID outside the universe is flagged at: the approximate filter's. */
  fpp() {
    return fppOf(this.under);
  }
}

/** A filter's false-positive rate: a method of `Filter` and `Ribbon`, a field of `Ribbon2`. */
function fppOf(filter) {
  return typeof filter.fpp === "function" ? filter.fpp() : filter.fpp;
}

const BASE64_DIGEST = /(?:^|,)\s*sha-256\s*=\s*:([A-Za-z0-9+/=]*):/i;

/**
 * Checks the body against the response's `Repr-Digest` (RFC 9530) `sha-256` member, the
 * SHA-256 of the bytes as sent (an exact or ribbon body is never content-coded). No
 * header, or no `sha-256` member in it (a static mirror sends none): nothing to check.
 * @throws DecodeError when the digest differs: the body was altered on its way
 */
export async function checkReprDigest(url, headers, bytes, subtle = globalThis.crypto?.subtle) {
  const value = headers.get("repr-digest");
  if (!value) return false;
  const listed = BASE64_DIGEST.exec(value);
  if (!listed) return false;
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  let binary = "";
  for (const b of digest) binary += String.fromCharCode(b);
  if (btoa(binary) !== listed[1]) {
    throw new DecodeError(`${url}: the body does not match its Repr-Digest (sha-256 ${listed[1]}, body ${btoa(binary)}): it was altered on its way`);
  }
  return true;
}

/** Page requests in flight at once while reading an hour by the page. */
const PAGE_REQUESTS = 6;

/**
 * Checks a 206's `Content-Range` (`bytes FIRST-LAST/TOTAL`) against the bytes asked for;
 * resolves to TOTAL, or null when it is `*` or the header is not there to read (a browser
 * reading another origin sees it only where the server exposes it).
 * @throws DecodeError for another range
 */
function contentRange(url, headers, first, last) {
  const value = headers.get("content-range");
  if (value === null) return null;
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(value);
  if (!m || Number(m[1]) !== first || Number(m[2]) !== last) {
    throw new DecodeError(`${url}: Content-Range ${JSON.stringify(value)} for bytes ${first}-${last}`);
  }
  return m[3] === "*" ? null : Number(m[3]);
}

/** The RFC 3339 name of an hour (a Date or epoch milliseconds). */
function hourName(hour) {
  return new Date(hour).toISOString().replace(".000Z", "Z");
}

const HOUR_MS = 3600e3;

/** Lowercase hex of bytes. */
function hexOf(bytes) {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/**
 * What `changedSince` answers: an Array of `Changed` (the ranges with hits, as before)
 * that also says what it covers. `from` and `to`: the first and last hours actually read
 * (RFC 3339). `unverified`: with a `pubkey`, the hours read that could not be verified
 * (no signature to check: an unsigned server, a version of the open hour without
 * `Bloom-Open-Signature`), oldest first; null without a key (nothing was verified).
 * `checkpoint`: with a `pubkey`, the publisher's verified checkpoint (`{hour, made,
 * keyId}`), or null when the source has none. `stale`: the StaleError that
 * `acceptStale: true` kept from being thrown, else null. `map`, `filter` and the like
 * give plain Arrays, and `JSON.stringify` the ranges alone.
 */
/** The strategies `changedSince` takes. */
const STRATEGIES = ["union", "hourly", "compact", "pages", "auto"];

export class Changes extends Array {
  static get [Symbol.species]() {
    return Array;
  }
}

export class Client {
  /**
   * @param {string} base  the server's base URL, e.g. `http://127.0.0.1:8080`
   * @param {{token?: string, repr?: "json"|"hex"|"bin", fetch?: typeof fetch, pubkey?: string, subtle?: SubtleCrypto, registered?: boolean, clock?: () => number, openFreshness?: number}} [options]
   *   `pubkey`: the publisher's public key (64 hex digits); everything read is then
   *   verified (section 11, module verify.js) with `subtle` (default `crypto.subtle`)
   *   under the keys trusted from it: every sealed hour and derived form, each version of
   *   the open hour (made at most `openFreshness` seconds before `clock`, default
   *   `OPEN_FRESHNESS_SECONDS`), the checkpoint.
   *   `registered`: the caller declares every ID it asks `changedSince` about registered in
   *   the publisher's universe (`POST /universe`) from before the first hour asked about:
   *   exact bodies are then read alone. Default false: the universe is never published,
   *   and an exact body answers any other ID arbitrarily, so each one only refines a
   *   filter at the target fpp (section 14, "Choosing it").
   *   `clock`: this client's clock, epoch milliseconds (default `Date.now`): the publication
   *   lag bound and the open hour's freshness are measured against it.
   */
  constructor(base, { token, repr = "json", fetch: fetchImpl, pubkey, subtle, registered = false, clock = Date.now, openFreshness = OPEN_FRESHNESS_SECONDS, readTries = READ_TRIES } = {}) {
    if (!(repr in SUFFIX)) throw new TypeError(`repr is json, hex or bin, not ${repr}`);
    if (pubkey !== undefined && pubkey !== null && !/^[0-9a-fA-F]{64}$/.test(String(pubkey).trim())) {
      throw new TypeError(`not a public key: ${JSON.stringify(pubkey)} (expected 64 hex digits, an Ed25519 public key)`);
    }
    if (typeof clock !== "function") throw new TypeError("clock is a function returning epoch milliseconds");
    if (!(openFreshness >= 0)) throw new TypeError(`openFreshness is a number of seconds, not ${openFreshness}`);
    this.pubkey = pubkey ? String(pubkey).trim() : null;
    this.registered = Boolean(registered);
    this.subtle = subtle;
    this.clock = clock;
    this.openFreshness = openFreshness;
    this.verifierPromise = null;
    this.keysRead = null;
    /** Set once a derived form came without a signature: the source does not sign them
     * (an older server, a mirror without `.sig` sidecars), so a verifying `changedSince`
     * reads v1 filters instead. */
    this.formsUnsigned = false;
    /** Set once a closed hour's paged form (`.pages`) was 404: the source serves none (a
     * server before it, a mirror without the files), so `changedSince` reads hours whole. */
    this.pagesUnserved = false;
    this.base = String(base).replace(/\/+$/, "");
    this.token = token;
    this.repr = repr;
    this.fetchImpl = fetchImpl ?? globalThis.fetch.bind(globalThis);
    /** Tries in all of a read answered 503 with a short Retry-After (1: the first 503). */
    this.readTries = Math.max(1, Math.floor(Number(readTries)) || 1);
    /** path → Fetched: complete filters forever, open ones to revalidate. */
    this.cache = new Map();
    this.stats = { requests: 0, notModified: 0, cacheHits: 0, bodyBytes: 0 };
  }

  async request(path, init = {}) {
    const read = (init.method ?? "GET").toUpperCase() === "GET" && init.body == null;
    for (let tries = 1; ; tries++) {
      try {
        return await this.requestOnce(path, init);
      } catch (e) {
        // A read answered 503 with a short Retry-After (a build busy, the store
        // recovering) is sent again after it, up to `readTries` tries in all.
        const wait = e instanceof StatusError && e.status === 503 ? e.retryAfter : null;
        if (!read || tries >= this.readTries || !Number.isFinite(wait) || wait > MAX_RETRY_WAIT) throw e;
        await new Promise((done) => setTimeout(done, wait * 1000));
      }
    }
  }

  async requestOnce(path, init = {}) {
    this.stats.requests++;
    let response;
    try {
      response = await this.fetchImpl(this.base + path, init);
    } catch (e) {
      throw new BloomcastError("transport", `cannot reach ${this.base}: ${e.message}`);
    }
    if (response.status >= 400) {
      let code = response.statusText || "error";
      let message = "";
      try {
        const body = await response.json();
        if (typeof body.error === "string") code = body.error;
        if (typeof body.message === "string") message = body.message;
      } catch {
        // not a bloomcast error body: keep the reason phrase
      }
      const retry = response.headers.get("retry-after");
      throw new StatusError(response.status, code, message, retry ? Number(retry) : null);
    }
    return response;
  }

  /** The body of a response, counted in `stats.bodyBytes`: its size as sent when the
   * response says (Content-Length: gzip's compressed size), else as decoded (`fetch` does
   * not tell the size on the wire). */
  async body(response) {
    const body = new Uint8Array(await response.arrayBuffer());
    const sent = Number(response.headers.get("content-length"));
    this.stats.bodyBytes += Number.isSafeInteger(sent) && sent >= 0 && response.headers.has("content-length") ? sent : body.length;
    return body;
  }

  /** The index (`GET /`): parameters, the server's current hour and recent hours. */
  async index() {
    const response = await this.request("/", { headers: { accept: "application/json" } });
    return response.json();
  }

  /**
   * The last `hours` hours, the current one included, as far back as the server can answer
   * for, as `bloomcast check --hours` does: `{ since, clamped }`, `since` the window's first
   * hour (RFC 3339) to pass to `changedSince`, `clamped` true when the window starts later
   * than asked because the server has no hours (any more) before `since`.
   */
  async window(hours) {
    const index = await this.index();
    const HOUR = 3600e3;
    const now = Date.parse(index.current.hour);
    const retained = now - (index.retention_hours - 1) * HOUR;
    const oldest = Math.max(Date.parse(index.genesis), retained);
    const wanted = now - (Math.max(1, Math.floor(hours)) - 1) * HOUR;
    const since = new Date(Math.max(wanted, oldest)).toISOString().replace(".000Z", "Z");
    return { since, clamped: wanted < oldest };
  }

  /**
   * Any filter by path (`/YYYY/MM/DD/HH`, `/YYYY/MM/DD`, `/since/...`), revalidated by ETag.
   * With a `pubkey`, an hour is verified before it is returned or kept (`verified`): a
   * sealed one by its chain signature, a version of the open hour by its
   * `Bloom-Open-Signature`, made at most `openFreshness` seconds before `clock`; one
   * that cannot be (no signature) is refused with a VerificationError whose `unsigned` is
   * true. Unions (days, `since`) are never signed, so never verified.
   *
   * `unverified` (a Set, for `changedSince`): an hour without a signature is added to it
   * (RFC 3339) and returned unverified instead of refused (a sealed one is not kept).
   */
  async filter(path, { unverified = null, repr = this.repr, fresh = false } = {}) {
    if (!(repr in SUFFIX)) throw new TypeError(`repr is json, hex or bin, not ${repr}`);
    const url = path + SUFFIX[repr];
    const cached = this.cache.get(url);
    if (cached?.meta.complete) {
      this.stats.cacheHits++;
      return cached;
    }
    const hour = hourOfPath(path);
    const checked = Boolean(this.pubkey && hour);
    const headers = {};
    if (cached?.etag && (!checked || this.stillGood(cached, unverified))) headers["if-none-match"] = cached.etag;
    // After an event of /events: the caches between are asked for a copy no older than it.
    if (fresh) headers["cache-control"] = "no-cache";
    const response = await this.request(url, { headers, cache: "no-store" });
    if (response.status === 304) {
      if (!headers["if-none-match"]) throw new ProtocolError(`304 for ${url} without a cached copy`);
      this.stats.notModified++;
      if (checked && !cached.verified) unverified.add(hourName(hour));
      return cached;
    }
    if (response.status !== 200) throw new ProtocolError(`${url}: unexpected status ${response.status}`);
    let fetched;
    const etag = response.headers.get("etag");
    const body = await this.body(response);
    if (repr === "json") {
      let doc;
      try {
        doc = JSON.parse(new TextDecoder().decode(body));
      } catch (e) {
        throw new DecodeError(`${url}: body is not JSON: ${e.message}`);
      }
      const { meta, filter } = parseDocument(doc);
      fetched = new Fetched(meta, filter, etag);
    } else {
      const meta = parseHeaders(response.headers);
      const filter = repr === "hex" ? Filter.fromHex(new TextDecoder().decode(body), meta.m, meta.k, { lenient: true }) : new Filter(meta.m, meta.k, body);
      fetched = new Fetched(meta, filter, etag);
    }
    if (checked) {
      // The hour asked for, whatever the body says: one that names no hour, or calls a
      // sealed hour open, verifies as the hour of its path or not at all.
      try {
        if (fetched.meta.complete) await this.verifyHour(path, fetched, response.headers);
        else fetched.made = await this.verifyOpen(path, fetched, response.headers);
        fetched.verified = true;
      } catch (e) {
        if (!(e instanceof VerificationError && e.unsigned && unverified)) throw e;
        unverified.add(hourName(hour));
        if (fetched.meta.complete) return fetched;
      }
    }
    this.cache.set(url, fetched);
    return fetched;
  }

  /** Whether a kept version of the open hour may be revalidated (a 304 keeps it): verified
   * and made within `openFreshness` of `clock`, or unverified and read for `changedSince`
   * (`unverified`), which reports it so again. */
  stillGood(cached, unverified) {
    if (!cached.verified) return Boolean(unverified);
    return this.clock() / 1000 - cached.made <= this.openFreshness;
  }

  /** The verifier of this client's `pubkey` (verify.js, loaded on first use). */
  verifier() {
    if (!this.pubkey) return Promise.reject(new BloomcastError("argument", "verifying needs the publisher's public key (pubkey)"));
    this.verifierPromise ??= import("./verify.js").then(({ Verifier }) =>
      Verifier.create(this.pubkey, this.subtle ? { subtle: this.subtle } : {}),
    );
    return this.verifierPromise;
  }

  /** Once: the publisher's key list (`/.well-known/bloomcast.json`), adopted if it names
   * the key given (each hour then verifies under the key listed for it). */
  readKeys() {
    this.keysRead ??= (async () => {
      const verifier = await this.verifier();
      let doc = {};
      try {
        doc = await (await this.request("/.well-known/bloomcast.json")).json();
      } catch (e) {
        if (!(e instanceof StatusError && e.status === 404)) throw e; // a mirror without it: the key given alone
      }
      await verifier.useKeys(doc.keys);
      return verifier;
    })();
    this.keysRead.catch(() => (this.keysRead = null));
    return this.keysRead;
  }

  /** Verifies a version of the open hour just fetched (its `Bloom-Open-Signature`, and
   * its freshness against `clock`); resolves to when it was made (Unix seconds). */
  async verifyOpen(path, fetched, headers) {
    const verifier = await this.readKeys();
    return verifier.checkOpen(
      hourOfPath(path),
      fetched.filter.bytes,
      headers.get("bloom-open-signature"),
      this.clock() / 1000,
      this.openFreshness,
      fetched.meta.digest,
    );
  }

  /** Verifies a closed hour just fetched, under the index of the hour asked for. */
  async verifyHour(path, fetched, headers) {
    const verifier = await this.readKeys();
    // Its count is not signed; the most it can be checked against is its bits.
    const { checkCount } = await import("./verify.js");
    checkCount(hourName(hourOfPath(path)), fetched.filter, fetched.meta.count);
    let prev = headers.get("bloom-prev-header");
    let signature = headers.get("bloom-signature");
    if (prev === null && signature === null) {
      // A static mirror (section 13) sends no per-hour headers: the hour's chain entry
      // carries its link, signature and key id; one verified already, its header.
      if (verifier.headerOf(hourOfPath(path))) {
        await verifier.checkListed(hourOfPath(path), fetched.filter.bytes, fetched.meta.digest);
        return;
      }
      const entry = await this.chainEntry(path);
      prev = entry.prev;
      signature = entry.signature;
      if (signature && entry.key_id) signature = `${signature}; keyid="${entry.key_id}"`;
    }
    await verifier.check(hourOfPath(path) ?? fetched.meta.hour, fetched.filter.bytes, prev, signature, fetched.meta.digest);
  }

  /** The chain entry of the hour at `path` (`/chain/...?limit=1`), or `{}`. */
  async chainEntry(path) {
    let page;
    try {
      page = await (await this.request(`/chain${path}?limit=1`)).json();
    } catch (e) {
      if (e instanceof StatusError && e.status === 404) return {};
      throw e;
    }
    const want = hourOfPath(path)?.getTime();
    return page?.[0]?.hour && Date.parse(page[0].hour) === want ? page[0] : {};
  }

  /**
   * Verifies the chain from `since` to the newest sealed hour (`/chain`, page by page),
   * then every listed hour's filter against it, after the publisher's checkpoint (read
   * first). Resolves to the hours verified (RFC 3339), an Array that also has
   * `checkpoint` (as `Client#checkpoint`) and `stale` (as `Changes`).
   * @throws VerificationError naming the first hour that fails (an entry without a
   *   signature included) or the key refused; MissingDependency without Ed25519;
   *   StaleError (`answer` the hours verified) unless `acceptStale`: the source is stale
   *   (`staleness`), or its listing ends more than an hour before the hour the checkpoint
   *   names (it withholds hours)
   */
  async verifyChain(since, { acceptStale = false } = {}) {
    let path = `/chain${hourPath(since)}?limit=1000`; // a bad hour is refused before any request
    const verifier = await this.readKeys();
    const index = await this.index();
    const checkpoint = await this.checkpoint(index);
    const entries = [];
    while (path) {
      let response;
      try {
        response = await this.request(path);
      } catch (e) {
        if (e instanceof StatusError && e.status === 404 && entries.length) break;
        throw e;
      }
      const page = await response.json();
      entries.push(...page);
      const next = /<([^>]*)>\s*;\s*rel="next"/.exec(response.headers.get("link") ?? "");
      if (next) path = next[1];
      else if (page.length) {
        // No Link (a static mirror's one-entry pages, section 13): the page after the
        // last entry, until one is empty or absent.
        path = `/chain${hourPath(Date.parse(page[page.length - 1].hour) + 3600e3)}?limit=1000`;
      } else path = null;
    }
    const digests = await verifier.checkChain(entries);
    const { digest, toHex } = await import("./verify.js");
    for (const [hour, want] of digests) {
      const got = await digest((await this.hour(hour)).filter.bytes, verifier.subtle);
      if (toHex(got) !== toHex(want)) {
        throw new VerificationError(`hour ${hour}: the filter's digest is not the chain's: the bytes were altered`);
      }
    }
    let stale = this.staleness(index, checkpoint);
    if (checkpoint) {
      const known = verifier.headerOf(checkpoint.hour);
      if (known && toHex(known) !== checkpoint.header) {
        throw new VerificationError(`hour ${checkpoint.hour} (checkpoint): the checkpoint's header is not the chain's for that hour`);
      }
      const listedTo = entries.length ? Date.parse(entries.at(-1).hour) : toDate(since).getTime() - HOUR_MS;
      if (!stale && toDate(checkpoint.hour).getTime() > listedTo + HOUR_MS) {
        const what = entries.length ? `ends at ${hourName(listedTo)}` : `has no hour from ${hourName(listedTo + HOUR_MS)}`;
        stale = new StaleError(
          `the source withholds hours: its chain ${what}, but the publisher's checkpoint, made ${new Date(checkpoint.made * 1000).toISOString()}, names ${checkpoint.hour} as sealed (acceptStale takes the hours verified as they are)`,
          { newest: hourName(listedTo), checkpoint: checkpoint.hour },
        );
      }
    }
    const hours = Object.assign([...digests.keys()], { checkpoint, stale: acceptStale ? stale : null });
    if (stale && !acceptStale) {
      stale.answer = hours;
      throw stale;
    }
    return hours;
  }

  /**
   * A closed hour as a ribbon filter (section 12), at the server's target fpp or at
   * `fpp` (2^-24 .. 1, rounded down to a power of two): the binary body (`.ribbon`,
   * checked against `Repr-Digest` when sent) or, with `repr: "json"`, its JSON form
   * (`.ribbon.json`, checked against its `digest` and header fields). With a `pubkey`,
   * its signature is verified over the hour's chain header (section 11, "Derived forms";
   * VerificationError naming the hour, `unsigned` when it has none). Kept once fetched: a
   * closed hour never changes. A `StatusError` 406 for the open hour.
   */
  async ribbon(hour, { fpp, repr = "bin" } = {}) {
    if (repr !== "bin" && repr !== "json") throw new TypeError(`repr is bin or json, not ${repr}`);
    const path = hourPath(hour);
    const url = `${path}.ribbon${repr === "json" ? ".json" : ""}${fpp === undefined ? "" : `?fpp=${fppParam(fpp)}`}`;
    const held = this.cache.get(url);
    if (held) {
      this.stats.cacheHits++;
      return held;
    }
    const accept = repr === "json" ? "application/vnd.bloomcast.ribbon+json" : "application/vnd.bloomcast.ribbon";
    const response = await this.request(url, { headers: { accept } });
    let bytes;
    let ribbon;
    if (repr === "json") {
      let doc;
      try {
        doc = JSON.parse(new TextDecoder().decode(await this.body(response)));
      } catch (e) {
        throw new DecodeError(`${url}: body is not JSON: ${e.message}`);
      }
      ({ bytes, ribbon } = await this.ribbonDocument(url, doc));
    } else {
      bytes = await this.body(response);
      await checkReprDigest(url, response.headers, bytes, this.subtle ?? globalThis.crypto?.subtle);
      ribbon = Ribbon.fromBytes(bytes);
    }
    if (this.pubkey) await this.verifyForm("ribbon", path, url, bytes, response.headers);
    this.cache.set(url, ribbon);
    return ribbon;
  }

  /** A ribbon's JSON form (section 12, "JSON form") decoded: `{bytes, ribbon}`, refused
   * (DecodeError) when its structure or hash is another, its `digest` is not the body's
   * SHA-256, or a field differs from the body's header. */
  async ribbonDocument(url, doc) {
    if (doc === null || typeof doc !== "object") throw new DecodeError(`${url}: the document is not an object`);
    if (doc.structure !== "ribbon") throw new DecodeError(`${url}: structure ${JSON.stringify(doc.structure)} is not "ribbon"`);
    if (doc.hash !== SHA1_KM32) throw new DecodeError(`${url}: unknown hash ${JSON.stringify(doc.hash)}`);
    const hex = typeof doc.filter === "string" ? doc.filter : "";
    if (hex.length % 2 || !HEX.test(hex)) throw new DecodeError(`${url}: filter is not lowercase hex`);
    const bytes = new Uint8Array(hex.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(2 * i, 2), 16);
    const digest = hexOf(new Uint8Array(await (this.subtle ?? globalThis.crypto.subtle).digest("SHA-256", bytes)));
    if (doc.digest !== digest) throw new DecodeError(`${url}: the filter's SHA-256 is ${digest}, but the document says ${doc.digest}: it was altered`);
    const ribbon = Ribbon.fromBytes(bytes);
    const fields = { w: 64, r: ribbon.r, m: ribbon.m, seed: Number(ribbon.seed), count: ribbon.n };
    for (const [name, value] of Object.entries(fields)) {
      if (doc[name] !== value) throw new DecodeError(`${url}: ${name} is ${JSON.stringify(doc[name])}, the body's ${value}`);
    }
    return { bytes, ribbon };
  }

  /**
   * A closed hour as a version 2 ribbon (section 12, "Version 2": `.ribbon2`), at the
   * server's target fpp or at `fpp` (2^-24 <= fpp < 1; the server serves the cheapest
   * grade at most `fpp`, coarser than 2^-4 as 2^-4). Checked against `Repr-Digest` when
   * sent; with a `pubkey`, its signature (as `ribbon`'s). Kept once fetched: a closed hour
   * never changes. A `StatusError` 406 for the open hour, 404 from a server without
   * version 2 (its index's `ribbon_versions`).
   */
  async ribbon2(hour, { fpp } = {}) {
    const path = hourPath(hour);
    const url = `${path}.ribbon2${fpp === undefined ? "" : `?fpp=${fppParam(fpp)}`}`;
    const held = this.cache.get(url);
    if (held) {
      this.stats.cacheHits++;
      return held;
    }
    const response = await this.request(url, { headers: { accept: "application/vnd.bloomcast.ribbon; v=2" } });
    const bytes = await this.body(response);
    await checkReprDigest(url, response.headers, bytes, this.subtle ?? globalThis.crypto?.subtle);
    const ribbon = Ribbon2.fromBytes(bytes);
    if (this.pubkey) await this.verifyForm("ribbon2", path, url, bytes, response.headers);
    this.cache.set(url, ribbon);
    return ribbon;
  }

  /**
   * The IDs `ids` of a closed hour read by the page (`/YYYY/MM/DD/HH.pages`, section 12,
   * "Huge hours by the page"), at the server's target fpp or at `fpp` (as `ribbon2`'s):
   * the body's header (`Range: bytes=0-71`), then the slot of each page the IDs are on
   * that is not held already, one `Range` each (a server that answers 200 sends the whole
   * body, which is used). Resolves to a `Pages` answering for those IDs (and any other on
   * the pages held) exactly as the whole paged body: no false negative, the grade's fpp
   * (that of the `.ribbon2` body at that grade, whose false positives are others). Checked: the
   * header's hour is the hour asked, each slot decodes (DecodeError). With a `pubkey`, the
   * header's key id must name the key listed for the hour and each page read verify over
   * the chain header the body carries (VerificationError naming the hour and page;
   * `unsigned` when the body or a page has no signature). Kept once fetched, with the pages
   * read: a later call reads only pages not held. A `StatusError` 406 for the open hour, 404
   * from a server without paged forms.
   */
  async pages(hour, ids, { fpp } = {}) {
    return this.readPages(hour, await Promise.all([...ids].map(keyOf)), { fpp });
  }

  /** `pages` for keys (`keyOf`) rather than IDs. */
  async readPages(hour, keys, { fpp } = {}) {
    const path = hourPath(hour);
    const url = `${path}.pages${fpp === undefined ? "" : `?fpp=${fppParam(fpp)}`}`;
    let paged = this.cache.get(url);
    const read = !paged;
    if (read) paged = await this.pagesHeader(url, path, fpp);
    const { header } = paged;
    const missing = pagesOfKeys(keys, header.pages).filter((p) => !paged.pages.has(p));
    if (!read && !missing.length) this.stats.cacheHits++;
    // Pages of a whole body received (a 200), not yet taken (verified), by number.
    const got = paged.received ?? new Map();
    const wanted = missing.filter((p) => !got.has(p));
    let whole = null;
    const slot = async (p) => {
      const answer = await this.pageSlot(url, paged, p);
      if (answer instanceof Page) got.set(p, answer);
      else whole ??= answer;
    };
    if (wanted.length) {
      // One first, then the rest a few at a time: a server that answers 200 sends the
      // whole body once.
      await slot(wanted[0]);
      const queue = wanted.slice(1);
      const worker = async () => {
        while (queue.length && !whole) await slot(queue.shift());
      };
      await Promise.all(Array.from({ length: Math.min(PAGE_REQUESTS, queue.length) }, worker));
    }
    if (whole) {
      for (const [p, page] of whole.pages) if (!paged.pages.has(p) && !got.has(p)) got.set(p, page);
    }
    const verifier = this.pubkey ? await this.readKeys() : null;
    for (const p of missing) {
      const page = got.get(p);
      if (!page) throw new ProtocolError(`${url}: page ${p} was not received`);
      if (verifier) await verifier.checkPage(hourOfPath(path), header, p, page.slot);
      paged.pages.set(p, page);
      got.delete(p);
    }
    paged.received = got.size ? got : undefined;
    this.cache.set(url, paged);
    return paged;
  }

  /** A paged body's header, read by `Range: bytes=0-71` (or the whole body, where the
   * server answers 200), checked: its hour is the hour of `path`, its grade at most `fpp`,
   * and with a `pubkey` its key id and chain header (`Verifier#checkPagesHeader`). */
  async pagesHeader(url, path, fpp) {
    const response = await this.request(url, { headers: { accept: PAGES_TYPE, range: `bytes=0-${PAGES_HEADER_BYTES - 1}` } });
    const body = await this.body(response);
    let paged;
    if (response.status === 206) {
      const total = contentRange(url, response.headers, 0, PAGES_HEADER_BYTES - 1);
      if (body.length !== PAGES_HEADER_BYTES) throw new DecodeError(`${url}: ${body.length} bytes for the header's ${PAGES_HEADER_BYTES}`);
      paged = new Pages(PagesHeader.parse(body));
      if (total !== null && total !== paged.header.bodyLength()) {
        throw new DecodeError(`${url}: the body is ${total} bytes where its header says ${paged.header.bodyLength()}`);
      }
    } else if (response.status === 200) {
      await checkReprDigest(url, response.headers, body, this.subtle ?? globalThis.crypto?.subtle);
      const whole = Pages.fromBytes(body);
      paged = new Pages(whole.header);
      paged.received = whole.pages;
    } else {
      throw new ProtocolError(`${url}: unexpected status ${response.status}`);
    }
    const { header } = paged;
    const asked = Math.floor(hourOfPath(path).getTime() / HOUR_MS);
    if (header.hour !== asked) {
      const message = `hour ${hourName(asked * HOUR_MS)}: its paged body's header names hour ${hourName(header.hour * HOUR_MS)}: another hour's pages`;
      throw this.pubkey ? new VerificationError(message) : new ProtocolError(message);
    }
    if (fpp !== undefined && header.fpp > fpp) {
      throw new ProtocolError(`${url}: pages at fpp ${header.fpp}, coarser than the ${fpp} asked for`);
    }
    if (this.pubkey) await (await this.readKeys()).checkPagesHeader(hourOfPath(path), header);
    /** The hour (RFC 3339). */
    paged.hour = hourName(asked * HOUR_MS);
    return paged;
  }

  /** Page `p`'s slot of the paged body at `url` whose header `paged` holds: a `Page` (a
   * 206 of its bytes), or the whole body as `Pages` (a 200, whose layout must be the
   * header's). No `If-Range`: a single `Range` is all a browser sends to another origin
   * without asking first (CORS), and the pages' bytes are the same in every copy of the
   * hour at the grade (only an unsigned copy's signatures and chain header differ from a
   * signed one's, which a key refuses). */
  async pageSlot(url, paged, p) {
    const { header } = paged;
    const { start, end } = header.slotRange(p);
    const response = await this.request(url, { headers: { accept: PAGES_TYPE, range: `bytes=${start}-${end - 1}` } });
    const body = await this.body(response);
    if (response.status === 206) {
      const total = contentRange(url, response.headers, start, end - 1);
      if (total !== null && total !== header.bodyLength()) {
        throw new DecodeError(`${url}: the body is ${total} bytes where its header says ${header.bodyLength()}`);
      }
      return Page.parse(header, p, body);
    }
    if (response.status !== 200) throw new ProtocolError(`${url}: unexpected status ${response.status} for page ${p}`);
    await checkReprDigest(url, response.headers, body, this.subtle ?? globalThis.crypto?.subtle);
    const whole = Pages.fromBytes(body);
    // The grade, hour, n, pages and slot size (not the signing fields) of the header read.
    if (!whole.header.bytes.every((b, i) => (i >= 16 && i < 56) || b === header.bytes[i])) {
      throw new ProtocolError(`${url}: the whole body sent for page ${p} is laid out otherwise than its header read first said`);
    }
    return whole;
  }

  /**
   * The closed hours from `since` as one version 2 ribbon (`/since/YYYY/MM/DD/HH.ribbon2`,
   * section 12, "Catching up"): the distinct IDs of every closed hour from `since` on, at
   * the server's target fpp or at `fpp` (as `ribbon2`'s: the cheapest grade at most it).
   * The open hour is not in it: read it on its own (`hour`). Resolves to `{ribbon, from,
   * to}`: the decoded `Ribbon2`, the first hour it covers and the last (RFC 3339: its
   * `Bloom-From` and `Bloom-To`, or `Bloom-Hour` when it covers one hour; a response naming
   * neither is a ProtocolError). Checked against `Repr-Digest` when sent. A union, so never
   * signed nor verified, and not kept: what it holds changes once an hour. A `StatusError`
   * 406 for a `since` at the open hour (no closed hour) and from a server before since-
   * ranges in version 2, 404 from one without version 2.
   */
  async sinceRibbon2(since, { fpp } = {}) {
    const url = `${sincePath(since)}.ribbon2${fpp === undefined ? "" : `?fpp=${fppParam(fpp)}`}`;
    const response = await this.request(url, { headers: { accept: "application/vnd.bloomcast.ribbon; v=2" } });
    const named = (header) => hourHeader(url, response.headers, header);
    const hour = named("bloom-hour");
    const to = named("bloom-to") ?? hour;
    if (to === null) throw new ProtocolError(`${url}: the response names no hour it covers (no Bloom-To or Bloom-Hour header)`);
    const from = named("bloom-from") ?? hour ?? hourName(Math.floor(toDate(since).getTime() / HOUR_MS) * HOUR_MS);
    if (Date.parse(to) < Date.parse(from)) throw new ProtocolError(`${url}: it covers ${from} .. ${to}, which ends before it starts`);
    const bytes = await this.body(response);
    await checkReprDigest(url, response.headers, bytes, this.subtle ?? globalThis.crypto?.subtle);
    const ribbon = Ribbon2.fromBytes(bytes);
    return { ribbon, from, to };
  }

  /**
   * A sealed hour's exact body (section 14, `/YYYY/MM/DD/HH.exact`), decoded: it answers
   * `changed(id)` exactly for every ID of the publisher's universe. Resolves to null when
   * the server has no exact body for the hour (404: no universe, an hour before the
   * index's `exact_since`, or a future hour); a `StatusError` 406 for the open hour (its
   * exact body is built when it is sealed), 410 past retention. The body is checked
   * against `Repr-Digest`, `Bloom-Count` and `Bloom-Universe` (DecodeError), and, with a
   * `pubkey`, its signature against the hour's chain header (VerificationError naming the
   * hour, `unsigned` when it has none). Kept once fetched: a sealed hour's body never
   * changes.
   */
  async exact(hour) {
    const path = hourPath(hour);
    const url = `${path}.exact`;
    const held = this.cache.get(url);
    if (held) {
      this.stats.cacheHits++;
      return held;
    }
    let response;
    try {
      response = await this.request(url, { headers: { accept: "application/vnd.bloomcast.exact" } });
    } catch (e) {
      if (e instanceof StatusError && e.status === 404) return null;
      throw e;
    }
    const bytes = await this.body(response);
    const exact = await checkedExact(url, response.headers, bytes, this.subtle ?? globalThis.crypto?.subtle);
    /** The hour the body answers for (RFC 3339). */
    exact.hour = hourName(hourOfPath(path));
    if (this.pubkey) await this.verifyForm("exact", path, url, bytes, response.headers);
    this.cache.set(url, exact);
    return exact;
  }

  /**
   * The sealed hours from `since` through the hour before the server's open one as one
   * exact body (section 14, "Ranges": `/since/YYYY/MM/DD/HH.exact`), decoded: an ID of the
   * universe as it stood when the last of them was sealed is `changed` exactly when it
   * changed in any of them. The open hour is not in it: read it on its own (`hour`).
   * Resolves to `{exact, from, to}`: the body, the first hour it covers and the last (RFC
   * 3339: its `Bloom-From` and `Bloom-To`, or `Bloom-Hour` for both); a response naming
   * neither, or a range not from `since`, is a ProtocolError. Checked as an hour's against
   * `Repr-Digest`, `Bloom-Count` and `Bloom-Universe` (DecodeError). A union, so never
   * signed (a verifying client reads hour by hour) nor kept (it grows hourly). A
   * `StatusError` 404 from a server without a universe, for a `since` before the index's
   * `exact_since`, or from one that serves no exact ranges; 406 for a `since` at the open
   * hour.
   */
  async sinceExact(since) {
    const url = `${sincePath(since)}.exact`;
    const response = await this.request(url, { headers: { accept: "application/vnd.bloomcast.exact" } });
    const named = (header) => hourHeader(url, response.headers, header);
    let [from, to] = [named("bloom-from"), named("bloom-to")];
    if (from === null || to === null) {
      const hour = named("bloom-hour");
      if (hour === null) throw new ProtocolError(`${url}: the response names no hours it covers (no Bloom-From and Bloom-To headers)`);
      [from, to] = [hour, hour];
    }
    const asked = hourName(Math.floor(toDate(since).getTime() / HOUR_MS) * HOUR_MS);
    if (from !== asked || Date.parse(to) < Date.parse(asked)) {
      throw new ProtocolError(`${url}: it covers ${from} .. ${to}, not a range from ${asked}`);
    }
    const bytes = await this.body(response);
    const exact = await checkedExact(url, response.headers, bytes, this.subtle ?? globalThis.crypto?.subtle);
    return { exact, from, to };
  }

  /**
   * Verifies a derived form of the sealed hour at `path` (section 11, "Derived forms"):
   * `form` "exact", "ribbon" or "ribbon2", fetched from `url` as the binary body `bytes`,
   * its signature from the response's `Bloom-Signature` or else (a static mirror, section
   * 13) the sidecar `<file>.sig`, over the hour's chain header (`chainHeader`).
   */
  async verifyForm(form, path, url, bytes, headers) {
    const verifier = await this.readKeys();
    const hour = hourOfPath(path);
    const signature = await this.formSignature(url, headers);
    if (signature === null) {
      throw new VerificationError(
        `hour ${hourName(hour)}: ${url} came without a signature (no Bloom-Signature, no ${url.split("?")[0]}.sig): it cannot be verified`,
        { unsigned: true },
      );
    }
    await verifier.checkForm(form, hour, bytes, await this.chainHeader(path), signature);
  }

  /** The `Bloom-Signature` of the derived form fetched from `url`: its response's, else
   * the one line of the sidecar beside its file (`<path>.sig`, section 13); null when
   * there is neither. */
  async formSignature(url, headers) {
    const sent = headers.get("bloom-signature");
    if (sent !== null && sent.trim()) return sent;
    let text;
    try {
      text = await (await this.request(`${url.split("?")[0]}.sig`, { headers: { accept: "text/plain" } })).text();
    } catch (e) {
      if (e instanceof StatusError && e.status === 404) return null;
      throw e;
    }
    return text.split("\n")[0].trim() || null;
  }

  /** The chain header of the sealed hour at `path`, verified: of its v1 filter if this
   * client verified it, else of its chain entry (`/chain/...?limit=1`), verified. */
  async chainHeader(path) {
    const verifier = await this.readKeys();
    const hour = hourOfPath(path);
    const known = verifier.headerOf(hour);
    if (known) return known;
    const entry = await this.chainEntry(path);
    if (!entry.hour) {
      throw new VerificationError(`hour ${hourName(hour)}: the chain has no entry for it, so its derived forms cannot be verified`, { unsigned: true });
    }
    await verifier.checkChain([entry]);
    return verifier.headerOf(hour);
  }

  /**
   * The publisher's checkpoint (section 11, "Trust"), verified under the trusted key
   * listed for its hour: `{hour, made, header, keyId}` (`made` Unix seconds, `header` hex),
   * or null when the source has none (404: nothing sealed yet, a service that signs
   * nothing, a mirror without `checkpoint.json`). Read from the index's `urls.checkpoint`
   * (a static mirror's `/checkpoint.json`). Needs `pubkey`; rejects with
   * VerificationError when it does not verify.
   */
  async checkpoint(index = null) {
    const verifier = await this.readKeys();
    index ??= await this.index();
    const listed = index?.urls?.checkpoint;
    const url = typeof listed === "string" && listed.startsWith("/") ? listed : index?.static ? "/checkpoint.json" : "/checkpoint";
    let doc;
    try {
      doc = await (await this.request(url, { headers: { accept: "application/json" }, cache: "no-store" })).json();
    } catch (e) {
      if (e instanceof StatusError && e.status === 404) return null;
      if (e instanceof SyntaxError) throw new VerificationError(`checkpoint: ${url} is not a JSON document`);
      throw e;
    }
    const checked = await verifier.checkCheckpoint(doc);
    return { hour: checked.hour, made: checked.made, header: hexOf(checked.header), keyId: checked.keyId };
  }

  /**
   * The StaleError for a source whose index is `index` and whose verified checkpoint is
   * `checkpoint` (or null), or null when it is current: its newest hour (the index's
   * `current`; a static mirror's newest hour, followed by none) starts more than
   * `PUBLICATION_LAG_HOURS` before this client's current hour; the checkpoint names a
   * sealed hour after the newest it offers (withholding); or the checkpoint was made
   * longer ago than the bound.
   */
  staleness(index, checkpoint) {
    const now = this.clock();
    const mine = Math.floor(now / HOUR_MS) * HOUR_MS;
    const newest = toDate(index.current.hour).getTime();
    const newestName = hourName(newest);
    // The hour after a mirror's newest is the first it lacks: as a server's open hour.
    const offered = newest + (index.static ? HOUR_MS : 0);
    const what = index.static ? `the newest hour this mirror holds, ${newestName},` : `this source's current hour, ${newestName},`;
    const bound = PUBLICATION_LAG_HOURS * HOUR_MS;
    const how = "IDs changed after it were not seen (acceptStale takes the answer as it is)";
    if (checkpoint && toDate(checkpoint.hour).getTime() > offered) {
      return new StaleError(
        `the source withholds hours: the publisher's checkpoint, made ${new Date(checkpoint.made * 1000).toISOString()}, names ${checkpoint.hour} as sealed, but ${what} is older: ${how}`,
        { newest: newestName, checkpoint: checkpoint.hour },
      );
    }
    if (mine - offered > bound) {
      return new StaleError(
        `the source is stale: ${what} ${index.static ? "ends" : "starts"} more than ${PUBLICATION_LAG_HOURS} hours before this client's current hour, ${hourName(mine)}: ${how}`,
        { newest: newestName, checkpoint: checkpoint?.hour ?? null },
      );
    }
    if (checkpoint && now - checkpoint.made * 1000 > bound) {
      return new StaleError(
        `the source is stale: the publisher's checkpoint it serves (of ${checkpoint.hour}) was made at ${new Date(checkpoint.made * 1000).toISOString()}, more than ${PUBLICATION_LAG_HOURS} hours before this client's clock: ${how}`,
        { newest: newestName, checkpoint: checkpoint.hour },
      );
    }
    return null;
  }

  /** A closed hour in its cheapest form (`cheapestForm`, with its `options`; `registered`
   * the client's unless given); v1 where no ribbon is served. With `pages` (and the
   * followed IDs' `keys`, which reading by the page needs), possibly by the page. */
  async closedHour(hour, count, targetFpp, followed, fetchCost, options = {}) {
    const choice = cheapestForm(count ?? 3000, targetFpp ?? 0.01, followed, fetchCost, { registered: this.registered, ...options, pages: Boolean(options.pages && options.keys) });
    return this.readForm(hour, choice, null, options.keys ?? null);
  }

  /** A closed hour in the form `choice` (from `cheapestForm`): pages (for `keys`, the
   * followed IDs' keys: `readPages`) or an exact body that are not served fall back to
   * `choice.otherwise`, a ribbon (version 1 or 2) that is not to v1. With a `pubkey`, so
   * does a derived form that comes without a signature (the source does not sign them:
   * `formsUnsigned` is then set; pages unsigned fall back alone); the v1 filter is
   * verified as `filter` does (`unverified`: as `filter`'s). `exactRefused` is called
   * when the server would not build the hour's exact body (406: more memory than its
   * build budget, or not sealed yet). */
  async readForm(hour, choice, unverified = null, keys = null, exactRefused = () => {}) {
    if (choice.form === "pages") {
      if (!keys) throw new TypeError("reading an hour by the page needs the keys of the IDs it answers for");
      if (!this.pagesUnserved) {
        try {
          return await this.readPages(hour, keys, { fpp: choice.atTarget ? undefined : choice.fpp });
        } catch (e) {
          // No paged form here (404: none at all), not for this hour (406, 416), or one
          // unsigned where a key is given: the hour is read whole.
          if (e instanceof StatusError && e.status === 404) this.pagesUnserved = true;
          else if (!(e instanceof StatusError && (e.status === 406 || e.status === 416)) && !(e instanceof VerificationError && e.unsigned)) throw e;
        }
      }
      choice = choice.otherwise;
    }
    // A derived form without a signature is refused; its hour is read in a form that is.
    const unsigned = (e) => e instanceof VerificationError && e.unsigned && (this.formsUnsigned = true);
    if (choice.form === "exact" || choice.form === "refined") {
      let exact = null;
      try {
        exact = await this.exact(hour);
      } catch (e) {
        if (e instanceof StatusError && e.status === 406) exactRefused();
        else if (!unsigned(e)) throw e;
      }
      if (exact && choice.form === "exact") return exact;
      if (exact) return this.refined(hour, exact, choice.under, unverified);
      choice = choice.otherwise;
    }
    if (choice.form === "ribbon" || choice.form === "ribbon2") {
      try {
        const fpp = choice.atTarget ? undefined : choice.fpp; // a mirror's file has one precision
        return await (choice.form === "ribbon2" ? this.ribbon2(hour, { fpp }) : this.ribbon(hour, { fpp }));
      } catch (e) {
        if (!(e instanceof StatusError && (e.status === 404 || e.status === 406)) && !unsigned(e)) throw e;
      }
    }
    return (await this.filter(hourPath(hour), { unverified })).filter;
  }

  /** `exact` refining `under` (a choice from `cheapestWithin`), or an approximate filter of
   * the hour held already that is no less precise. */
  async refined(hour, exact, under, unverified = null) {
    const held = this.heldFilter(hourName(toDate(hour)));
    return new Refined(held && fppOf(held) <= under.fpp ? held : await this.readForm(hour, under, unverified), exact);
  }

  /** The most precise complete approximate filter (v1 or ribbon) of an hour (RFC 3339) held, or null. */
  heldFilter(name) {
    const path = hourPath(name);
    const held = [];
    const v1 = this.cache.get(path + SUFFIX[this.repr]);
    if (v1?.meta.complete) held.push(v1.filter);
    for (const [url, filter] of this.cache) {
      if (url.startsWith(`${path}.`) && (filter instanceof Ribbon || filter instanceof Ribbon2)) held.push(filter);
    }
    return held.reduce((best, f) => (!best || fppOf(f) < fppOf(best) ? f : best), null);
  }

  /** The complete form of an hour (RFC 3339) this client holds, as it may answer from it, or
   * null (a closed hour's never changes): its exact body alone when the IDs are declared
   * `registered`; else the exact body refining the most precise filter held when that one's
   * fpp is at most `targetFpp`; else that filter. */
  heldHour(name, targetFpp = 0.01) {
    const filter = this.heldFilter(name);
    const exact = this.cache.get(`${hourPath(name)}.exact`) ?? null;
    if (exact && this.registered) return exact;
    if (exact && filter && fppOf(filter) <= targetFpp) return new Refined(filter, exact);
    return filter;
  }

  /** The filter of one UTC hour (a Date or RFC 3339 string inside it). */
  hour(hour) {
    return this.filter(hourPath(hour));
  }

  /** The union of one UTC day's hours. */
  day(day) {
    return this.filter(dayPath(day));
  }

  /** The union from `hour` through the server's current hour. */
  since(hour) {
    return this.filter(sincePath(hour));
  }

  /** Publishes IDs into the current hour (needs a token); resolves once they are durable. */
  async ingest(ids) {
    if (!this.token) throw new BloomcastError("argument", "ingest needs a token");
    const response = await this.request("/updates", {
      method: "POST",
      headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
      body: JSON.stringify({ ids }),
    });
    return response.json();
  }

  /**
   * Which of `ids` may have changed from `since` through the server's current hour: a
   * `Changes`, the Array `[{from, to, ids}]` of the ranges with hits (`exact: true` on an
   * hour read as an exact body alone, whose hits are certain; `refined: true` on one read
   * with its exact body refining a filter, whose hits are certain for registered IDs),
   * which says what it covers: `from` and `to`, the first and last hours read;
   * `unverified`, `checkpoint` and `stale` (see `Changes`). Every ID that changed in the
   * hours read is returned (no false negatives); one that did not is returned with about
   * the filters' fpp.
   * `strategy`: "union" (one `/since` filter, the default), "hourly" (each hour's filter;
   * each closed hour as the v1 filter, a ribbon (version 2, `.ribbon2`, when the index's
   * `ribbon_versions` lists 2), by the page (`.pages`, where version 2 is listed: the
   * pages the IDs are on, when they cost less than the whole form, as a few IDs of a huge
   * hour do; `readPages`) or with its exact body, whichever `cheapestForm`
   * picks for `ids.length` IDs at `fetchCost` bytes per wasted fetch: for a sealed hour
   * at or after the index's `exact_since`, its exact body alone when the client was made
   * with `registered: true`, else refining a filter at the target fpp; a complete form of
   * the hour held already, `heldHour`, is used without a request when its wasted fetches
   * cost no more than that form), "compact" (where the index's `ribbon_versions` lists 2
   * and the range has a closed hour after the last one this client holds complete
   * (`heldHour`): those closed hours as one version 2 union, `sinceRibbon2` from the first
   * of them (read first), at the 2^-k that `cheapestPlan` finds cheapest for `ids.length`
   * IDs, one range `{from: its first hour, to: its last}`; the hours before it as "hourly"
   * reads them (held ones without a request), and each hour after it, normally the open
   * one, a range each; else as "union"; when the server answers the version 2 union 404
   * or 406, as "union" if it was to start at `since`, else as "hourly"), "pages" (as
   * "hourly", each closed hour not held read by the page whatever that costs, at the grade
   * `cheapestPages` finds for the IDs; read whole, in its cheapest form, where the source
   * serves no pages: 404, and from then on; or, with a `pubkey`, unsigned ones) or "auto"
   * (whichever of the four plans `cheapestPlan`
   * expects to cost the fewest bytes, pages weighed for hour by hour; hour by hour when the range has an hour listed
   * `corrupt`; for a client made with `registered: true`, its "exact" plan reads the
   * closed hours after the last one held complete as one exact body, `sinceExact`, read
   * first, one range `{from, to, ids, exact: true}`, and the others as "compact" does;
   * hour by hour when the server answers it 404 or 406). A static mirror (its index says `"static": true`, section 13) serves no
   * unions: it is read hour by hour whatever `strategy`. `form: "exact"` reads every sealed hour with its exact body
   * (alone or refining, as above; hour by hour whatever `strategy`), and rejects with a
   * ProtocolError when the server has none (`exact_since` null, or after `since`). The
   * open hour is always v1.
   *
   * With a `pubkey`, hour by hour (unions are not signed), everything under the keys
   * trusted from it (section 11, "Trust"): each sealed hour's v1 filter, ribbon or exact
   * body by its signature (a derived form without one is not used: the hour is read as
   * v1), each page read by its own (pages unsigned are not used: the hour is read whole), the open hour by its `Bloom-Open-Signature` and freshness, the checkpoint (read
   * first). What does not verify rejects with a VerificationError naming the hour or the
   * key; an hour with no signature at all is answered and listed in `unverified`.
   *
   * Rejects with a StaleError (`answer` holding the answer) when the source is stale or
   * withholds hours (`staleness`: its newest hour more than `PUBLICATION_LAG_HOURS`
   * before this client's `clock`, or, with a `pubkey`, a checkpoint naming a sealed hour
   * it does not offer or made longer ago than that), unless `acceptStale: true`: then the
   * answer's `stale` holds it. Rejects with CorruptHoursError naming the hours of the
   * range the server could not verify (listed `corrupt` in its index, or answering 500
   * `corrupt`) that this client does not hold complete: never an answer that reads them
   * as "no change".
   */
  async changedSince(ids, since, { strategy = "union", fetchCost = DEFAULT_FETCH_COST, form = "auto", acceptStale = false } = {}) {
    if (!STRATEGIES.includes(strategy)) throw new TypeError(`strategy is union, hourly, compact, pages or auto, not ${strategy}`);
    if (form !== "auto" && form !== "exact") throw new TypeError(`form is auto or exact, not ${form}`);
    const index = await this.index();
    const now = toDate(index.current.hour);
    const from = toDate(since);
    from.setUTCMinutes(0, 0, 0);
    if (from > now) {
      throw new ProtocolError(`since ${from.toISOString()} is after the server's current hour ${index.current.hour}`);
    }
    const exactSince = index.exact_since ? toDate(index.exact_since).getTime() : null;
    const forced = form === "exact";
    if (forced && exactSince === null) {
      throw new ProtocolError('form "exact": this server publishes no exact hours (its index\'s exact_since is null: no universe is registered)');
    }
    if (forced && from.getTime() < exactSince && from < now) {
      throw new ProtocolError(`form "exact": since ${hourName(from)} is before the first exact hour, ${index.exact_since}`);
    }
    // An hour the server could not verify is unknown: answer for none of the range,
    // unless its complete filter is held from before (it never changes).
    const damaged = corruptHours(index, from, now);
    const targetFpp = index.target_fpp ?? 0.01;
    const unknown = damaged.filter((name) => !this.heldHour(name, targetFpp));
    if (unknown.length) throw new CorruptHoursError(unknown);
    const keys = await Promise.all(ids.map(keyOf));
    const pick = (filter) => ids.filter((_, i) => filter.containsKey(keys[i]));
    // Unions are not signed: a verifying client reads hour by hour, after the checkpoint
    // (read first, it names no sealed hour the index read before could lack but by a race
    // of one hour, which the comparison in `staleness` allows).
    const verifying = Boolean(this.pubkey);
    const checkpoint = verifying ? await this.checkpoint(index) : null;
    const stale = this.staleness(index, checkpoint);
    const ribbon2 = Array.isArray(index.ribbon_versions) && index.ribbon_versions.includes(2);
    const listed = new Map((index.hours ?? []).map((h) => [toDate(h.hour).getTime(), h]));
    // A static mirror (section 13) serves no unions, and never a `?fpp=` other than its own.
    // A union over a damaged hour answers 500: "auto" reads the hours held instead.
    let plan = "hourly";
    let k = null;
    let start = 0;
    if (!verifying && !forced && !index.static && strategy !== "hourly" && strategy !== "pages" && !(strategy === "auto" && damaged.length)) {
      plan = "union";
      if (strategy !== "union") {
        const chosen = cheapestPlan(this.planHours(from, now, listed, exactSince, targetFpp), {
          targetFpp,
          capacity: index.capacity ?? 3000,
          followed: ids.length,
          fetchCost,
          ribbon2,
          registered: this.registered,
          universe: universeOfIndex(index),
          pages: ribbon2 && !this.pagesUnserved,
          keys,
        });
        // "compact" reads the closed hours after the last one held as one version 2 union
        // where there is such an hour and the server serves version 2, else the v1 union.
        plan = strategy === "compact" ? (chosen.k === null ? "union" : "compact") : chosen.plan;
        if (plan === "compact") [k, start] = [chosen.k, chosen.from];
        if (plan === "exact") start = chosen.from;
      }
    }
    // A union over a damaged hour (held here) answers 500 corrupt.
    const corrupt = (e) => (e instanceof StatusError && e.code === "corrupt" && damaged.length ? new CorruptHoursError(damaged) : e);
    // The version 2 union of the closed hours from its first on, read first; the hours
    // before it (held ones answered from what is held) and those after the last hour it
    // covers (normally the open hour) are read on their own below.
    let union = null;
    if (plan === "compact") {
      const first = from.getTime() + start * HOUR_MS;
      try {
        const read = await this.sinceRibbon2(new Date(first), { fpp: 2 ** -k });
        union = { from: first, to: Math.max(first, Date.parse(read.to)), ids: pick(read.ribbon) };
      } catch (e) {
        if (!(e instanceof StatusError && (e.status === 404 || e.status === 406))) throw corrupt(e);
        // A server without version 2 since-ranges (406), or without version 2 (404): the
        // v1 union from `since` answers the same question; after hours held, the hours
        // not held are read on their own.
        plan = start === 0 ? "union" : "hourly";
      }
    }
    if (plan === "exact") {
      // For registered IDs, the closed hours from its first on as one exact body, read the
      // same way; from a server without exact ranges (404, 406), hour by hour.
      const first = from.getTime() + start * HOUR_MS;
      try {
        const read = await this.sinceExact(new Date(first));
        union = { from: first, to: Math.max(first, Date.parse(read.to)), ids: pick(read.exact), exact: true };
      } catch (e) {
        if (!(e instanceof StatusError && (e.status === 404 || e.status === 406))) throw corrupt(e);
        plan = "hourly";
      }
    }
    if (plan === "union") {
      let fetched;
      try {
        fetched = await this.since(from);
      } catch (e) {
        throw corrupt(e);
      }
      const hits = pick(fetched.filter);
      const range = fetched.range();
      return this.answer(hits.length ? [{ ...range, ids: hits }] : [], { ...range, unverified: null, checkpoint }, stale, acceptStale);
    }
    const out = [];
    const unverified = verifying ? new Set() : null;
    let to = now.getTime();
    // Derived forms are signed; from a source found not to sign them, v1 filters.
    const forms = () => !(verifying && this.formsUnsigned);
    // The fewest IDs of an hour whose exact body the server would not build (406): later
    // hours hold at least the universe it had, so one as large is not asked for it.
    let exactRefusedAt = Infinity;
    for (let t = from.getTime(); t <= now.getTime(); t += 3600e3) {
      if (union && t === union.from) {
        // One range for the hours the union covers (`exact: true` read as an exact body,
        // whose hits are certain); the loop goes on after them.
        if (union.ids.length) out.push({ from: hourName(t), to: hourName(union.to), ids: union.ids, ...(union.exact ? { exact: true } : {}) });
        t = union.to;
        continue;
      }
      const hour = new Date(t);
      const name = hourName(t);
      let filter;
      try {
        if (damaged.includes(name)) {
          // Held complete (checked above): the server cannot serve it.
          filter = this.heldHour(name, targetFpp);
        } else if (t === now.getTime() && !index.static) {
          // The open hour has no compact or exact form: always v1 (revalidated by ETag). A
          // static mirror's current hour is its newest sealed one.
          try {
            filter = (await this.filter(hourPath(hour), { unverified })).filter;
          } catch (e) {
            // A stale source's open hour is as old as the rest of it: not read, and the
            // answer, stale already, ends before it.
            if (!(stale && e instanceof VerificationError && e.outdated)) throw e;
            to = t - HOUR_MS;
            break;
          }
        } else if (forced) {
          const exact = await this.exact(hour);
          if (!exact) throw new ProtocolError(`form "exact": the server has no exact body for hour ${name} (404)`);
          const count = listed.get(t)?.count ?? index.capacity ?? 3000;
          const under = cheapestWithin(count, targetFpp, { ribbons: forms(), ribbon2 });
          filter = this.registered ? exact : await this.refined(hour, exact, under, unverified);
        } else {
          const entry = listed.get(t);
          const count = entry?.count ?? index.capacity ?? 3000;
          const exactHour = forms() && exactSince !== null && t >= exactSince && count < exactRefusedAt;
          const exact = exactHour ? (Number.isInteger(entry?.exact_bytes) ? entry.exact_bytes : true) : undefined;
          const mirror = Boolean(index.static);
          // Pages are version 2 bodies, signed as derived forms: weighed where those are read.
          const paging = ribbon2 && forms() && !this.pagesUnserved;
          let choice = cheapestForm(count, targetFpp, ids.length, fetchCost, {
            exact,
            ribbons: forms(),
            ribbon2,
            registered: this.registered,
            mirror,
            pages: paging,
            keys,
          });
          if (strategy === "pages" && paging && choice.form !== "pages") {
            // Read by the page whatever it costs, at the grade that suits the IDs; whole
            // (the cheapest whole form) where the source serves no pages.
            choice = { ...cheapestPages(count, targetFpp, ids.length, fetchCost, { mirror, keys }), otherwise: choice };
          }
          // A complete form held already, when its wasted fetches cost no more than
          // fetching the cheapest form (as `cheapestPlan` counts it): no request.
          const held = this.heldHour(name, targetFpp);
          if (held && ids.length * fppOf(held) * fetchCost <= choice.expected + RESPONSE_OVERHEAD) {
            this.stats.cacheHits++;
            filter = held;
          } else {
            filter = await this.readForm(hour, choice, unverified, keys, () => {
              exactRefusedAt = Math.min(exactRefusedAt, count);
            });
          }
        }
      } catch (e) {
        throw ofHour(e, name);
      }
      const hits = pick(filter);
      const read = filter instanceof Exact ? { exact: true } : filter instanceof Refined ? { refined: true } : {};
      if (hits.length) out.push({ from: name, to: name, ids: hits, ...read });
    }
    if (checkpoint) {
      // The checkpoint's hour, read here, must have the header it names.
      const known = (await this.readKeys()).headerOf(checkpoint.hour);
      if (known && hexOf(known) !== checkpoint.header) {
        throw new VerificationError(`hour ${checkpoint.hour} (checkpoint): the checkpoint's header is not the chain's for that hour`);
      }
    }
    if (union) to = Math.max(to, union.to);
    const anyRead = to >= from.getTime();
    const coverage = { from: anyRead ? hourName(from) : null, to: anyRead ? hourName(to) : null, unverified: unverified && [...unverified].sort(), checkpoint };
    return this.answer(out, coverage, stale, acceptStale);
  }

  /** `cheapestPlan`'s hours from `from` through `now` (Dates), from the index (its
   * `listed` hours by epoch milliseconds, `exactSince` in epoch milliseconds or null) and
   * what this client holds: each closed hour's complete form held (`heldHour`, what hour
   * by hour answers from without a request when its wasted fetches cost no more than
   * fetching), the count of the open hour's copy held. */
  planHours(from, now, listed, exactSince, targetFpp) {
    const hours = [];
    for (let t = from.getTime(); t <= now.getTime(); t += HOUR_MS) {
      const entry = listed.get(t);
      const name = hourName(t);
      const count = Number.isInteger(entry?.count) ? entry.count : null;
      if (t === now.getTime()) {
        const held = this.cache.get(hourPath(name) + SUFFIX[this.repr]);
        hours.push({ count, open: true, cachedCount: held?.meta?.count ?? null });
        continue;
      }
      const held = this.heldHour(name, targetFpp);
      const exact = exactSince !== null && t >= exactSince ? (Number.isInteger(entry?.exact_bytes) ? entry.exact_bytes : true) : undefined;
      hours.push({ count, open: false, heldFpp: held ? fppOf(held) : null, exact });
    }
    return hours;
  }

  /**
   * Follows the open hour, and the next one at its boundary, as the CLIs' `watch` does:
   * calls `onEvent` with `{event: "version", hour, version, count, bytes, delta}` for each
   * new version read, and `{event: "changed", hour, version, id, bytes}` the first time a
   * version of the hour may contain one of `ids`. Each hour is fetched as a poll would
   * (`.bin`, revalidated with its ETag; verified with a `pubkey`); a sealed hour's final
   * bytes are read before moving on. When to fetch is told by the server's push stream
   * (`GET /events`: `EventSource` where there is one, else a `fetch` reader), else by a
   * poll every `every` seconds. Resolves, once `signal` aborts, to the hour followed then
   * (RFC 3339, to resume with `hour`); rejects on a VerificationError (as the CLIs end).
   */
  watch(ids, options = {}) {
    return follow(this, ids, options);
  }

  /** `changes` as a `Changes` with `coverage` (`from`, `to`, `unverified`, `checkpoint`)
   * and `stale`; rejects with `stale` (its `answer` this one) unless `acceptStale`. */
  answer(changes, coverage, stale, acceptStale) {
    const out = new Changes();
    out.push(...changes);
    Object.assign(out, coverage, { stale: acceptStale ? stale : null });
    if (stale && !acceptStale) {
      stale.answer = out;
      throw stale;
    }
    return out;
  }
}

// --- Following the open hour: `watch`, told by `GET /events` -------------------------

/** The version an ETag names, whatever the encoding: W/, quotes, -gz, -dcz removed (as
 * the CLIs' `watch` say it; a `version` event's `etag` is the same version). */
export function versionOf(etag) {
  let t = String(etag ?? "");
  if (t.startsWith("W/")) t = t.slice(2);
  t = t.replace(/^"+|"+$/g, "");
  if (t.endsWith("-gz")) t = t.slice(0, -3);
  if (t.endsWith("-dcz")) t = t.slice(0, -4);
  return t;
}

/**
 * A parser of `text/event-stream` (WHATWG HTML, "Server-sent events", the interpretation
 * of the stream), for where there is no `EventSource` (Node): `push(text)` the decoded
 * text as it arrives, in chunks cut anywhere; `onEvent({type, data, lastEventId})` is
 * called for each event dispatched. Lines end with CRLF, LF or CR; `:` lines are
 * comments; `data` lines join with LF; an `id` with NUL is ignored; `retry` (digits only)
 * sets `retry` and calls `onRetry(ms)`; a blank line dispatches (nothing when no data
 * came). `end()` at the end of a stream discards what was not dispatched, keeping
 * `lastEventId` for the next connection's `Last-Event-ID`.
 */
export class EventStreamParser {
  constructor(onEvent, { onRetry = () => {} } = {}) {
    this.onEvent = onEvent;
    this.onRetry = onRetry;
    /** The last event ID string: what a reconnection sends as `Last-Event-ID`. */
    this.lastEventId = "";
    /** The reconnection time the stream set (milliseconds), or null. */
    this.retry = null;
    this.end();
  }

  /** Feeds decoded text (a leading U+FEFF of a stream is skipped). */
  push(text) {
    if (!text) return;
    if (!this.begun) {
      this.begun = true;
      if (text[0] === "\uFEFF") text = text.slice(1);
    }
    let buffer = this.buffer + text;
    let at = 0;
    if (this.cr && buffer[0] === "\n") at = 1; // the LF of a CRLF cut between two chunks
    this.cr = false;
    for (;;) {
      let end = at;
      while (end < buffer.length && buffer[end] !== "\n" && buffer[end] !== "\r") end++;
      if (end === buffer.length) break;
      const line = buffer.slice(at, end);
      if (buffer[end] === "\r") {
        if (end + 1 === buffer.length) {
          this.cr = true;
          at = end + 1;
        } else {
          at = buffer[end + 1] === "\n" ? end + 2 : end + 1;
        }
      } else {
        at = end + 1;
      }
      this.line(line);
    }
    this.buffer = buffer.slice(at);
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line[0] === ":") return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value[0] === " ") value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data += `${value}\n`;
    else if (field === "id") {
      if (!value.includes("\0")) this.idBuffer = value;
    } else if (field === "retry" && /^[0-9]+$/.test(value)) {
      this.retry = Number(value);
      this.onRetry(this.retry);
    }
    return undefined;
  }

  dispatch() {
    this.lastEventId = this.idBuffer;
    const { type, data } = this;
    this.type = "";
    this.data = "";
    if (data === "") return;
    this.onEvent({ type: type || "message", data: data.slice(0, -1), lastEventId: this.lastEventId });
  }

  /** The stream ended: what was not dispatched is discarded. */
  end() {
    this.buffer = "";
    this.cr = false;
    this.begun = false;
    this.type = "";
    this.data = "";
    this.idBuffer = this.lastEventId;
  }
}

/**
 * Follows one hour at a time for `ids`, starting at `hour` (a past hour is read once,
 * complete, then the next, up to the open hour: resuming a watch where it stopped), one
 * `poll()` at a time, as the CLIs' watchers do. Reads the hour's `.bin` form (its ETag is
 * the version a `version` event names), or its JSON document where a `.bin` comes without its
 * `Bloom-*` headers (a static mirror).
 */
export class Watcher {
  constructor(client, ids, hour) {
    this.client = client;
    this.ids = [...ids];
    this.hour = hourOfPath(hourPath(hour));
    this.version = null;
    this.reported = new Set();
    this.repr = "bin";
  }

  /** A watcher at the server's current hour. */
  static async start(client, ids) {
    return new Watcher(client, ids, (await client.index()).current.hour);
  }

  /** The hour followed now (RFC 3339). */
  get hourName() {
    return hourName(this.hour);
  }

  /** Polls the hour once and resolves to its events; moves to the next hour once this one
   * is complete (its final bytes read first). An hour the server could not verify rejects
   * with a CorruptHoursError naming it (the watcher stays on it). */
  async poll({ fresh = false } = {}) {
    const name = hourName(this.hour);
    const before = this.client.stats.bodyBytes;
    const unverified = this.client.pubkey ? new Set() : null;
    let fetched;
    try {
      fetched = await this.client.filter(hourPath(this.hour), { repr: this.repr, unverified, fresh });
    } catch (e) {
      if (this.repr === "bin" && e instanceof DecodeError) {
        this.repr = "json";
        return this.poll({ fresh });
      }
      throw ofHour(e, name);
    }
    const bytes = this.client.stats.bodyBytes - before;
    const etag = fetched.etag ?? "";
    const version = versionOf(etag);
    const events = [];
    if (this.version !== version) {
      // A delta only where the platform's fetch speaks dcz itself (a browser with
      // Compression Dictionary Transport): its ETag says so.
      const delta = etag.replace(/^W\//, "").replace(/^"+|"+$/g, "").endsWith("-dcz");
      const event = { event: "version", hour: name, version, count: fetched.meta.count, bytes, delta };
      if (unverified?.size && !fetched.meta.complete) event.unverified = true;
      events.push(event);
      for (const id of this.ids) {
        if (!this.reported.has(id) && (await fetched.mayContain(id))) {
          this.reported.add(id);
          events.push({ event: "changed", hour: name, version, id, bytes });
        }
      }
      this.version = version;
    }
    if (fetched.meta.complete) {
      this.hour = new Date(this.hour.getTime() + HOUR_MS);
      this.version = null;
      this.reported.clear();
    }
    return events;
  }
}

/** The reconnection time before a stream says its own (`retry:`), milliseconds. */
const STREAM_RETRY_MS = 2000;

/** `Client#watch`. */
async function follow(client, ids, { onEvent, onError, signal, every = 10, hour, stream = true, retryStream = 60, EventSource: EventSourceImpl = globalThis.EventSource } = {}) {
  if (typeof onEvent !== "function") throw new TypeError("watch needs onEvent, a function called with each event");
  if (!(every > 0)) throw new TypeError(`every is a number of seconds above 0, not ${every}`);
  if (!(retryStream > 0)) throw new TypeError(`retryStream is a number of seconds above 0, not ${retryStream}`);
  const report = typeof onError === "function" ? onError : () => {};
  const watcher = hour === undefined || hour === null ? await Watcher.start(client, ids) : new Watcher(client, ids, hour);
  if (signal?.aborted) return watcher.hourName;

  let pending = true; // a poll is due (the first one at once)
  let streaming = false;
  let pushed = false; // the poll due follows an event of the stream
  let wake = null;
  const nudge = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  const hooks = {
    opened() {
      streaming = true;
    },
    dropped() {
      // Poll at once, then every `every` seconds until the stream is back.
      if (!streaming) return;
      streaming = false;
      pending = true;
      nudge();
    },
    message(type, data) {
      if (type !== "version" && type !== "sealed" && type !== "reset") return;
      if (type === "version") {
        let doc = null;
        try {
          doc = JSON.parse(data);
        } catch {
          report(new ProtocolError(`/events: a version event whose data is not JSON: ${data.slice(0, 200)}`));
        }
        // The version this watcher read last: nothing to fetch.
        if (doc && watcher.repr === "bin" && Date.parse(doc.hour) === watcher.hour.getTime() && versionOf(doc.etag) === watcher.version) return;
      }
      pending = true;
      pushed = true;
      nudge();
    },
  };
  const onAbort = () => nudge();
  signal?.addEventListener("abort", onAbort);
  const feed = stream ? openFeed(client, EventSourceImpl, hooks, retryStream * 1000, report) : null;
  let timer = null;
  try {
    while (!signal?.aborted) {
      if (pending) {
        const fresh = pushed;
        pending = false;
        pushed = false;
        await catchUp(watcher, onEvent, report, signal, fresh);
        continue;
      }
      await new Promise((resolve) => {
        wake = resolve;
        if (!streaming) {
          timer = setTimeout(() => {
            pending = true;
            nudge();
          }, every * 1000);
        }
      });
      clearTimeout(timer);
    }
  } finally {
    clearTimeout(timer);
    feed?.close();
    signal?.removeEventListener("abort", onAbort);
  }
  return watcher.hourName;
}

/** Polls until the hour followed is open (a sealed one is read, then the next). */
async function catchUp(watcher, onEvent, report, signal, fresh = false) {
  while (!signal?.aborted) {
    const from = watcher.hour.getTime();
    let events;
    try {
      events = await watcher.poll({ fresh });
    } catch (e) {
      if (e instanceof VerificationError) throw e;
      report(e); // a passing failure (transport, 503, a 500 corrupt, an hour not there yet): tried again at the next poll
      return;
    }
    for (const event of events) await onEvent(event);
    if (watcher.hour.getTime() === from) return;
  }
}

/**
 * The server's push stream (`GET /events`) for `hooks` (`opened()`, `message(type,
 * data)`, `dropped()`): with `EventSourceImpl` (a browser's `EventSource`), which
 * reconnects by itself with `Last-Event-ID`; else read with `fetch` and parsed here. A
 * stream refused (404 from a static mirror or an older server, another status, another
 * type) is tried again after `retryStreamMs`; one that drops, after the stream's
 * `retry`. `close()` ends it.
 */
function openFeed(client, EventSourceImpl, hooks, retryStreamMs, report) {
  const url = `${client.base}/events`;
  let closed = false;
  let timer = null;
  if (typeof EventSourceImpl === "function") {
    let source = null;
    const connect = () => {
      if (closed) return;
      source = new EventSourceImpl(url);
      source.addEventListener("open", () => hooks.opened());
      for (const type of ["version", "sealed", "reset"]) source.addEventListener(type, (e) => hooks.message(type, e.data));
      source.addEventListener("error", () => {
        hooks.dropped();
        // CLOSED: refused (not 200 text/event-stream); CONNECTING: it reconnects itself.
        if (source.readyState === 2 && !closed) {
          source.close();
          timer = setTimeout(connect, retryStreamMs);
        }
      });
    };
    connect();
    return {
      close() {
        closed = true;
        clearTimeout(timer);
        source?.close();
      },
    };
  }
  const controller = new AbortController();
  let retryMs = STREAM_RETRY_MS;
  const parser = new EventStreamParser((e) => hooks.message(e.type, e.data), { onRetry: (ms) => (retryMs = ms) });
  let sleeping = null;
  const run = async () => {
    while (!closed) {
      let wait = retryMs;
      try {
        const headers = { accept: "text/event-stream" };
        if (parser.lastEventId) headers["last-event-id"] = parser.lastEventId;
        const response = await client.fetchImpl(url, { headers, cache: "no-store", signal: controller.signal });
        const type = response.headers.get("content-type") ?? "";
        if (response.status === 200 && /^text\/event-stream\s*(;|$)/i.test(type) && response.body) {
          hooks.opened();
          const reader = response.body.getReader();
          const decoder = new TextDecoder();
          try {
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              parser.push(decoder.decode(value, { stream: true }));
            }
          } finally {
            parser.end();
          }
          wait = retryMs;
        } else {
          await response.body?.cancel().catch(() => {});
          wait = retryStreamMs;
        }
      } catch (e) {
        if (closed) return;
        report(new BloomcastError("transport", `${url}: ${e.message}`));
        wait = retryMs;
      }
      if (closed) return;
      hooks.dropped();
      await new Promise((resolve) => {
        sleeping = resolve;
        timer = setTimeout(resolve, wait);
      });
    }
  };
  run();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      sleeping?.();
      controller.abort();
    },
  };
}
