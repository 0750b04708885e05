import { connect, Socket } from 'node:net';
import { ECHO_SOURCE } from './support/fixtures';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** How long a test waits for the server to close a socket before calling it stuck: a bound, not an assertion. */
const STUCK_AFTER_MS = 20_000;

interface RawConnection {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** True once the server has closed the connection. */
  isClosed(): boolean;
  /** Resolves with everything received once the server closes; rejects if it never does. */
  closed: Promise<string>;
  /** Resolves once `text` has arrived. */
  receivedText(text: string): Promise<void>;
}

/** Every raw socket a test opened: destroyed after each suite, so a server that keeps them cannot hang its shutdown. */
const opened: Socket[] = [];
const destroyOpened = () => opened.splice(0).forEach((s) => s.destroy());

/** A raw TCP connection to the server, as a slow or idle attacker holds it. */
async function openRaw(base: string): Promise<RawConnection> {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  opened.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  let data = '';
  let closed = false;
  socket.on('data', (d) => (data += d.toString('latin1')));
  // A reset counts as closed too: either way the server let go of the connection.
  socket.on('error', () => undefined);
  const closedPromise = new Promise<string>((resolve, reject) => {
    const stuck = setTimeout(() => {
      reject(new Error(`the server kept the connection open; received ${JSON.stringify(data)}`));
      socket.destroy();
    }, STUCK_AFTER_MS);
    socket.once('close', () => {
      closed = true;
      clearTimeout(stuck);
      resolve(data);
    });
  });
  return {
    socket,
    received: () => data,
    isClosed: () => closed,
    closed: closedPromise,
    receivedText: (text) => eventually(() => data.includes(text), STUCK_AFTER_MS, `"${text}" from the server`).then(() => undefined),
  };
}

/** Writes one byte at a time until the server closes the connection: activity must not extend the deadline. */
function drip(conn: RawConnection, bytes: string): void {
  let i = 0;
  const timer = setInterval(() => {
    if (conn.isClosed() || conn.socket.destroyed) return clearInterval(timer);
    conn.socket.write(bytes[i++ % bytes.length]);
  }, 50);
  void conn.closed.finally(() => clearInterval(timer)).catch(() => undefined);
}

/** Node answers a request that ran out of time with a 408 and closes; a bare close is also acceptable. */
function expectTimedOut(received: string): void {
  expect(received === '' || received.startsWith('HTTP/1.1 408 ')).toBe(true);
  expect(received).not.toMatch(/^HTTP\/1\.1 [^4]/);
}

describe('slow and idle clients cannot hold connections open', () => {
  let server: SluiceProcess;
  let endpointPath: string;
  let sourceId: string;

  beforeAll(async () => {
    server = await startSluice({ env: { SLUICE_HTTP_HEADERS_TIMEOUT_MS: '300', SLUICE_HTTP_BODY_TIMEOUT_MS: '600', SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS: '300' } });
    const src = (await api(server.url, server.apiKey).post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    endpointPath = new URL(src.endpoint_url).pathname;
    sourceId = src.id;
  });
  afterAll(async () => {
    destroyOpened();
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('an unauthenticated API request whose body never finishes gets a 408 / is closed, even while it trickles', async () => {
    const stalled = await openRaw(server.url);
    stalled.socket.write('POST /v1/webhooks HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
    const trickling = await openRaw(server.url);
    trickling.socket.write('POST /v1/webhooks HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n');
    drip(trickling, '{"a":1}');
    expectTimedOut(await stalled.closed);
    expectTimedOut(await trickling.closed);
  });

  it('a source endpoint request whose body never finishes gets a 408 / is closed, and nothing is recorded or run', async () => {
    const stalled = await openRaw(server.url);
    stalled.socket.write(`POST ${endpointPath} HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    const trickling = await openRaw(server.url);
    trickling.socket.write(`PUT ${endpointPath}/upload HTTP/1.1\r\nHost: sluice\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n`);
    drip(trickling, 'x');
    expectTimedOut(await stalled.closed);
    expectTimedOut(await trickling.closed);
    const c = api(server.url, server.apiKey);
    expect((await c.get(`/v1/sources/${sourceId}/logs`)).body.data).toEqual([]);
    expect((await c.get(`/v1/sources/${sourceId}/event_summaries`)).body.data).toEqual([]);
  });

  it('a connection that sends its request head too slowly, or nothing at all, is closed', async () => {
    const silent = await openRaw(server.url);
    const slowHead = await openRaw(server.url);
    slowHead.socket.write('GET /v1/users/me HTTP/1.1\r\nHost: sluice\r\n');
    drip(slowHead, 'X-Padding: a\r\n');
    expectTimedOut(await silent.closed);
    expectTimedOut(await slowHead.closed);
  });

  it('an idle keep-alive connection is closed by the server after its answer', async () => {
    const conn = await openRaw(server.url);
    conn.socket.write(`GET /v1/users/me HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer ${server.apiKey}\r\nConnection: keep-alive\r\n\r\n`);
    await conn.receivedText('"data"');
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(conn.received()).toMatch(/\r\nconnection: keep-alive\r\n/i);
    // Nothing more is sent: the server alone ends the connection.
    const all = await conn.closed;
    expect(all.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('after all that, the API and the endpoint still answer', async () => {
    expect((await api(server.url, server.apiKey).get('/v1/users/me')).status).toBe(200);
    const r = await fetch(`${server.url}${endpointPath}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    expect(r.status).toBe(200);
  });
});

describe('the connection limit', () => {
  let server: SluiceProcess;
  const LIMIT = 4;

  beforeAll(async () => {
    server = await startSluice({ env: { SLUICE_HTTP_MAX_CONNECTIONS: String(LIMIT), SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS: '60000' } });
  });
  afterAll(async () => {
    destroyOpened();
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('closes connections beyond the limit while the others stay open, and serves again once they go away', async () => {
    // Each holder completes one request, so the server has certainly accepted it, then idles.
    const holders: RawConnection[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const conn = await openRaw(server.url);
      conn.socket.write(`GET /v1/users/me HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer ${server.apiKey}\r\n\r\n`);
      await conn.receivedText('"data"');
      holders.push(conn);
    }
    const extra = await openRaw(server.url);
    extra.socket.write(`GET /v1/users/me HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer ${server.apiKey}\r\n\r\n`);
    expect(await extra.closed).toBe('');
    // Refused while the holders were all still open.
    expect(holders.map((h) => h.isClosed())).toEqual(Array(LIMIT).fill(false));

    for (const h of holders) h.socket.destroy();
    const status = await eventually(async () => {
      try {
        return (await api(server.url, server.apiKey).get('/v1/users/me')).status;
      } catch {
        return 0;
      }
    }, STUCK_AFTER_MS, 'the API to answer again');
    expect(status).toBe(200);
  });

  it('a bad limit or timeout stops the server at start, naming the variable', async () => {
    await expect(startSluice({ env: { SLUICE_HTTP_MAX_CONNECTIONS: '0' } })).rejects.toThrow(/SLUICE_HTTP_MAX_CONNECTIONS: expected an integer/);
    await expect(startSluice({ env: { SLUICE_HTTP_HEADERS_TIMEOUT_MS: '5000', SLUICE_HTTP_BODY_TIMEOUT_MS: '1000' } })).rejects.toThrow(/SLUICE_HTTP_HEADERS_TIMEOUT_MS: must not exceed SLUICE_HTTP_BODY_TIMEOUT_MS/);
  });
});
