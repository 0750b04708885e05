import { fromCharCode } from './guest-intrinsics.guest';
import { DOMException } from './web-events.guest';

const CHUNK = 8192;
const REPLACEMENT = 0xfffd;

/** A byte view over any BufferSource; throws TypeError for anything else. */
export function toBytes(source: unknown, what = 'argument'): Uint8Array {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  throw new TypeError(`${what} must be an ArrayBuffer or an ArrayBufferView`);
}

/** Bytes as a string of code units 0..255 (how bytes cross to the host cheaply). */
export function bytesToLatin1(bytes: Uint8Array): string {
  if (bytes.length <= CHUNK) return fromCharCode.apply(null, bytes as unknown as number[]);
  let out = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    out += fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return out;
}

/** The inverse of {@link bytesToLatin1}; code units above 255 keep their low byte. */
export function latin1ToBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function codeUnitsToString(units: number[] | Uint16Array, length: number): string {
  if (length <= CHUNK) return fromCharCode.apply(null, Array.prototype.slice.call(units, 0, length) as number[]);
  let out = '';
  for (let i = 0; i < length; i += CHUNK) {
    out += fromCharCode.apply(null, Array.prototype.slice.call(units, i, Math.min(length, i + CHUNK)) as number[]);
  }
  return out;
}

/** UTF-8 bytes of a string; lone surrogates become U+FFFD, as TextEncoder does. */
export function utf8Encode(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 3);
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[o++] = c;
      continue;
    }
    if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6);
      out[o++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        out[o++] = 0xf0 | (cp >> 18);
        out[o++] = 0x80 | ((cp >> 12) & 0x3f);
        out[o++] = 0x80 | ((cp >> 6) & 0x3f);
        out[o++] = 0x80 | (cp & 0x3f);
        continue;
      }
      c = REPLACEMENT;
    }
    out[o++] = 0xe0 | (c >> 12);
    out[o++] = 0x80 | ((c >> 6) & 0x3f);
    out[o++] = 0x80 | (c & 0x3f);
  }
  return out.slice(0, o);
}

/** Number of UTF-8 bytes of a string, without encoding it. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * WHATWG UTF-8 decoding: each maximal invalid subsequence becomes one U+FFFD (or a TypeError when
 * `fatal`). With `stream`, an incomplete sequence at the end is returned as `pending` instead.
 */
export function utf8Decode(bytes: Uint8Array, fatal: boolean, stream: boolean): { text: string; pending: Uint8Array | null } {
  const n = bytes.length;
  const units = new Uint16Array(n);
  let u = 0;
  let i = 0;
  let pending: Uint8Array | null = null;
  const replace = () => {
    if (fatal) throw new TypeError('The encoded data was not valid for encoding utf-8');
    units[u++] = REPLACEMENT;
  };
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      units[u++] = b;
      i++;
      continue;
    }
    let need: number;
    let cp: number;
    let lower = 0x80;
    let upper = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      if (b === 0xe0) lower = 0xa0;
      if (b === 0xed) upper = 0x9f;
      need = 2;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      if (b === 0xf0) lower = 0x90;
      if (b === 0xf4) upper = 0x8f;
      need = 3;
      cp = b & 0x07;
    } else {
      replace();
      i++;
      continue;
    }
    let j = i + 1;
    let got = 0;
    while (got < need && j < n) {
      const c = bytes[j];
      if (c < lower || c > upper) break;
      lower = 0x80;
      upper = 0xbf;
      cp = (cp << 6) | (c & 0x3f);
      got++;
      j++;
    }
    if (got === need) {
      if (cp > 0xffff) {
        cp -= 0x10000;
        units[u++] = 0xd800 + (cp >> 10);
        units[u++] = 0xdc00 + (cp & 0x3ff);
      } else units[u++] = cp;
      i = j;
    } else if (j >= n && stream) {
      pending = bytes.slice(i);
      break;
    } else {
      // The byte that broke the sequence is not consumed: it may start the next one.
      replace();
      i = j;
    }
  }
  return { text: codeUnitsToString(units, u), pending };
}

const WINDOWS_1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
  0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

const ENCODING_LABELS: Record<string, 'utf-8' | 'utf-16le' | 'windows-1252'> = {
  'utf-8': 'utf-8', utf8: 'utf-8', 'unicode-1-1-utf-8': 'utf-8',
  'utf-16le': 'utf-16le', 'utf-16': 'utf-16le',
  'windows-1252': 'windows-1252', latin1: 'windows-1252', 'iso-8859-1': 'windows-1252', ascii: 'windows-1252',
  'us-ascii': 'windows-1252', cp1252: 'windows-1252', 'iso8859-1': 'windows-1252', l1: 'windows-1252',
};

/** The web TextEncoder (UTF-8 only, as the standard says). */
export class TextEncoder {
  get encoding(): string {
    return 'utf-8';
  }

  encode(input = ''): Uint8Array {
    return utf8Encode(String(input));
  }

