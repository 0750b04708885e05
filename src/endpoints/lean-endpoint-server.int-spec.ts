import { createServer, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InProcessServer, MIRROR_SOURCE } from '../../test/support/in-process-server';
import { RawConnection as Raw } from '../../test/support/raw-connection';
import { eventually } from '../../test/support/sluice-process';
import { parseHead, parsePlainHead } from './lean-endpoint-server';

/** Answers from the request's query: `status`, `type`, `hv` (a header value), `bytes` (base64), `text`. */
const RESPONDER = `export default { name: "responder", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  run(event) {
    const q = event.query;
    const headers = { "X-Echo": event.method + " " + event.path };
    if (q.type) headers["Content-Type"] = q.type;
    if (q.hv) headers["X-Value"] = q.hv;
    const answer = { status: Number(q.status || 200), headers };
    if (q.bytes) answer.body = Uint8Array.from(atob(q.bytes), (c) => c.charCodeAt(0));
    else answer.body = q.text === undefined ? "" : q.text;
    this.http.respond(answer);
  } }`;

/** Answers only once its gate (an HTTP server of the test) answers. */
const GATED_RESPONDER = `export default { name: "gated", version: "1", props: { http: { type: "$.interface.http", customResponse: true }, gate: { type: "string" } },
  async run(event) { await fetch(this.gate); this.http.respond({ status: 200, body: "late" }); } }`;

/** What differs between two servers by nature: dates, ids, keys, ports. */
function normalised(text: string, inst: InProcessServer, keys: string[]): string {
  let t = text.replace(/^Date: .*$/gim, 'Date: (a date)').replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '(an id)');
  keys.forEach((k, i) => (t = t.split(k).join(`(key ${i})`)));
  return t.split(`:${inst.port}`).join(':(port)');
}

/** Raw requests, each on a connection of its own, and the answers they must get. */
function cases(k: { mirror: string; responder: string }): { name: string; pieces: string[]; answers: number }[] {
  const post = (target: string, body: string, extra = '') => `POST ${target} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const m = `/e/${k.mirror}`;
  const r = `/e/${k.responder}`;
  const b64 = encodeURIComponent(Buffer.from([0, 1, 2, 250, 255]).toString('base64'));
  return [
    // What the lean server reads itself.
    { name: 'a POST with a query', pieces: [post(`${m}/deep/path?x=1&x=2&y=a+b&z=%41%ZZ&flag`, '{"n":1,"s":"caf\u00e9"}', 'X-Custom:   padded value \t\r\n')], answers: 1 },
    { name: 'three POSTs pipelined in one write', pieces: [post(m, '{"p":1}') + post(`${m}?q=2`, 'text') + post(m, '')], answers: 3 },
    { name: 'a POST a byte at a time', pieces: [...post(`${m}/slow`, '{"slow":true}').split('')], answers: 1 },
    { name: 'a GET without a body, and a DELETE', pieces: [`GET ${m}/get HTTP/1.1\r\nhost: h\r\n\r\nDELETE ${m}/a%20b HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n`], answers: 2 },
    { name: 'Connection: close', pieces: [post(m, '{"c":1}', 'Connection: close\r\n')], answers: 1 },
    { name: 'custom responses: text, bytes, a type, 204, 304, a latin1 header value', pieces: [
      post(`${r}/hello?text=h%C3%A9llo`, '{}') + post(`${r}?bytes=${b64}`, '{}') + post(`${r}?status=201&type=text/csv&text=a,b`, '{}')
      + post(`${r}?status=204&text=dropped`, '{}') + post(`${r}?status=304&text=unsent`, '{}') + post(`${r}?hv=%C3%A9t%C3%A9`, '{}'),
    ], answers: 6 },
    // What goes to Node's server: its answers, the same with or without the lean server.
    { name: 'chunked, then a plain POST on the same connection', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` + post(m, '{"after":"chunked"}')], answers: 2 },
    { name: 'a plain POST, then an API call on the same connection', pieces: [post(m, '{"before":"api"}') + `GET /v1/sources HTTP/1.1\r\nHost: h\r\n\r\n`], answers: 2 },
    { name: 'Content-Length and Transfer-Encoding both', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n`], answers: 1 },
    { name: 'two Content-Lengths', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nabcd`], answers: 1 },
    { name: 'a listed Content-Length', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab`], answers: 1 },
    { name: 'a signed Content-Length', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nContent-Length: +2\r\n\r\nab`], answers: 1 },
    { name: 'a folded header line', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'bare LF line ends', pieces: [`POST ${m} HTTP/1.1\nHost: h\nContent-Length: 2\n\nab`], answers: 1 },
    { name: 'a space before the colon', pieces: [`POST ${m} HTTP/1.1\r\nHost : h\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'a NUL in a value', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nX-A: a\u0000b\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'no Host', pieces: [`POST ${m} HTTP/1.1\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'HTTP/1.0', pieces: [`POST ${m} HTTP/1.0\r\nHost: h\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'Expect: 100-continue', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n`, 'ab'], answers: 2 },
    { name: 'a duplicate header', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nX-Twice: 1\r\nx-twice: 2\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'a HEAD', pieces: [`HEAD ${m} HTTP/1.1\r\nHost: h\r\n\r\n`], answers: 1 },
    { name: 'an unknown key', pieces: [post('/e/no-such-key', '{}')], answers: 1 },
    { name: 'a body over the limit', pieces: [post(m, '"' + 'x'.repeat(512 * 1024) + '"')], answers: 1 },
    { name: 'a head over 16 KiB', pieces: [`POST ${m} HTTP/1.1\r\nHost: h\r\nX-Big: ${'b'.repeat(17 * 1024)}\r\nContent-Length: 2\r\n\r\nab`], answers: 1 },
    { name: 'Connection: upgrade', pieces: [`GET ${m} HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`], answers: 1 },
  ];
}

