import * as nodeAssert from 'node:assert';
import { createHash, createHmac } from 'node:crypto';
import { constants as nodeZlibConstants } from 'node:zlib';
import { EventEmitter as NodeEmitter } from 'node:events';
import { posix as nodePath } from 'node:path';
import * as nodeQuerystring from 'node:querystring';
import * as nodeUrl from 'node:url';
import * as nodeUtil from 'node:util';
import { bundleComponent, COMPONENT_GLOBAL } from '../src/component.bundler';
import assertShim = require('../src/node-shims/assert.shim');
import bufferShim = require('../src/node-shims/buffer.shim');
import cryptoShim = require('../src/node-shims/crypto.shim');
import EventEmitter = require('../src/node-shims/events.shim');
import processShim = require('../src/node-shims/process.shim');
import querystringShim = require('../src/node-shims/querystring.shim');
import unavailableModule = require('../src/node-shims/unavailable.shim');
import urlShim = require('../src/node-shims/url.shim');
import utilShim = require('../src/node-shims/util.shim');

// The shims are plain TypeScript over web globals, so they are checked here against Node's own
// modules. In the sandbox the same code runs bundled with a package (see the int specs).

/**
 * A built-in as components get it: bundled (an npm polyfill's Node globals bound to the shims,
 * so `process.cwd()` is the sandbox's `/`) and evaluated here.
 */
async function bundledBuiltin<T>(module: string): Promise<T> {
  const { bundle } = await bundleComponent(`module.exports = require(${JSON.stringify(module)});`);
  return new Function(`${bundle}\nreturn ${COMPONENT_GLOBAL};`)() as T;
}

const ShimBuffer = bufferShim.Buffer;
const bytes = (b: Uint8Array) => Array.from(b);

