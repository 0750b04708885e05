import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  switch (url.pathname) {
    case '/json':
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r-1' });
      res.end(JSON.stringify({ hello: 'wörld', query: url.searchParams.get('q') }));
      return;
    case '/echo':
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, type: req.headers['content-type'], auth: req.headers.authorization ?? null, body: body.toString('utf8') }));
      return;
    case '/bytes':
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.from([0, 1, 2, 200, 255]));
      return;
    case '/redirect':
      res.writeHead(302, { location: '/echo' });
      res.end();
      return;
    case '/to-private':
      res.writeHead(302, { location: 'http://10.1.2.3/secret' });
      res.end();
      return;
    case '/slow':
      setTimeout(() => res.end('late'), 2000).unref();
      return;
    default:
      res.writeHead(404);
      res.end('not found');
  }
}

describe('SandboxSupervisor: fetch through the egress guard', () => {
  let server: Server;
  let base: string;
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: ['127.0.0.1'] } });

  beforeAll(async () => {
    server = createServer((req, res) => void serve(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await sandbox.start();
  });
  afterAll(async () => {
    await sandbox.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fetches from an allowed host: status, headers, text, json and bytes', async () => {
    const c = await component(`export default { async run({ base }) {
      const json = await fetch(base + "/json?q=1");
      const body = await json.json();
      const echo = await fetch(new URL("/echo", base), { method: "post", headers: { "Content-Type": "text/plain", Authorization: "Bearer t" }, body: "héllo" });
      const bytes = new Uint8Array(await (await fetch(base + "/bytes")).arrayBuffer());
      const missing = await fetch(base + "/nope");
      return {
        status: json.status, ok: json.ok, type: json.headers.get("Content-Type"), requestId: json.headers.get("x-request-id"), body,
        echo: { status: echo.status, ...(await echo.json()) },
        bytes: Array.from(bytes),
        missing: { status: missing.status, ok: missing.ok, text: await missing.text(), statusText: missing.statusText },
      };
    } }`);
    const result = await sandbox.invoke(invocation(c, { event: { base } }));
    expect(result.error).toBeUndefined();
    expect(result.returnValue).toEqual({
      status: 200, ok: true, type: 'application/json', requestId: 'r-1', body: { hello: 'wörld', query: '1' },
      echo: { status: 201, method: 'POST', type: 'text/plain', auth: 'Bearer t', body: 'héllo' },
      bytes: [0, 1, 2, 200, 255],
      missing: { status: 404, ok: false, text: 'not found', statusText: 'Not Found' },
    });
  });

  it('follows redirects, re-checking every hop', async () => {
    const c = await component(`export default { async run({ base }) {
      const followed = await fetch(base + "/redirect", { method: "POST", body: "x" });
      const manual = await fetch(base + "/redirect", { redirect: "manual" });
      let toPrivate;
      try { await fetch(base + "/to-private"); toPrivate = "fetched"; } catch (e) { toPrivate = e.cause?.code; }
      return { followed: { status: followed.status, redirected: followed.redirected, url: followed.url, method: (await followed.json()).method }, manual: manual.status, toPrivate };
    } }`);
    const result = await sandbox.invoke(invocation(c, { event: { base } }));
    expect(result.returnValue).toEqual({
      followed: { status: 201, redirected: true, url: `${base}/echo`, method: 'GET' },
      manual: 302,
      toPrivate: 'egress_denied',
    });
  });

  it('refuses private and link-local addresses with a TypeError naming the refusal', async () => {
    const c = await component(`export default { async run() {
      const out = {};
      for (const url of ["http://10.1.2.3/", "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/", "http://192.168.0.1/"]) {
        try { await fetch(url); out[url] = "fetched"; } catch (e) { out[url] = e.name + ": " + e.cause?.code; }
      }
      return out;
    } }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.returnValue).toEqual({
      'http://10.1.2.3/': 'TypeError: egress_denied',
      'http://169.254.169.254/latest/meta-data/': 'TypeError: egress_denied',
      'http://[::1]:1/': 'TypeError: egress_denied',
      'http://192.168.0.1/': 'TypeError: egress_denied',
    });
  });

  it('refuses loopback when it is not in the allow list', async () => {
    const strict = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await strict.start();
    try {
      const c = await component('export default { async run({ base }) { try { await fetch(base + "/json"); return "fetched"; } catch (e) { return e.message; } } }');
      const result = await strict.invoke(invocation(c, { event: { base } }));
      expect(result.returnValue).toMatch(/^fetch failed: /);
    } finally {
      await strict.stop();
    }
  });

  it('aborts a request with AbortController and bounds a slow one by the run timeout', async () => {
    const c = await component(`export default { async run({ base, mode }) {
      if (mode === "abort") {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 20);
        try { await fetch(base + "/slow", { signal: controller.signal }); return "fetched"; } catch (e) { return e.name; }
      }
      return await (await fetch(base + "/slow")).text();
    } }`);
    const aborted = await sandbox.invoke(invocation(c, { event: { base, mode: 'abort' } }));
    expect(aborted.returnValue).toBe('AbortError');
    const slow = await sandbox.invoke(invocation(c, { event: { base }, limits: { timeoutMs: 400 } }));
    expect(slow.error?.kind).toBe('timeout');
  });

  it('has no fetch while the bundle loads', async () => {
    const c = await component(`let loadError = null;
      fetch("http://127.0.0.1/").catch((e) => { loadError = e.message; });
      export default { async run() { await null; return loadError; } }`);
    expect((await sandbox.invoke(invocation(c))).returnValue).toMatch(/not available while the component is loading/);
  });

  it('keeps every console line written after an awaited host answer, in order', async () => {
    const c = await component(`export default { async run({ base, i }) {
      console.log("before", i);
      try { await fetch(base + "/json"); console.log("answered", i); } catch (e) { console.log("failed", i, e.message); }
      try { await fetch("http://10.1.2.3/private"); } catch (e) { console.log("refused", i); }
      console.log("last", i);
      if (i % 2) throw new Error("odd " + i);
    } }`);
    for (let i = 0; i < 40; i++) {
      const result = await sandbox.invoke(invocation(c, { event: { base, i } }));
      const expected = [`before ${i}`, `answered ${i}`, `refused ${i}`, `last ${i}`];
      expect(result.logs.map((l) => l.message).slice(0, 4)).toEqual(expected);
    }
  });
});
