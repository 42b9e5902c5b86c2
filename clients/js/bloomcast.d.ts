// Types for bloomcast.js (the bloomcast client for browsers and Node 20+).

export const SHA1_KM32: "sha1-km32";

/** The two 32-bit hash halves of an ID. */
export interface Key { h1: number; h2: number }

export class BloomcastError extends Error {
  /** Machine-readable: the server's `error` code, or "decode", "protocol", "transport", "argument",
   * "verification", "missing_dependency". */
  code: string;
}
export class StatusError extends BloomcastError {
  status: number;
  serverMessage: string;
  /** Seconds, from `Retry-After`. */
  retryAfter: number | null;
}
/** Hours the server could not verify (PROTOCOL.md section 9: listed `corrupt` in its
 * index, or answering 500 `corrupt`): unknown, never "no change". Status 500, code "corrupt". */
export class CorruptHoursError extends StatusError {
  /** RFC 3339, oldest first. */
  hours: string[];
}
export class DecodeError extends BloomcastError {}
export class ProtocolError extends BloomcastError {}
/** Something signed that does not verify against the publisher's key, or a key the key
 * given does not lead to (PROTOCOL.md section 11, "Trust"); names the hour (or the key
 * list) and what failed. */
export class VerificationError extends BloomcastError {
  /** There was no signature to check (an unsigned server, or one stripped on the way):
   * nothing was seen altered, nothing was verified. */
  unsigned: boolean;
  /** A version of the open hour made longer ago than the freshness bound. */
  outdated: boolean;
}
/** The publication lag bound, in hours (2). */
export const PUBLICATION_LAG_HOURS: number;
/** The default freshness bound of the open hour's versions, in seconds (600). */
export const OPEN_FRESHNESS_SECONDS: number;
/** Tries in all of a read (GET) answered 503 with a short `Retry-After` (3). */
export const READ_TRIES: number;
/** The longest `Retry-After` a read waits for before trying again, in seconds (5). */
export const MAX_RETRY_WAIT: number;
/**
 * An answer that may miss hours the publisher published: the source is stale (its newest
 * hour starts more than PUBLICATION_LAG_HOURS before the client's current hour, or its
 * checkpoint was made longer ago than that) or withholds hours (its verified checkpoint
 * names a sealed hour after the newest it offers). Code "stale". Nothing it answered is
 * wrong; changes after `newest` were not seen.
 */
export class StaleError extends BloomcastError {
  /** The newest hour the source has (RFC 3339): its index's `current`, a mirror's newest hour. */
  newest: string;
  /** The hour the publisher's verified checkpoint names as its newest sealed, or null. */
  checkpoint: string | null;
  /** What was answered all the same: `changedSince`'s Changes, `verifyChain`'s hours. */
  answer: Changes | VerifiedHours | null;
}
/** Signatures cannot be checked: this runtime's WebCrypto has no Ed25519. */
export class MissingDependency extends BloomcastError {}

export function keyOf(id: string): Promise<Key>;
export function positions(key: Key, m: number, k: number): number[];
export function optimalParams(n: number, p: number): { m: number; k: number };
/** `m` and `k` a server picks for `n` IDs at target `p` (section 3's rule). */
export function sizedParams(n: number, p: number): { m: number; k: number };
/** Section 3's `E(m, k, n)`: the expected false-positive rate of a prime `m` holding `n` IDs. */
export function expectedFpp(m: number, k: number, n: number): number;
/** Up to this many bits a filter's `fpp()` is exact (section 8). */
export const EXACT_BITS: number;
/** `/YYYY/MM/DD/HH` of the UTC hour holding `hour`: a Date, an RFC 3339 string, or `2026-11-28T17` / `2026/11/28/17` as the CLIs take it. */
export function hourPath(hour: Date | string): string;
export function dayPath(day: Date | string): string;
export function sincePath(hour: Date | string): string;

export class Filter {
  constructor(m: number, k: number, bytes: Uint8Array, hash?: string);
  readonly m: number;
  readonly k: number;
  readonly hash: string;
  readonly bytes: Uint8Array;
  static empty(m: number, k: number): Filter;
  static fromHex(hex: string, m: number, k: number, options?: { lenient?: boolean; hash?: string }): Filter;
  insertKey(key: Key): void;
  containsKey(key: Key): boolean;
  insert(id: string): Promise<void>;
  mayContain(id: string): Promise<boolean>;
  toHex(): string;
  setBits(): number;
  fpp(): number;
  estimateCount(): number;
}

export interface Meta {
  hour?: string;
  from?: string;
  to?: string;
  complete: boolean;
  count: number;
  m: number;
  k: number;
  hash: string;
  fpp: number;
  /** SHA-256 of the filter's bytes, hex (JSON documents). */
  digest?: string;
}

export class Fetched {
  meta: Meta;
  filter: Filter;
  etag: string | null;
  /** Verified against the publisher's key (a client with a `pubkey`): a sealed hour by its
   * chain signature, a version of the open hour by its `Bloom-Open-Signature`. Never a union. */
  verified: boolean;
  /** A verified version of the open hour: when it was made (Unix seconds); else null. */
  made: number | null;
  range(): { from: string; to: string };
  mayContain(id: string): Promise<boolean>;
}

export function parseDocument(doc: unknown): { meta: Meta; filter: Filter };
export function parseHeaders(headers: Headers): Meta;

export interface IndexHour {
  hour: string;
  url: string;
  /** Absent on a corrupt line: never read a missing count as an empty hour. */
  count?: number;
  complete?: boolean;
  /** The server's stored data of the hour failed verification (its filter answers 500
   * `corrupt`): whether IDs changed in it is unknown. */
  corrupt?: boolean;
  /** A sealed hour with an exact body (PROTOCOL.md section 14): the body's size in bytes. */
  exact_bytes?: number;
}
/** The hours from `from` through `to` an index lists as corrupt (RFC 3339, oldest first);
 * throws ProtocolError for a corrupt line naming no readable hour. */
