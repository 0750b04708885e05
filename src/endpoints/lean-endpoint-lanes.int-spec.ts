import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { RawConnection as Raw } from '../../test/support/raw-connection';
import { LeanEndpointServer, LeanRequestHead } from './lean-endpoint-server';

/**
 * Lanes: requests the lean server does not answer itself, passed to Node's server while the lean
 * server keeps the connection. A plain Node server behind it (no Sluice), so each test sees only
 * the lean server's framing and ordering: `/e/...` is answered by the lean server (the body echoed),
 * anything else by Node's handler below.
 */

/**
 * Node's side: echoes what it read; `/api/slow` answers after 80 ms, `/api/early` at once without
 * reading the body (`/api/early-close` also closing the connection), `/api/close` with Connection: close.
 */
function nodeHandler(seen: string[]): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.url === '/api/stream') {
      // An answer that never ends (as an event stream's): its first line, then nothing.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n');
      req.on('close', () => seen.push(`closed ${req.url}`));
      return;
    }
    if (req.url === '/api/early' || req.url === '/api/early-close') {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(413, { 'content-type': 'text/plain', 'content-length': 5, ...(req.url === '/api/early-close' ? { connection: 'close' } : {}) });
      res.end('early');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push(`${req.method} ${req.url}`);
      const answer = JSON.stringify({ node: `${req.method} ${req.url}`, body, from: req.socket.remoteAddress });
      const send = () => {
        if (req.url === '/api/close') res.setHeader('connection', 'close');
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
        res.end(answer);
      };
      if (req.url === '/api/slow') setTimeout(send, 80);
      else send();
    });
  };
}

