import type { HostBindings } from './host-bindings.guest';
import { bytesToLatin1, latin1ToBytes, toBytes } from './web-encoding.guest';
import { DOMException } from './web-events.guest';

const POOL_SIZE = 4096;
const MAX_RANDOM_BYTES = 65536;
const DIGESTS = new Set(['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512']);

/** The guest's `crypto`: getRandomValues, randomUUID and subtle.digest, backed by the host. */
export interface GuestCrypto {
  getRandomValues<T extends ArrayBufferView>(array: T): T;
  randomUUID(): string;
  subtle: { digest(algorithm: unknown, data: unknown): Promise<ArrayBuffer> };
}

/**
 * Where the Node `crypto` shim bundled with packages finds hashing: a guest function under a
 * registered symbol, so no string-named global is added and the host Callback stays private.
 */
export const NODE_HASH_HOOK = Symbol.for('sluice.nodeHash');

const NODE_HASHES = new Set(['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512']);

/** Synchronous Node-style hash or HMAC of bytes, computed by the host. */
export function createNodeHash(host: Pick<HostBindings, 'nodeHash'>): (algorithm: unknown, data: unknown, key: unknown) => Uint8Array {
  return function nodeHash(algorithm, data, key) {
    if (typeof algorithm !== 'string' || !NODE_HASHES.has(algorithm)) throw new Error('Digest method not supported');
    const keyLatin1 = key === null || key === undefined ? null : bytesToLatin1(toBytes(key, 'key'));
    const digest = host.nodeHash(algorithm, bytesToLatin1(toBytes(data, 'data')), keyLatin1);
    if (digest === '') throw new Error('Digest method not supported');
    return latin1ToBytes(digest);
  };
}

/** Random bytes come from the host's CSPRNG in pooled blocks, so most calls do not cross. */
export function createCrypto(host: Pick<HostBindings, 'digest' | 'randomBytes'>): GuestCrypto {
  let pool: Uint8Array = new Uint8Array(0);
  let offset = 0;
  const take = (count: number): Uint8Array => {
    if (count > pool.length - offset) {
      pool = latin1ToBytes(host.randomBytes(Math.max(POOL_SIZE, count)));
      offset = 0;
    }
    const bytes = pool.slice(offset, offset + count);
    // Used bytes are wiped so the pool never hands the same randomness out twice.
    pool.fill(0, offset, offset + count);
    offset += count;
    return bytes;
  };

  return {
    getRandomValues<T extends ArrayBufferView>(array: T): T {
      const integer = array instanceof Int8Array || array instanceof Uint8Array || array instanceof Uint8ClampedArray ||
        array instanceof Int16Array || array instanceof Uint16Array || array instanceof Int32Array ||
        array instanceof Uint32Array || array instanceof BigInt64Array || array instanceof BigUint64Array;
      if (!integer) throw new DOMException('The data argument must be an integer-type TypedArray', 'TypeMismatchError');
      if (array.byteLength > MAX_RANDOM_BYTES) {
        throw new DOMException(`The ArrayBufferView's byte length (${array.byteLength}) exceeds ${MAX_RANDOM_BYTES}`, 'QuotaExceededError');
      }
      toBytes(array).set(take(array.byteLength));
      return array;
    },

    randomUUID(): string {
      const b = take(16);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let hex = '';
      for (let i = 0; i < 16; i++) {
        hex += (b[i] < 16 ? '0' : '') + b[i].toString(16);
        if (i === 3 || i === 5 || i === 7 || i === 9) hex += '-';
      }
      return hex;
    },

    subtle: {
      async digest(algorithm: unknown, data: unknown): Promise<ArrayBuffer> {
        const name = String(typeof algorithm === 'object' && algorithm !== null ? (algorithm as { name?: unknown }).name : algorithm).toUpperCase();
        if (!DIGESTS.has(name)) throw new DOMException(`Unrecognized algorithm name: ${name}`, 'NotSupportedError');
        const digest = latin1ToBytes(host.digest(name, bytesToLatin1(toBytes(data, 'data'))));
        return digest.buffer as ArrayBuffer;
      },
    },
  };
}
