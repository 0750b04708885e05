import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE } from './support/fixtures';

describe('spec 4.5: a source\'s events delivered to a webhook, signed', () => {
  let server: SluiceProcess;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    await receiver.start();
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('creates a webhook, deploys a source, subscribes, and delivers every emitted event with a valid signature', async () => {
    const c = api(server.url, server.apiKey);
    const me = await c.get('/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body.data.id).toMatch(/^u_/);

    // Params in the query string with an empty JSON body, as the spec's clients send them.
    const wh = await c.call('POST', '/v1/webhooks', { query: { url: receiver.url, name: 'mine', description: 'test receiver' } });
    expect(wh.status).toBe(200);
    expect(wh.body.data).toMatchObject({ url: receiver.url, name: 'mine', description: 'test receiver', active: true, user_id: me.body.data.id });
    expect(wh.body.data.id).toMatch(/^wh_/);
    expect(wh.body.data.signing_secret).toMatch(/^whsec_/);
    receiver.secrets = [wh.body.data.signing_secret];

    const src = await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'echo one' });
    expect(src.status).toBe(200);
    expect(src.body.data.id).toMatch(/^dc_/);
    expect(src.body.data).toMatchObject({ name: 'echo one', name_slug: 'echo-one', active: true });
    const endpoint: string = src.body.data.configured_props.http.endpoint_url;
    expect(endpoint).toBe(src.body.data.endpoint_url);
    expect(endpoint.startsWith(`${server.url}/e/`)).toBe(true);

    const sub = await c.call('POST', '/v1/subscriptions', { query: { emitter_id: src.body.data.id, listener_id: wh.body.data.id } });
    expect(sub.status).toBe(200);
    expect(sub.body.data).toMatchObject({ emitter_id: src.body.data.id, listener_id: wh.body.data.id, event_name: '' });
    const again = await c.post('/v1/subscriptions', { emitter_id: src.body.data.id, listener_id: wh.body.data.id });
    expect(again.body.data.id).toBe(sub.body.data.id);

    const n = 25;
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${endpoint}/some/path?i=${i}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      expect(r.status).toBe(200);
    }
    await eventually(() => receiver.deliveredIds().length >= n, 20_000, `${n} deliveries`);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const bodies = receiver.received.map((r) => (r.json as { n: number }).n).sort((a, b) => a - b);
    expect(bodies).toEqual([...Array(n).keys()]);
    const first = receiver.received[0];
    expect(first.headers['x-pd-emitter-id']).toBe(src.body.data.id);
    expect(first.headers['x-pd-emit-id']).toBe(first.headers['webhook-id']);
    expect(first.headers['content-type']).toContain('application/json');
    expect(new Set(receiver.deliveredIds()).size).toBe(n);

    const summaries = await c.get(`/v1/sources/${src.body.data.id}/event_summaries`, { expand: 'event', limit: '5' });
    expect(summaries.status).toBe(200);
    expect(summaries.body.data).toHaveLength(5);
    expect(summaries.body.page_info.total_count).toBe(n);
    const top = summaries.body.data[0];
    expect(top.id).toMatch(/^\d+-\d+$/);
    expect(top.event).toEqual({ n: n - 1 });
    expect(top.metadata).toMatchObject({ emitter_id: src.body.data.id, summary: 'request POST', id: n - 1 });

    const deliveries = await eventually(async () => {
      const d = await c.get(`/v1/webhooks/${wh.body.data.id}/deliveries`, { limit: '100' });
      return d.body.data.filter((x: { status: string }) => x.status === 'delivered').length === n ? d : undefined;
    }, 10_000, 'deliveries recorded');
    expect(deliveries!.body.data[0].attempts[0]).toMatchObject({ status_code: 200, error: null });

    const logs = await c.get(`/v1/sources/${src.body.data.id}/logs`);
    expect(logs.body.data[0].logs[0].message).toContain('got POST');
  });

  it('lists, reads, updates and deletes webhooks and subscriptions with the compat shapes', async () => {
    const c = api(server.url, server.apiKey);
    const created: { id: string; signing_secret: string }[] = [];
    for (let i = 0; i < 3; i++) created.push((await c.post('/v1/webhooks', { url: `http://127.0.0.1:9/x${i}`, name: `w${i}`, description: '' })).body.data);
    const page1 = await c.get('/v1/users/me/webhooks', { limit: '2' });
    expect(page1.status).toBe(200);
    expect(page1.body.page_info).toMatchObject({ count: 2 });
    expect(page1.body.page_info.total_count).toBeGreaterThanOrEqual(3);
    expect(page1.body.data[0]).not.toHaveProperty('signing_secret');
    expect(page1.body.data[0]).not.toHaveProperty('user_id');
    const page2 = await c.get('/v1/users/me/webhooks', { limit: '2', after: page1.body.page_info.end_cursor });
    expect(page2.body.data.map((w: { id: string }) => w.id)).not.toContain(page1.body.data[0].id);

    const upd = await c.put(`/v1/webhooks/${created[0].id}`, { name: 'renamed', active: false });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ name: 'renamed', active: false });

    const secret = await c.get(`/v1/webhooks/${created[0].id}/secret`);
    expect(secret.body.data.signing_secret).toBe(created[0].signing_secret);
    const rotated = await c.post(`/v1/webhooks/${created[0].id}/secret/rotate`);
    expect(rotated.body.data.signing_secret).not.toBe(created[0].signing_secret);

    const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    const sub = (await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: created[1].id, event_name: 'alerts' })).body.data;
    expect(sub.event_name).toBe('alerts');
    expect((await c.get(`/v1/subscriptions/${sub.id}`)).body.data.id).toBe(sub.id);
    const subs = await c.get('/v1/users/me/subscriptions', { limit: '100' });
    expect(subs.body.data.map((s: { id: string }) => s.id)).toContain(sub.id);

    const byTriple = await c.del('/v1/subscriptions', { emitter_id: src.id, listener_id: created[1].id, event_name: 'alerts' });
    expect(byTriple.status).toBe(200);
    expect((await c.get(`/v1/subscriptions/${sub.id}`)).status).toBe(404);

    const sub2 = (await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: created[2].id })).body.data;
    expect((await c.del(`/v1/webhooks/${created[2].id}`)).status).toBe(200);
    expect((await c.get(`/v1/webhooks/${created[2].id}`)).status).toBe(404);
    expect((await c.get(`/v1/subscriptions/${sub2.id}`)).status).toBe(404);

    const sub3 = (await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: created[1].id })).body.data;
    expect((await c.del(`/v1/subscriptions/${sub3.id}`)).status).toBe(200);
    expect((await c.del(`/v1/subscriptions/${sub3.id}`)).status).toBe(404);
  });

  it('auto-subscriptions subscribe a webhook to every source deployed afterwards', async () => {
    const c = api(server.url, server.apiKey);
    const wh = (await c.post('/v1/webhooks', { url: receiver.url, name: 'auto', description: '' })).body.data;
    const before = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'before auto' })).body.data;
    const auto = await c.post('/v1/auto_subscriptions', { listener_id: wh.id, event_name: 'alerts' });
    expect(auto.status).toBe(200);
    expect(auto.body.data).toMatchObject({ listener_id: wh.id, event_name: 'alerts' });
    expect((await c.post('/v1/auto_subscriptions', { listener_id: wh.id, event_name: 'alerts' })).body.data.id).toBe(auto.body.data.id);
    expect((await c.post('/v1/auto_subscriptions', { listener_id: 'wh_nope' })).status).toBe(404);
    const after = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'after auto' })).body.data;
    const subs = (await c.get('/v1/users/me/subscriptions', { limit: '100' })).body.data;
    const mine = subs.filter((s: { listener_id: string }) => s.listener_id === wh.id);
    expect(mine).toEqual([expect.objectContaining({ emitter_id: after.id, event_name: 'alerts' })]);
    expect(mine.some((s: { emitter_id: string }) => s.emitter_id === before.id)).toBe(false);
  });

  it('updates a source in place and deletes it', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE, name: 'to update' })).body.data;
    const code2 = ECHO_SOURCE.replace('"Echo"', '"Echo v2"').replace('"0.1.0"', '"0.2.0"');
    const upd = await c.put(`/v1/sources/${src.id}`, { component_code: code2, active: false });
    expect(upd.status).toBe(200);
    expect(upd.body.data.id).toBe(src.id);
    expect(upd.body.data.active).toBe(false);
    expect(upd.body.data.component_id).not.toBe(src.component_id);
    expect(upd.body.data.endpoint_url).toBe(src.endpoint_url);
    expect((await fetch(src.endpoint_url, { method: 'POST', body: '{}' })).status).toBe(404);
    const bySlug = await c.get(`/v1/sources/${src.name_slug}`);
    expect(bySlug.body.data.id).toBe(src.id);
    const history = await c.get(`/v1/sources/${src.id}/history`, { limit: '100' });
    expect(history.body.data.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining([
      'source.deploy_requested.v1', 'source.deployed.v1', 'source.update_requested.v1', 'source.updated.v1',
    ]));
    expect((await c.del(`/v1/sources/${src.id}`)).status).toBe(200);
    expect((await c.get(`/v1/sources/${src.id}`)).status).toBe(404);
    expect((await fetch(src.endpoint_url, { method: 'POST', body: '{}' })).status).toBe(404);
  });
});
