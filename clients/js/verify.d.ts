// Types for verify.js (verifiable history and trust, PROTOCOL.md section 11; WebCrypto Ed25519).
import { VerificationError, MissingDependency, Filter, PagesHeader } from "./bloomcast.js";

export { VerificationError, MissingDependency };

/** `header(h-1)` of a chain's first hour: 32 zero bytes. */
export const GENESIS: Uint8Array;
/** "bloomcast-hour-v1", the first 17 bytes of every signed message. */
export const DOMAIN: Uint8Array;

export function toHex(bytes: Uint8Array): string;
/** Bytes of an even-length hex string, or null. */
export function fromHex(text: string): Uint8Array | null;
/** SHA-256 of a filter's bytes (the `.bin` body). */
export function digest(bytes: Uint8Array, subtle?: SubtleCrypto): Promise<Uint8Array>;
/** SHA-256(digest || prev). */
export function header(digest: Uint8Array, prev: Uint8Array, subtle?: SubtleCrypto): Promise<Uint8Array>;
/** Hours since 1970-01-01T00Z. */
export function hourIndex(hour: Date | string): number;
/** The 57 bytes signed: domain, hour index (8 bytes big-endian), header. */
export function signedMessage(index: number, header: Uint8Array): Uint8Array;
/** "bloomcast-exact-v1", the first 18 bytes of an exact body's signed message (section 14). */
export const EXACT_DOMAIN: Uint8Array;
/** The domains of the derived forms' signatures: "bloomcast-exact-v1", "bloomcast-ribbon-v1"
 * (`.ribbon` and `.ribbon.json`), "bloomcast-ribbon2-v1", "bloomcast-page-v1" (each page of `.pages`). */
export const FORM_DOMAINS: { readonly exact: Uint8Array; readonly ribbon: Uint8Array; readonly ribbon2: Uint8Array; readonly page: Uint8Array };
/** What a derived form's signature covers: its domain, hour index (8 bytes big-endian),
 * the hour's chain header, SHA-256 of its binary body (of a page: of `signedPage`). */
export function formMessage(form: "exact" | "ribbon" | "ribbon2" | "page", index: number, header: Uint8Array, bodyDigest: Uint8Array): Uint8Array;
/** What page `p`'s signature is over, before hashing: the paged body's 72-byte header,
 * `p` (4 bytes big-endian), the slot after its signature. */
export function signedPage(header: Uint8Array, p: number, slot: Uint8Array): Uint8Array;
/** The 90 bytes an exact body's signature covers: `formMessage("exact", ...)`. */
export function exactMessage(index: number, header: Uint8Array, bodyDigest: Uint8Array): Uint8Array;
/** The domains of section 11's "Trust": "bloomcast-key-v1", "bloomcast-key-ack-v1",
 * "bloomcast-checkpoint-v1", "bloomcast-open-v1". */
export const VOUCH_DOMAIN: Uint8Array;
export const ACK_DOMAIN: Uint8Array;
export const CHECKPOINT_DOMAIN: Uint8Array;
export const OPEN_DOMAIN: Uint8Array;
/** What a retiring key signs for its successor: domain || next key (32 bytes) || its first hour index (8 bytes). */
export function vouchMessage(next: Uint8Array, firstIndex: number): Uint8Array;
/** What a new key signs for its predecessor: domain || previous key || the new key's first hour index. */
export function ackMessage(prev: Uint8Array, firstIndex: number): Uint8Array;
/** What a checkpoint signs: domain || made (Unix seconds, 8 bytes) || hour index || header. */
export function checkpointMessage(made: number, index: number, header: Uint8Array): Uint8Array;
/** What a version of the open hour signs: domain || hour index || made || SHA-256 of its filter's bytes. */
export function openMessage(index: number, made: number, filterDigest: Uint8Array): Uint8Array;
/** The first 8 bytes of SHA-256 of a public key, 16 hex digits. */
export function keyId(publicKey: Uint8Array, subtle?: SubtleCrypto): Promise<string>;
/** A `Bloom-Signature` value; `keyId` null when the value names none. */
export function parseSignature(value: string | null | undefined): { signature: string | null; keyId: string | null };
/** A `Bloom-Open-Signature` value; `keyId` and `made` (Unix seconds) null when absent. */
export function parseOpenSignature(value: string | null | undefined): { signature: string | null; keyId: string | null; made: number | null };
/** Throws VerificationError naming the hour when `count` is fewer IDs than the filter's
 * set bits need (at most `k` each): the unsigned count was edited. */
export function checkCount(name: string, filter: Filter, count: number): void;

/** One key of the publisher's list, hours as indexes (`last` null for the current key);
 * `vouch` and `ack` its succession's signatures (64 bytes), or null. */
export interface ListedKey {
  first: number;
  last: number | null;
  publicKey: Uint8Array;
  id: string;
  vouch: Uint8Array | null;
  ack: Uint8Array | null;
}
export interface WellKnownKey {
  id: string;
  public_key: string;
  first_hour: string;
  last_hour: string | null;
  /** The previous key's signature of `vouchMessage` for this one (128 hex), or null. */
  vouch?: string | null;
  /** This key's signature of `ackMessage` for the previous one (128 hex), or null. */
  ack?: string | null;
}
/** Checks the well-known `keys`; rejects with VerificationError for a list to refuse. */
export function parseKeys(listed: WellKnownKey[], subtle?: SubtleCrypto): Promise<ListedKey[]>;
/** The run of `keys` trusted from the key `given` (indexes into `keys`): it, each later key
 * its predecessor vouched for, each earlier key its successor acknowledged; null when the
 * list does not name `given`. */
