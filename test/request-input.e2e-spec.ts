import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** A source with one optional string prop, to see configured_props arrive. */
const GREETER = `
export default {
  name: "Greeter", version: "1.0.0",
  props: { http: { type: "$.interface.http" }, greeting: { type: "string", optional: true } },
  async run(event) { this.$emit({ greeting: this.greeting }); },
};`;

describe('REST input: query string or JSON body, through the request DTOs', () => {
  let server: SluiceProcess;
  let c: ReturnType<typeof api>;

  beforeAll(async () => {
    server = await startSluice({ env: { SLUICE_SANDBOX_WORKERS: '1' } });
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('takes every parameter from the query string: booleans from "false"/"1", configured_props as JSON text', async () => {
    const created = await c.call('POST', '/v1/sources', {
      query: { component_code: GREETER, name: 'from query', active: 'false', configured_props: '{"greeting":"hi"}' },
    });
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ name: 'from query', active: false, configured_props: { greeting: 'hi' } });
    const updated = await c.call('PUT', `/v1/sources/${created.body.data.id}`, { query: { active: '1' } });
    expect(updated.status).toBe(200);
    expect(updated.body.data.active).toBe(true);
    const listed = await c.get('/v1/users/me/sources', { limit: '1' });
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([created.body.data.id]);
  });

  it('lets the body win over the query string, and ignores parameters it does not know', async () => {
    const r = await c.call('POST', '/v1/webhooks', {
      query: { url: 'http://127.0.0.1:9/query', name: 'query name' },
      body: { name: 'body name', workflow_id: 'p_unknown', team: { id: 1 } },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ url: 'http://127.0.0.1:9/query', name: 'body name', description: '' });
  });

  it('names every bad field in one 400', async () => {
    const r = await c.post('/v1/webhooks', { url: 'ftp://example.com/x', description: 'x'.repeat(2049) });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      error: 'url must be an http or https URL with a host; name is required; description must be at most 2048 characters (got 2049)',
      code: 'invalid_request',
      details: {
        fields: {
          url: 'must be an http or https URL with a host',
          name: 'is required',
          description: 'must be at most 2048 characters (got 2049)',
        },
      },
    });
    const q = await c.get('/v1/users/me/webhooks', { limit: 'ten', after: 'garbage' });
    expect(q.status).toBe(400);
    expect(Object.keys(q.body.details.fields)).toEqual(['limit', 'after']);
  });

  it('refuses a JSON body that is not an object with 400 invalid_body', async () => {
    for (const raw of ['[1,2]', '"text"', '5']) {
      const r = await c.call('POST', '/v1/webhooks', { raw });
      expect({ raw, status: r.status, body: r.body }).toEqual({ raw, status: 400, body: { error: 'the JSON body must be an object', code: 'invalid_body' } });
    }
  });
});
