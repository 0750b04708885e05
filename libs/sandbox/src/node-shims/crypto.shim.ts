// Node's `crypto` for packages bundled into the sandbox: hashing and HMAC computed by the host
// (synchronously, through a hook the guest runtime installs), randomness from the guest's web
// crypto. Ciphers, signatures and key derivation are not offered; they throw when called.
import bufferModule = require('./buffer.shim');

const { Buffer } = bufferModule;
type Buffer = InstanceType<typeof Buffer>;

/** Installed by the guest runtime (guest-runtime.guest.ts) on the global under this symbol. */
const NODE_HASH_HOOK = Symbol.for('sluice.nodeHash');
type NodeHashHook = (algorithm: string, data: Uint8Array, key: Uint8Array | null) => Uint8Array;

const HASHES = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];
const MAX_RANDOM_CHUNK = 65536;

function hook(): NodeHashHook {
  const found = (globalThis as unknown as Record<symbol, unknown>)[NODE_HASH_HOOK];
  if (typeof found !== 'function') throw new Error('crypto hashing is only available inside the sandbox');
  return found as NodeHashHook;
}

// Node accepts `SHA256`, `sha-256` and `RSA-SHA256` for the same digest.
function normalizeAlgorithm(algorithm: unknown): string {
  if (typeof algorithm !== 'string') throw new TypeError('The "algorithm" argument must be of type string');
  const name = algorithm.toLowerCase().replace(/^rsa-/, '').replace(/-/g, '');
  if (!HASHES.includes(name)) throw new Error('Digest method not supported');
  return name;
}

function bytesOf(data: unknown, encoding?: string, what = 'data'): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, encoding ?? 'utf8');
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`The "${what}" argument must be of type string or an instance of Buffer, TypedArray, or DataView.`);
}

/** Node's Hash and Hmac objects: `update(...)` any number of times, then one `digest(...)`. */
class Hash {
  private readonly chunks: Uint8Array[] = [];
  private finished = false;

  constructor(
    private readonly algorithm: string,
    private readonly key: Uint8Array | null,
  ) {}

  update(data: unknown, inputEncoding?: string): this {
    if (this.finished) throw new Error('Digest already called');
    // Copied: the caller may reuse its buffer before digest.
    this.chunks.push(bytesOf(data, inputEncoding).slice());
    return this;
  }

  digest(): Buffer;
  digest(encoding: string): string;
  digest(encoding?: string): Buffer | string {
    if (this.finished) throw new Error('Digest already called');
    this.finished = true;
    const data = Buffer.concat(this.chunks);
    this.chunks.length = 0;
    const out = Buffer.from(hook()(this.algorithm, data, this.key));
    return encoding === undefined || encoding === 'buffer' ? out : out.toString(encoding);
  }

  copy(): Hash {
    if (this.finished) throw new Error('Digest already called');
    const copy = new Hash(this.algorithm, this.key);
    for (const chunk of this.chunks) copy.chunks.push(chunk);
    return copy;
  }
}

function createHash(algorithm: string): Hash {
  return new Hash(normalizeAlgorithm(algorithm), null);
}

function createHmac(algorithm: string, key: unknown): Hash {
  return new Hash(normalizeAlgorithm(algorithm), bytesOf(key, undefined, 'key').slice());
}

function randomFillSync<T extends ArrayBufferView>(target: T, offset = 0, size?: number): T {
  const bytes = new Uint8Array(target.buffer, target.byteOffset, target.byteLength);
  const end = size === undefined ? bytes.length : offset + size;
  for (let i = offset; i < end; i += MAX_RANDOM_CHUNK) globalThis.crypto.getRandomValues(bytes.subarray(i, Math.min(end, i + MAX_RANDOM_CHUNK)));
  return target;
}

function randomBytes(size: number, callback?: (error: Error | null, bytes: Buffer) => void): Buffer {
  if (typeof size !== 'number' || !(size >= 0) || size > 2 ** 31 - 1) throw new RangeError(`The value of "size" is out of range. Received ${String(size)}`);
  const bytes = randomFillSync(Buffer.alloc(size));
  if (callback) queueMicrotask(() => callback(null, bytes));
  return bytes;
}

function randomInt(minOrMax: number, maxOrCallback?: number | ((error: Error | null, value: number) => void), callback?: (error: Error | null, value: number) => void): number {
  const [min, max] = typeof maxOrCallback === 'number' ? [minOrMax, maxOrCallback] : [0, minOrMax];
  const done = typeof maxOrCallback === 'function' ? maxOrCallback : callback;
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min || max - min > 2 ** 48) {
    throw new RangeError('The "max" argument must be greater than "min" and the range at most 2^48');
  }
  const range = max - min;
  // Rejection sampling over 48 random bits keeps every value equally likely.
  const limit = 2 ** 48 - (2 ** 48 % range);
  let value: number;
  do {
    const b = randomBytes(6);
    value = b.readUIntBE(0, 6);
  } while (value >= limit);
  const result = min + (value % range);
  if (done) queueMicrotask(() => done(null, result));
  return result;
}

function timingSafeEqual(a: ArrayBufferView, b: ArrayBufferView): boolean {
  const x = bytesOf(a, undefined, 'buf1');
  const y = bytesOf(b, undefined, 'buf2');
  if (x.length !== y.length) throw new RangeError('Input buffers must have the same byte length');
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

function notAvailable(name: string): () => never {
  return () => {
    throw new Error(`crypto.${name} is not available in the sandbox`);
  };
}

export = {
  createHash,
  createHmac,
  Hash,
  Hmac: Hash,
  getHashes: (): string[] => [...HASHES],
  randomBytes,
  pseudoRandomBytes: randomBytes,
  randomFillSync,
  randomInt,
  randomUUID: (): string => globalThis.crypto.randomUUID(),
  getRandomValues: <T extends ArrayBufferView>(array: T): T => globalThis.crypto.getRandomValues(array as unknown as Uint8Array) as unknown as T,
  timingSafeEqual,
  webcrypto: globalThis.crypto,
  subtle: globalThis.crypto?.subtle,
  createCipheriv: notAvailable('createCipheriv'),
  createDecipheriv: notAvailable('createDecipheriv'),
  createSign: notAvailable('createSign'),
  createVerify: notAvailable('createVerify'),
  sign: notAvailable('sign'),
  verify: notAvailable('verify'),
  pbkdf2: notAvailable('pbkdf2'),
  pbkdf2Sync: notAvailable('pbkdf2Sync'),
  scrypt: notAvailable('scrypt'),
  scryptSync: notAvailable('scryptSync'),
  hkdf: notAvailable('hkdf'),
  hkdfSync: notAvailable('hkdfSync'),
  generateKeyPair: notAvailable('generateKeyPair'),
  generateKeyPairSync: notAvailable('generateKeyPairSync'),
  createPublicKey: notAvailable('createPublicKey'),
  createPrivateKey: notAvailable('createPrivateKey'),
  createSecretKey: notAvailable('createSecretKey'),
  publicEncrypt: notAvailable('publicEncrypt'),
  privateDecrypt: notAvailable('privateDecrypt'),
  createDiffieHellman: notAvailable('createDiffieHellman'),
  createECDH: notAvailable('createECDH'),
};
