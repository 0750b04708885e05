// The body of Node's `zlib` (zlib.shim.ts loads it on first use): `browserify-zlib`, Node's zlib API
// over pako: deflate, inflate, gzip, gunzip, unzip and their raw forms, streaming and one-shot.
// Added here: `zlib.constants` (Node 7+). Brotli and zstd are not offered.
import zlib = require('browserify-zlib');

const source = zlib as unknown as Record<string, unknown>;
if (source.constants === undefined) {
  const constants: Record<string, number> = {};
  for (const key of Object.keys(source)) if (/^Z_[A-Z_]+$/.test(key) && typeof source[key] === 'number') constants[key] = source[key] as number;
  Object.defineProperty(source, 'constants', { value: Object.freeze(constants), enumerable: true });
}

export = zlib;
