// Types for verify.js (verifiable history, PROTOCOL.md section 11; WebCrypto Ed25519).
import { VerificationError, MissingDependency } from "./bloomcast.js";

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
/** The 90 bytes an exact body's signature covers: domain, hour index (8 bytes big-endian), chain header, SHA-256(body). */
export function exactMessage(index: number, header: Uint8Array, bodyDigest: Uint8Array): Uint8Array;
/** The first 8 bytes of SHA-256 of a public key, 16 hex digits. */
export function keyId(publicKey: Uint8Array, subtle?: SubtleCrypto): Promise<string>;
/** A `Bloom-Signature` value; `keyId` null when the value names none. */
export function parseSignature(value: string | null | undefined): { signature: string | null; keyId: string | null };

/** One key of the publisher's list, hours as indexes (`last` null for the current key). */
export interface ListedKey { first: number; last: number | null; publicKey: Uint8Array; id: string }
export interface WellKnownKey { id: string; public_key: string; first_hour: string; last_hour: string | null }
/** Checks the well-known `keys`; rejects with VerificationError for a list to refuse. */
export function parseKeys(listed: WellKnownKey[], subtle?: SubtleCrypto): Promise<ListedKey[]>;
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

export class Verifier {
  /** Rejects with MissingDependency where WebCrypto has no Ed25519, TypeError for a bad key. */
  static create(pubkeyHex: string, options?: { subtle?: SubtleCrypto }): Promise<Verifier>;
  keys: ListedKey[];
  /** Adopts the well-known `keys` if they name the key given; resolves to whether adopted. */
  useKeys(listed: WellKnownKey[] | null | undefined): Promise<boolean>;
  /** Verifies one hour from its bytes, `Bloom-Prev-Header`, `Bloom-Signature` and document digest; resolves to its header. */
  check(
    hour: Date | string,
    bytes: Uint8Array,
    prevHex: string | null,
    signature: string | null,
    listedDigest?: string | null,
  ): Promise<Uint8Array>;
  /** Verifies an exact body's `Bloom-Signature` over the hour's chain `header` (32 bytes); rejects with VerificationError naming the hour. */
  checkExact(hour: Date | string, bytes: Uint8Array, header: Uint8Array, signature: string | null): Promise<void>;
  /** The header of an hour verified with `check`, or null. */
  headerOf(hour: Date | string): Uint8Array | null;
  /** Verifies a `/chain` listing, oldest first; resolves to hour → digest. */
  checkChain(entries: ChainEntry[]): Promise<Map<string, Uint8Array>>;
}
