import { api, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

describe('two accounts never see or touch each other\'s resources', () => {
  let server: SluiceProcess;
  let keyB: string;

  beforeAll(async () => {
    const dir = newDataDir();
    // The second account comes from the admin command, before the server starts.
    const first = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'alice', '--key', 'sk_alice_0123456789abcdef']));
    const second = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob']));
    expect(first.account_id).toMatch(/^u_/);
    keyB = second.api_key;
    server = await startSluice({ dataDir: dir, apiKey: 'sk_alice_0123456789abcdef' });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('one server per data dir: a second server and admin commands refuse while it runs', async () => {
    await expect(startSluice({ dataDir: server.dataDir })).rejects.toThrow(/in use by a running Sluice server/);
    await expect(runAdmin(server.dataDir, ['rebuild'])).rejects.toThrow(/in use by a running Sluice server/);
    expect((await api(server.url, server.apiKey).get('/v1/users/me')).status).toBe(200);
  });

  it('404 for every foreign resource, in reads, writes, subscriptions and deletes', async () => {
    const a = api(server.url, server.apiKey);
    const b = api(server.url, keyB);
    const meA = (await a.get('/v1/users/me')).body.data.id;
    const meB = (await b.get('/v1/users/me')).body.data.id;
    expect(meA).not.toBe(meB);

    const whA = (await a.post('/v1/webhooks', { url: 'http://127.0.0.1:9/a', name: 'a', description: '' })).body.data;
    const srcA = (await a.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    const subA = (await a.post('/v1/subscriptions', { emitter_id: srcA.id, listener_id: whA.id })).body.data;
    const whB = (await b.post('/v1/webhooks', { url: 'http://127.0.0.1:9/b', name: 'b', description: '' })).body.data;

    expect((await b.get(`/v1/webhooks/${whA.id}`)).status).toBe(404);
    expect((await b.get(`/v1/webhooks/${whA.id}/secret`)).status).toBe(404);
    expect((await b.get(`/v1/webhooks/${whA.id}/deliveries`)).status).toBe(404);
    expect((await b.put(`/v1/webhooks/${whA.id}`, { name: 'stolen' })).status).toBe(404);
    expect((await b.post(`/v1/webhooks/${whA.id}/secret/rotate`)).status).toBe(404);
    expect((await b.del(`/v1/webhooks/${whA.id}`)).status).toBe(404);
    expect((await b.get(`/v1/sources/${srcA.id}`)).status).toBe(404);
    expect((await b.get(`/v1/sources/${srcA.name_slug}`)).status).toBe(404);
    expect((await b.get(`/v1/sources/${srcA.id}/event_summaries`)).status).toBe(404);
    expect((await b.put(`/v1/sources/${srcA.id}`, { active: false })).status).toBe(404);
    expect((await b.del(`/v1/sources/${srcA.id}`)).status).toBe(404);
    expect((await b.post(`/v1/sources/${srcA.id}/run`)).status).toBe(404);
    expect((await b.get(`/v1/components/${srcA.component_id}`)).status).toBe(404);
    expect((await b.post('/v1/sources', { component_id: srcA.component_id })).status).toBe(404);
    expect((await b.get(`/v1/subscriptions/${subA.id}`)).status).toBe(404);
    expect((await b.del(`/v1/subscriptions/${subA.id}`)).status).toBe(404);
    // Subscribing one's own webhook to another's source, or another's webhook to one's own source.
    expect((await b.post('/v1/subscriptions', { emitter_id: srcA.id, listener_id: whB.id })).status).toBe(404);
    const srcB = (await b.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    expect((await b.post('/v1/subscriptions', { emitter_id: srcB.id, listener_id: whA.id })).status).toBe(404);

    const listB = (await b.get('/v1/users/me/webhooks', { limit: '100' })).body.data.map((w: { id: string }) => w.id);
    expect(listB).toEqual([whB.id]);
    expect((await b.get('/v1/users/me/subscriptions')).body.data).toEqual([]);
    expect((await b.get('/v1/users/me/sources')).body.data.map((s: { id: string }) => s.id)).toEqual([srcB.id]);
    // Still all there for their owner.
    expect((await a.get(`/v1/webhooks/${whA.id}`)).body.data.name).toBe('a');
    expect((await a.get(`/v1/subscriptions/${subA.id}`)).status).toBe(200);
    expect((await a.get(`/v1/sources/${srcA.id}`)).body.data.active).toBe(true);
  });
});