export function corruptHours(index: Index, from: Date | number, to: Date | number): string[];
export interface Index {
  service: string;
  version: string;
  protocol: number;
  hash: string;
  target_fpp: number;
  capacity: number;
  retention_hours: number;
  genesis: string;
  current: IndexHour;
  /** `urls.checkpoint`: where the publisher's checkpoint is ("/checkpoint", a static mirror's "/checkpoint.json"). */
  urls: Record<string, string>;
  hours: IndexHour[];
  /** A static mirror (PROTOCOL.md section 13): `current` is its newest (sealed) hour. */
  static?: boolean;
  /** The first hour with an exact body (section 14); null (or absent) without a universe. */
  exact_since?: string | null;
  /** Versions of the compact form served, e.g. [1, 2] (absent: version 1 only). */
  ribbon_versions?: number[];
}

/** The publisher's checkpoint, verified (PROTOCOL.md section 11, "Trust"). */
export interface Checkpoint {
  /** Its newest sealed hour when it was made (RFC 3339). */
  hour: string;
  /** When it was made, Unix seconds. */
  made: number;
  /** The hour's chain header, hex. */
  header: string;
  /** The key that signed it. */
  keyId: string;
}

/**
 * What `changedSince` answers: the Array of ranges with hits (as ever) that also says what
 * it covers. `map`, `filter` and the like give plain Arrays, and `JSON.stringify` the
 * ranges alone.
 */
export class Changes extends Array<Changed> {
  /** The first and last hours actually read (RFC 3339); null when none was. */
  from: string | null;
  to: string | null;
  /** With a `pubkey`: the hours read that could not be verified (no signature to check:
   * an unsigned server, an open hour without `Bloom-Open-Signature`), oldest first. Null
   * without a key: nothing was verified. */
  unverified: string[] | null;
  /** With a `pubkey`: the publisher's checkpoint, verified; null when the source has none. */
  checkpoint: Checkpoint | null;
  /** The StaleError that `acceptStale: true` kept from being thrown, else null. */
  stale: StaleError | null;
}

/** What `verifyChain` resolves to: the hours verified (RFC 3339), oldest first. */
export interface VerifiedHours extends Array<string> {
  /** The publisher's checkpoint, verified (read first); null when the source has none. */
  checkpoint: Checkpoint | null;
  /** The StaleError that `acceptStale: true` kept from being thrown, else null. */
  stale: StaleError | null;
}

export interface Changed {
  from: string;
  to: string;
  ids: string[];
  /** True for an hour, or a range of sealed hours (`sinceExact`), read as its exact body
   * alone (a client made with `registered: true`): these IDs changed, none other followed
   * did. */
  exact?: true;
  /** True for an hour read with its exact body refining a filter at the target: exact for
   * registered IDs, any other at most at the target fpp. */
  refined?: true;
}

/** SplitMix64's finaliser on unsigned 64-bit BigInts (PROTOCOL.md section 12). */
export function mix64(z: bigint): bigint;
/** Where a key sits in a ribbon of `m` rows built with `seed`. */
export function ribbonSlot(
  key: Key,
  seed: bigint | number,
  m: number,
  r: number,
): { start: number; coeff: bigint; fp: number };

/** A decoded ribbon filter (the compact form of a closed hour, PROTOCOL.md section 12). */
export class Ribbon {
  /** Throws DecodeError for a body section 12 rules out. */
  static fromBytes(body: Uint8Array | ArrayBuffer): Ribbon;
  readonly n: number;
  readonly m: number;
  /** Fingerprint bits: the false-positive rate is 2^-r. */
  readonly r: number;
  readonly seed: bigint;
  fpp(): number;
  containsKey(key: Key): boolean;
  mayContain(id: string): Promise<boolean>;
}

/** A key's equation in a version 2 shard `(part, seed, m)` (PROTOCOL.md section 12,
 * "Version 2"): `coeff` is the 128-bit band (bits 0..min(m,128)-1, bit 0 set; 0 when
 * m = 0), `fingerprint` 64 bits (its low `bits` are compared). */
export function ribbon2Row(
  key: Key,
  part: "A" | "B",
  seed: number,
  m: number,
): { start: number; coeff: bigint; fingerprint: bigint };
/** Where a key goes in a version 2 body of `split` with `sA` and `sB` shards: its part
 * ("A" when its selector is below `split`) and its shard within that part. */
export function ribbon2Route(key: Key, split: number, sA: number, sB: number): { part: "A" | "B"; shard: number };
/** The version 2 grade for a requested rate `p`: the cheapest `(k, split)` whose rate
 * `fpp = 2^-k * (1 - split/512)` is at most `p` (as Rust's `Grade::for_fpp`). Throws
 * RangeError unless 2^-31 <= p < 1. */
export function gradeForFpp(p: number): { k: number; split: number; fpp: number };

/** Predicted bytes of a `.ribbon2` body of `n` keys at the grade `(k, split)` (what
 * `cheapestForm` counts): `12 + 4*S + ceil(n*bits*1.005/8) + S*bits/2`, `bits = k + split/256`,
 * `S` shards; a few bytes above the server's. */
export function ribbon2Bytes(n: number, k: number, split: number): number;

/** The predicted bytes of a `.ribbon2` body of `n` keys at the grade `(k, split)` (default
 * split 0): each part's keys spread evenly over its shards at their first sizes, header
 * varints included (PROTOCOL.md section 12, "Body bytes"; the same number as the Rust SDK's
 * `Ribbon2::predicted_bytes`; a built body is within 1%): what `cheapestPlan` counts for
 * the version 2 since-union. */
export function ribbon2PredictedBytes(n: number, k: number, split?: number): number;

/** `log2(C(n, r))`: the bits an exact body of `r` changed IDs of a universe of `n` cannot
 * go below (PROTOCOL.md section 14); 0 when `r` is 0 or at least `n`. The Rust core's
 * `exact::floor_bits` (ln-factorials: exact sums below 256, Stirling's series above). */
export function floorBits(n: number, r: number): number;