describe('buffer shim', () => {
  const texts = ['', 'hello', 'héllo wörld', '☃ snow', '😀 emoji', 'a\u0000b', 'x'.repeat(10000)];
  const encodings = ['utf8', 'hex', 'base64', 'base64url', 'latin1', 'binary', 'ascii', 'utf16le', 'ucs2'] as const;

  it('encodes and decodes every encoding as Node does', () => {
    for (const text of texts) {
      for (const encoding of encodings) {
        const node = Buffer.from(text, 'utf8');
        // Node's bytes -> string in this encoding -> bytes again, through both implementations.
        const encoded = node.toString(encoding);
        expect(ShimBuffer.from(node).toString(encoding)).toBe(encoded);
        expect(bytes(ShimBuffer.from(encoded, encoding))).toEqual(bytes(Buffer.from(encoded, encoding)));
        expect(ShimBuffer.byteLength(text, encoding)).toBe(Buffer.byteLength(text, encoding));
      }
      expect(bytes(ShimBuffer.from(text))).toEqual(bytes(Buffer.from(text)));
    }
  });

  it('decodes lenient input as Node does (odd hex, unpadded and mixed base64)', () => {
    for (const [input, encoding] of [['abc', 'hex'], ['0g12', 'hex'], ['aGk', 'base64'], ['aGk=\n', 'base64'], ['-_-_', 'base64'], ['+/+/', 'base64url'], ['a b=c', 'base64']] as const) {
      expect(bytes(ShimBuffer.from(input, encoding))).toEqual(bytes(Buffer.from(input, encoding)));
    }
    expect(() => ShimBuffer.from('x', 'klingon')).toThrow(TypeError);
  });

  it('has Node factories and statics, callable with or without new', () => {
    expect(bytes(ShimBuffer.alloc(4, 'ab'))).toEqual(bytes(Buffer.alloc(4, 'ab')));
    expect(bytes(ShimBuffer.alloc(3, 7))).toEqual([7, 7, 7]);
    expect(ShimBuffer.allocUnsafe(5).length).toBe(5);
    expect(bytes(ShimBuffer.concat([ShimBuffer.from('ab'), new Uint8Array([1]), ShimBuffer.from('c')]))).toEqual(bytes(Buffer.concat([Buffer.from('ab'), new Uint8Array([1]), Buffer.from('c')])));
    expect(bytes(ShimBuffer.concat([ShimBuffer.from('abcdef')], 3))).toEqual(bytes(Buffer.from('abc')));
    expect(ShimBuffer.isBuffer(ShimBuffer.from('a'))).toBe(true);
    expect(ShimBuffer.isBuffer(new Uint8Array(1))).toBe(false);
    expect(ShimBuffer.isEncoding('UTF-8')).toBe(true);
    expect(ShimBuffer.isEncoding('nope')).toBe(false);
    expect(ShimBuffer.compare(ShimBuffer.from('a'), ShimBuffer.from('b'))).toBe(-1);
    expect(bytes(ShimBuffer.from({ type: 'Buffer', data: [1, 2] }))).toEqual([1, 2]);
    // safer-buffer and old packages call Buffer() without new and copy its statics with for...in.
    expect(ShimBuffer('hi').toString('hex')).toBe('6869');
    expect(Object.keys(ShimBuffer)).toEqual(expect.arrayContaining(['from', 'alloc', 'isBuffer', 'concat', 'byteLength']));
  });

  it('shares memory in slice/subarray and views of an ArrayBuffer, as Node does', () => {
    const b = ShimBuffer.from('hello');
    const view = b.slice(1, 3);
    view[0] = 0x45;
    expect(b.toString()).toBe('hEllo');
    expect(ShimBuffer.isBuffer(b.subarray(1))).toBe(true);
    expect(ShimBuffer.isBuffer(b.map((x) => x))).toBe(true);
    const ab = new ArrayBuffer(4);
    ShimBuffer.from(ab, 1, 2)[0] = 9;
    expect(new Uint8Array(ab)[1]).toBe(9);
    expect(b.toString('utf8', 1, 3)).toBe('El');
  });

  it('compares, copies, writes, fills and searches as Node does', () => {
    const a = ShimBuffer.from('abcabc');
    const n = Buffer.from('abcabc');
    expect(a.equals(ShimBuffer.from('abcabc'))).toBe(true);
    expect(a.equals(ShimBuffer.from('abc'))).toBe(false);
    expect(a.indexOf('ca')).toBe(n.indexOf('ca'));
    expect(a.indexOf(0x62, 2)).toBe(n.indexOf(0x62, 2));
    expect(a.lastIndexOf('b')).toBe(n.lastIndexOf('b'));
    expect(a.includes('cab')).toBe(true);
    const target = ShimBuffer.alloc(4);
    expect(a.copy(target, 1, 2)).toBe(n.copy(Buffer.alloc(4), 1, 2));
    expect(target.toString('latin1')).toBe('\u0000cab');
    const w = ShimBuffer.alloc(6);
    const nw = Buffer.alloc(6);
    expect(w.write('héllo', 1, 'utf8')).toBe(nw.write('héllo', 1, 'utf8'));
    expect(bytes(w)).toEqual(bytes(nw));
    expect(w.write('ff00', 'hex')).toBe(2);
    expect(bytes(ShimBuffer.alloc(5).fill('xy', 1))).toEqual(bytes(Buffer.alloc(5).fill('xy', 1)));
    expect(JSON.stringify(ShimBuffer.from([1, 2]))).toBe(JSON.stringify(Buffer.from([1, 2])));
  });

  it('reads and writes integers and floats as Node does', () => {
    const data = [0x01, 0xff, 0x80, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde];
    const s = ShimBuffer.from(data);
    const n = Buffer.from(data);
    for (const method of ['readUInt8', 'readUInt16LE', 'readUInt16BE', 'readUInt32LE', 'readUInt32BE', 'readInt8', 'readInt16LE', 'readInt16BE', 'readInt32LE',
      'readInt32BE', 'readFloatLE', 'readDoubleBE', 'readBigUInt64LE', 'readBigInt64BE', 'readUint16LE', 'readUint32BE'] as const) {
      for (const offset of [0, 1, 3]) expect([method, s[method](offset)]).toEqual([method, n[method](offset)]);
    }
    expect(s.readUIntBE(1, 3)).toBe(n.readUIntBE(1, 3));
    expect(s.readUIntLE(2, 6)).toBe(n.readUIntLE(2, 6));
    const w = ShimBuffer.alloc(16);
    const nw = Buffer.alloc(16);
    expect(w.writeUInt32BE(0xdeadbeef, 0)).toBe(nw.writeUInt32BE(0xdeadbeef, 0));
    w.writeInt16LE(-2, 4);
    nw.writeInt16LE(-2, 4);
    w.writeDoubleLE(Math.PI, 6);
    nw.writeDoubleLE(Math.PI, 6);
    w.writeUint8(200, 14);
    nw.writeUint8(200, 14);
    expect(bytes(w)).toEqual(bytes(nw));
    expect(() => s.readUInt32LE(10)).toThrow(RangeError);
  });
});

