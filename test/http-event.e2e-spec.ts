import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const PUBLIC_URL = 'https://hooks.example.test/base';

/** Emits what its run saw of the request; a request under /slow first waits on the gate server. */
const REQUEST_MIRROR = `
export default {
  name: "Request mirror",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" }, gate: { type: "string" } },
  async run(event) {
    if (event.path.startsWith("/slow")) await fetch(this.gate);
    const { method, path, url, query } = event;
    this.$emit({ method, path, url, query }, { summary: method + " " + path });
  },
};`;

interface SeenRequest {
  method: string;
  path: string;
  url: string;
  query: Record<string, unknown>;
}

describe('HTTP events: path after the endpoint, full public URL, the same after a crash', () => {
  let gate: Server;
  let gateUrl: string;
  let holdGate = true;
  let gateHeld = 0;
  let server: SluiceProcess;

  beforeAll(async () => {
    // While `holdGate` is set, requests to the gate never get an answer: the run stays in flight.
    gate = createServer((_req, res) => {
      if (holdGate) gateHeld++;
      else res.end('open');
    });
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
    gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/gate`;
    server = await startSluice({ env: { SLUICE_PUBLIC_URL: PUBLIC_URL, SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    gate.closeAllConnections();
    gate.close();
  });

  async function deploy(): Promise<{ id: string; key: string; endpointUrl: string }> {
    const r = await api(server.url, server.apiKey).post('/v1/sources', { component_code: REQUEST_MIRROR, configured_props: { gate: gateUrl } });
    expect(r.status).toBe(200);
    const endpointUrl: string = r.body.data.endpoint_url;
    expect(endpointUrl.startsWith(`${PUBLIC_URL}/e/`)).toBe(true);
    return { id: r.body.data.id, key: endpointUrl.slice(`${PUBLIC_URL}/e/`.length), endpointUrl };
  }

  const seen = async (sourceId: string, count: number): Promise<SeenRequest[]> => {
    const c = api(server.url, server.apiKey);
    const data = await eventually(async () => {
      const d = (await c.get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: '100' })).body.data;
      return d.length >= count ? d : undefined;
    }, 20_000, `${count} emitted events`);
    return data!.map((e: { event: SeenRequest }) => e.event).reverse();
  };

  it('gives the run the path after /e/<key> and the public URL with the query', async () => {
    const src = await deploy();
    const local = `${server.url}/e/${src.key}`;
    for (const [target, method] of [['/hello/world?x=1&y=two', 'POST'], ['', 'GET'], ['/', 'PUT'], ['/a%20b/c', 'DELETE']] as const) {
      const r = await fetch(`${local}${target}`, { method, headers: { 'content-type': 'text/plain' }, body: method === 'GET' ? undefined : 'x' });
      expect(r.status).toBe(200);
    }
    const events = await seen(src.id, 4);
    expect(events).toEqual([
      { method: 'POST', path: '/hello/world', url: `${src.endpointUrl}/hello/world?x=1&y=two`, query: { x: '1', y: 'two' } },
      { method: 'GET', path: '/', url: src.endpointUrl, query: {} },
      { method: 'PUT', path: '/', url: `${src.endpointUrl}/`, query: {} },
      { method: 'DELETE', path: '/a%20b/c', url: `${src.endpointUrl}/a%20b/c`, query: {} },
    ]);
    for (const e of events) expect(e.path).not.toContain(src.key);
  });

  it('records the same event in the inbox, and a run replayed after a crash gets exactly that event', async () => {
    const src = await deploy();
    const r = await fetch(`${server.url}/e/${src.key}/slow/path?z=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    // The 200 means the request is durable in the inbox; its run now waits on the gate.
    expect(r.status).toBe(200);
    await eventually(() => gateHeld > 0, 20_000, 'the run to reach the gate');
    await server.kill();

    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true });
    const rows = db.prepare("SELECT data FROM events WHERE type = 'source.http_request_received.v1' AND stream = ?").all(`inbox-${src.id}`) as Array<{ data: string }>;
    db.close();
    expect(rows).toHaveLength(1);
    const recorded = JSON.parse(rows[0].data) as SeenRequest & { requestId: string };
    const expected = { method: 'POST', path: '/slow/path', url: `${src.endpointUrl}/slow/path?z=1`, query: { z: '1' } };
    expect(recorded).toMatchObject(expected);
    expect(recorded.path).not.toContain(src.key);

    holdGate = false;
    server = await startSluice({ dataDir: server.dataDir, env: { SLUICE_PUBLIC_URL: PUBLIC_URL, SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    const [replayed] = await seen(src.id, 1);
    expect(replayed).toEqual(expected);
  });
});