const post = (target: string, body: string, extra = '') => `POST ${target} HTTP/1.1\r\nHost: h\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe('lanes: requests the lean server passes to Node\'s server on a connection it keeps', () => {
  let server: Server;
  let lean: LeanEndpointServer<string>;
  let port = 0;
  const seen: string[] = [];
  const leanRead: string[] = [];

  beforeAll(async () => {
    server = createServer(nodeHandler(seen));
    lean = LeanEndpointServer.inFront<string>(server, {
      take: (head: LeanRequestHead) => (head.url.startsWith('/e/ok') ? head.url : undefined),
      answer: async (url, _head, body) => {
        leanRead.push(`${url} ${body.toString()}`);
        return { status: 200, json: { lean: url, body: body.toString() } };
      },
    }, { headersTimeoutMs: 2_000, requestTimeoutMs: 5_000, keepAliveTimeoutMs: 5_000, checkIntervalMs: 250, maxHeadBytes: 16 * 1024 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('answers API calls and events pipelined on one connection, in order, however the bytes are cut, events on the lean path', async () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const requests: { bytes: string; want: unknown }[] = [];
    for (let i = 0; i < 30; i++) {
      const body = JSON.stringify({ i, pad: 'é'.repeat(random(400)) });
      if (i % 3 === 0) requests.push({ bytes: post(`/e/ok/${i}`, body), want: { lean: `/e/ok/${i}`, body } });
      // A body that reads like a request: only its Content-Length frames it.
      else if (i % 3 === 1) requests.push({ bytes: post(`/api/${i}`, body + post('/e/ok/smuggled', '{}')), want: { node: `POST /api/${i}`, body: body + post('/e/ok/smuggled', '{}'), from: '127.0.0.1' } });
      else requests.push({ bytes: `GET /api/${i}?q=${i} HTTP/1.1\r\nHost: h\r\n\r\n`, want: { node: `GET /api/${i}?q=${i}`, body: '', from: '127.0.0.1' } });
    }
    const all = Buffer.from(requests.map((r) => r.bytes).join(''));
    const pieces: Buffer[] = [];
    for (let at = 0; at < all.length;) {
      const n = 1 + random(random(4) === 0 ? 5 : 900);
      pieces.push(all.subarray(at, at + n));
      at += n;
    }
    const before = { ...lean.stats };
    const raw = new Raw(port);
    await raw.writeApart(0, pieces);
    await raw.settle(30);
    const bodies = raw.bodies();
    expect(bodies.map((b) => JSON.parse(b))).toEqual(requests.map((r) => r.want));
    expect(raw.closed).toBe(false);
    expect(lean.stats.served - before.served).toBe(10);
    expect(lean.stats.laned - before.laned).toBe(20);
    expect(lean.stats.handedOff - before.handedOff).toBe(0);
    expect(leanRead.some((r) => r.includes('smuggled'))).toBe(false);
    raw.socket.destroy();
  });

  it('answers an event after the slow Node answer before it, never ahead of it', async () => {
    const raw = new Raw(port);
    await raw.write(`GET /api/slow HTTP/1.1\r\nHost: h\r\n\r\n` + post('/e/ok/after', 'x'));
    await raw.settle(2);
    const bodies = raw.bodies();
    expect(bodies.map((b) => JSON.parse(b))).toEqual([{ node: 'GET /api/slow', body: '', from: '127.0.0.1' }, { lean: '/e/ok/after', body: 'x' }]);
    raw.socket.destroy();
  });

  it('passes the rest of a body Node answered early, and reads the request after it', async () => {
    const tail = post('/e/ok/inside', '{}').repeat(2000);
    const raw = new Raw(port);
    const served = lean.stats.served;
    await raw.writeApart(5, [post('/api/early', tail).slice(0, 300), post('/api/early', tail).slice(300), post('/e/ok/next', 'n')]);
    await raw.settle(2);
    const bodies = raw.bodies();
    expect(bodies).toEqual(['early', JSON.stringify({ lean: '/e/ok/next', body: 'n' })]);
    expect(lean.stats.served - served).toBe(1);
    expect(leanRead.some((r) => r.includes('inside'))).toBe(false);
    raw.socket.destroy();
  });

  it('reads no request after an early Node answer that closes the connection, while the rest of the body still arrives', async () => {
    // A client that keeps sending after the server's FIN (half-open), as one mid-upload does.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let closed = false;
    socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    await new Promise((r) => socket.once('connect', r));
    const served = lean.stats.served;
    const whole = post('/api/early-close', 'b'.repeat(60_000));
    socket.write(whole.slice(0, 2_000));
    const until = Date.now() + 5_000;
    while (!received.includes('early') && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    expect(received.toString('latin1')).toMatch(/^HTTP\/1\.1 413 [^]*\r\nConnection: close\r\n[^]*early$/i);
    await new Promise((r) => setTimeout(r, 50));
    socket.write(whole.slice(2_000) + post('/e/ok/after-close', 'x'));
    await new Promise((r) => setTimeout(r, 300));
    socket.end();
    while (!closed && Date.now() < until + 5_000) await new Promise((r) => setTimeout(r, 5));
    expect(closed).toBe(true);
    expect(received.toString('latin1')).toMatch(/early$/);
    expect(lean.stats.served).toBe(served);
    expect(leanRead.some((r) => r.includes('after-close'))).toBe(false);
    // The server goes on serving.
    const next = new Raw(port);
    await next.write(post('/e/ok/next-connection', 'y'));
    await next.settle(1);
    expect(next.bodies()).toEqual([JSON.stringify({ lean: '/e/ok/next-connection', body: 'y' })]);
    next.socket.destroy();
  });

  it('passes the client\'s end to Node while Node still answers (a stream): the request hears its close, the connection closes', async () => {
    // The client leaves as fetch's abort or a closed tab does: it ends its side and keeps reading.
    const raw = new Raw(port, { allowHalfOpen: true });
    try {
      await raw.write('GET /api/stream HTTP/1.1\r\nHost: h\r\n\r\n');
      await raw.until(() => raw.text().includes(': connected'));
      expect(raw.text()).toMatch(/^HTTP\/1\.1 200 [^]*\r\n\r\n[0-9a-f]+\r\n: connected\n\n\r\n$/);
      raw.socket.end();
      // Held until the answer ended, the end would never reach Node: no close, the socket half-open.
      await raw.until(() => raw.closed && seen.includes('closed /api/stream'));
      expect(seen).toContain('closed /api/stream');
      expect(raw.closed).toBe(true);
    } finally {
      raw.socket.destroy();
    }
  });

  it('closes the connection after a Node answer that closes it, and answers nothing after', async () => {
    const raw = new Raw(port);
    const served = lean.stats.served;
    await raw.write(`GET /api/close HTTP/1.1\r\nHost: h\r\n\r\n` + post('/e/ok/never', 'x'));
    await raw.settle(2);
    const bodies = raw.bodies();
    expect(bodies.map((b) => JSON.parse(b))).toEqual([{ node: 'GET /api/close', body: '', from: '127.0.0.1' }]);
    expect(raw.received.toString('latin1')).toMatch(/\r\nConnection: close\r\n/i);
    const until = Date.now() + 5_000;
    while (!raw.closed && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    expect(raw.closed).toBe(true);
    expect(lean.stats.served).toBe(served);
  });

  it('gives the connection to Node for good at a request it cannot frame, after a lane: both answered, nothing lost', async () => {
    const raw = new Raw(port);
    const before = { ...lean.stats };
    await raw.write(`GET /api/first HTTP/1.1\r\nHost: h\r\n\r\n`);
    await raw.settle(1);
    await raw.write(`POST /api/chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` + post('/e/ok/later', 'z'));
    await raw.settle(3);
    expect(raw.bodies().map((b) => JSON.parse(b))).toEqual([
      { node: 'GET /api/first', body: '', from: '127.0.0.1' },
      { node: 'POST /api/chunked', body: 'abc', from: '127.0.0.1' },
      // Node's for good: Node's handler answers the endpoint request too.
      { node: 'POST /e/ok/later', body: 'z', from: '127.0.0.1' },
    ]);
    expect(raw.closed).toBe(false);
    expect([lean.stats.laned - before.laned, lean.stats.handedOff - before.handedOff, lean.stats.served - before.served]).toEqual([1, 1, 0]);
    raw.socket.destroy();
  });

  it('forgets a connection whose client goes away mid-body on a lane: Node sees the request aborted, nothing is kept', async () => {
    const aborted = new Promise<boolean>((resolve) => {
      server.once('request', (req: IncomingMessage) => req.once('close', () => resolve(!req.complete)));
    });
    const raw = new Raw(port);
    await raw.write(`POST /api/half HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{"half":`);
    await new Promise((r) => setTimeout(r, 50));
    raw.socket.destroy();
    expect(await aborted).toBe(true);
    const until = Date.now() + 5_000;
    while ((lean.openConnections > 0 || lean.checking) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(lean.openConnections).toBe(0);
    expect(lean.checking).toBe(false);
  });
});

describe('lanes while the server closes', () => {
  it('closes a connection whose Node answer ends after the close began, instead of keeping it alive', async () => {
    let stream: ServerResponse | undefined;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n');
      stream = res;
    });
    // A keep-alive far longer than the test waits: the connection must close because of the close.
    const lean = LeanEndpointServer.inFront<string>(server, { take: () => undefined, answer: async () => ({ status: 500 }) },
      { headersTimeoutMs: 2_000, requestTimeoutMs: 5_000, keepAliveTimeoutMs: 60_000, checkIntervalMs: 250, maxHeadBytes: 16 * 1024 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const raw = new Raw((server.address() as AddressInfo).port);
    try {
      await raw.write('GET /api/stream HTTP/1.1\r\nHost: h\r\n\r\n');
      await raw.until(() => raw.text().includes(': connected'));
      // What the server's shutdown does: the lean server closes (this connection is busy on its
      // lane, so it stays), then the stream is ended (endSseStreams).
      lean.close();
      stream!.end();
      await raw.until(() => raw.closed);
      expect(raw.text()).toMatch(/: connected\n\n\r\n0\r\n\r\n$/);
      expect(raw.closed).toBe(true);
    } finally {
      raw.socket.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