describe('events shim', () => {
  it('calls listeners in order, once only once, prepended first, and removes the latest instance', () => {
    const shim = new EventEmitter();
    const node = new NodeEmitter();
    for (const emitter of [shim, node] as unknown as NodeEmitter[]) {
      const log: string[] = [];
      const a = (x: unknown) => log.push(`a${x}`);
      emitter.on('e', a);
      emitter.once('e', (x) => log.push(`once${x}`));
      emitter.prependListener('e', (x) => log.push(`first${x}`));
      emitter.on('e', a);
      emitter.emit('e', 1);
      emitter.removeListener('e', a);
      emitter.emit('e', 2);
      expect([log, emitter.listenerCount('e'), emitter.eventNames()]).toEqual([
        ['first1', 'a1', 'once1', 'a1', 'first2', 'a2'], 2, ['e'],
      ]);
    }
  });

  it('throws an unhandled error event and passes context otherwise', () => {
    const emitter = new EventEmitter();
    expect(() => emitter.emit('error', new Error('boom'))).toThrow('boom');
    expect(() => emitter.emit('error', 'text')).toThrow('Unhandled error. (text)');
    const seen: unknown[] = [];
    emitter.on('error', (e) => seen.push(e));
    expect(emitter.emit('error', 'handled')).toBe(true);
    expect(emitter.emit('nobody')).toBe(false);
    expect(seen).toEqual(['handled']);
  });

  it('lets errorMonitor listeners see every error event first, without handling it', () => {
    const emitter = new EventEmitter();
    const seen: unknown[] = [];
    emitter.on(EventEmitter.errorMonitor, (e) => seen.push(['monitor', e]));
    expect(() => emitter.emit('error', new Error('boom'))).toThrow('boom');
    emitter.on('error', (e) => seen.push(['handler', e]));
    emitter.emit('error', 'late');
    expect(seen).toEqual([['monitor', new Error('boom')], ['monitor', 'late'], ['handler', 'late']]);
    expect(typeof EventEmitter.errorMonitor).toBe('symbol');
  });

  it('is what require("events") is, and can be subclassed the old way', () => {
    expect(EventEmitter.EventEmitter).toBe(EventEmitter);
    function Legacy(this: NodeEmitter & { ready: boolean }) {
      EventEmitter.call(this as never);
      this.ready = true;
    }
    utilShim.inherits(Legacy as never, EventEmitter as never);
    const legacy = new (Legacy as unknown as new () => NodeEmitter & { ready: boolean })();
    let got: unknown;
    legacy.on('x', (v) => (got = v));
    legacy.emit('x', 5);
    expect([legacy.ready, got, legacy instanceof (EventEmitter as unknown as typeof NodeEmitter)]).toEqual([true, 5, true]);
    class Modern extends (EventEmitter as unknown as typeof NodeEmitter) {}
    const modern = new Modern();
    modern.on('y', () => undefined);
    expect(modern.listenerCount('y')).toBe(1);
  });

  it('resolves EventEmitter.once with the event arguments', async () => {
    const emitter = new EventEmitter();
    const pending = EventEmitter.once(emitter, 'ready');
    emitter.emit('ready', 1, 2);
    await expect(pending).resolves.toEqual([1, 2]);
  });
});

