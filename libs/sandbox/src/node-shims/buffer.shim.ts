// Node's `buffer` for packages bundled into the sandbox: a compact Buffer over Uint8Array with the
// encodings, factories and integer/float accessors popular packages use. Written CommonJS-style
// (`export =`) because that is the shape `require('buffer')` has in Node.
//
// Kept hand-written rather than the `buffer` package (6.0.3, checked against node-shims.spec.ts):
// it has no `base64url` encoding (Unknown encoding, where JWT and webhook libraries need it), it
// decodes lenient hex differently from Node ('0g12' -> [0x00, 0x12], Node: []), and bundled it is
// 67.6 kB against this file's 20.3 kB (esbuild --bundle --platform=browser, unminified).

type Encoding = 'utf8' | 'hex' | 'base64' | 'base64url' | 'latin1' | 'ascii' | 'utf16le';
type BufferSource = ArrayBuffer | ArrayBufferView;

const CHUNK = 8192;
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
// Node decodes both alphabets whichever encoding was named, and skips what is neither.
const BASE64_VALUES = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++) {
  BASE64_VALUES[BASE64.charCodeAt(i)] = i;
  BASE64_VALUES[BASE64URL.charCodeAt(i)] = i;
}
const HEX = Array.from({ length: 256 }, (_, i) => (i < 16 ? '0' : '') + i.toString(16));
const K_MAX_LENGTH = 0x7fffffff;

let utf8Encoder: InstanceType<typeof TextEncoder> | null = null;
let utf8Decoder: InstanceType<typeof TextDecoder> | null = null;

function normalizeEncoding(encoding: unknown): Encoding {
  if (encoding === undefined || encoding === null) return 'utf8';
  switch (String(encoding).toLowerCase()) {
    case 'utf8':
    case 'utf-8':
      return 'utf8';
    case 'hex':
      return 'hex';
    case 'base64':
      return 'base64';
    case 'base64url':
      return 'base64url';
    case 'latin1':
    case 'binary':
      return 'latin1';
    case 'ascii':
      return 'ascii';
    case 'utf16le':
    case 'utf-16le':
    case 'ucs2':
    case 'ucs-2':
      return 'utf16le';
  }
  throw new TypeError(`Unknown encoding: ${String(encoding)}`);
}

function isEncoding(encoding: unknown): boolean {
  try {
    return typeof encoding === 'string' && normalizeEncoding(encoding) !== undefined;
  } catch {
    return false;
  }
}

function encode(text: string, encoding: Encoding): Uint8Array {
  switch (encoding) {
    case 'utf8':
      return (utf8Encoder ??= new TextEncoder()).encode(text);
    case 'latin1':
    case 'ascii': {
      const out = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
      return out;
    }
    case 'utf16le': {
      const out = new Uint8Array(text.length * 2);
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        out[i * 2] = c & 0xff;
        out[i * 2 + 1] = c >> 8;
      }
      return out;
    }
    case 'hex': {
      // Like Node: decoding stops at the first pair that is not hex.
      const out = new Uint8Array(text.length >>> 1);
      let n = 0;
      for (; n < out.length; n++) {
        const pair = text.slice(n * 2, n * 2 + 2);
        if (!/^[0-9a-fA-F]{2}$/.test(pair)) break;
        out[n] = parseInt(pair, 16);
      }
      return n === out.length ? out : out.slice(0, n);
    }
    case 'base64':
    case 'base64url': {
      const out = new Uint8Array(Math.ceil((text.length * 3) / 4));
      let o = 0;
      let bits = 0;
      let acc = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 61) break; // '=' ends the data
        const v = c < 128 ? BASE64_VALUES[c] : -1;
        if (v < 0) continue;
        acc = ((acc << 6) | v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          out[o++] = (acc >> bits) & 0xff;
        }
      }
      return out.slice(0, o);
    }
  }
}

function latin1Of(bytes: Uint8Array, mask: number): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    const chunk = bytes.subarray(i, i + CHUNK);
    out += String.fromCharCode.apply(null, (mask === 0xff ? chunk : chunk.map((b) => b & mask)) as unknown as number[]);
  }
  return out;
}