/** The largest universe `N` in `[count, 2^40]` whose floor, `floorBits(N, count)`, fits in
 * an exact body of `bytes` (`8 * bytes` bits; a body is never below its floor), by
 * bisection; null when `count` is 0. The Rust SDK's `universe_at_most`: the `universe`
 * option of `cheapestPlan`. */
export function universeAtMost(count: number, bytes: number): number | null;

/** An hour of the range `cheapestPlan` weighs. */
export interface PlanHour {
  /** Distinct IDs, as the index lists them; null or absent: taken as `capacity`. */
  count?: number | null;
  /** The current (open) hour. */
  open?: boolean;
  /** A closed hour: the fpp of the most precise complete form of it held (it costs only
   * its wasted fetches), or null. */
  heldFpp?: number | null;
  /** The open hour: the count of the copy held (equal to `count`: a 304), or null. */
  cachedCount?: number | null;
  /** A closed hour: its exact body's bytes, or true when not listed (as `cheapestForm`'s option). */
  exact?: number | boolean | null;
}

/** What `cheapestPlan` chose, and each plan's expected bytes. */
export interface PlanChoice {
  plan: "hourly" | "union" | "compact" | "exact";
  /** The 2^-k the compact plan reads its closed hours at; null when it cannot be read. */
  k: number | null;
  /** Where the compact plan's version 2 union, or the exact plan's exact body, starts, an
   * index into `hours`: just after the last closed hour held complete (`heldFpp` not
   * null), 0 when none is; the hours before it are read on their own. Null when neither
   * plan can be read. */
  from: number | null;
  hourly: number;
  union: number;
  /** Null when the compact plan cannot be read (no version 2, `bloomOnly`, a mirror, no
   * closed hour after the last one held). */
  compact: number | null;
  /** Null when the exact plan cannot be read (not `registered`, `bloomOnly`, a mirror, no
   * closed hour after the last one held, or one of them without an `exact` body). */
  exact: number | null;
}

/**
 * How `changedSince` with `strategy: "auto"` reads the hours from `since` through the
 * current hour (oldest first), as the Rust SDK's planner: "hourly" (each hour on its own,
 * a closed one at its `cheapestForm`, the open one as the v1 filter sized for the
 * capacity, a closed one held complete at most its wasted fetches), "union" (one v1
 * `/since` union at the target) or "compact" (the closed hours from `from`, just after the
 * last closed hour held complete, as one version 2 since-union at the 2^-k, k = 4..24,
 * minimising its predicted bytes and wasted fetches, and the hours before `from` and the
 * open hour as "hourly" counts them; only with `ribbon2`, not `bloomOnly` nor `mirror`,
 * and a closed hour from `from` on) or "exact" (the same closed hours as one exact body,
 * `/since/...exact`, counted as the sum of their `exact` bodies' bytes, which a range's
 * body does not exceed, and no wasted fetch, the other hours as the compact plan counts
 * them; only with `registered`, not `bloomOnly` nor `mirror`, and every one of those
 * hours with an `exact` body; with a `universe` bound, the lesser of that sum and
 * `1.15 * floorBits(universe, min(R, floor(universe / 2))) / 8 + 47`, R those hours'
 * counts summed), whichever has the fewest expected bytes (body bytes, 400 a
 * response, `followed * fpp * fetchCost`); ties go to hourly, then to the union, then to
 * compact. A `mirror` serves no unions: "hourly".
 */
export function cheapestPlan(
  hours: PlanHour[],
  options?: {
    targetFpp?: number;
    capacity?: number;
    followed?: number;
    fetchCost?: number;
    ribbon2?: boolean;
    bloomOnly?: boolean;
    registered?: boolean;
    /** At least the publisher's universe (`universeAtMost` of an hour's `count` and
     * `exact_bytes`; `changedSince` takes the newest complete hour the index lists with
     * both and a count above 0), bounding the exact plan's body (PROTOCOL.md section 14,
     * "Choosing it"); null or absent: the sum of the hours' exact bodies alone. */
    universe?: number | null;
    mirror?: boolean;
    /** Weigh reading closed hours by the page for "hourly" (as `cheapestForm`'s). */
    pages?: boolean;
    keys?: Key[] | null;
  },
): PlanChoice;

/** A decoded version 2 ribbon (`.ribbon2`, body `BCR2`; PROTOCOL.md section 12, "Version 2"). */
export class Ribbon2 {
  /** Throws DecodeError naming the problem for a body section 12 rules out: magic,
   * k > 31 (or 31 with a split), sA with split 0, varints (minimal, below 2^32), part B
   * rows when k = 0, length, padding bits. */
  static fromBytes(body: Uint8Array | ArrayBuffer): Ribbon2;
  /** Keys the filter was built from. */
  readonly n: number;
  /** Fingerprint bits of part B (part A has k + 1), 0..31. */
  readonly k: number;
  /** 0..255: a key whose selector is below it is in part A (k + 1 bits). */
  readonly split: number;
  /** The false-positive rate, 2^-k * (1 - split/512) (a number, not a method). */
  readonly fpp: number;
  /** `[sA, sB]`: shards of part A and of part B. */
  readonly shards: [number, number];
  /** Each shard's rows, part A's first. */
  readonly rows: number[];
  /** Each shard's seed, part A's first. */
  readonly seeds: number[];
  /** The body's size in bytes. */
  readonly size: number;
  /** Whether the key may be in the set (synchronous: no hashing). */
  containsKey(key: Key): boolean;
  /** Whether the ID may be in the set (SHA-1 through WebCrypto, hence async). */
  contains(id: string): Promise<boolean>;
  /** `contains`, under the name filters answer to. */
  mayContain(id: string): Promise<boolean>;
}