  encodeInto(source: string, destination: Uint8Array): { read: number; written: number } {
    const text = String(source);
    let read = 0;
    let written = 0;
    for (let i = 0; i < text.length; ) {
      const c = text.codePointAt(i) as number;
      const units = c > 0xffff ? 2 : 1;
      const bytes = utf8Encode(text.slice(i, i + units));
      if (written + bytes.length > destination.length) break;
      destination.set(bytes, written);
      written += bytes.length;
      read += units;
      i += units;
    }
    return { read, written };
  }
}

/** The web TextDecoder for utf-8 (streaming), utf-16le and windows-1252 (the latin1 labels). */
export class TextDecoder {
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  #pending: Uint8Array | null = null;
  #bomSeen = false;

  constructor(label = 'utf-8', options: { fatal?: boolean; ignoreBOM?: boolean } = {}) {
    const encoding = ENCODING_LABELS[String(label).trim().toLowerCase()];
    if (!encoding) throw new RangeError(`The "${String(label)}" encoding is not supported`);
    this.encoding = encoding;
    this.fatal = Boolean(options.fatal);
    this.ignoreBOM = Boolean(options.ignoreBOM);
  }

  decode(input?: unknown, options: { stream?: boolean } = {}): string {
    let bytes = input === undefined ? new Uint8Array(0) : toBytes(input, 'input');
    const stream = Boolean(options.stream);
    if (this.#pending) {
      const joined = new Uint8Array(this.#pending.length + bytes.length);
      joined.set(this.#pending);
      joined.set(bytes, this.#pending.length);
      bytes = joined;
      this.#pending = null;
    }
    let text: string;
    if (this.encoding === 'utf-8') {
      const decoded = utf8Decode(bytes, this.fatal, stream);
      this.#pending = decoded.pending;
      text = decoded.text;
    } else if (this.encoding === 'utf-16le') {
      text = this.#decodeUtf16(bytes, stream);
    } else {
      const units = new Uint16Array(bytes.length);
      for (let i = 0; i < bytes.length; i++) {
        const b = bytes[i];
        units[i] = b >= 0x80 && b <= 0x9f ? WINDOWS_1252_HIGH[b - 0x80] : b;
      }
      text = codeUnitsToString(units, units.length);
    }
    if (!this.ignoreBOM && !this.#bomSeen && text.length > 0) {
      this.#bomSeen = true;
      if (text.charCodeAt(0) === 0xfeff && this.encoding !== 'windows-1252') text = text.slice(1);
    }
    if (!stream) this.#bomSeen = false;
    return text;
  }

  #decodeUtf16(bytes: Uint8Array, stream: boolean): string {
    const even = bytes.length & ~1;
    if (even < bytes.length) {
      if (stream) this.#pending = bytes.slice(even);
      else if (this.fatal) throw new TypeError('The encoded data was not valid for encoding utf-16le');
    }
    const units: number[] = [];
    for (let i = 0; i < even; i += 2) units.push(bytes[i] | (bytes[i + 1] << 8));
    for (let i = 0; i < units.length; i++) {
      const c = units[i];
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < units.length && units[i + 1] >= 0xdc00 && units[i + 1] <= 0xdfff) {
        i++;
      } else if (c >= 0xd800 && c <= 0xdfff) {
        if (this.fatal) throw new TypeError('The encoded data was not valid for encoding utf-16le');
        units[i] = REPLACEMENT;
      }
    }
    if (even < bytes.length && !stream) units.push(REPLACEMENT);
    return codeUnitsToString(units, units.length);
  }
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUES = new Int16Array(128).fill(-1);
for (let i = 0; i < BASE64_ALPHABET.length; i++) BASE64_VALUES[BASE64_ALPHABET.charCodeAt(i)] = i;

/** Base64 of bytes (standard alphabet, padded). */
export function bytesToBase64(bytes: Uint8Array): string {
  const parts: string[] = [];
  let line = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    line += BASE64_ALPHABET[n >> 18] + BASE64_ALPHABET[(n >> 12) & 63] + BASE64_ALPHABET[(n >> 6) & 63] + BASE64_ALPHABET[n & 63];
    if (line.length >= CHUNK) {
      parts.push(line);
      line = '';
    }
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    line += BASE64_ALPHABET[n >> 18] + BASE64_ALPHABET[(n >> 12) & 63] + '==';
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    line += BASE64_ALPHABET[n >> 18] + BASE64_ALPHABET[(n >> 12) & 63] + BASE64_ALPHABET[(n >> 6) & 63] + '=';
  }
  parts.push(line);
  return parts.join('');
}

/** The web `btoa`: base64 of a string whose code units are all at most 0xFF. */
export function btoa(data: unknown): string {
  const text = String(data);
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0xff) throw new DOMException('The string to be encoded contains characters outside of the Latin1 range.', 'InvalidCharacterError');
  }
  return bytesToBase64(latin1ToBytes(text));
}

/** The web `atob`: forgiving base64 decoding to a latin1 string. */
export function atob(data: unknown): string {
  let text = String(data).replace(/[\t\n\f\r ]/g, '');
  if (text.length % 4 === 0) text = text.replace(/==?$/, '');
  if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) {
    throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
  }
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let o = 0;
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    buffer = (buffer << 6) | BASE64_VALUES[text.charCodeAt(i)];
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (buffer >> bits) & 0xff;
    }
  }
  return bytesToLatin1(out.subarray(0, o));
}
