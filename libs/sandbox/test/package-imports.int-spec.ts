import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleComponent, ComponentCodeError, PackageCache, SandboxSupervisor } from '@app/sandbox';
import { invocation, TestComponent } from './sandbox-test.helper';

// Real npm registry, real installs into a temporary package cache shared by the whole file, and
// real worker processes running the compiled sandbox (dist/): `npm test` builds first.
describe('package imports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-packages-'));
  const cache = new PackageCache(join(dir, 'cache'));
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
  beforeAll(() => sandbox.start());
  afterAll(async () => {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function packaged(code: string): Promise<TestComponent> {
    const { bundle, codeHash } = await bundleComponent(code, { packageCache: cache });
    return { codeId: codeHash, bundle };
  }

  async function run(code: string): Promise<unknown> {
    const result = await sandbox.invoke(invocation(await packaged(code)));
    expect(result.error).toBeUndefined();
    return result.returnValue;
  }

  async function codeError(code: string, packageCache: PackageCache = cache): Promise<ComponentCodeError> {
    try {
      await bundleComponent(code, { packageCache });
    } catch (error) {
      expect(error).toBeInstanceOf(ComponentCodeError);
      return error as ComponentCodeError;
    }
    throw new Error('expected a ComponentCodeError');
  }

  it('installs pinned lodash and a dayjs range, and runs them in the sandbox', async () => {
    const code = `import _ from "lodash@4.17.21";
      import dayjs from "dayjs@^1.11.0";
      import utc from "dayjs/plugin/utc";
      dayjs.extend(utc);
      export default {
        run() {
          return {
            chunks: _.chunk([1, 2, 3, 4, 5], 2),
            picked: _.pick({ a: 1, b: 2, c: 3 }, ["a", "c"]),
            version: _.VERSION,
            next: dayjs.utc("2024-02-28T23:30:00Z").add(1, "day").format("YYYY-MM-DD HH:mm"),
            days: dayjs.utc("2024-02-29").daysInMonth(),
          };
        },
      };`;
    const { packages } = await bundleComponent(code, { packageCache: cache });
    expect(packages.lodash).toBe('4.17.21');
    expect(packages.dayjs).toMatch(/^1\.(1[1-9]|[2-9]\d)\.\d+$/);
    expect(await run(code)).toEqual({ chunks: [[1, 2], [3, 4], [5]], picked: { a: 1, c: 3 }, version: '4.17.21', next: '2024-02-29 23:30', days: 29 });
  });

  it('installs a package once for all the components that import it, concurrent saves included', async () => {
    const installs = cache.installCount;
    const installDir = cache.installDir('lodash', '4.17.21');
    const mtime = statSync(installDir).mtimeMs;
    expect(await run('import { kebabCase } from "lodash@4.17.21"; export default { run: () => kebabCase("Hello World") }')).toBe('hello-world');
    expect(await run('import get from "lodash@4.17.21/get"; export default { run: () => get({ a: [{ b: 7 }] }, "a[0].b") }')).toBe(7);
    expect(cache.installCount).toBe(installs);
    expect(statSync(installDir).mtimeMs).toBe(mtime);

    const saves = await Promise.all(['"2 days"', '"1h"', '"5s"'].map((arg) => packaged(`import ms from "ms@2.1.3"; export default { run: () => ms(${arg}) }`)));
    expect(cache.installCount).toBe(installs + 1);
    expect(await Promise.all(saves.map(async (c) => (await sandbox.invoke(invocation(c))).returnValue))).toEqual([172800000, 3600000, 5000]);
  });

  it('installs once when two caches share a directory, as two server processes would (lock file)', async () => {
    const first = new PackageCache(join(dir, 'shared'));
    const second = new PackageCache(join(dir, 'shared'));
    const roots = await Promise.all([first.ensure('ms', '2.1.1'), second.ensure('ms', '2.1.1'), first.ensure('ms', '2.1.1')]);
    expect(new Set(roots).size).toBe(1);
    expect(roots[0]).toBe(join(first.installDir('ms', '2.1.1'), 'node_modules', 'ms'));
    expect(first.installCount + second.installCount).toBe(1);
    expect(readdirSync(join(dir, 'shared', '.locks'))).toEqual([]);
    expect(readdirSync(join(dir, 'shared', '.tmp'))).toEqual([]);
  });

  it('runs uuid and crypto-js', async () => {
    const value = (await run(`import { v4, v5, validate } from "uuid";
      import CryptoJS from "crypto-js";
      export default {
        run() {
          const id = v4();
          const sealed = CryptoJS.AES.encrypt("attack at dawn", "passphrase").toString();
          return {
            id, valid: validate(id),
            v5: v5("hello", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
            sha256: CryptoJS.SHA256("abc").toString(),
            hmac: CryptoJS.HmacSHA256("The quick brown fox jumps over the lazy dog", "key").toString(),
            opened: CryptoJS.AES.decrypt(sealed, "passphrase").toString(CryptoJS.enc.Utf8),
          };
        },
      };`)) as Record<string, unknown>;
    expect(value.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(value).toMatchObject({
      valid: true,
      v5: '9342d47a-1bab-5709-9869-c840b2eac501',
      sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      hmac: 'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8',
      opened: 'attack at dawn',
    });
  });

  it('gives imports of Node built-ins their shims, crypto hashing done by the host', async () => {
    const value = await run(`import { Buffer } from "buffer";
      import EventEmitter from "node:events";
      import util from "util";
      import path from "path";
      import querystring from "querystring";
      import crypto, { createHmac } from "crypto";
      import url from "url";
      export default {
        async run() {
          const emitter = new EventEmitter();
          const heard = [];
          emitter.on("ping", (n) => heard.push(n));
          emitter.once("ping", (n) => heard.push("once " + n));
          emitter.emit("ping", 1);
          emitter.emit("ping", 2);
          const later = util.promisify((x, done) => setTimeout(() => done(null, x * 2), 1));
          return {
            buffer: [Buffer.from("héllo").toString("base64"), Buffer.from("68656c6c6f", "hex").toString(), Buffer.byteLength("€"), Buffer.concat([Buffer.from([1]), Buffer.alloc(2, 255)]).toString("hex")],
            heard,
            util: [util.format("%s=%d %j", "n", 42, { a: 1 }), util.types.isDate(new Date()), await later(21), util.inspect({ a: [1] })],
            path: [path.join("/a/b", "../c", "d.txt"), path.extname("x.tar.gz"), path.basename("/p/q.js", ".js"), path.relative("/a/b", "/a/c/d")],
            query: [querystring.stringify({ q: "a b", n: [1, 2] }), querystring.parse("x=1&x=2&y=%C3%A9")],
            url: [url.parse("https://u@example.com:8080/p?q=1#h").hostname, new url.URL("/x", "https://e.com").href],
            hashes: ["md5", "sha1", "sha256", "sha512"].map((a) => crypto.createHash(a).update("ab").update(Buffer.from("c")).digest("hex")),
            hmac: createHmac("sha256", "key").update("The quick brown fox jumps over the lazy dog").digest("hex"),
            hmacBase64: createHmac("sha1", Buffer.from("key")).update("data").digest("base64"),
            random: [crypto.randomBytes(8).length, typeof crypto.randomUUID()],
          };
        },
      };`);
    expect(value).toEqual({
      buffer: ['aMOpbGxv', 'hello', 3, '01ffff'],
      heard: [1, 'once 1', 2],
      util: ['n=42 {"a":1}', true, 42, '{ a: [ 1 ] }'],
      path: ['/a/c/d.txt', '.gz', 'q', '../c/d'],
      query: ['q=a%20b&n=1&n=2', { x: ['1', '2'], y: 'é' }],
      url: ['example.com', 'https://e.com/x'],
      hashes: ['md5', 'sha1', 'sha256', 'sha512'].map((a) => createHash(a).update('abc').digest('hex')),
      hmac: 'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8',
      hmacBase64: 'EEFSxb/coHvGM+69RhmfAlXJ9J0=',
      random: [8, 'string'],
    });
  });

  it('gives packages Buffer and process through shims, and the component code the same ones, never on the global', async () => {
    // readable-stream uses the Buffer and process globals freely and requires events, buffer and util.
    const value = await run(`import { Readable } from "readable-stream@3.6.2";
      export default {
        async run() {
          const chunks = [];
          const stream = new Readable({ read() {} });
          const ended = new Promise((resolve, reject) => { stream.on("data", (c) => chunks.push(c.toString("hex") + (Buffer.isBuffer(c) ? ":buffer" : ""))); stream.on("end", resolve); stream.on("error", reject); });
          stream.push(new Uint8Array([1, 2, 3]));
          stream.push("hi");
          stream.push(null);
          await ended;
          return {
            chunks,
            process: typeof process, buffer: typeof Buffer, global: typeof global,
            globalProcess: typeof globalThis.process, viaFunction: (() => { try { return typeof Function("return process")(); } catch { return "threw"; } })(),
          };
        },
      };`);
    expect(value).toEqual({ chunks: ['010203:buffer', '6869:buffer'], process: 'object', buffer: 'function', global: 'undefined', globalProcess: 'undefined', viaFunction: 'threw' });
  });

  it('bundles other built-ins as modules whose functions throw when called', async () => {
    const value = await run(`import fs from "fs";
      import { readFileSync } from "node:fs";
      import { spawn } from "child_process";
      export default {
        run() {
          const attempt = (fn) => { try { fn(); return "ran"; } catch (e) { return e.message; } };
          return [attempt(() => fs.readFileSync("/etc/passwd")), attempt(() => readFileSync("/etc/hostname")), attempt(() => spawn("sh")), attempt(() => fs.promises.readFile("x"))];
        },
      };`);
    expect(value).toEqual([
      'fs.readFileSync is not available in the sandbox',
      'fs.readFileSync is not available in the sandbox',
      'child_process.spawn is not available in the sandbox',
      'fs.promises.readFile is not available in the sandbox',
    ]);
  });

  it('refuses packages that cannot be had with an error naming them', async () => {
    const missing = await codeError('import x from "no-such-pkg-xyz-sluice";\nexport default { run: () => x }');
    expect(missing.message).toBe('cannot install package "no-such-pkg-xyz-sluice": not found in the registry at line 1, column 15');
    expect(missing.location).toEqual({ line: 1, column: 15 });
    expect((await codeError('import _ from "lodash@^99.0.0";\nexport default {}')).message).toContain('cannot install package "lodash@^99.0.0": no published version matches "^99.0.0"');
    expect((await codeError('import a from "ms@2.1.2";\nimport b from "ms@2.1.3";\nexport default {}')).message).toContain(
      'package "ms" is imported in versions that do not agree ("ms@2.1.2" is 2.1.2, "ms@2.1.3" is 2.1.3)',
    );
    expect((await codeError('import x from "lodash@4.17.21/no/such/file";\nexport default {}')).message).toContain('package "lodash@4.17.21" has no "no/such/file"');
    expect((await codeError('import x from "Not_A_Name";\nexport default {}')).message).toContain('"Not_A_Name" is not a valid package name');
  });

  it('says the registry cannot be reached when it cannot', async () => {
    const offline = new PackageCache(join(dir, 'offline'));
    const registry = process.env.npm_config_registry;
    process.env.npm_config_registry = 'http://127.0.0.1:9/';
    try {
      expect((await codeError('import left from "left-pad";\nexport default {}', offline)).message).toMatch(
        /^cannot install package "left-pad": the npm registry cannot be reached \(ECONNREFUSED\)/,
      );
    } finally {
      if (registry === undefined) delete process.env.npm_config_registry;
      else process.env.npm_config_registry = registry;
    }
  });
});