/** The content type of an hour's paged form: "application/vnd.bloomcast.pages". */
export const PAGES_TYPE: string;
/** Bytes of a paged body's header (72): what `Range: bytes=0-71` reads first. */
export const PAGES_HEADER_BYTES: number;
/** Bytes of a slot before its page's body (66): the signature and the body's length. */
export const PAGE_SLOT_PREFIX: number;
/** Keys a page holds on average (64). */
export const PAGE_KEYS: number;
/** Pages of a paged body of `n` distinct keys: `max(1, ceil(n / 64))`. */
export function pagesFor(n: number): number;
/** The page of `pages` holding a key: `floor((key mod 2^56) * pages / 2^56)`, `key` the
 * 64-bit `h1 << 32 | h2` (exact, BigInt arithmetic). */
export function pageOf(key: Key, pages: number): number;
/** The distinct pages of `pages` the keys are on, ascending. */
export function pagesOfKeys(keys: Key[], pages: number): number[];

/** The header of a paged body (`.pages`, PROTOCOL.md section 12, "Huge hours by the page"):
 * its first 72 bytes. */
export class PagesHeader {
  /** Throws DecodeError naming the field wrong: length, magic `BCP1`, grade (k > 31, or 31
   * with a split), the reserved bytes, no page or a slot under 66 bytes. */
  static parse(body: Uint8Array | ArrayBuffer): PagesHeader;
  /** The 72 bytes as read (every page's signature covers them). */
  readonly bytes: Uint8Array;
  /** The version 2 grade of every page. */
  readonly k: number;
  readonly split: number;
  /** The grade's rate, 2^-k * (1 - split/512). */
  readonly fpp: number;
  /** The hour's index: hours since 1970-01-01T00Z. */
  readonly hour: number;
  /** The hour's chain header (32 bytes; zero when unsigned). */
  readonly chainHeader: Uint8Array;
  /** The id of the key that signed the pages (16 hex digits; zeros when unsigned). */
  readonly keyId: string;
  /** Whether the pages carry signatures (a key id is set). */
  readonly signed: boolean;
  /** Distinct keys in all pages. */
  readonly n: number;
  /** Pages, at least 1. */
  readonly pages: number;
  /** Bytes of each slot. */
  readonly slot: number;
  pageOf(key: Key): number;
  /** Page `p`'s slot: bytes `start` to `end - 1` of the body. */
  slotRange(p: number): { start: number; end: number };
  /** `72 + pages * slot`. */
  bodyLength(): number;
}

/** One page of a paged body, read from its slot. */
export class Page {
  /** Throws DecodeError for a slot of another size, a length that overruns it, padding
   * that is not zero, or a version 2 body malformed or of another grade than the header's. */
  static parse(header: PagesHeader, index: number, slot: Uint8Array | ArrayBuffer): Page;
  readonly index: number;
  /** The slot's bytes as read. */
  readonly slot: Uint8Array;
  /** Its signature (the slot's first 64 bytes; zero when unsigned). */
  readonly signature: Uint8Array;
  /** The page's keys, a version 2 filter. */
  readonly ribbon: Ribbon2;
  readonly n: number;
  containsKey(key: Key): boolean;
}

/**
 * A closed hour read by the page (`Client#pages`, or a whole body's `Pages.fromBytes`):
 * each page read answers for the keys it holds exactly as the whole paged body (no false
 * negative, the grade's fpp). A key whose page was not read throws ProtocolError.
 */
export class Pages {
  /** A whole `.pages` body, every page decoded; DecodeError for a length other than
   * `72 + P*S`, a page refused, or pages' `n` that do not add up to the header's. */
  static fromBytes(body: Uint8Array | ArrayBuffer): Pages;
  constructor(header: PagesHeader);
  readonly header: PagesHeader;
  /** The pages read, by number. */
  readonly pages: Map<number, Page>;
  /** The grade's rate (a number, as `Ribbon2`'s). */
  readonly fpp: number;
  /** Distinct keys of the hour. */
  readonly n: number;
  /** Whether every page was read. */
  readonly complete: boolean;
  /** Read by `Client#pages`: the hour (RFC 3339). */
  hour?: string;
  /** Whether the page holding the key was read. */
  has(key: Key): boolean;
  /** Throws ProtocolError when the key's page was not read. */
  containsKey(key: Key): boolean;
  contains(id: string): Promise<boolean>;
  mayContain(id: string): Promise<boolean>;
}

/** The slot bytes expected of an hour of `n` keys paged at `(k, split)` (the Rust SDK's
 * `Pages::predicted_slot_bytes`): `66 + 13 + ceil((mean + 5 sqrt(mean) + 2) * bits / 8)`,
 * `mean = n / P`, `bits = k + split/256` (79 for no key). */
export function pagesPredictedSlotBytes(n: number, k: number, split?: number): number;
/** `72 + P * pagesPredictedSlotBytes(n, k, split)`: a whole paged body. */
export function pagesPredictedBytes(n: number, k: number, split?: number): number;

/** salt(tag, seed) of PROTOCOL.md section 14 (tags: part A 1, part B 2, retrieval 3, selector 4). */
export function exactSalt(tag: number, seed: number): bigint;
/** A key's selector, 0..255: below the body's `split` it is in part A. */
export function exactSelector(key: Key): number;
/** A key's equation in the exact system `(tag, seed, m)` (section 14): `coeff` is the
 * 128-bit band (bits 0..min(m,128)-1, bit 0 set; 0 when m = 0), `fingerprint` 64 bits. */
export function exactRow(
  key: Key,
  tag: number,
  seed: number,
  m: number,
): { salt: bigint; selector: number; start: number; coeff: bigint; fingerprint: bigint };

/**
 * A decoded exact body (an `.exact` hour, PROTOCOL.md section 14): for every ID of the
 * universe it was built over, whether it changed in the hour, with no false negative and
 * no false positive. An ID outside that universe did not change in the hour; it may
 * answer either way.
 */
