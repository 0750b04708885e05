import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

const long = (n: number) => 'x'.repeat(n);

describe('text parameters have length limits, cursors must parse', () => {
  let server: SluiceProcess;
  let c: ReturnType<typeof api>;
  let source: { id: string };
  let webhook: { id: string };

  /** The log's head: a refused request must not have appended anything. */
  function logHead(): number {
    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT coalesce(max(position), 0) AS n FROM events').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }

  /** Sends the request and expects a 400 naming `field` with its limit, and nothing appended. */
  async function refused(field: string, limit: number, send: () => Promise<{ status: number; body: any }>) {
    const before = logHead();
    const r = await send();
    expect({ status: r.status, code: r.body?.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(r.body.details.fields[field]).toMatch(new RegExp(`at most ${limit} characters`));
    expect(logHead()).toBe(before);
  }

  beforeAll(async () => {
    // Normal locking: `logHead` reads the live file through its own connection.
    server = await startSluice({ env: { SLUICE_SANDBOX_WORKERS: '1', SLUICE_SQLITE_LOCKING: 'normal' } });
    c = api(server.url, server.apiKey);
    source = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'echo' })).body.data;
    webhook = (await c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', name: 'hook' })).body.data;
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('webhooks: an over-long url, name or description is a 400 naming it; nothing stored', async () => {
    const url = `http://127.0.0.1:9/${long(2100)}`;
    await refused('url', 2048, () => c.post('/v1/webhooks', { url, name: 'w' }));
    await refused('name', 256, () => c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/w', name: long(257) }));
    await refused('description', 2048, () => c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/w', name: 'w', description: long(2049) }));
    await refused('name', 256, () => c.put(`/v1/webhooks/${webhook.id}`, { name: long(300) }));
    await refused('since', 64, () => c.post(`/v1/webhooks/${webhook.id}/recover`, { since: '1'.repeat(100) }));
    const listed = await c.get('/v1/users/me/webhooks');
    expect(listed.body.data.map((w: { id: string; name: string }) => [w.id, w.name])).toEqual([[webhook.id, 'hook']]);
  });

  it('sources: an over-long name or configured_props is refused before the component is saved', async () => {
    await refused('name', 256, () => c.post('/v1/sources', { component_code: ECHO_SOURCE.replace('Echo', 'Echo two'), name: long(257) }));
    await refused('configured_props', 65536, () => c.post('/v1/sources', { component_code: ECHO_SOURCE, configured_props: { big: long(70_000) } }));
    await refused('name', 256, () => c.put(`/v1/sources/${source.id}`, { name: long(257) }));
    await refused('component_url', 2048, () => c.post('/v1/components', { component_url: `http://127.0.0.1:9/${long(2100)}` }));
    expect((await c.get('/v1/users/me/sources')).body.data.map((s: { name: string }) => s.name)).toEqual(['echo']);
  });

  it('subscriptions: an over-long event_name is a 400 naming it; nothing stored', async () => {
    await refused('event_name', 256, () => c.post('/v1/subscriptions', { emitter_id: source.id, listener_id: webhook.id, event_name: long(257) }));
    await refused('event_name', 256, () => c.post('/v1/auto_subscriptions', { listener_id: webhook.id, event_name: long(257) }));
    await refused('emitter_id', 128, () => c.post('/v1/subscriptions', { emitter_id: long(129), listener_id: webhook.id }));
    expect((await c.get('/v1/users/me/subscriptions')).body.data).toEqual([]);
  });

  it('query parameters: an over-long event_name filter is a 400 (REST and SSE)', async () => {
    const r = await c.get(`/v1/sources/${source.id}/event_summaries`, { event_name: long(300) });
    expect(r.status).toBe(400);
    expect(r.body.details.fields.event_name).toMatch(/at most 256 characters/);
    const sse = await c.get(`/v1/sources/${source.id}/sse`, { event_name: long(300) });
    expect(sse.status).toBe(400);
    expect(sse.body.details.fields.event_name).toMatch(/at most 256 characters/);
  });

  it('a cursor that does not parse is a 400 naming it on every list; real cursors still page', async () => {
    const forged = Buffer.from('p:1 OR 1=1').toString('base64url');
    const lists = ['/v1/users/me/webhooks', '/v1/users/me/sources', '/v1/users/me/subscriptions', `/v1/webhooks/${webhook.id}/deliveries`];
    for (const path of lists) {
      for (const [field, value] of [['after', 'garbage'], ['before', forged], ['after', long(500)]]) {
        const r = await c.get(path, { [field]: value });
        expect({ path, field, status: r.status }).toEqual({ path, field, status: 400 });
        expect(r.body.details.fields).toHaveProperty(field);
      }
    }
    const history = await c.get(`/v1/sources/${source.id}/history`, { after: 'not-a-revision' });
    expect(history.status).toBe(400);
    expect(history.body.details.fields).toHaveProperty('after');

    const second = (await c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/second', name: 'second' })).body.data;
    const first = await c.get('/v1/users/me/webhooks', { limit: '1' });
    expect(first.body.data.map((w: { id: string }) => w.id)).toEqual([second.id]);
    const next = await c.get('/v1/users/me/webhooks', { limit: '1', after: first.body.page_info.end_cursor });
    expect(next.body.data.map((w: { id: string }) => w.id)).toEqual([webhook.id]);
    const back = await c.get('/v1/users/me/webhooks', { limit: '1', before: next.body.page_info.start_cursor });
    expect(back.body.data.map((w: { id: string }) => w.id)).toEqual([second.id]);
  });
});
