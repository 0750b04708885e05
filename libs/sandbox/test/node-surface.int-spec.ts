import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { bundleComponent, PackageCache, SandboxResult, SandboxSupervisor } from '@app/sandbox';
import { invocation, TestComponent } from './sandbox-test.helper';

// The Node surface real components need, run in real worker processes against a real node:http
// server on 127.0.0.1: stream, string_decoder, zlib, Buffer and process.env as globals, http and
// https streamed through the host's egress guard, axios (its Node adapter) and @pipedream/platform.
// Packages come from the npm registry through a real package cache shared by the file.

/** Resolvers the server waits on: a test releases the rest of a slow response when the guest says so. */
const gates = new Map<string, () => void>();
const OVER_CAP_BYTES = 32 * 1024 * 1024 + 1;
const BIG_BODY_BYTES = 24 * 1024 * 1024;
/** Bytes of /big the server's socket has taken so far (each write's callback has fired). */
let bigFlushed = 0;

function gate(name: string): Promise<void> {
  return new Promise((resolve) => gates.set(name, resolve));
}

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  switch (url.pathname) {
    case '/json':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hello: 'wörld', q: url.searchParams.get('q'), auth: req.headers.authorization ?? null, method: req.method, body }));
      return;
    case '/text':
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('plain ☃ text');
      return;
    case '/gzip':
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(JSON.stringify({ compressed: true, items: Array.from({ length: 200 }, (_, i) => `item ${i}`) })));
      return;
    case '/slow': {
      // The first chunk goes out at once; the last only after the guest has told /ack it saw the first.
      const released = gate(url.searchParams.get('id') ?? '');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      await released;
      res.end('last');
      return;
    }
    case '/ack':
      gates.get(url.searchParams.get('id') ?? '')?.();
      res.end('ok');
      return;
    case '/huge': {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(1024 * 1024, 97);
      let sent = 0;
      const pump = (): void => {
        while (sent < OVER_CAP_BYTES) {
          const part = block.subarray(0, Math.min(block.length, OVER_CAP_BYTES - sent));
          sent += part.length;
          if (!res.write(part)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
      return;
    }
    case '/big': {
      // Written as fast as the connection takes it: how far it gets shows whether anyone reads.
      bigFlushed = 0;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG_BODY_BYTES) });
      const block = Buffer.alloc(64 * 1024, 98);
      let queued = 0;
      const pump = (): void => {
        while (queued < BIG_BODY_BYTES) {
          queued += block.length;
          const more = res.write(block, () => (bigFlushed += block.length));
          if (!more) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
      return;
    }
    case '/progress':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ flushed: bigFlushed }));
      return;
    case '/redirect':
      res.writeHead(302, { location: '/json?q=redirected' });
      res.end();
      return;
    default:
      res.writeHead(404);
      res.end('not found');
  }
}