describe('the lean endpoint server in front of Node\'s', () => {
  const lean = new InProcessServer();
  const node = new InProcessServer();
  const ids = { lean: { mirror: '', responder: '' }, node: { mirror: '', responder: '' } };
  const keys = { lean: { mirror: '', responder: '' }, node: { mirror: '', responder: '' } };

  beforeAll(async () => {
    await lean.start({});
    await node.start({ SLUICE_ENDPOINT_SERVER: 'node' });
    for (const [name, inst] of [['lean', lean], ['node', node]] as const) {
      const m = await inst.deploy(MIRROR_SOURCE);
      const r = await inst.deploy(RESPONDER);
      ids[name] = { mirror: m.id, responder: r.id };
      keys[name] = { mirror: m.key, responder: r.key };
    }
  }, 60_000);
  afterAll(async () => {
    await lean.stop();
    await node.stop();
  });

  it('answers every request, those it reads and those it hands to Node, as Node\'s server alone does, and records the same', async () => {
    expect(lean.server.lean).toBeDefined();
    expect(node.server.lean).toBeUndefined();
    const leanCases = cases(keys.lean);
    const nodeCases = cases(keys.node);
    const stats = lean.server.lean!.stats;
    const before = { ...stats };
    for (let i = 0; i < leanCases.length; i++) {
      const a = new Raw(lean.port);
      const b = new Raw(node.port);
      await a.write(...leanCases[i].pieces);
      await b.write(...nodeCases[i].pieces);
      const [ta, tb] = [await a.settle(leanCases[i].answers), await b.settle(nodeCases[i].answers)];
      expect({ name: leanCases[i].name, answer: normalised(ta, lean, Object.values(keys.lean)) }).toEqual({ name: leanCases[i].name, answer: normalised(tb, node, Object.values(keys.node)) });
      expect({ name: leanCases[i].name, closed: a.closed }).toEqual({ name: leanCases[i].name, closed: b.closed });
      expect(a.answers()).toBe(leanCases[i].answers);
      a.socket.destroy();
      b.socket.destroy();
    }
    // The lean server read the first six cases' requests itself (1 + 3 + 1 + 2 + 1 + 6, and the
    // first of "then an API call"); it passed four plain requests to Node's server on their
    // connection's lane (the API call, the HEAD, the unknown key, the body over the limit), and gave
    // every other connection to Node.
    expect(stats.served - before.served).toBe(15);
    expect(stats.laned - before.laned).toBe(4);
    expect(stats.handedOff - before.handedOff).toBe(leanCases.length - 10);
    // What the runs saw is the same: method, path, query, headers (the raw spellings' lower case), body.
    // 16: the 9 the lean server read for the mirror, and those Node's server accepted.
    const want = 16;
    const [seenLean, seenNode] = [await lean.emitted(ids.lean.mirror, want), await node.emitted(ids.node.mirror, want)];
    expect(normalised(JSON.stringify(seenLean), lean, Object.values(keys.lean))).toBe(normalised(JSON.stringify(seenNode), node, Object.values(keys.node)));
    expect([seenLean.length, seenNode.length]).toEqual([want, want]);
    expect(seenLean[0]).toMatchObject({ method: 'POST', query: { x: ['1', '2'], y: 'a b', z: '%41%ZZ', flag: '' }, body: { n: 1, s: 'caf\u00e9' } });
    expect(seenLean[0].headers).toMatchObject({ host: 'h', 'content-type': 'application/json', 'x-custom': 'padded value' });
  }, 120_000);

  it('reads requests however the bytes are cut: 40 pipelined requests written in random pieces, answered and recorded in order', async () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const bodies = Array.from({ length: 40 }, (_, i) => JSON.stringify({ cut: i, text: 'x\u00e9\r\n'.repeat(random(300)) }));
    const bytes = Buffer.from(bodies.map((b) => `POST /e/${keys.lean.mirror}/cut?i=${JSON.parse(b).cut} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`).join(''));
    const pieces: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const n = 1 + random(random(4) === 0 ? 3 : 700);
      pieces.push(bytes.subarray(at, at + n));
      at += n;
    }
    const before = (await lean.emitted(ids.lean.mirror, 0)).length;
    const served = lean.server.lean!.stats.served;
    const raw = new Raw(lean.port);
    await raw.writeApart(0, pieces);
    await raw.settle(40);
    expect(raw.answers()).toBe(40);
    expect(raw.closed).toBe(false);
    expect(lean.server.lean!.stats.served - served).toBe(40);
    raw.socket.destroy();
    const events = (await lean.emitted(ids.lean.mirror, before + 40)).slice(before);
    expect(events.map((e) => e.body)).toEqual(bodies.map((b) => JSON.parse(b)));
    expect(events.map((e) => e.path)).toEqual(bodies.map(() => '/cut'));
  }, 60_000);

  it('answers a request that asked to close, and reads nothing after it (where Node\'s server answers such a connection 400)', async () => {
    const count = (await lean.emitted(ids.lean.mirror, 0)).length;
    const bytes = (n: number) => `POST /e/${keys.lean.mirror} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 7\r\n\r\n{"c":${n}}`;
    const raw = new Raw(lean.port);
    await raw.write(bytes(1) + bytes(2));
    const answer = await raw.settle(1);
    await eventually(async () => (raw.closed ? true : undefined));
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\nConnection: close\r\n\r\n\{"ok":true,"request_id":"[^"]+"\}$/);
    // Node's parser meets the second request as an error before the first one's answer is
    // written, so it answers 400, although the first request was taken and is recorded: a client
    // would send it again. Here the first is answered and the rest is left unread.
    const node400 = new Raw(node.port);
    await node400.write(bytes(1).replace(keys.lean.mirror, keys.node.mirror) + bytes(2).replace(keys.lean.mirror, keys.node.mirror));
    expect(await node400.settle(1)).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    node400.socket.destroy();
    const events = await lean.emitted(ids.lean.mirror, count + 1);
    expect(events.slice(count).map((e) => e.body)).toEqual([{ c: 1 }]);
  });

  it('forgets a client that goes away mid-body: nothing recorded, no connection kept', async () => {
    const before = (await lean.emitted(ids.lean.mirror, 0)).length;
    const open = lean.server.lean!.openConnections;
    const raw = new Raw(lean.port);
    await raw.write(`POST /e/${keys.lean.mirror} HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{"half":`);
    await eventually(async () => (lean.server.lean!.openConnections === open + 1 ? true : undefined));
    raw.socket.destroy();
    await eventually(async () => (lean.server.lean!.openConnections === open ? true : undefined));
    // A request after it is recorded, and it is the only new one.
    const next = new Raw(lean.port);
    await next.write(`POST /e/${keys.lean.mirror} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"next":1}`);
    await next.settle(1);
    next.socket.destroy();
    const events = await lean.emitted(ids.lean.mirror, before + 1);
    expect(events.slice(before).map((e) => e.body)).toEqual([{ next: 1 }]);
  });

  it('parses only the plainest heads itself', () => {
    const ok = parseHead('POST /e/k?a=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\nConnection: keep-alive, close');
    expect(ok).toEqual({ method: 'POST', url: '/e/k?a=1', headers: { host: 'h', 'content-length': '12', connection: 'keep-alive, close' }, contentLength: 12 });
    for (const head of [
      'POST /e/k HTTP/1.1\r\nHost: h\r\n__proto__: x',
      'POST /e/k HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, x-secret',
      'POST /e/k HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567890123456',
      'POST /e/k HTTP/1.1\r\nHost: h\r\nX: a\rb',
      'POST /e/k HTTP/1.1\r\nHost: h\r\nX: a\x7fb',
      'POST /e/k  HTTP/1.1\r\nHost: h',
      'POST /e/k\x00 HTTP/1.1\r\nHost: h',
      'post /e/k HTTP/1.1\r\nHost: h',
      'POST /v1/sources HTTP/1.1\r\nHost: h',
      '\r\nPOST /e/k HTTP/1.1\r\nHost: h',
    ]) expect({ head, parsed: parseHead(head) }).toEqual({ head, parsed: undefined });
    // Node keeps the first 2,000 headers and drops the rest: such a request is Node's to read.
    const names = (n: number) => Array.from({ length: n }, (_, i) => `x${i.toString(36)}: v`).join('\r\n');
    expect(parseHead(`POST /e/k HTTP/1.1\r\nHost: h\r\n${names(1999)}`)?.headers.x1).toBe('v');
    expect(parseHead(`POST /e/k HTTP/1.1\r\nHost: h\r\n${names(2000)}`)).toBeUndefined();
    // What may go to Node on a lane: as plain, any method Node's parser knows but CONNECT, any target.
    expect(parsePlainHead('POST /v1/sources HTTP/1.1\r\nHost: h\r\nContent-Length: 2')).toMatchObject({ method: 'POST', url: '/v1/sources', contentLength: 2 });
    expect(parsePlainHead('OPTIONS * HTTP/1.1\r\nHost: h')).toMatchObject({ method: 'OPTIONS', url: '*', contentLength: 0 });
    expect(parsePlainHead('HEAD /e/k HTTP/1.1\r\nHost: h')).toMatchObject({ method: 'HEAD' });
    for (const head of [
      'CONNECT h:443 HTTP/1.1\r\nHost: h:443',
      'post /v1/sources HTTP/1.1\r\nHost: h',
      'BREW /pot HTTP/1.1\r\nHost: h',
      'GET /v1/sources HTTP/1.0\r\nHost: h',
      'POST /v1/sources HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked',
      'POST /v1/sources HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2',
      'GET /v1/stream HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: upgrade',
      'GET /v1/sources HTTP/1.1',
    ]) expect({ head, parsed: parsePlainHead(head) }).toEqual({ head, parsed: undefined });
  });
});

