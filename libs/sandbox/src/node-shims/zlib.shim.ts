// Node's `zlib` for packages bundled into the sandbox. The implementation (zlib-impl.shim.ts:
// browserify-zlib over pako) is evaluated on first use only: axios imports zlib and reads
// `zlib.constants` when it loads, but most components never receive a compressed body, and pako's
// code and tables would otherwise sit in every warm isolate. The constants are zlib's own values
// (its ABI, unchanged for decades), so reading them loads nothing. Brotli and zstd are not
// offered: `createBrotliDecompress` is undefined, so axios does not advertise `br`.

const constants = Object.freeze({
  Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_BLOCK: 5, Z_TREES: 6,
  Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3, Z_MEM_ERROR: -4, Z_BUF_ERROR: -5, Z_VERSION_ERROR: -6,
  Z_NO_COMPRESSION: 0, Z_BEST_SPEED: 1, Z_BEST_COMPRESSION: 9, Z_DEFAULT_COMPRESSION: -1,
  Z_FILTERED: 1, Z_HUFFMAN_ONLY: 2, Z_RLE: 3, Z_FIXED: 4, Z_DEFAULT_STRATEGY: 0,
  Z_BINARY: 0, Z_TEXT: 1, Z_UNKNOWN: 2, Z_DEFLATED: 8,
  Z_MIN_WINDOWBITS: 8, Z_MAX_WINDOWBITS: 15, Z_DEFAULT_WINDOWBITS: 15,
  Z_MIN_CHUNK: 64, Z_MAX_CHUNK: Infinity, Z_DEFAULT_CHUNK: 16384,
  Z_MIN_MEMLEVEL: 1, Z_MAX_MEMLEVEL: 9, Z_DEFAULT_MEMLEVEL: 8,
  Z_MIN_LEVEL: -1, Z_MAX_LEVEL: 9, Z_DEFAULT_LEVEL: -1,
});

/** What the implementation exports besides the constants (classes, factories, one-shot functions). */
const MEMBERS = [
  'Zlib', 'codes', 'Deflate', 'Inflate', 'Gzip', 'Gunzip', 'DeflateRaw', 'InflateRaw', 'Unzip',
  'createDeflate', 'createInflate', 'createDeflateRaw', 'createInflateRaw', 'createGzip', 'createGunzip', 'createUnzip',
  'deflate', 'deflateSync', 'gzip', 'gzipSync', 'deflateRaw', 'deflateRawSync', 'unzip', 'unzipSync',
  'inflate', 'inflateSync', 'gunzip', 'gunzipSync', 'inflateRaw', 'inflateRawSync',
];

let implementation: Record<string, unknown> | null = null;

function load(): Record<string, unknown> {
  implementation ??= require('sluice-node:zlib-impl') as Record<string, unknown>;
  return implementation;
}

const zlib: Record<string, unknown> = { constants };
for (const [name, value] of Object.entries(constants)) zlib[name] = value;
for (const name of MEMBERS) Object.defineProperty(zlib, name, { get: () => load()[name], enumerable: true });

export = zlib;