describe('util shim', () => {
  it('promisifies callbacks and honours promisify.custom', async () => {
    const cb = (a: number, done: (e: unknown, v?: number) => void) => done(null, a * 2);
    await expect(utilShim.promisify(cb as never)(21)).resolves.toBe(42);
    const fails = (done: (e: unknown) => void) => done(new Error('no'));
    await expect(utilShim.promisify(fails as never)()).rejects.toThrow('no');
    const custom = Object.assign(() => undefined, { [utilShim.promisify.custom]: () => Promise.resolve('custom') });
    await expect(utilShim.promisify(custom)()).resolves.toBe('custom');
    expect(utilShim.promisify.custom).toBe(nodeUtil.promisify.custom);
  });

  it('formats like Node for the common specifiers', () => {
    for (const args of [['%s is %d years', 'Bob', 42], ['%j', { a: 1 }], ['100%% sure'], ['a', 'b', 3], ['%i', 3.9], [{ a: [1, 2] }]]) {
      expect(utilShim.format(...args)).toBe(nodeUtil.format(...args));
    }
    expect(utilShim.inspect('text')).toBe(nodeUtil.inspect('text'));
    expect(utilShim.inspect({ a: { b: 1 } })).toBe(nodeUtil.inspect({ a: { b: 1 } }));
  });

  it('answers the type checks', () => {
    expect(utilShim.types.isDate(new Date())).toBe(true);
    expect(utilShim.types.isDate({})).toBe(false);
    expect(utilShim.types.isRegExp(/x/)).toBe(true);
    expect(utilShim.types.isPromise(Promise.resolve())).toBe(true);
    expect(utilShim.types.isUint8Array(new Uint8Array(1))).toBe(true);
    expect(utilShim.types.isAsyncFunction(async () => undefined)).toBe(true);
    expect(utilShim.isDeepStrictEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(utilShim.isDeepStrictEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(utilShim.TextEncoder).toBe(globalThis.TextEncoder);
  });
});

describe('path shim', () => {
  let pathShim: typeof nodePath;
  beforeAll(async () => {
    pathShim = await bundledBuiltin<typeof nodePath>('path');
  });
  const inputs = ['', '.', '/', '//', 'a', '/a', 'a/', '/a/b/', 'a//b', './a', '../a', 'a/../..', '/a/../..', 'a/./b/../c/', '/x/y.tar.gz', '.profile',
    'file.', '..', '...', '..a', 'a.b.', 'a/b.c/d', '/a/b/c.txt', 'dir/'];

  it('normalizes, splits and joins exactly as path.posix does', () => {
    for (const p of inputs) {
      expect([p, pathShim.normalize(p)]).toEqual([p, nodePath.normalize(p)]);
      expect([p, pathShim.dirname(p)]).toEqual([p, nodePath.dirname(p)]);
      expect([p, pathShim.basename(p)]).toEqual([p, nodePath.basename(p)]);
      expect([p, pathShim.extname(p)]).toEqual([p, nodePath.extname(p)]);
      expect([p, pathShim.parse(p)]).toEqual([p, nodePath.parse(p)]);
      expect([p, pathShim.isAbsolute(p)]).toEqual([p, nodePath.isAbsolute(p)]);
    }
    expect(pathShim.basename('/a/b.txt', '.txt')).toBe('b');
    expect(pathShim.basename('/a/b.txt', 'b.txt')).toBe('b.txt');
    for (const parts of [['a', 'b'], ['/a', '../b', 'c/'], ['', ''], ['a', '', '..', '..']]) expect(pathShim.join(...parts)).toBe(nodePath.join(...parts));
  });

  it('resolves from / and finds relative paths', () => {
    expect(pathShim.resolve('/a/b', './c', '../d')).toBe(nodePath.resolve('/a/b', './c', '../d'));
    expect(pathShim.resolve('/a', '/b', 'c')).toBe('/b/c');
    expect(pathShim.resolve('a')).toBe('/a');
    for (const [from, to] of [['/a/b', '/a/b/c'], ['/a/b/c', '/a'], ['/a/x', '/b/y'], ['/a', '/a']]) {
      expect(pathShim.relative(from, to)).toBe(nodePath.relative(from, to));
    }
    expect(pathShim.format({ dir: '/a', name: 'b', ext: '.c' })).toBe(nodePath.format({ dir: '/a', name: 'b', ext: '.c' }));
    expect(pathShim.format({ root: '/', base: 'x' })).toBe(nodePath.format({ root: '/', base: 'x' }));
    expect(pathShim.posix).toBe(pathShim);
    expect(pathShim.sep).toBe('/');
  });
});

describe('querystring shim', () => {
  it('parses and stringifies as Node does', () => {
    for (const q of ['a=1&b=2', 'a=1&a=2&a=3', 'x=%20y+z&empty=&flag', 'bad=%E0%A4%A&ok=%C3%A9', '=v&&k=', 'a[b]=1']) {
      expect({ ...querystringShim.parse(q) }).toEqual({ ...nodeQuerystring.parse(q) });
    }
    expect({ ...querystringShim.parse('a:1;b:2', ';', ':') }).toEqual({ ...nodeQuerystring.parse('a:1;b:2', ';', ':') });
    const object = { a: 'x y', b: [1, 2], c: true, d: null, e: 'é&=' };
    expect(querystringShim.stringify(object)).toBe(nodeQuerystring.stringify(object as never));
    expect(querystringShim.escape('a b&c/é')).toBe(nodeQuerystring.escape('a b&c/é'));
    expect(querystringShim.unescape('%41%zz')).toBe(nodeQuerystring.unescape('%41%zz'));
  });
});

describe('url shim', () => {
  it('parses legacy URLs as url.parse does', () => {
    const urls = ['http://user:pw@Example.com:8080/p/a/t/h?query=string#hash', 'https://example.com', '/relative/path?x=1&x=2', 'mailto:someone@example.com',
      'http://[::1]:3000/x', '//host/path', 'file:///etc/hosts', 'foo'];
    for (const u of urls) {
      const shim = urlShim.parse(u);
      const node = nodeUrl.parse(u);
      for (const field of ['protocol', 'slashes', 'auth', 'host', 'port', 'hostname', 'hash', 'search', 'query', 'pathname', 'path', 'href'] as const) {
        expect([u, field, shim[field]]).toEqual([u, field, node[field]]);
      }
    }
    expect({ ...(urlShim.parse('/p?a=1&a=2', true).query as object) }).toEqual({ ...nodeUrl.parse('/p?a=1&a=2', true).query });
  });

  it('formats and resolves as Node does', () => {
    const parts = { protocol: 'https', hostname: 'example.com', port: '8443', pathname: 'x/y', query: { a: 'b c' }, hash: 'top' };
    expect(urlShim.format(parts)).toBe(nodeUrl.format(parts));
    expect(urlShim.format(new URL('http://a.com/b'))).toBe('http://a.com/b');
    for (const [from, to] of [['/one/two/three', 'four'], ['http://example.com/', '/one'], ['http://example.com/one', '/two'], ['one/two', 'three'], ['http://a.com/b/c', '../d?x=1']]) {
      expect(urlShim.resolve(from, to)).toBe(nodeUrl.resolve(from, to));
    }
    expect(urlShim.fileURLToPath('file:///tmp/a%20b')).toBe('/tmp/a b');
  });
});

describe('crypto shim', () => {
  const hook = Symbol.for('sluice.nodeHash');
  beforeAll(() => {
    // The guest runtime installs this hook over a host call; here Node computes the same thing.
    (globalThis as Record<symbol, unknown>)[hook] = (algorithm: string, data: Uint8Array, key: Uint8Array | null) =>
      new Uint8Array(key ? createHmac(algorithm, key).update(data).digest() : createHash(algorithm).update(data).digest());
  });
  afterAll(() => delete (globalThis as Record<symbol, unknown>)[hook]);

  it('hashes and HMACs with streaming updates and every digest encoding', () => {
    const hash = cryptoShim.createHash('SHA-256').update('hello ').update(ShimBuffer.from('world'));
    expect(hash.digest('hex')).toBe(createHash('sha256').update('hello world').digest('hex'));
    expect(cryptoShim.createHash('md5').update('abc').digest('base64')).toBe(createHash('md5').update('abc').digest('base64'));
    const hmac = cryptoShim.createHmac('sha512', 'key').update('data', 'utf8').digest();
    expect(ShimBuffer.isBuffer(hmac)).toBe(true);
    expect(hmac.toString('hex')).toBe(createHmac('sha512', 'key').update('data').digest('hex'));
    const once = cryptoShim.createHash('sha1');
    once.digest();
    expect(() => once.digest()).toThrow('Digest already called');
    expect(() => cryptoShim.createHash('whirlpool')).toThrow('Digest method not supported');
  });

  it('makes random bytes, UUIDs and integers, and compares in constant time', () => {
    expect(cryptoShim.randomBytes(70000).length).toBe(70000);
    expect(cryptoShim.randomUUID()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (let i = 0; i < 100; i++) {
      const n = cryptoShim.randomInt(5, 8);
      expect(n >= 5 && n < 8).toBe(true);
    }
    expect(cryptoShim.timingSafeEqual(ShimBuffer.from('ab'), ShimBuffer.from('ab'))).toBe(true);
    expect(() => cryptoShim.timingSafeEqual(ShimBuffer.from('a'), ShimBuffer.from('ab'))).toThrow(RangeError);
    expect(() => cryptoShim.createCipheriv()).toThrow('crypto.createCipheriv is not available in the sandbox');
  });
});

describe('process and unavailable modules', () => {
  it('gives packages a process stub that is not Node', async () => {
    expect([processShim.platform, processShim.version, processShim.env, processShim.cwd()]).toEqual(['sandbox', '', {}, '/']);
    // Tagged as Node's is (axios picks its Node adapter by it), without anything of the host's Node.
    expect(Object.prototype.toString.call(processShim)).toBe('[object process]');
    expect(Object.keys(processShim.env)).toEqual(['PD_COMPONENT']);
    expect(processShim.env.PD_COMPONENT).toBeUndefined();
    const hook = Symbol.for('sluice.componentId');
    (globalThis as unknown as Record<symbol, unknown>)[hook] = 'dc_test';
    try {
      expect(processShim.env.PD_COMPONENT).toBe('dc_test');
    } finally {
      delete (globalThis as unknown as Record<symbol, unknown>)[hook];
    }
    const order: string[] = [];
    processShim.nextTick((x: unknown) => order.push(`tick${x}`), 1);
    order.push('sync');
    await Promise.resolve();
    expect(order).toEqual(['sync', 'tick1']);
    expect(processShim.on()).toBe(processShim);
    expect(() => processShim.exit()).toThrow('process.exit is not available in the sandbox');
  });

  it('stubs a module so that every function throws a clear error', () => {
    const fs = unavailableModule('fs', ['readFileSync', 'writeFile']) as Record<string, () => unknown> & (() => unknown);
    expect(() => fs.readFileSync()).toThrow('fs.readFileSync is not available in the sandbox');
    expect(() => fs.createReadStream()).toThrow('fs.createReadStream is not available in the sandbox');
    expect(() => fs()).toThrow('fs is not available in the sandbox');
    expect(() => (fs as unknown as { promises: { readFile(): void } }).promises.readFile()).toThrow('fs.promises.readFile is not available in the sandbox');
    expect(Object.keys(fs)).toEqual(['readFileSync', 'writeFile']);
    expect((fs as unknown as { __esModule?: unknown }).__esModule).toBeUndefined();
    expect((fs as unknown as { then?: unknown }).then).toBeUndefined();
  });
});

describe('assert shim', () => {
  it('passes and fails as Node\'s assert does', () => {
    const cases: Array<[string, unknown[]]> = [
      ['ok', [1]], ['ok', [0]], ['equal', [1, '1']], ['equal', [1, 2]], ['notEqual', [1, 2]], ['strictEqual', [1, '1']],
      ['strictEqual', [NaN, NaN]], ['deepEqual', [{ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }]], ['deepEqual', [{ a: 1 }, { a: 2 }]],
      ['deepStrictEqual', [{ a: 1 }, { a: '1' }]], ['deepEqual', [{ a: 1 }, { a: '1' }]], ['notDeepStrictEqual', [[1], [1]]],
      ['deepStrictEqual', [new Map([[1, { x: 1 }]]), new Map([[1, { x: 1 }]])]], ['deepStrictEqual', [new Uint8Array([1, 2]), new Uint8Array([1, 2])]],
    ];
    const outcome = (fn: () => void) => {
      try {
        fn();
        return 'passed';
      } catch (error) {
        return `${(error as Error).name}:${(error as { code?: string }).code}`;
      }
    };
    for (const [name, args] of cases) {
      const node = (nodeAssert as unknown as Record<string, (...a: unknown[]) => void>)[name];
      const shim = (assertShim as unknown as Record<string, (...a: unknown[]) => void>)[name];
      expect([name, outcome(() => shim(...args))]).toEqual([name, outcome(() => node(...args))]);
    }
    expect(() => assertShim(false, 'custom message')).toThrow('custom message');
    expect(() => assertShim.throws(() => undefined)).toThrow('Missing expected exception.');
    expect(() => assertShim.throws(() => { throw new TypeError('x'); }, TypeError)).not.toThrow();
  });
});

describe('zlib shim', () => {
  it('has zlib\'s constants without loading the implementation', async () => {
    const zlib = await bundledBuiltin<{ constants: Record<string, number> }>('zlib');
    for (const [name, value] of Object.entries(nodeZlibConstants)) {
      if (!name.startsWith('Z_') || name === 'Z_MAX_CHUNK') continue;
      expect([name, zlib.constants[name]]).toEqual([name, value]);
    }
    expect(zlib.constants.Z_MAX_CHUNK).toBe(Infinity);
  });
});
