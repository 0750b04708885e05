import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/**
 * The built-in HTTP Request action (`sluice-http-request`), whose `http_request` prop comes from
 * the Node-surface work (issue 9, branch issue9-node): run by key against an API on 127.0.0.1.
 */
describe('sluice-http-request: the configured request sent through the component egress guard', () => {
  let server: SluiceProcess;
  let thirdParty: Server;
  let base = '';
  const seen: { method?: string; url?: string; auth?: string; type?: string; body: string }[] = [];

  beforeAll(async () => {
    thirdParty = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body });
        if (req.url?.startsWith('/missing')) {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such thing"}');
          return;
        }
        res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r-1' }).end(JSON.stringify({ created: true, echo: body ? JSON.parse(body) : null }));
      });
    });
    await new Promise<void>((r) => thirdParty.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(thirdParty.address() as AddressInfo).port}`;
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
  });
  afterAll(async () => {
    await server?.stop();
    await new Promise((r) => thirdParty.close(r));
    if (server) removeDataDir(server.dataDir);
  });

  it('is listed, sends method, params, headers, JSON body and bearer auth, and returns status, headers and parsed data', async () => {
    const c = api(server.url, server.apiKey);
    expect((await c.get('/v1/components/search', { query: 'http request' })).body.actions).toContain('sluice-http-request');
    const request = { url: `${base}/things`, method: 'POST', params: { dry: 'no' }, headers: { 'x-trace': 't1' }, body: { name: 'ada' }, auth: { type: 'bearer', token: 'tok-123' } };
    const r = await c.post('/v1/actions/run', { key: 'sluice-http-request', configured_props: { request } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ ok: true, summary: `POST ${base}/things: HTTP 201` });
    expect(r.body.data.ret).toMatchObject({ status: 201, data: { created: true, echo: { name: 'ada' } } });
    expect(r.body.data.ret.headers['x-request-id']).toBe('r-1');
    expect(seen.at(-1)).toEqual({ method: 'POST', url: '/things?dry=no', auth: 'Bearer tok-123', type: 'application/json', body: '{"name":"ada"}' });
  });

  it('an error status fails the step unless told otherwise; a bad request value is a 400 naming the prop', async () => {
    const c = api(server.url, server.apiKey);
    const failing = await c.post('/v1/actions/run', { key: 'sluice-http-request', configured_props: { request: { url: `${base}/missing`, method: 'GET' } } });
    expect(failing.body.data.ok).toBe(false);
    expect(JSON.stringify(failing.body.data.os)).toContain(`GET ${base}/missing: HTTP 404`);
    const tolerated = await c.post('/v1/actions/run', { key: 'sluice-http-request', configured_props: { request: { url: `${base}/missing` }, failOnErrorStatus: false } });
    expect(tolerated.body.data).toMatchObject({ ok: true, ret: { status: 404, data: { error: 'no such thing' } } });
    const bad = await c.post('/v1/actions/run', { key: 'sluice-http-request', configured_props: { request: { url: 'ftp://example.com/x' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.fields['configured_props.request']).toBeDefined();
  });
});