describe('the lean endpoint server\'s timeouts and shutdown', () => {
  const inst = new InProcessServer();

  beforeAll(() => inst.start({ SLUICE_HTTP_HEADERS_TIMEOUT_MS: '300', SLUICE_HTTP_BODY_TIMEOUT_MS: '600', SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS: '400' }), 60_000);
  afterAll(() => inst.stop());

  it('answers 408 to a head or a body too slow to arrive, and closes an idle connection', async () => {
    const { key } = await inst.deploy(MIRROR_SOURCE);
    const lean = inst.server.lean!;
    const before = { ...lean.stats };
    const head = new Raw(inst.port);
    await head.write(`POST /e/${key} HTTP/1.1\r\nHost: h\r\n`);
    const body = new Raw(inst.port);
    await body.write(`POST /e/${key} HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc`);
    const idle = new Raw(inst.port);
    await idle.write(`POST /e/${key} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}`);
    expect(await idle.settle(1)).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(idle.closed).toBe(false);
    await eventually(async () => (head.closed && body.closed && idle.closed ? true : undefined), 5_000);
    expect(head.received.toString()).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    expect(body.received.toString()).toBe('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    expect([lean.stats.served, lean.stats.handedOff]).toEqual([before.served + 1, before.handedOff]);
    await eventually(async () => (lean.openConnections === 0 ? true : undefined), 5_000);
  });

  it('runs Node\'s check of the connections Node holds on its own interval, and no interval at all while no connection is open', async () => {
    const lean = inst.server.lean!;
    const server = inst.server.app.getHttpServer() as object;
    const key = Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connectionsCheckingInterval')!;
    // Node's own interval (every checking interval from listen to close) was stopped.
    expect(((server as Record<symbol, unknown>)[key] as { _destroyed: boolean })._destroyed).toBe(true);
    // The API calls of earlier tests kept connections alive: they close after the 400 ms keep-alive.
    await eventually(async () => (lean.checking ? undefined : true), 5_000);
    // A chunked request hands its connection to Node; a second head, too slow, gets Node's 408
    // (Fastify's clientError handler writes it, with a JSON body): Node's check ran, on the lean
    // server's interval.
    const handedOff = lean.stats.handedOff;
    const handed = new Raw(inst.port);
    await handed.write('POST /v1/nothing-here HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    expect(await handed.settle(1)).toMatch(/^HTTP\/1\.1 404 /);
    expect(lean.stats.handedOff).toBe(handedOff + 1);
    expect(lean.checking).toBe(true);
    await handed.write('GET /v1/nothing-here HTTP/1.1\r\nHost: h\r\n');
    await eventually(async () => (handed.closed ? true : undefined), 5_000);
    expect(handed.received.toString()).toMatch(/^HTTP\/1\.1 404 [^]*\}HTTP\/1\.1 408 Request Timeout\r\n[^]*\r\n\r\n\{[^]*"statusCode":408/);
    // An API call on a connection the lean server keeps goes to Node on its lane; a body too slow
    // to arrive there gets Node's 408 the same way, from Node's check of the lane.
    const laned = lean.stats.laned;
    const lane = new Raw(inst.port);
    await lane.write('GET /v1/nothing-here HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(await lane.settle(1)).toMatch(/^HTTP\/1\.1 404 /);
    await lane.write('POST /v1/nothing-here HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"a"');
    await eventually(async () => (lane.closed ? true : undefined), 5_000);
    expect(lane.received.toString()).toMatch(/^HTTP\/1\.1 404 [^]*\}HTTP\/1\.1 408 Request Timeout\r\n[^]*"statusCode":408/);
    expect([lean.stats.laned, lean.stats.handedOff]).toEqual([laned + 2, handedOff + 1]);
    // Closed: nothing left to check, so no interval.
    await eventually(async () => (lean.checking ? undefined : true), 5_000);
  });
});

describe('the lean endpoint server at shutdown', () => {
  const inst = new InProcessServer();
  let gate: Server;
  let gateUrl = '';
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    gate = createServer((_req, res) => held.push(res));
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
    gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/gate`;
    await inst.start({ SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS: '60000', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' });
  }, 60_000);
  afterAll(async () => {
    for (const res of held.splice(0)) res.end('open');
    await inst.stop();
    gate.closeAllConnections();
    gate.close();
  });

  it('holds requests pipelined behind one awaited (more than it reads ahead) and answers them all in order', async () => {
    const mirror = await inst.deploy(MIRROR_SOURCE);
    const gated = await inst.deploy(GATED_RESPONDER, { gate: gateUrl });
    const raw = new Raw(inst.port);
    const held0 = held.length;
    const behind = Array.from({ length: 40 }, (_, i) => JSON.stringify({ i, pad: 'p'.repeat(4000) }));
    // 160 KB behind the awaited request: more than the 64 KB read ahead while it is awaited.
    await raw.write(`POST /e/${gated.key} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}`
      + behind.map((b) => `POST /e/${mirror.key} HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n\r\n${b}`).join(''));
    await eventually(async () => (held.length > held0 ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    expect(raw.answers()).toBe(0);
    expect(raw.socket.bytesWritten).toBeGreaterThan(160_000);
    for (const res of held.splice(0)) res.end('open');
    const text = await raw.settle(41);
    expect(raw.answers()).toBe(41);
    expect(text.indexOf('late')).toBeLessThan(text.indexOf('"request_id"'));
    const events = await inst.emitted(mirror.id, 40);
    expect(events.map((e) => e.body.i)).toEqual(behind.map((_, i) => i));
  });

  it('closes idle connections at once and answers the one awaited, with Connection: close', async () => {
    const mirror = await inst.deploy(MIRROR_SOURCE);
    const gated = await inst.deploy(GATED_RESPONDER, { gate: gateUrl });
    const before = { ...inst.server.lean!.stats };
    const waiting = new Raw(inst.port);
    await waiting.write(`POST /e/${gated.key} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}`);
    await eventually(async () => (held.length >= 1 ? true : undefined));
    const idle = new Raw(inst.port);
    await idle.write(`POST /e/${mirror.key} HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}`);
    expect(await idle.settle(1)).toContain('\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n');
    expect([inst.server.lean!.stats.served, inst.server.lean!.stats.handedOff]).toEqual([before.served + 1, before.handedOff]);
    const closed = inst.stop();
    // Long before its keep-alive timeout (60 s).
    await eventually(async () => (idle.closed ? true : undefined), 5_000);
    expect(waiting.closed).toBe(false);
    for (const res of held.splice(0)) res.end('open');
    const answer = await waiting.settle(1);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('\r\nConnection: close\r\n');
    expect(answer.endsWith('\r\n\r\nlate')).toBe(true);
    await closed;
    await eventually(async () => (waiting.closed ? true : undefined), 5_000);
  });
});