export class Exact {
  /** Throws DecodeError naming the problem for a body section 14 rules out: magic,
   * version (other than 1 and 2), k > 31, split > 255, part B rows when k = 0, length,
   * padding bits. */
  static fromBytes(body: Uint8Array | ArrayBuffer): Exact;
  /** Fingerprint bits of part B (part A has k + 1), 0..31. */
  readonly k: number;
  /** 0..255: a key whose selector is below it is in part A. */
  readonly split: number;
  /** `N`, the IDs of the universe the body answers for. */
  readonly universe: number;
  /** `r`, the IDs that changed in the hour (in a complemented body too). */
  readonly changedCount: number;
  /** Whether the body is version 2, built where more than half the universe changed: its
   * levels hold the unchanged IDs, and every answer is negated (an ID outside the universe
   * then answers changed for the most part). */
  readonly complemented: boolean;
  /** `[mA, mB, mR]`: rows of part A, part B and the retrieval level. */
  readonly rows: [number, number, number];
  /** `[sA, sB, sR]`: their seeds. */
  readonly seeds: [number, number, number];
  /** The body's size in bytes. */
  readonly size: number;
  /** Whether the key changed in the hour (synchronous: no hashing). */
  changedKey(key: Key): boolean;
  /** Whether the ID changed in the hour (SHA-1 through WebCrypto, hence async). */
  changed(id: string): Promise<boolean>;
  /** `changedKey`, under the name filters answer to. */
  containsKey(key: Key): boolean;
  /** `changed`, under the name filters answer to. */
  mayContain(id: string): Promise<boolean>;
  /** 0. */
  fpp(): number;
}

/** The default cost of a wasted fetch, in bytes (10 KiB). */
export const DEFAULT_FETCH_COST: number;

export interface FormChoice {
  form: "bloom" | "ribbon" | "ribbon2" | "pages" | "exact" | "refined";
  /** Fingerprint bits of a ribbon. */
  r?: number;
  /** The grade of a "ribbon2" (its `fpp` is the grid value to request, `gradeFpp` the
   * grade's rate, at most `fpp`). */
  k?: number;
  split?: number;
  gradeFpp?: number;
  /** Predicted body bytes. */
  bytes: number;
  fpp: number;
  /** bytes + followed * fpp * fetchCost. */
  expected: number;
  /** For "exact" and "refined": the cheapest other form, read when no exact body is served;
   * for "pages": the cheapest whole form, read when no pages are. */
  otherwise?: FormChoice;
  /** For "pages": the hour's pages (`max(1, ceil(count / 64))`), those needed (of the keys
   * given, else expected for `followed` random IDs) and the predicted slot bytes; `bytes`
   * is `72 + needed * (slot + 400)` (plus the first response's 400, as every form). */
  pages?: number;
  needed?: number;
  slot?: number;
  /** For "refined": the form at the target fpp or under the exact body refines, and the
   * exact body's bytes (`bytes` counts both). */
  under?: FormChoice;
  exactBytes?: number;
  /** A compact form a static mirror holds (the service's target): read without `?fpp=`. */
  atTarget?: true;
}

/**
 * The form of a closed hour minimising body bytes plus followed * fpp * fetchCost.
 * `exact`: the hour has an exact body (section 14) of that many bytes (the index's
 * `exact_bytes`), or `true` when its size is not listed (the v1 body's predicted bytes are
 * used). With `registered: true` (the caller declares its IDs registered) it is chosen
 * alone ("exact") when its bytes are no more than the cheapest other form's sum; otherwise
 * it only refines the cheapest form at the target ("refined", `cheapestWithin`), chosen
 * when both bodies and 400 bytes of a second response cost no more than that sum.
 * `ribbons: false` leaves ribbons out (they are not signed). `ribbon2: true` (the index
 * lists 2 in `ribbon_versions`) offers version 2 ribbons, at fpp 2^-b for b = 4..24 (the server's grade set),
 * instead of version 1's. `mirror: true` (a static mirror): ribbons at the target only.
 * `pages: true` (with `ribbon2`): reading the hour by the page (`cheapestPages`) is taken
 * when strictly cheaper than the cheapest whole form (its `otherwise`); `keys`: the
 * followed IDs' keys, which name the pages needed.
 */
export function cheapestForm(
  count: number,
  targetFpp: number,
  followed: number,
  fetchCost?: number,
  options?: { exact?: number | boolean | null; ribbons?: boolean; ribbon2?: boolean; registered?: boolean; mirror?: boolean; pages?: boolean; keys?: Key[] | null },
): FormChoice;

/**
 * Reading a closed hour of `count` IDs by the page at the grade minimising
 * `72 + needed * (slot + 400)` plus `followed * fpp * fetchCost`: at `fpp` = 2^-b, b = 4..24,
 * or on a `mirror` at the target only (`atTarget`). `needed`: the distinct pages of `keys`
 * at `P = max(1, ceil(count / 64))`, else those `followed` random IDs are expected on.
 */
export function cheapestPages(
  count: number,
  targetFpp: number,
  followed: number,
  fetchCost?: number,
  options?: { mirror?: boolean; keys?: Key[] | null },
): FormChoice;

/** The approximate form of a closed hour with the fewest body bytes whose fpp is at most
 * `targetFpp`: what an exact body refines for IDs not declared registered. */
/** The spelling of `fpp` in `?fpp=`: the shortest scientific decimal parsing back to it (the server's canonical grade spelling). */
export function fppParam(fpp: number): string;
export function cheapestWithin(count: number, targetFpp: number, options?: { ribbons?: boolean; ribbon2?: boolean }): FormChoice;

/** A sealed hour read with its exact body refining a filter: an ID is changed when both say
 * so (exact for the universe's IDs, any other at most at `fpp()`). */
export class Refined {
  constructor(under: Filter | Ribbon | Ribbon2, exact: Exact);
  readonly under: Filter | Ribbon | Ribbon2;
  readonly exact: Exact;
  containsKey(key: Key): boolean;
  mayContain(id: string): Promise<boolean>;
  /** The filter's: the most an ID outside the universe is flagged at. */
  fpp(): number;
}

/** Checks a body against its response's `Repr-Digest` sha-256 (RFC 9530): resolves to
 * whether there was one to check; rejects with DecodeError when the body differs. */