describe('the Node surface in the sandbox', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-node-surface-'));
  const cache = new PackageCache(join(dir, 'cache'));
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: ['127.0.0.1'] } });
  let server: Server;
  let base = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      serve(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await sandbox.start();
  });

  afterAll(async () => {
    await sandbox.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  async function bundled(code: string): Promise<TestComponent> {
    const { bundle, codeHash } = await bundleComponent(code.replaceAll('BASE', base), { packageCache: cache });
    return { codeId: codeHash, bundle };
  }

  async function invoke(code: string, extra: Parameters<typeof invocation>[1] = {}, on: SandboxSupervisor = sandbox): Promise<SandboxResult> {
    return on.invoke(invocation(await bundled(code), extra));
  }

  async function run(code: string, extra: Parameters<typeof invocation>[1] = {}): Promise<unknown> {
    const result = await invoke(code, extra);
    expect(result.error).toBeUndefined();
    return result.returnValue;
  }

  it('gives component code stream, stream/promises and Readable.from', async () => {
    const value = await run(`import { Readable, Transform, Writable, pipeline } from "stream";
      import { pipeline as pipelinePromise } from "stream/promises";
      import Stream from "stream";
      export default {
        async run() {
          const upper = () => new Transform({ transform(chunk, enc, cb) { cb(null, chunk.toString().toUpperCase()); } });
          const seen = [];
          const sink = new Writable({ write(chunk, enc, cb) { seen.push(chunk.toString()); cb(); } });
          await pipelinePromise(Readable.from(["a", "b", "c"]), upper(), sink);
          const viaCallback = await new Promise((resolve, reject) => {
            const out = [];
            pipeline(Readable.from(["x", "y"]), upper(), new Writable({ write(c, e, cb) { out.push(c.toString()); cb(); } }), (err) => err ? reject(err) : resolve(out));
          });
          const collected = [];
          for await (const item of Readable.from((async function* () { yield 1; yield 2; })())) collected.push(item);
          return { seen, viaCallback, collected, legacy: typeof Stream.Stream, isStream: Readable.from([]) instanceof Stream };
        },
      };`);
    expect(value).toEqual({ seen: ['A', 'B', 'C'], viaCallback: ['X', 'Y'], collected: [1, 2], legacy: 'function', isStream: true });
  });

  it('gives string_decoder, zlib, and Buffer and process.env as globals', async () => {
    const code = `import { StringDecoder } from "string_decoder";
      import zlib from "zlib";
      export default {
        run() {
          const decoder = new StringDecoder("utf8");
          const snowman = Buffer.from("☃");
          const split = decoder.write(snowman.subarray(0, 1)) + "|" + decoder.write(snowman.subarray(1)) + decoder.end();
          const packed = zlib.gzipSync(Buffer.from("hello ".repeat(100)));
          return {
            split,
            gzipMagic: packed.subarray(0, 2).toString("hex"),
            roundTrip: zlib.gunzipSync(packed).toString().length,
            inflated: zlib.inflateSync(zlib.deflateSync(Buffer.from("deflated"))).toString(),
            constants: typeof zlib.constants.Z_SYNC_FLUSH,
            base64: Buffer.from("sluice").toString("base64"),
            env: { ...process.env },
            component: process.env.PD_COMPONENT,
            home: process.env.HOME,
          };
        },
      };`;
    expect(await run(code, { instanceId: 'dc_abc123@x' })).toEqual({
      split: '|☃',
      gzipMagic: '1f8b',
      roundTrip: 600,
      inflated: 'deflated',
      constants: 'number',
      base64: Buffer.from('sluice').toString('base64'),
      env: { PD_COMPONENT: 'dc_abc123' },
      component: 'dc_abc123',
    });
    // A workflow step's component is its workflow; an action run on its own names none.
    expect(await run(code, { instanceId: 'p_wf1/step_one@x' })).toMatchObject({ component: 'p_wf1' });
    expect(await run(code, { instanceId: 'acc_1/actions-run@x' })).toMatchObject({ env: {} });
  });

  it('streams an http response: the guest sees the first chunk before the server sends the last', async () => {
    const value = await run(`import http from "http";
      export default {
        run() {
          return new Promise((resolve, reject) => {
            const req = http.get("BASE/slow?id=s1", (res) => {
              const parts = [];
              res.setEncoding("utf8");
              res.on("data", (chunk) => {
                parts.push(chunk);
                // Only once the first chunk is here does the server get to send the last one.
                if (parts.length === 1) http.get("BASE/ack?id=s1", (ack) => ack.resume());
              });
              res.on("end", () => resolve({ status: res.statusCode, type: res.headers["content-type"], parts }));
              res.on("error", reject);
            });
            req.on("error", reject);
          });
        },
      };`);
    expect(value).toEqual({ status: 200, type: 'text/plain', parts: ['first;', 'last'] });
  });

  it('sends a request body with Node request options (hostname, port, path, auth), and reads a gzip response through zlib', async () => {
    const value = await run(`import http from "http";
      import zlib from "zlib";
      const collect = (stream) => new Promise((resolve, reject) => {
        const chunks = [];
        stream.on("data", (c) => chunks.push(c));
        stream.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        stream.on("error", reject);
      });
      export default {
        async run() {
          const url = new URL("BASE");
          const posted = await new Promise((resolve, reject) => {
            const req = http.request({ hostname: url.hostname, port: url.port, path: "/json?q=1", method: "POST", auth: "user:pw", headers: { "content-type": "text/plain" } }, (res) => collect(res).then(resolve, reject));
            req.on("error", reject);
            req.write("part one, ");
            req.end("part two");
          });
          const gz = await new Promise((resolve, reject) => {
            http.get("BASE/gzip", (res) => collect(res.pipe(zlib.createGunzip())).then(resolve, reject)).on("error", reject);
          });
          return { posted: JSON.parse(posted), gz: JSON.parse(gz).items.length };
        },
      };`);
    expect(value).toEqual({
      posted: { hello: 'wörld', q: '1', auth: `Basic ${Buffer.from('user:pw').toString('base64')}`, method: 'POST', body: 'part one, part two' },
      gz: 200,
    });
  });

  it('passes backpressure to the server: a paused reader stops the host from reading the socket', async () => {
    const value = await run(`import http from "http";
      const get = (url) => new Promise((resolve, reject) => http.get(url, resolve).on("error", reject));
      const text = async (res) => { let t = ""; for await (const c of res) t += c; return t; };
      export default {
        async run() {
          const res = await get("BASE/big");
          const first = await new Promise((resolve) => res.once("data", (chunk) => { res.pause(); resolve(chunk.length); }));
          // The reader sits on its paused stream while the server keeps writing.
          await new Promise((resolve) => setTimeout(resolve, 500));
          const whilePaused = JSON.parse(await text(await get("BASE/progress"))).flushed;
          let total = first;
          res.on("data", (chunk) => { total += chunk.length; });
          await new Promise((resolve, reject) => { res.on("end", resolve); res.on("error", reject); res.resume(); });
          return { whilePaused, total };
        },
      };`);
    const { whilePaused, total } = value as { whilePaused: number; total: number };
    expect(total).toBe(BIG_BODY_BYTES);
    // Only what the kernel's socket buffers hold got out of the server while nobody read: a host
    // that read ahead would have taken the whole body by then.
    expect(whilePaused).toBeLessThan(BIG_BODY_BYTES / 2);
  });

  it('refuses a response body over the cap with a clear error, and the run goes on', async () => {
    const value = await run(`import http from "http";
      export default {
        run() {
          return new Promise((resolve) => {
            let bytes = 0;
            http.get("BASE/huge", (res) => {
              res.on("data", (c) => { bytes += c.length; });
              res.on("error", (error) => resolve({ message: error.message, code: error.cause && error.cause.code, partial: bytes > 0 && bytes <= 32 * 1024 * 1024 }));
              res.on("end", () => resolve({ ended: bytes }));
            }).on("error", (error) => resolve({ requestError: error.message }));
          });
        },
      };`);
    expect(value).toEqual({ message: 'request failed: the response body is larger than 33554432 bytes', code: 'too_large', partial: true });
  });

  it('still refuses private addresses for http and https when they are not allowed', async () => {
    const strict = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await strict.start();
    try {
      const code = `import http from "http";
        import https from "https";
        const attempt = (client, url) => new Promise((resolve) => {
          client.get(url, (res) => resolve("answered " + res.statusCode)).on("error", (error) => resolve(error.cause && error.cause.code));
        });
        export default {
          async run() {
            return [await attempt(http, "BASE/json"), await attempt(https, "https://10.0.0.1/"), await attempt(http, "http://169.254.169.254/latest/meta-data")];
          },
        };`;
      const result = await invoke(code, {}, strict);
      expect(result.error).toBeUndefined();
      expect(result.returnValue).toEqual(['egress_denied', 'egress_denied', 'egress_denied']);
    } finally {
      await strict.stop();
    }
  });

  it('runs axios with JSON, text, stream and gzip responses, and follows a redirect through the guard', async () => {
    const value = await run(`import axios from "axios@1.21.1";
      export default {
        async run() {
          const json = await axios.get("BASE/json", { params: { q: "axios" }, auth: { username: "a", password: "b" } });
          const text = await axios.get("BASE/text", { responseType: "text" });
          const streamed = await axios.get("BASE/slow?id=ax", { responseType: "stream" });
          const parts = [];
          const done = new Promise((resolve, reject) => { streamed.data.on("end", resolve); streamed.data.on("error", reject); });
          streamed.data.on("data", (chunk) => {
            parts.push(chunk.toString());
            if (parts.length === 1) axios.get("BASE/ack?id=ax");
          });
          await done;
          const gz = await axios.get("BASE/gzip");
          const redirected = await axios.get("BASE/redirect");
          const missing = await axios.get("BASE/nope").catch((error) => error.response.status);
          return {
            json: json.data,
            adapterStream: typeof streamed.data.pipe,
            text: text.data,
            parts,
            gz: gz.data.items.length,
            redirected: redirected.data.q,
            missing,
          };
        },
      };`);
    expect(value).toEqual({
      json: { hello: 'wörld', q: 'axios', auth: `Basic ${Buffer.from('a:b').toString('base64')}`, method: 'GET', body: '' },
      adapterStream: 'function',
      text: 'plain ☃ text',
      parts: ['first;', 'last'],
      gz: 200,
      redirected: 'redirected',
      missing: 404,
    });
  });

  it("applies axios's timeout to a response that stalls, and the run goes on", async () => {
    const value = await run(`import axios from "axios@1.21.1";
      export default {
        async run() {
          const error = await axios.get("BASE/slow?id=stalled", { timeout: 300 }).then(() => null, (e) => e);
          return { code: error && error.code, message: error && error.message };
        },
      };`);
    // What axios says in Node too for a body that stalls after the head: follow-redirects' socket
    // timeout destroys the socket, and the response stream is aborted.
    expect(value).toEqual({ code: 'ERR_BAD_RESPONSE', message: 'stream has been aborted' });
    gates.get('stalled')?.();
  });

  it("runs @pipedream/platform's axios wrapper with JSON, text and stream", async () => {
    const value = await run(`import { axios } from "@pipedream/platform@3.4.0";
      export default {
        async run() {
          const json = await axios(this, { url: "BASE/json", params: { q: "pd" } });
          const text = await axios(this, { url: "BASE/text", responseType: "text" });
          const full = await axios(this, { url: "BASE/json", returnFullResponse: true });
          const stream = await axios(this, { url: "BASE/text", responseType: "stream" });
          const chunks = [];
          for await (const chunk of stream) chunks.push(chunk.toString());
          return { q: json.q, text, status: full.status, streamed: chunks.join("") };
        },
      };`);
    expect(value).toEqual({ q: 'pd', text: 'plain ☃ text', status: 200, streamed: 'plain ☃ text' });
  });

  it('gives an http_request prop its configured fields and an execute() through the egress guard', async () => {
    const code = `export default {
      props: { request: { type: "http_request" } },
      async run() {
        const response = await this.request.execute();
        return { configured: JSON.parse(JSON.stringify(this.request)), status: response.status, type: response.headers["content-type"], data: response.data };
      },
    };`;
    const request = {
      url: `${base}/json`,
      method: 'post',
      params: [{ name: 'q', value: 'from-prop' }],
      headers: { 'x-extra': '1' },
      body: { hello: 'there' },
      auth: { type: 'bearer', token: 't0k' },
    };
    const value = await run(code, { props: { request } });
    expect(value).toEqual({
      configured: request,
      status: 200,
      type: 'application/json',
      data: { hello: 'wörld', q: 'from-prop', auth: 'Bearer t0k', method: 'POST', body: '{"hello":"there"}' },
    });

    const strict = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await strict.start();
    try {
      const refused = await invoke(code, { props: { request } }, strict);
      expect(refused.error?.message).toMatch(/egress to 127\.0\.0\.1 denied/);
    } finally {
      await strict.stop();
    }
  });

  it('sends https through the host, which verifies the server certificate (a self-signed one is refused)', async () => {
    const key = join(dir, 'tls.key');
    const cert = join(dir, 'tls.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    let reached = 0;
    const tls = createTlsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      reached++;
      serve(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const tlsBase = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
    try {
      const value = await run(`import https from "https";
        import axios from "axios@1.21.1";
        const viaHttps = () => new Promise((resolve) => https.get("${tlsBase}/json", () => resolve("answered")).on("error", (e) => resolve(e.message)));
        export default {
          async run() {
            return { https: await viaHttps(), axios: await axios.get("${tlsBase}/json").then(() => "answered", (e) => e.message) };
          },
        };`);
      expect(value).toEqual({
        https: 'request failed: request to 127.0.0.1 failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
        axios: 'request failed: request to 127.0.0.1 failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)',
      });
      expect(reached).toBe(0);
    } finally {
      tls.closeAllConnections();
      await new Promise<void>((resolve) => tls.close(() => resolve()));
    }
  });
});