function decode(bytes: Uint8Array, encoding: Encoding): string {
  switch (encoding) {
    case 'utf8':
      return (utf8Decoder ??= new TextDecoder()).decode(bytes);
    case 'latin1':
      return latin1Of(bytes, 0xff);
    case 'ascii':
      return latin1Of(bytes, 0x7f);
    case 'utf16le': {
      let out = '';
      for (let i = 0; i + 1 < bytes.length; i += 2) out += String.fromCharCode(bytes[i] | (bytes[i + 1] << 8));
      return out;
    }
    case 'hex': {
      let out = '';
      for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
      return out;
    }
    case 'base64':
    case 'base64url': {
      const alphabet = encoding === 'base64' ? BASE64 : BASE64URL;
      let out = '';
      let i = 0;
      for (; i + 2 < bytes.length; i += 3) {
        const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
        out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
      }
      const pad = encoding === 'base64';
      if (bytes.length - i === 1) {
        const n = bytes[i] << 16;
        out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + (pad ? '==' : '');
      } else if (bytes.length - i === 2) {
        const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
        out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + (pad ? '=' : '');
      }
      return out;
    }
  }
}

function isArrayBuffer(value: unknown): value is ArrayBuffer {
  return value instanceof ArrayBuffer || Object.prototype.toString.call(value) === '[object ArrayBuffer]' ||
    Object.prototype.toString.call(value) === '[object SharedArrayBuffer]';
}

function bytesOf(value: BufferSource): Uint8Array {
  return value instanceof Uint8Array ? value : ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : new Uint8Array(value);
}