export function checkReprDigest(url: string, headers: Headers, bytes: Uint8Array, subtle?: SubtleCrypto): Promise<boolean>;

export class Client {
  constructor(
    base: string,
    options?: {
      token?: string;
      repr?: "json" | "hex" | "bin";
      fetch?: typeof fetch;
      /** The publisher's Ed25519 public key, 64 hex digits, obtained out of band. Everything
       * read is then verified (PROTOCOL.md section 11) under the keys its signed successions
       * lead to (the well-known key list; a list that does not name it is refused, an hour
       * listed under a key outside them is refused naming that key): every sealed hour and
       * derived form (ribbon, ribbon2, exact; a static mirror's by its `.sig` sidecars), each
       * version of the open hour (`Bloom-Open-Signature`, made within `openFreshness`), the
       * checkpoint. What fails rejects with VerificationError naming it. Throws TypeError at
       * once for a malformed key. */
      pubkey?: string;
      /** The WebCrypto to verify with (default `globalThis.crypto.subtle`). */
      subtle?: SubtleCrypto;
      /** The caller declares every ID it asks `changedSince` about registered in the
       * publisher's universe (`POST /universe`) from before the first hour asked about:
       * exact bodies are then read alone. Default false: each only refines a filter at
       * the target fpp, so an ID never registered is flagged at most at the target. */
      registered?: boolean;
      /** This client's clock, epoch milliseconds (default `Date.now`): the publication lag
       * bound and the open hour's freshness are measured against it. */
      clock?: () => number;
      /** Seconds a version of the open hour may have been made before `clock` (default
       * OPEN_FRESHNESS_SECONDS, 600); an older one is refused (a replay would hide the
       * changes since). */
      openFreshness?: number;
      /** Tries in all of a read answered 503 with a `Retry-After` of at most
       * MAX_RETRY_WAIT seconds (default READ_TRIES, 3; 1: the first 503 as it came). */
      readTries?: number;
    },
  );
  readonly registered: boolean;
  /** Tries in all of a read answered 503 with a short `Retry-After`. */
  readTries: number;
  readonly base: string;
  /** Requests made, 304s, complete filters (and pages) answered from memory, and the body
   * bytes read: filters, compact forms, exact bodies and pages' ranges (as sent where the
   * response has a Content-Length, else decoded). */
  stats: { requests: number; notModified: number; cacheHits: number; bodyBytes: number };
  /** Set once a paged form was 404: the source serves none, so hours are read whole. */
  pagesUnserved: boolean;
  index(): Promise<Index>;
  /** The last `hours` hours as far back as the server has them: `since` (RFC 3339) and whether it was cut short. */
  window(hours: number): Promise<{ since: string; clamped: boolean }>;
  /** Any filter by path, revalidated by ETag. With a `pubkey`, an hour is verified before
   * it is returned or kept, and one without a signature is refused (VerificationError,
   * `unsigned`); unions (days, `since`) are never signed, never verified. */
  /** `fresh`: ask the caches between for a copy no older than now (`Cache-Control:
   * no-cache`), as after an event of the server's stream. */
  filter(path: string, options?: { repr?: "json" | "hex" | "bin"; fresh?: boolean }): Promise<Fetched>;
  hour(hour: Date | string): Promise<Fetched>;
  /**
   * Follows the open hour, and the next one at its boundary, as the CLIs' `watch` does:
   * `onEvent` gets a `version` event for each new version read and a `changed` event the
   * first time a version of the hour may contain one of `ids` (once per ID and hour). Each
   * hour is fetched as a poll would (`.bin`, revalidated with its ETag; the JSON document
   * from a static mirror; verified with a `pubkey`); a sealed hour's final bytes are read before
   * the next hour is followed. When to fetch is told by the server's push stream
   * (`GET /events`): a browser's `EventSource`, else a `fetch` reader (Node). Where there
   * is no stream (404: a static mirror, an older server; another status) the hour is
   * polled every `every` seconds and the stream asked for again every `retryStream`
   * seconds; while a stream is down it is polled, and reconnected after the stream's
   * `retry` with `Last-Event-ID`. Resolves once `signal` aborts (after a request in
   * flight) to the hour followed then (RFC 3339, to resume with `hour`). Rejects with a
   * VerificationError (what a `pubkey` refuses ends the watch, as in the CLIs), or what
   * `onEvent` throws; any other failure (transport, an error status, a 500 corrupt, an
   * hour not there yet) goes to `onError` and is tried again at the next event or poll.
   */
  watch(ids: Iterable<string>, options: WatchOptions): Promise<string>;
  /** A closed hour as a ribbon, at the target fpp or at `fpp`: `.ribbon` (checked against
   * `Repr-Digest` when sent) or, with `repr: "json"`, `.ribbon.json` (checked against its
   * `digest` and header fields). With a `pubkey`, its signature is verified over the
   * hour's chain header (VerificationError naming the hour; `unsigned` without one). 406
   * for the open hour. */
  ribbon(hour: Date | string, options?: { fpp?: number; repr?: "bin" | "json" }): Promise<Ribbon>;
  /** A closed hour as a version 2 ribbon (`.ribbon2`), at the target fpp or at `fpp`
   * (2^-24 <= fpp < 1, served at the cheapest grade at most it); checked against
   * `Repr-Digest` when sent and, with a `pubkey`, by its signature (as `ribbon`); 406 for
   * the open hour, 404 from a server without version 2. */
  ribbon2(hour: Date | string, options?: { fpp?: number }): Promise<Ribbon2>;
  /** The closed hours from `since` as one version 2 ribbon (`/since/YYYY/MM/DD/HH.ribbon2`,
   * PROTOCOL.md section 12, "Catching up"), at the target fpp or at `fpp` (as `ribbon2`):
   * the open hour is not in it. `from` and `to`: the hours it covers (RFC 3339; its
   * `Bloom-From`/`Bloom-To`, or `Bloom-Hour` for one hour; ProtocolError when it names
   * none). Checked against `Repr-Digest` when sent; never verified (a union) nor kept (it
   * changes hourly). StatusError 406 for a `since` at the open hour and from servers
   * before it, 404 from a server without version 2. */
  sinceRibbon2(since: Date | string, options?: { fpp?: number }): Promise<{ ribbon: Ribbon2; from: string; to: string }>;
  /** The sealed hours from `since` through the hour before the open one as one exact body
   * (`/since/YYYY/MM/DD/HH.exact`, PROTOCOL.md section 14, "Ranges"): an ID of the
   * universe as it stood when the last was sealed is `changed` exactly when it changed in
   * any of them; the open hour is not in it. `from` and `to`: the hours it covers (RFC
   * 3339; its `Bloom-From`/`Bloom-To`, or `Bloom-Hour` for both; ProtocolError when it
   * names none or `from` is not `since`'s hour). Checked against `Repr-Digest`,
   * `Bloom-Count` and `Bloom-Universe` (DecodeError); never signed (a union: a verifying
   * client reads hour by hour) nor kept (it grows hourly). StatusError 404 without a
   * universe, for a `since` before the index's `exact_since`, or from a server without
   * exact ranges; 406 for a `since` at the open hour. */
  sinceExact(since: Date | string): Promise<{ exact: Exact; from: string; to: string }>;
  /**
   * The IDs `ids` of a closed hour read by the page (`/YYYY/MM/DD/HH.pages`, PROTOCOL.md
   * section 12, "Huge hours by the page"), at the target fpp or at `fpp` (as `ribbon2`):
   * `Range: bytes=0-71` for the header, then one `Range` per page needed and not held (a
   * 200 with the whole body is used). The header's hour must be the hour asked (else
   * ProtocolError; VerificationError with a key); with a `pubkey`, its key id the key
   * listed for the hour and each page read its own signature (VerificationError naming
   * the hour and page; `unsigned` for pages without). Kept with the pages read. StatusError
   * 406 for the open hour, 404 from a server without paged forms.
   */
  pages(hour: Date | string, ids: Iterable<string>, options?: { fpp?: number }): Promise<Pages & { hour: string }>;
  /** `pages` for keys (`keyOf`). */
  readPages(hour: Date | string, keys: Key[], options?: { fpp?: number }): Promise<Pages & { hour: string }>;
  /**
   * A sealed hour's exact body (`/YYYY/MM/DD/HH.exact`, PROTOCOL.md section 14), checked
   * against `Repr-Digest`, `Bloom-Count` and `Bloom-Universe` (DecodeError) and, with a
   * `pubkey`, its signature over the hour's chain header (VerificationError naming the
   * hour; `unsigned` without one). Null when the server has no exact body for the hour (404: no universe, an hour
   * before the index's `exact_since`, a future hour); StatusError 406 for the open hour,
   * 410 past retention. Kept once fetched.
   */
  exact(hour: Date | string): Promise<(Exact & { hour: string }) | null>;
  /** The publisher's checkpoint (`urls.checkpoint` of the index; a static mirror's
   * `/checkpoint.json`), verified under the trusted key listed for its hour; null when the
   * source has none (404). Needs `pubkey`; VerificationError when it does not verify. */
  checkpoint(): Promise<Checkpoint | null>;
  /** A closed hour in its cheapest form (v1 where no ribbon is served; with a `pubkey`,
   * also where a derived form comes without a signature). */
  closedHour(
    hour: Date | string,
    count: number | undefined,
    targetFpp: number | undefined,
    followed: number,
    fetchCost: number,
    options?: { exact?: number | boolean | null; ribbons?: boolean; ribbon2?: boolean; registered?: boolean; mirror?: boolean; pages?: boolean; keys?: Key[] | null },
  ): Promise<Filter | Ribbon | Ribbon2 | Pages | Exact | Refined>;
  /** A closed hour in the form `choice` names (from `cheapestForm`); "pages" needs the
   * `keys` it answers for, and falls back to `choice.otherwise` where none are served
   * (404, 406) or, with a `pubkey`, they are unsigned; `exactRefused` is called when the
   * server would not build the hour's exact body (406). */
  readForm(hour: Date | string, choice: FormChoice, unverified?: Set<string> | null, keys?: Key[] | null, exactRefused?: () => void): Promise<Filter | Ribbon | Ribbon2 | Pages | Exact | Refined>;
  day(day: Date | string): Promise<Fetched>;
  since(hour: Date | string): Promise<Fetched>;
  ingest(ids: string[]): Promise<{ hour: string; accepted: number }>;
  /** The complete form of an hour (RFC 3339) this client holds, as it may answer from it,
   * or null: its exact body alone only when `registered`, else refining a filter held at
   * `targetFpp` (default 0.01) or under, else that filter. */
  heldHour(name: string, targetFpp?: number): Filter | Ribbon | Ribbon2 | Exact | Refined | null;
  /** Which of `ids` may have changed from `since` through the source's current hour,
   * saying what it covers (`Changes`). With a `pubkey`, hour by hour, everything verified
   * (VerificationError naming the hour or key that fails; an hour with no signature at
   * all is answered and listed in `unverified`). Rejects with StaleError (its `answer`
   * the answer) when the source is stale or withholds hours, unless `acceptStale`; with
   * CorruptHoursError naming the hours of the range the server could not verify that this
   * client does not hold complete. */
  changedSince(
    ids: string[],
    since: Date | string,
    options?: {
      /** "union" (one `/since` filter, the default), "hourly" (each hour in its cheapest
       * form: ribbons of version 2 where the index's `ribbon_versions` lists 2, and there
       * the pages the IDs are on (`.pages`, by `Range`) when they cost less than a whole
       * form; a closed hour held complete without a request when its wasted fetches cost no more),
       * "compact" (where the index lists version 2 and the range has a closed hour after
       * the last one held complete: those hours as one version 2 union, `sinceRibbon2`
       * from the first of them, at the 2^-k `cheapestPlan` finds for `ids.length` IDs, one
       * range; the hours before it as "hourly" reads them, and each hour after it,
       * normally the open one, a range each; else as "union"; on 404 or 406 as "union"
       * when it was to start at `since`, else as "hourly"), "pages" (as "hourly", each
       * closed hour not held read by the page whatever that costs; whole where the source
       * serves none, or, with a `pubkey`, unsigned ones) or "auto" (whichever
       * `cheapestPlan` expects to cost the fewest bytes, pages weighed for hour by hour;
       * hour by hour over an hour the index lists corrupt; for a client made with
       * `registered: true` its "exact" plan, the closed hours as "compact" would take
       * them read as one exact body, `sinceExact`, one range `exact: true`, the others as
       * "compact" reads them, or hour by hour when the server answers it 404 or 406).
       * With a `pubkey`, or from a static mirror (its index says `"static": true`; its
       * pages at the target, without `?fpp=`), hour by hour whatever this says ("pages"
       * still by the page). */
      strategy?: "union" | "hourly" | "compact" | "pages" | "auto";
      /** Bytes a wasted fetch costs (default 10240). */
      fetchCost?: number;
      /** "auto" (default): an hour at or after `exact_since` is read with its exact body
       * when that pays (`cheapestForm`: alone for a `registered` client, else refining a
       * filter at the target); "exact": every sealed hour so, hour by hour whatever `strategy`,
       * rejecting with ProtocolError when the server has no exact hours (`exact_since`
       * null) or `since` is before `exact_since`. The open hour is always v1. */
      form?: "auto" | "exact";
      /** Answer a stale or withholding source rather than reject: the answer's `stale`
       * holds the StaleError. */
      acceptStale?: boolean;
    },
  ): Promise<Changes>;
  /** Verifies the chain from `since` to the newest sealed hour, then every listed hour's
   * filter, after the checkpoint (read first); resolves to the hours verified (RFC 3339).
   * Needs `pubkey`. Rejects with VerificationError naming the hour or key (an entry
   * without a signature included), MissingDependency without WebCrypto Ed25519, or
   * StaleError (stale source, or a listing ending more than an hour before the hour the
   * checkpoint names) unless `acceptStale`. */
  verifyChain(since: Date | string, options?: { acceptStale?: boolean }): Promise<VerifiedHours>;
}

