import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', 'components', `${name}.mjs`), 'utf8');

describe('the http_request prop: configured through the API, executed through the component egress guard', () => {
  let server: SluiceProcess;
  let api3: Server;
  let apiUrl = '';
  const seen: Array<{ method?: string; url?: string; auth?: string; body: string }> = [];

  beforeAll(async () => {
    // A small third-party API on 127.0.0.1 that checks the credentials it receives.
    api3 = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body });
        if (req.headers.authorization !== 'Basic ' + Buffer.from('robot:hunter2').toString('base64')) {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end('{"error":"unauthorized"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ items: [1, 2, 3], query: new URL(req.url ?? '/', 'http://x').searchParams.get('status') }));
      });
    });
    await new Promise<void>((resolve) => api3.listen(0, '127.0.0.1', () => resolve()));
    apiUrl = `http://127.0.0.1:${(api3.address() as AddressInfo).port}/v1/items`;
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    api3?.close();
  });

  it('refuses a request value that is not one, naming the prop, and stores nothing', async () => {
    const c = api(server.url, server.apiKey);
    const bad = await c.post('/v1/sources', { component_code: fixture('http-request-poller'), configured_props: { request: { url: 'ftp://example.com/x' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.fields['configured_props.request']).toBe('url must be an http or https URL');
    const missing = await c.post('/v1/sources', { component_code: fixture('http-request-poller') });
    expect(missing.status).toBe(400);
    expect(missing.body.details.fields['configured_props.request']).toBe('is required');
    expect((await c.get('/v1/users/me/sources', { limit: '100' })).body.page_info.total_count).toBe(0);
  });

  it('runs the configured request with its method, params and auth', async () => {
    const c = api(server.url, server.apiKey);
    const request = { url: apiUrl, method: 'GET', params: { status: 'open' }, auth: { type: 'basic', username: 'robot', password: 'hunter2' } };
    const deployed = await c.post('/v1/sources', { component_code: fixture('http-request-poller'), configured_props: { request } });
    expect(deployed.status).toBe(200);
    // The password is stored encrypted and never returned.
    expect(deployed.body.data.configured_props.request).toEqual({ ...request, auth: { type: 'basic', username: 'robot' } });
    const ran = await c.post(`/v1/sources/${deployed.body.data.id}/run`);
    expect(ran.body.data.ok).toBe(true);
    expect(ran.body.data.emitted.map((e: { event: unknown }) => e.event)).toEqual([{ status: 200, data: { items: [1, 2, 3], query: 'open' } }]);
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/v1/items?status=open' });
    // The password reached the API, and is nowhere in clear text under the data dir.
    for (const file of filesUnder(server.dataDir)) expect(readFileSync(file).includes('hunter2')).toBe(false);
  });
});