function clampRange(length: number, start: unknown, end: unknown): [number, number] {
  let s = start === undefined ? 0 : Math.trunc(Number(start)) || 0;
  let e = end === undefined ? length : Math.trunc(Number(end)) || 0;
  if (s < 0) s = Math.max(0, length + s);
  if (e < 0) e = Math.max(0, length + e);
  s = Math.min(s, length);
  e = Math.min(Math.max(e, s), length);
  return [s, e];
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from: number, last: boolean): number {
  if (needle.length === 0) return last ? Math.min(from, haystack.length) : Math.min(from, haystack.length);
  const step = last ? -1 : 1;
  for (let i = last ? Math.min(from, haystack.length - needle.length) : from; last ? i >= 0 : i <= haystack.length - needle.length; i += step) {
    let j = 0;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function checkSize(size: number): number {
  if (typeof size !== 'number' || !(size >= 0) || size > K_MAX_LENGTH) {
    throw new RangeError(`The argument 'size' is invalid. Received ${String(size)}`);
  }
  return size;
}

/** Bytes of a string (in `encoding`), a copy of an array or view, or a view of an ArrayBuffer. */
function from(value: unknown, encodingOrOffset?: unknown, length?: unknown): FastBuffer {
  if (typeof value === 'string') return new FastBuffer(value, encodingOrOffset);
  if (isArrayBuffer(value)) return new FastBuffer(value, encodingOrOffset, length);
  if (ArrayBuffer.isView(value)) return new FastBuffer(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
  if (Array.isArray(value)) return new FastBuffer(value);
  if (value !== null && typeof value === 'object') {
    const serialized = value as { type?: unknown; data?: unknown; length?: unknown };
    if (serialized.type === 'Buffer' && Array.isArray(serialized.data)) return new FastBuffer(serialized.data);
    const primitive = (value as { valueOf?: () => unknown }).valueOf?.();
    if (primitive !== value && (typeof primitive === 'string' || isArrayBuffer(primitive))) return from(primitive, encodingOrOffset, length);
    if (typeof serialized.length === 'number') return new FastBuffer(value as ArrayLike<number>);
  }
  throw new TypeError('The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object.');
}

function alloc(size: number, fill?: string | number | Uint8Array, encoding?: string): FastBuffer {
  const buffer = new FastBuffer(checkSize(size));
  if (fill !== undefined && fill !== 0 && size > 0) buffer.fill(fill, 0, size, encoding);
  return buffer;
}

function allocUnsafe(size: number): FastBuffer {
  return new FastBuffer(checkSize(size));
}

function byteLength(value: string | BufferSource, encoding?: string): number {
  if (typeof value !== 'string') return bytesOf(value).byteLength;
  const enc = normalizeEncoding(encoding);
  if (enc === 'latin1' || enc === 'ascii') return value.length;
  if (enc === 'utf16le') return value.length * 2;
  // Like Node, hex and base64 lengths come from the text's length, not from decoding it.
  if (enc === 'hex') return value.length >>> 1;
  if (enc === 'base64' || enc === 'base64url') {
    let end = value.length;
    for (let pad = 0; pad < 2 && end > 0 && value.charCodeAt(end - 1) === 61; pad++) end--;
    return (end * 3) >>> 2;
  }
  return encode(value, enc).length;
}

function concat(list: readonly Uint8Array[], totalLength?: number): FastBuffer {
  if (!Array.isArray(list)) throw new TypeError('The "list" argument must be an instance of Array.');
  const total = totalLength ?? list.reduce((n, b) => n + b.length, 0);
  const out = alloc(total);
  let offset = 0;
  for (const item of list) {
    if (offset >= total) break;
    const bytes = bytesOf(item);
    out.set(bytes.subarray(0, total - offset), offset);
    offset += Math.min(bytes.length, total - offset);
  }
  return out;
}

function compare(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Buffer instances: a Node-compatible subset over Uint8Array (views share memory, as in Node). */
class FastBuffer extends Uint8Array {
  // Also what TypedArray methods (`subarray`, `map`...) call through Symbol.species, so the
  // `(length)` and `(arrayBuffer, byteOffset, length)` forms must behave exactly as Uint8Array's.
  constructor(value?: unknown, encodingOrOffset?: unknown, length?: unknown) {
    if (typeof value === 'number') super(value);
    else if (typeof value === 'string') super(encode(value, normalizeEncoding(encodingOrOffset)));
    else if (isArrayBuffer(value)) super(value, Number(encodingOrOffset ?? 0), length === undefined ? undefined : Number(length));
    else super((value ?? 0) as ArrayLike<number>);
  }

  override toString(encoding?: string, start?: number, end?: number): string {
    const [s, e] = clampRange(this.length, start, end);
    return decode(s === 0 && e === this.length ? this : this.subarray(s, e), normalizeEncoding(encoding));
  }

  override toLocaleString(): string {
    return this.toString();
  }

  toJSON(): { type: 'Buffer'; data: number[] } {
    return { type: 'Buffer', data: Array.from(this) };
  }

  equals(other: Uint8Array): boolean {
    if (!(other instanceof Uint8Array)) throw new TypeError('The "otherBuffer" argument must be an instance of Buffer or Uint8Array.');
    return compare(this, other) === 0;
  }

  compare(target: Uint8Array, targetStart = 0, targetEnd = target.length, sourceStart = 0, sourceEnd = this.length): number {
    return compare(this.subarray(sourceStart, sourceEnd), target.subarray(targetStart, targetEnd));
  }

  /** Unlike Uint8Array's, Node's slice is a view sharing memory. */
  override slice(start?: number, end?: number): FastBuffer {
    return this.subarray(start, end) as FastBuffer;
  }

  copy(target: Uint8Array, targetStart = 0, sourceStart = 0, sourceEnd = this.length): number {
    const [s, e] = clampRange(this.length, sourceStart, sourceEnd);
    const count = Math.max(0, Math.min(e - s, target.length - targetStart));
    target.set(this.subarray(s, s + count), targetStart);
    return count;
  }

  write(text: string, offsetOrEncoding?: number | string, lengthOrEncoding?: number | string, encoding?: string): number {
    let offset = 0;
    let length = this.length;
    let enc = encoding;
    if (typeof offsetOrEncoding === 'string') enc = offsetOrEncoding;
    else {
      offset = offsetOrEncoding ?? 0;
      if (typeof lengthOrEncoding === 'string') enc = lengthOrEncoding;
      else if (lengthOrEncoding !== undefined) length = lengthOrEncoding;
    }
    const bytes = encode(String(text), normalizeEncoding(enc));
    const count = Math.max(0, Math.min(bytes.length, length, this.length - offset));
    this.set(bytes.subarray(0, count), offset);
    return count;
  }

  override fill(value: string | number | Uint8Array, offset?: number | string, end?: number, encoding?: string): this {
    if (typeof offset === 'string') {
      encoding = offset;
      offset = 0;
    }
    const [s, e] = clampRange(this.length, offset, end);
    if (typeof value === 'number') return super.fill(value & 255, s, e);
    const pattern = typeof value === 'string' ? encode(value, normalizeEncoding(encoding)) : bytesOf(value);
    if (pattern.length === 0) return super.fill(0, s, e);
    for (let i = s; i < e; i++) this[i] = pattern[(i - s) % pattern.length];
    return this;
  }

  override indexOf(value: number | string | Uint8Array, byteOffset = 0, encoding?: string): number {
    if (typeof value === 'number') return super.indexOf(value & 255, byteOffset);
    const from = byteOffset < 0 ? Math.max(0, this.length + byteOffset) : byteOffset;
    return indexOfBytes(this, typeof value === 'string' ? encode(value, normalizeEncoding(encoding)) : value, from, false);
  }

  override lastIndexOf(value: number | string | Uint8Array, byteOffset = this.length, encoding?: string): number {
    if (typeof value === 'number') return super.lastIndexOf(value & 255, byteOffset);
    const from = byteOffset < 0 ? this.length + byteOffset : byteOffset;
    return indexOfBytes(this, typeof value === 'string' ? encode(value, normalizeEncoding(encoding)) : value, from, true);
  }

  override includes(value: number | string | Uint8Array, byteOffset = 0, encoding?: string): boolean {
    return this.indexOf(value, byteOffset, encoding) !== -1;
  }

  private view(): DataView {
    return new DataView(this.buffer, this.byteOffset, this.byteLength);
  }

  readUInt8(offset = 0): number {
    return this.view().getUint8(offset);
  }
  readUInt16LE(offset = 0): number {
    return this.view().getUint16(offset, true);
  }
  readUInt16BE(offset = 0): number {
    return this.view().getUint16(offset, false);
  }
  readUInt32LE(offset = 0): number {
    return this.view().getUint32(offset, true);
  }
  readUInt32BE(offset = 0): number {
    return this.view().getUint32(offset, false);
  }
  readInt8(offset = 0): number {
    return this.view().getInt8(offset);
  }
  readInt16LE(offset = 0): number {
    return this.view().getInt16(offset, true);
  }
  readInt16BE(offset = 0): number {
    return this.view().getInt16(offset, false);
  }
  readInt32LE(offset = 0): number {
    return this.view().getInt32(offset, true);
  }
  readInt32BE(offset = 0): number {
    return this.view().getInt32(offset, false);
  }
  readFloatLE(offset = 0): number {
    return this.view().getFloat32(offset, true);
  }
  readFloatBE(offset = 0): number {
    return this.view().getFloat32(offset, false);
  }
  readDoubleLE(offset = 0): number {
    return this.view().getFloat64(offset, true);
  }
  readDoubleBE(offset = 0): number {
    return this.view().getFloat64(offset, false);
  }
  readBigUInt64LE(offset = 0): bigint {
    return this.view().getBigUint64(offset, true);
  }
  readBigUInt64BE(offset = 0): bigint {
    return this.view().getBigUint64(offset, false);
  }
  readBigInt64LE(offset = 0): bigint {
    return this.view().getBigInt64(offset, true);
  }
  readBigInt64BE(offset = 0): bigint {
    return this.view().getBigInt64(offset, false);
  }
  readUIntBE(offset: number, byteLength: number): number {
    let value = 0;
    for (let i = 0; i < byteLength; i++) value = value * 256 + this.checkedByte(offset + i);
    return value;
  }
  readUIntLE(offset: number, byteLength: number): number {
    let value = 0;
    for (let i = byteLength - 1; i >= 0; i--) value = value * 256 + this.checkedByte(offset + i);
    return value;
  }

  writeUInt8(value: number, offset = 0): number {
    this.view().setUint8(offset, value);
    return offset + 1;
  }
  writeUInt16LE(value: number, offset = 0): number {
    this.view().setUint16(offset, value, true);
    return offset + 2;
  }
  writeUInt16BE(value: number, offset = 0): number {
    this.view().setUint16(offset, value, false);
    return offset + 2;
  }
  writeUInt32LE(value: number, offset = 0): number {
    this.view().setUint32(offset, value, true);
    return offset + 4;
  }
  writeUInt32BE(value: number, offset = 0): number {
    this.view().setUint32(offset, value, false);
    return offset + 4;
  }
  writeInt8(value: number, offset = 0): number {
    this.view().setInt8(offset, value);
    return offset + 1;
  }
  writeInt16LE(value: number, offset = 0): number {
    this.view().setInt16(offset, value, true);
    return offset + 2;
  }
  writeInt16BE(value: number, offset = 0): number {
    this.view().setInt16(offset, value, false);
    return offset + 2;
  }
  writeInt32LE(value: number, offset = 0): number {
    this.view().setInt32(offset, value, true);
    return offset + 4;
  }
  writeInt32BE(value: number, offset = 0): number {
    this.view().setInt32(offset, value, false);
    return offset + 4;
  }
  writeFloatLE(value: number, offset = 0): number {
    this.view().setFloat32(offset, value, true);
    return offset + 4;
  }
  writeFloatBE(value: number, offset = 0): number {
    this.view().setFloat32(offset, value, false);
    return offset + 4;
  }
  writeDoubleLE(value: number, offset = 0): number {
    this.view().setFloat64(offset, value, true);
    return offset + 8;
  }
  writeDoubleBE(value: number, offset = 0): number {
    this.view().setFloat64(offset, value, false);
    return offset + 8;
  }
  writeBigUInt64LE(value: bigint, offset = 0): number {
    this.view().setBigUint64(offset, value, true);
    return offset + 8;
  }
  writeBigUInt64BE(value: bigint, offset = 0): number {
    this.view().setBigUint64(offset, value, false);
    return offset + 8;
  }

  private checkedByte(index: number): number {
    if (!(index >= 0 && index < this.length)) throw new RangeError(`The value of "offset" is out of range. Received ${index}`);
    return this[index];
  }
}

// Node has lower-case aliases (readUint8...) for every unsigned accessor.
interface FastBuffer {
  readUint8: FastBuffer['readUInt8'];
  readUint16LE: FastBuffer['readUInt16LE'];
  readUint16BE: FastBuffer['readUInt16BE'];
  readUint32LE: FastBuffer['readUInt32LE'];
  readUint32BE: FastBuffer['readUInt32BE'];
  readUintBE: FastBuffer['readUIntBE'];
  readUintLE: FastBuffer['readUIntLE'];
  readBigUint64LE: FastBuffer['readBigUInt64LE'];
  readBigUint64BE: FastBuffer['readBigUInt64BE'];
  writeUint8: FastBuffer['writeUInt8'];
  writeUint16LE: FastBuffer['writeUInt16LE'];
  writeUint16BE: FastBuffer['writeUInt16BE'];
  writeUint32LE: FastBuffer['writeUInt32LE'];
  writeUint32BE: FastBuffer['writeUInt32BE'];
  writeBigUint64LE: FastBuffer['writeBigUInt64LE'];
  writeBigUint64BE: FastBuffer['writeBigUInt64BE'];
}
for (const name of Object.getOwnPropertyNames(FastBuffer.prototype)) {
  const alias = name.replace(/^(read|write)(Big)?UInt/, '$1$2Uint');
  if (alias !== name) Object.defineProperty(FastBuffer.prototype, alias, Object.getOwnPropertyDescriptor(FastBuffer.prototype, name) as PropertyDescriptor);
}

interface BufferConstructor {
  new (value?: unknown, encodingOrOffset?: unknown, length?: unknown): FastBuffer;
  (value?: unknown, encodingOrOffset?: unknown, length?: unknown): FastBuffer;
  prototype: FastBuffer;
  poolSize: number;
  from: typeof from;
  alloc: typeof alloc;
  allocUnsafe: typeof allocUnsafe;
  allocUnsafeSlow: typeof allocUnsafe;
  isBuffer(value: unknown): value is FastBuffer;
  isEncoding(encoding: unknown): boolean;
  byteLength: typeof byteLength;
  concat: typeof concat;
  compare: typeof compare;
}

// Node's Buffer is a function that also works without `new` (old packages and safer-buffer call
// `Buffer(...)`) and whose statics are enumerable (copied with for...in). It shares its prototype
// with the instances' class, so `instanceof Buffer` holds and typed-array methods that build new
// arrays through `constructor[Symbol.species]` get Buffers.
const Buffer = function Buffer(value?: unknown, encodingOrOffset?: unknown, length?: unknown): FastBuffer {
  return new FastBuffer(value, encodingOrOffset, length);
} as unknown as BufferConstructor;
Object.setPrototypeOf(Buffer, Uint8Array);
Buffer.prototype = FastBuffer.prototype;
Object.defineProperty(FastBuffer.prototype, 'constructor', { value: Buffer, writable: true, configurable: true });
Object.assign(Buffer, {
  poolSize: 8192,
  from,
  alloc,
  allocUnsafe,
  allocUnsafeSlow: allocUnsafe,
  isBuffer: (value: unknown): boolean => value instanceof FastBuffer,
  isEncoding,
  byteLength,
  concat,
  compare,
});

export = {
  Buffer,
  SlowBuffer: Buffer,
  kMaxLength: K_MAX_LENGTH,
  kStringMaxLength: 0x1fffffe8,
  constants: { MAX_LENGTH: K_MAX_LENGTH, MAX_STRING_LENGTH: 0x1fffffe8 },
  INSPECT_MAX_BYTES: 50,
  atob: (data: string): string => globalThis.atob(data),
  btoa: (data: string): string => globalThis.btoa(data),
};