/** What `Client#watch` reports, as the CLIs' `watch --json` lines. */
export type WatchEvent =
  | {
      event: "version";
      /** The hour (RFC 3339). */
      hour: string;
      /** The version read: its `.bin` ETag without W/, quotes, -gz, -dcz (the version a
       * `GET /events` `version` event names). */
      version: string;
      /** Distinct IDs in it. */
      count: number;
      /** Body bytes read for it (as sent where the response has a Content-Length). */
      bytes: number;
      /** Whether it came as a `dcz` delta: only where the platform's `fetch` does that
       * itself (a browser with Compression Dictionary Transport); never in Node. */
      delta: boolean;
      /** With a `pubkey`: the version came without its signature (used, not verified). */
      unverified?: true;
    }
  | { event: "changed"; hour: string; version: string; id: string; bytes: number };

export interface WatchOptions {
  /** Called with each event, in order (awaited when it returns a promise). */
  onEvent: (event: WatchEvent) => unknown;
  /** Called with each failure the watch goes on after (default: none). */
  onError?: (error: Error) => unknown;
  /** Stops the watch. */
  signal?: AbortSignal;
  /** Seconds between polls while there is no stream (default 10). */
  every?: number;
  /** The hour to start at (default: the server's current hour); a past hour is read
   * complete, then each next one. */
  hour?: Date | string;
  /** Whether to follow `GET /events` (default true); false only polls. */
  stream?: boolean;
  /** Seconds before asking for a stream again once refused (default 60). */
  retryStream?: number;
  /** The EventSource class to use (default `globalThis.EventSource`); null reads the
   * stream with `fetch` (the client's). */
  EventSource?: (new (url: string) => EventTarget & { readonly readyState: number; close(): void }) | null;
}

