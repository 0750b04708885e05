import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { EgressError } from '../src/delivery.types';
import type { CheckedDestination } from '../src/egress-guard';
import { closeIdleLeanConnections, MAX_HEAD_BYTES, leanPost, LeanPostOptions } from '../src/lean-http.client';

/** A request as the raw server read it. */
interface RawRequest {
  head: string;
  body: Buffer;
  /** 1-based number of the connection that carried it. */
  connection: number;
}

/**
 * A TCP server on 127.0.0.1 that reads HTTP/1.1 requests framed by content-length and answers
 * each with what `answer` returns, written as raw bytes (a list: one write each, to split a
 * response across reads). `null` leaves the request unanswered.
 */
async function rawServer(answer: (req: RawRequest, socket: net.Socket) => (string | Buffer)[] | null, host = '127.0.0.1') {
  const requests: RawRequest[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffered = Buffer.alloc(0);
    socket.on('data', async (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.toString('latin1', 0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const req: RawRequest = { head, body: buffered.subarray(end + 4, end + 4 + length), connection };
        buffered = buffered.subarray(end + 4 + length);
        requests.push(req);
        const parts = answer(req, socket);
        if (!parts) continue;
        for (const part of parts) {
          if (socket.destroyed) return;
          socket.write(part);
          if (parts.length > 1) await new Promise((r) => setTimeout(r, 2));
        }
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    requests,
    connections: () => connections,
    open: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const LOOPBACK: CheckedDestination = { host: '127.0.0.1', address: '127.0.0.1', family: 4, addresses: [{ address: '127.0.0.1', family: 4 }] };

function options(timeoutMs = 2000, maxResponseBytes = 1024 * 1024): LeanPostOptions {
  const startedAt = performance.now();
  return { timeoutMs, deadline: startedAt + timeoutMs, startedAt, maxResponseBytes };
}

function post(port: number, body: string | Buffer = '{"a":1}', headers: Record<string, string> = { 'content-type': 'application/json' }, opts = options(), destination = LOOPBACK) {
  return leanPost({ secure: false, hostname: '127.0.0.1', port, path: '/hook?x=1' }, destination, headers, body, opts);
}

const ok = (body = 'ok', extra = '') => [`HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`];

describe('plain HTTP client (webhook POSTs)', () => {
  const servers: { close(): Promise<void> }[] = [];
  const start = async (answer: Parameters<typeof rawServer>[0]) => {
    const s = await rawServer(answer);
    servers.push(s);
    return s;
  };
  afterEach(async () => {
    closeIdleLeanConnections();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('sends the request as Node would: method, path, host, headers, exact body bytes and length', async () => {
    const server = await start(() => ok());
    const body = '{"name":"café ☕"}';
    const res = await leanPost({ secure: false, hostname: '127.0.0.1', port: server.port, path: '/a/b?c=d', auth: 'us er:p@ss' }, LOOPBACK, { 'webhook-id': 'msg_1', 'X-Custom': 'v' }, body, options());
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok');
    const [req] = server.requests;
    const lines = req.head.split('\r\n');
    expect(lines[0]).toBe('POST /a/b?c=d HTTP/1.1');
    expect(lines).toContain(`host: 127.0.0.1:${server.port}`);
    expect(lines).toContain('webhook-id: msg_1');
    expect(lines).toContain('X-Custom: v');
    expect(lines).toContain(`content-length: ${Buffer.byteLength(body)}`);
    expect(lines).toContain(`authorization: Basic ${Buffer.from('us er:p@ss').toString('base64')}`);
    expect(req.body.toString('utf8')).toBe(body);
  });

  it('sends the same head for every POST to one target, its own to another, and refuses a bad header name every time', async () => {
    const server = await start(() => ok());
    const target = { secure: false, hostname: '127.0.0.1', port: server.port, path: '/one', auth: 'u:p' };
    for (const id of ['a', 'b']) await leanPost(target, LOOPBACK, { 'webhook-id': id, 'Content-Type': 'application/json' }, '{}', options());
    await leanPost({ ...target, path: '/two?x=1', auth: undefined }, LOOPBACK, { 'webhook-id': 'c' }, '{}', options());
    // A header the caller names overrides the URL's credentials; Host, length and connection are the client's own.
    await leanPost(target, LOOPBACK, { Authorization: 'Bearer t', HOST: 'evil.example', 'Content-Length': '99' }, '{}', options());
    const heads = server.requests.map((r) => r.head.split('\r\n'));
    expect(heads.map((h) => h[0])).toEqual(['POST /one HTTP/1.1', 'POST /one HTTP/1.1', 'POST /two?x=1 HTTP/1.1', 'POST /one HTTP/1.1']);
    for (const h of heads) expect(h.filter((l) => /^host:/i.test(l))).toEqual([`host: 127.0.0.1:${server.port}`]);
    expect(heads.map((h) => h.filter((l) => /^authorization:/i.test(l)))).toEqual([
      [`authorization: Basic ${Buffer.from('u:p').toString('base64')}`], [`authorization: Basic ${Buffer.from('u:p').toString('base64')}`], [], ['Authorization: Bearer t'],
    ]);
    expect(heads.map((h) => h.filter((l) => /^content-length:/i.test(l)))).toEqual(Array(4).fill(['content-length: 2']));
    expect(heads[1]).toContain('Content-Type: application/json');
    for (let i = 0; i < 2; i++) {
      await expect(leanPost(target, LOOPBACK, { 'bad name': 'v' }, '{}', options())).rejects.toThrow('Header name must be a valid HTTP token');
    }
    expect(server.requests).toHaveLength(4);
  });

  it('writes an IPv6 literal host in brackets', async () => {
    const server = await rawServer(() => ok(), '::1').catch(() => undefined);
    if (!server) {
      console.warn('skipped: this machine has no IPv6 loopback to listen on');
      return;
    }
    servers.push(server);
    const v6: CheckedDestination = { host: '::1', address: '::1', family: 6, addresses: [{ address: '::1', family: 6 }] };
    await leanPost({ secure: false, hostname: '::1', port: server.port, path: '/' }, v6, {}, '{}', options());
    expect(server.requests[0].head.split('\r\n')).toContain(`host: [::1]:${server.port}`);
  });

  it('keeps a connection alive across answers framed by a length, by chunks and with no body', async () => {
    let n = 0;
    const server = await start(() => {
      n++;
      if (n === 1) return ok('first');
      if (n === 2) return ['HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\nretry-after: 5\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: t\r\n\r\n'];
      return ['HTTP/1.1 204 No Content\r\n\r\n'];
    });
    const first = await post(server.port);
    const second = await post(server.port);
    const third = await post(server.port);
    expect([first.status, second.status, third.status]).toEqual([200, 201, 204]);
    expect(first.body.toString()).toBe('first');
    expect(second.body.toString()).toBe('abcde');
    expect(second.headers['retry-after']).toBe('5');
    expect(third.body.length).toBe(0);
    expect(server.connections()).toBe(1);
  });

  it('parses an answer that arrives a few bytes at a time', async () => {
    const raw = 'HTTP/1.1 200 OK\r\nx-a: 1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n';
    const server = await start(() => raw.match(/.{1,3}/gs)!);
    const res = await post(server.port);
    expect(res.status).toBe(200);
    expect(res.headers['x-a']).toBe('1');
    expect(res.body.toString()).toBe('hello world');
    // Complete and framed: the connection is reused.
    await post(server.port);
    expect(server.connections()).toBe(1);
  });

  it('skips interim 1xx answers', async () => {
    const server = await start(() => ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n', ...ok('done')]);
    const res = await post(server.port);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('done');
    expect(res.headers.link).toBeUndefined();
  });

  it('reads a body that ends with the connection, and does not reuse that connection', async () => {
    const server = await start((_req, socket) => {
      socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end');
      return [];
    });
    const first = await post(server.port);
    expect(first.body.toString()).toBe('until the end');
    await post(server.port);
    expect(server.connections()).toBe(2);
  });

  it('does not reuse a connection after `connection: close`, an HTTP/1.0 answer, or bytes past the answer', async () => {
    const answers = [
      ok('a', 'connection: close\r\n'),
      ['HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nb'],
      [`${ok('c')[0]}HTTP/1.1 200 OK\r\n`],
      ok('d'),
      ok('e'),
    ];
    let n = 0;
    const server = await start(() => answers[n++]);
    for (let i = 0; i < answers.length; i++) expect((await post(server.port)).status).toBe(200);
    // Connections: a, b, c each on their own; d and e share one.
    expect(server.connections()).toBe(4);
  });

  it('fails clearly on what is not HTTP/1.1, and on a head over the limit', async () => {
    const bad = [
      ['SMTP ready\r\n\r\n'],
      ['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n'],
      ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc'],
      ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'],
      ['HTTP/1.1 101 Switching Protocols\r\n\r\n'],
      [`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`],
    ];
    let n = 0;
    const server = await start(() => bad[n++]);
    for (let i = 0; i < bad.length; i++) {
      const error = await post(server.port).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EgressError);
      expect((error as EgressError).code).toBe('network');
      expect((error as Error).message).toMatch(/not valid HTTP\/1\.1|larger than/);
    }
    // Every failed connection was dropped.
    await new Promise((r) => setTimeout(r, 50));
    expect(server.connections()).toBe(bad.length);
  });

  it('keeps at most the cap of a large body, answers at once and drops the connection', async () => {
    const big = 'x'.repeat(200_000);
    const server = await start(() => ok(big));
    const res = await post(server.port, '{}', {}, options(2000, 1000));
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(1000);
    await post(server.port, '{}', {}, options(2000, 1000));
    expect(server.connections()).toBe(2);
  });

  it('retries once on a fresh connection when a kept-alive one was closed under the request', async () => {
    let n = 0;
    const server = await start((_req, socket) => {
      // The second request arrives on the kept-alive connection as the receiver drops it.
      if (++n === 2) {
        socket.destroy();
        return null;
      }
      return ok('k');
    });
    expect((await post(server.port)).status).toBe(200);
    expect((await post(server.port)).status).toBe(200);
    expect(server.connections()).toBe(2);
    expect(server.requests).toHaveLength(3);
  });

  it('retries a dropped kept-alive connection only once', async () => {
    let n = 0;
    const server = await start((_req, socket) => {
      if (++n === 1) return ok('k');
      socket.destroy();
      return null;
    });
    expect((await post(server.port)).status).toBe(200);
    const error = await post(server.port).catch((e: unknown) => e);
    expect((error as EgressError).code).toBe('network');
    expect(server.requests).toHaveLength(3);
  });

  it('fails with a network error when a fresh connection is reset, without retrying', async () => {
    const server = await start((_req, socket) => {
      socket.resetAndDestroy();
      return null;
    });
    const error = await post(server.port).catch((e: unknown) => e);
    expect((error as EgressError).code).toBe('network');
    expect(server.requests).toHaveLength(1);
  });

  it('times out on a receiver that never answers, and closes that connection', async () => {
    const server = await start(() => null);
    const error = await post(server.port, '{}', {}, options(150)).catch((e: unknown) => e);
    expect((error as EgressError).code).toBe('timeout');
    await new Promise((r) => setTimeout(r, 50));
    expect(server.open()).toBe(0);
  });

  it('refuses a header that would split the request, and sends nothing', async () => {
    const server = await start(() => ok());
    await expect(post(server.port, '{}', { 'x-event': 'a\r\nx-injected: 1' })).rejects.toThrow(TypeError);
    await expect(post(server.port, '{}', { 'bad name': 'v' })).rejects.toThrow(TypeError);
    expect(server.connections()).toBe(0);
  });

  it('tries the next checked address when the first cannot be reached', async () => {
    const server = await start(() => ok('second'));
    // Nothing listens on 127.0.0.2 at that port (the server is bound to 127.0.0.1 only).
    const two: CheckedDestination = { ...LOOPBACK, addresses: [{ address: '127.0.0.2', family: 4 }, { address: '127.0.0.1', family: 4 }] };
    const res = await post(server.port, '{}', {}, options(), two);
    expect(res.body.toString()).toBe('second');
  });

  it('serves many POSTs at once over at most 256 connections, each answered with its own reply', async () => {
    const server = await start((req) => ok(req.body.toString()));
    const bodies = Array.from({ length: 400 }, (_, i) => `{"i":${i}}`);
    const answers = await Promise.all(bodies.map((b) => post(server.port, b)));
    expect(answers.map((a) => a.body.toString())).toEqual(bodies);
    expect(server.connections()).toBeLessThanOrEqual(256);
  });
});

// The TLS cases: a certificate made for the test (127.0.0.1 and localhost), a real HTTPS server.
// A process trusts it only through NODE_EXTRA_CA_CERTS, read at start: the deliveries that must
// succeed run in a child process started with it, through the compiled `deliverWebhook` (dist/:
// `npm test` builds first), as a server started that way would make them.
describe('lean HTTP client over TLS', () => {
  const ROOT = join(__dirname, '..', '..', '..');
  let dir: string;
  let cert: string;
  let server: https.Server;
  let port: number;
  let connections = 0;
  const seen: { host?: string; body: string }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-lean-tls-'));
    const key = join(dir, 'tls.key');
    cert = join(dir, 'tls.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ host: req.headers.host, body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('secure ok');
      });
    });
    server.on('secureConnection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    closeIdleLeanConnections();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    seen.length = 0;
    connections = 0;
  });

  /** Deliveries made one after the other in a child trusting the test certificate; their results. */
  async function deliverInChild(urls: string[]): Promise<{ ok: boolean; statusCode?: number; error?: string }[]> {
    const script = `
      const { deliverWebhook } = require(${JSON.stringify(join(ROOT, 'dist/libs/delivery/src/index.js'))});
      (async () => {
        const out = [];
        for (const url of ${JSON.stringify(urls)}) {
          out.push(await deliverWebhook({ url, secrets: ['whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')],
            msgId: 'msg_tls', body: '{"tls":true}', emitterId: 'dc_1', eventName: 'e', timeoutMs: 5000, policy: { allow: ['127.0.0.1', '127.0.0.2', 'localhost'] } }));
        }
        process.stdout.write(JSON.stringify(out));
        process.exit(0);
      })();
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: cert } });
    return JSON.parse(stdout);
  }

  it('delivers over HTTPS to a certificate the process trusts, by IP and by name, reusing the connection', async () => {
    const results = await deliverInChild([`https://127.0.0.1:${port}/a`, `https://127.0.0.1:${port}/b`, `https://localhost:${port}/c`]);
    expect(results.map((r) => [r.ok, r.statusCode])).toEqual([[true, 200], [true, 200], [true, 200]]);
    expect(seen.map((r) => r.body)).toEqual(['{"tls":true}', '{"tls":true}', '{"tls":true}']);
    expect(seen.map((r) => r.host)).toEqual([`127.0.0.1:${port}`, `127.0.0.1:${port}`, `localhost:${port}`]);
    // The two requests to 127.0.0.1 share one connection; localhost is another destination.
    expect(connections).toBe(2);
  });

  it('refuses a certificate that does not name the host, even from a trusted issuer', async () => {
    // A server on 127.0.0.2 with the same certificate, which names 127.0.0.1 and localhost only.
    const other = https.createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(cert) }, (_req, res) => res.end('no'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.2', r));
    try {
      const otherPort = (other.address() as net.AddressInfo).port;
      const [result] = await deliverInChild([`https://127.0.0.2:${otherPort}/`]);
      expect(result.ok).toBe(false);
      expect(result.error).toMatch(/certificate|altnames|IP: 127\.0\.0\.2/i);
    } finally {
      other.closeAllConnections();
      await new Promise((r) => other.close(r));
    }
  });

  it('refuses a self-signed certificate the process does not trust, before sending anything', async () => {
    const error = await leanPost({ secure: true, hostname: '127.0.0.1', port, path: '/' }, LOOPBACK, {}, '{"secret":1}', options()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EgressError);
    expect((error as EgressError).code).toBe('network');
    expect((error as Error).message).toMatch(/self.signed certificate/i);
    expect(seen).toHaveLength(0);
  });
});
