import { connect } from 'node:net';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** Answers with whatever response the `mode` query parameter names: an attacker's component. */
const RESPONDER = `
export default {
  name: "Framing attacker",
  version: "0.1.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  run(event) {
    const responses = {
      chunked: { status: 200, headers: { "transfer-encoding": "chunked", "Content-Length": "5", connection: "close", "keep-alive": "timeout=99", trailer: "x-t", upgrade: "h2c", "x-kept": "yes" }, body: "hello" },
      "switching-protocols": { status: 101, headers: { upgrade: "websocket", connection: "Upgrade" } },
      continue: { status: 100 },
      "string-status": { status: "201", body: "created" },
      "bad-name": { status: 200, headers: { "x-a\\r\\nx-injected": "1" }, body: "x" },
      "bad-value": { status: 200, headers: { "x-a": "v\\r\\nSet-Cookie: pwned=1" }, body: "x" },
      "nul-value": { status: 200, headers: { "x-a": "v\\u0000" }, body: "x" },
    };
    this.http.respond(responses[event.query.mode]);
  },
};`;

interface RawAnswer {
  statusLine: string;
  status: number;
  /** Header lines as sent, in order (names lower-cased). */
  headers: Array<[string, string]>;
  body: string;
}

/** Sends one request on a raw socket and returns the response head exactly as the server framed it. */
function rawRequest(base: string, path: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    socket.on('data', (d) => (data = Buffer.concat([data, d])));
    socket.on('error', reject);
    // A 101 leaves the socket open for the protocol it announced: give up rather than hang.
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer that ends: ${JSON.stringify(data.toString('latin1'))}`)));
    socket.on('close', () => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no complete response head: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = lines.map((l): [string, string] => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]);
      resolve({ statusLine, status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) });
    });
    socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
  });
}

const named = (a: RawAnswer, name: string) => a.headers.filter(([n]) => n === name).map(([, v]) => v);

describe('a component cannot control the framing of its custom response', () => {
  let server: SluiceProcess;
  let path: string;

  beforeAll(async () => {
    server = await startSluice();
    const src = (await api(server.url, server.apiKey).post('/v1/sources', { component_code: RESPONDER })).body.data;
    path = new URL(src.endpoint_url).pathname;
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('hop-by-hop and framing headers from the guest are dropped: the server frames the body itself', async () => {
    const a = await rawRequest(server.url, `${path}?mode=chunked`);
    expect(a.status).toBe(200);
    expect(named(a, 'transfer-encoding')).toEqual([]);
    // Exactly one framing header, the server's own, matching the body really sent.
    expect(named(a, 'content-length')).toEqual(['5']);
    expect(a.body).toBe('hello');
    for (const h of ['keep-alive', 'trailer', 'upgrade']) expect(named(a, h)).toEqual([]);
    // The only Connection header is the server's answer to the client's "Connection: close".
    expect(named(a, 'connection')).toEqual(['close']);
    expect(named(a, 'x-kept')).toEqual(['yes']);
  });

  it.each(['switching-protocols', 'continue'])('a 1xx status (%s) is refused: the caller gets a final 500 naming it', async (mode) => {
    const a = await rawRequest(server.url, `${path}?mode=${mode}`);
    expect(a.statusLine).toMatch(/^HTTP\/1\.1 500 /);
    expect(named(a, 'upgrade')).toEqual([]);
    expect(JSON.parse(a.body)).toMatchObject({ code: 'run_failed', error: expect.stringMatching(/informational \(1xx\); the response must be final/) });
  });

  it('a numeric string status is accepted', async () => {
    const a = await rawRequest(server.url, `${path}?mode=string-status`);
    expect(a.status).toBe(201);
    expect(a.body).toBe('created');
  });

  it('invalid header names and values give a 502 invalid_response and one log line each, without a stack', async () => {
    const before = server.output().length;
    const modes = ['bad-name', 'bad-value', 'nul-value'];
    for (const mode of modes) {
      const a = await rawRequest(server.url, `${path}?mode=${mode}`);
      expect(a.status).toBe(502);
      expect(named(a, 'set-cookie')).toEqual([]);
      expect(named(a, 'x-injected')).toEqual([]);
      const body = JSON.parse(a.body);
      expect(body).toEqual({ error: expect.stringMatching(/header (name )?"x-a/), code: 'invalid_response' });
    }
    const newLines = () => server.output().slice(before).split('\n').filter((l) => l.trim() !== '');
    // The child's stderr reaches us on its own pipe, maybe after the answers.
    await eventually(() => newLines().length >= modes.length, 10_000, 'the log lines');
    const lines = newLines();
    expect(lines).toHaveLength(modes.length);
    for (const line of lines) expect(line).toMatch(/^sluice: source dc_\S+ request \S+: invalid custom response: header (name )?"x-a/);
    expect(server.output().slice(before)).not.toMatch(/^\s+at /m);
    // The server still answers, on the API and on the endpoint.
    expect((await api(server.url, server.apiKey).get('/v1/users/me')).status).toBe(200);
    expect((await rawRequest(server.url, `${path}?mode=string-status`)).status).toBe(201);
  });
});