/** The version an ETag names: W/, quotes, -gz, -dcz removed. */
export function versionOf(etag: string | null | undefined): string;

/** One event of a `text/event-stream`. */
export interface StreamEvent {
  /** `event:` (default "message"). */
  type: string;
  /** The `data:` lines, joined with LF. */
  data: string;
  /** The last event ID when it was dispatched. */
  lastEventId: string;
}

/**
 * A `text/event-stream` parser (WHATWG HTML, "Server-sent events"): `push` decoded text in
 * chunks cut anywhere; CRLF, LF and CR line ends, comments, multi-line data, `id` (kept
 * across events and connections), `retry` (digits only). `end()` at the end of a
 * connection discards what was not dispatched.
 */
export class EventStreamParser {
  constructor(onEvent: (event: StreamEvent) => void, options?: { onRetry?: (ms: number) => void });
  /** What a reconnection sends as `Last-Event-ID` ("" for none). */
  lastEventId: string;
  /** The reconnection time the stream set (milliseconds), or null. */
  retry: number | null;
  push(text: string): void;
  end(): void;
}

/** Follows one hour at a time, one `poll()` at a time, as the CLIs' watchers. */
export class Watcher {
  constructor(client: Client, ids: Iterable<string>, hour: Date | string);
  /** A watcher at the server's current hour. */
  static start(client: Client, ids: Iterable<string>): Promise<Watcher>;
  readonly client: Client;
  readonly ids: string[];
  /** The hour followed now. */
  hour: Date;
  readonly hourName: string;
  /** The version last reported for the hour, or null. */
  version: string | null;
  /** The form read: "bin", or "json" (the document) once a `.bin` came without its Bloom-* headers. */
  repr: "bin" | "json";
  /** Polls the hour once; moves to the next hour once it is complete (its final bytes
   * read first). CorruptHoursError naming the hour when the server could not verify it. */
  /** `fresh`: this poll follows an event of the stream (see `Client.filter`). */
  poll(options?: { fresh?: boolean }): Promise<WatchEvent[]>;
}
