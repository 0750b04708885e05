import { createHmac, hash } from 'node:crypto';
import { loadNativeLibrary } from './native-library';

/** `dist/native/lean-digest.node` (`libs/native/native/lean-digest.c`). */
interface LeanDigest {
  hmacSha256Key(key: Uint8Array): Buffer;
  hmacSha256Base64(state: Buffer, ...texts: string[]): string;
  sha1Into(text: string, out: Uint8Array): void;
}

/** The key of {@link hmacSha256Base64}, made once per secret by {@link hmacSha256Key}. */
export interface HmacSha256Key {
  /** The key's bytes (for `node:crypto` where the library is not used). */
  readonly key: Buffer;
  /** The library's state of HMAC-SHA256 with this key, its pads hashed; absent without the library. */
  readonly state?: Buffer;
}

let library: LeanDigest | null | undefined;

/**
 * The library where it is built and `SLUICE_LEAN_DIGEST` is `on` or unset; null with `off` or
 * without it (said once on stderr). Any other value is refused (a RangeError naming it; the
 * server's configuration refuses it at the start).
 */
function leanDigest(): LeanDigest | null {
  if (library !== undefined) return library;
  const setting = process.env.SLUICE_LEAN_DIGEST ?? '';
  if (setting !== '' && setting !== 'on' && setting !== 'off') {
    throw new RangeError(`SLUICE_LEAN_DIGEST must be "on" or "off", got "${setting}"`);
  }
  library = setting === 'off' ? null : loadNativeLibrary<LeanDigest>('lean-digest.node', 'digests: signatures and derived ids are made by node:crypto');
  return library;
}

/** True when digests are made by the library rather than `node:crypto` (for tests and benches). */
export function leanDigestInUse(): boolean {
  return leanDigest() !== null;
}

/**
 * The key of HMAC-SHA256 signatures with the bytes `key` (copied): with the library, its pads
 * already hashed, so a signature hashes only what it signs. Make it once per secret and keep it.
 */
export function hmacSha256Key(key: Uint8Array): HmacSha256Key {
  const lib = leanDigest();
  const copy = Buffer.from(key);
  return lib ? { key: copy, state: lib.hmacSha256Key(copy) } : { key: copy };
}

/**
 * Base64 (with padding) of HMAC-SHA256 of the UTF-8 of `first` then `second`, as
 * `createHmac('sha256', key).update(first).update(second).digest('base64')` gives it. Through
 * `node:crypto` each signature sets up OpenSSL's HMAC anew (its algorithm looked up by name and
 * fetched, three digest contexts): 1.6-1.8 us hot and 14-45 us cold a signature on these machines,
 * against 0.3 and about 3 us through the library (see `lean-digest.c`).
 */
export function hmacSha256Base64(key: HmacSha256Key, first: string, second: string): string {
  if (key.state !== undefined && library) return library.hmacSha256Base64(key.state, first, second);
  return createHmac('sha256', key.key).update(first).update(second).digest('base64');
}

/** SHA-1 of the UTF-8 of `text` into the first 20 bytes of `out` (as `hash('sha1', text)`). */
export function sha1Into(text: string, out: Uint8Array): void {
  const lib = leanDigest();
  if (lib) lib.sha1Into(text, out);
  else out.set(hash('sha1', text, 'buffer'));
}