export function trustedRun(keys: ListedKey[], given: Uint8Array, subtle?: SubtleCrypto): Promise<{ first: number; last: number } | null>;
/** Throws VerificationError unless `next` extends `pinned` (`verified`: newest hour index verified). */
export function checkExtends(next: ListedKey[], pinned: ListedKey[], verified?: number | null): void;

export interface ChainEntry {
  hour: string;
  digest: string;
  prev: string;
  header: string;
  signature: string | null;
  key_id: string | null;
}

/** A checkpoint document (`GET /checkpoint`, a mirror's `checkpoint.json`). */
export interface CheckpointDocument {
  hour: string;
  header: string;
  made: number;
  signature: string;
  key_id?: string | null;
}

/** Every rejection below is a VerificationError naming the hour (or the key list) and
 * what failed; `unsigned` when there was no signature to check. */
export class Verifier {
  /** Rejects with MissingDependency where WebCrypto has no Ed25519, TypeError for a bad key. */
  static create(pubkeyHex: string, options?: { subtle?: SubtleCrypto }): Promise<Verifier>;
  /** Every key listed (the key given alone until `useKeys` adopts a list). */
  keys: ListedKey[];
  /** Adopts the well-known `keys`, trusting the run its signed successions lead to from
   * the key given; resolves to false for an absent or empty list (the key given alone, for
   * every hour), true once adopted. Rejects for a list that does not name the key given. */
  useKeys(listed: WellKnownKey[] | null | undefined): Promise<boolean>;
  /** The keys trusted, oldest first. */
  trustedKeys(): ListedKey[];
  /** The trusted key listed for the hour of index `index`; throws naming the key listed
   * when it is not trusted, or `named` (a key id) when the signature names another. */
  keyFor(index: number, name: string, named: string | null): ListedKey;
  /** Verifies one hour from its bytes, `Bloom-Prev-Header`, `Bloom-Signature` and document digest; resolves to its header. */
  check(
    hour: Date | string,
    bytes: Uint8Array,
    prevHex: string | null,
    signature: string | null,
    listedDigest?: string | null,
  ): Promise<Uint8Array>;
  /** Verifies a saved JSON document of a sealed hour offline with the headers its response
   * carried: decoding, count (`checkCount`), digest, signature and link. */
  checkDocument(doc: unknown, headers?: { prev?: string | null; signature?: string | null }): Promise<Uint8Array>;
  /** Verifies a derived form's signature (`Bloom-Signature` or its `.sig` sidecar) over the
   * hour's chain `header` (32 bytes) and its binary body (of `.ribbon.json`: the bytes its
   * `filter` decodes to). */
  checkForm(form: "exact" | "ribbon" | "ribbon2", hour: Date | string, bytes: Uint8Array, header: Uint8Array, signature: string | null): Promise<void>;
  /** `checkForm("exact", ...)`. */
  checkExact(hour: Date | string, bytes: Uint8Array, header: Uint8Array, signature: string | null): Promise<void>;
  /** Checks a paged body's header read for `hour` (a PagesHeader or its 72 bytes): it names
   * that hour, a signing key (else VerificationError `unsigned`) listed for the hour, and
   * the hour's chain header where this verifier checked it. Resolves to the key listed. */
  checkPagesHeader(hour: Date | string, header: PagesHeader | Uint8Array): Promise<ListedKey>;
  /** Verifies page `p` from its slot's bytes: the header as `checkPagesHeader`, then its
   * signature over "bloomcast-page-v1" || hour index || the body's chain header ||
   * SHA-256(`signedPage`) by the key listed for the hour (a zero signature: `unsigned`). */
  checkPage(hour: Date | string, header: PagesHeader | Uint8Array, p: number, slot: Uint8Array): Promise<void>;
  /** Verifies a checkpoint under the trusted key listed for its hour, and its header
   * against the chain's when that hour was verified here. */
  checkCheckpoint(doc: CheckpointDocument): Promise<{ hour: string; header: Uint8Array; made: number; keyId: string }>;
  /** Verifies a version of the open hour by its `Bloom-Open-Signature`, made at most
   * `freshness` seconds before `now` (Unix seconds; an older one is refused, `outdated`);
   * resolves to its `made`. */
  checkOpen(hour: Date | string, bytes: Uint8Array, signature: string | null, now: number, freshness: number, listedDigest?: string | null): Promise<number>;
  /** Verifies the bytes of an hour whose header was verified here already (`check`,
   * `checkChain`); resolves to that header. */
  checkListed(hour: Date | string, bytes: Uint8Array, listedDigest?: string | null): Promise<Uint8Array>;
  /** The header of an hour verified with `check` or `checkChain`, or null. */
  headerOf(hour: Date | string): Uint8Array | null;
  /** Verifies a `/chain` listing, oldest first; resolves to hour → digest. */
  checkChain(entries: ChainEntry[]): Promise<Map<string, Uint8Array>>;
}
