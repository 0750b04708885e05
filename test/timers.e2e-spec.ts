import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', 'components', `${name}.mjs`), 'utf8');

describe('timer sources', () => {
  let server: SluiceProcess;
  let c: ReturnType<typeof api>;
  let feed: Server;
  let feedUrl = '';
  let items: { id: number; title: string }[] = [];

  beforeAll(async () => {
    feed = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(req.url === '/value' ? JSON.stringify({ value: 42 }) : JSON.stringify(items));
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', () => r()));
    feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}`;
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    feed.close();
  });

  const summaries = async (id: string) => (await c.get(`/v1/sources/${id}/event_summaries`, { expand: 'event', limit: '100' })).body.data;
  const timerRuns = async (id: string) => {
    const h = (await c.get(`/v1/sources/${id}/history`, { limit: '100' })).body.data;
    return h.filter((e: { type: string; data: { trigger?: string } }) => e.type === 'source.run_completed.v1' && e.data.trigger === 'timer');
  };

  it('an interval poller fetches from a local server and emits new items (deduped)', async () => {
    items = [{ id: 1, title: 'one' }];
    const src = (await c.post('/v1/sources', { component_code: fixture('interval-poller'), configured_props: { url: `${feedUrl}/items` } })).body.data;
    expect(src.configured_props.timer).toEqual({ cron: null, interval_seconds: 1, timezone: null });
    await eventually(async () => (await summaries(src.id)).length === 1, 10_000, 'first item');
    items = [{ id: 1, title: 'one' }, { id: 2, title: 'two' }];
    const got = await eventually(async () => {
      const s = await summaries(src.id);
      return s.length === 2 ? s : undefined;
    }, 10_000, 'second item');
    expect(got.map((e: { event: { id: number } }) => e.event.id)).toEqual([2, 1]);
    expect(typeof got[0].event.firedAt).toBe('number');
    expect((await timerRuns(src.id)).length).toBeGreaterThanOrEqual(2);
    // Deactivated: no more timer runs.
    await c.put(`/v1/sources/${src.id}`, { active: false });
    const runs = (await timerRuns(src.id)).length;
    await new Promise((r) => setTimeout(r, 2500));
    expect((await timerRuns(src.id)).length).toBe(runs);
    await c.del(`/v1/sources/${src.id}`);
  });

  it('a cron poller fires on its schedule with the cron in the event', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('cron-poller'), configured_props: { url: `${feedUrl}/value` } })).body.data;
    expect(src.configured_props.timer).toEqual({ cron: '*/2 * * * * *', interval_seconds: null, timezone: 'Europe/Paris' });
    const got = await eventually(async () => {
      const s = await summaries(src.id);
      return s.length >= 2 ? s : undefined;
    }, 10_000, 'two cron runs');
    expect(got[0].event).toMatchObject({ value: 42, cron: '*/2 * * * * *' });
    expect(got[0].event.timestamp % 2).toBe(0);
    await c.del(`/v1/sources/${src.id}`);
  });

  it('bad timer configuration is a 400 naming the field', async () => {
    const r = await c.post('/v1/sources', { component_code: fixture('cron-poller'), configured_props: { url: feedUrl, timer: { cron: '61 * * * *' } } });
    expect(r.status).toBe(400);
    expect(Object.keys(r.body.details.fields).join()).toMatch(/timer/);
    const r2 = await c.post('/v1/sources', { component_code: fixture('cron-poller'), configured_props: { url: feedUrl, timer: { cron: '* * * * *', timezone: 'Mars/Olympus' } } });
    expect(r2.status).toBe(400);
  });

  it('a timer with no run emits the timer event; a tick missed while down fires once at start', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('timer-only'), configured_props: { timer: { intervalSeconds: 3 } } })).body.data;
    const first = await eventually(async () => {
      const s = await summaries(src.id);
      return s.length >= 1 ? s : undefined;
    }, 10_000, 'heartbeat');
    expect(first[0].event).toEqual({ timestamp: expect.any(Number), interval_seconds: 3 });
    await server.stop();
    // Down for about two and a half intervals: at least two ticks are missed.
    await new Promise((r) => setTimeout(r, 7500));
    const before = (await (async () => {
      server = await startSluice({ dataDir: server.dataDir, env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
      c = api(server.url, server.apiKey);
      return Date.now();
    })());
    await eventually(async () => (await timerRuns(src.id)).length >= 2, 5_000, 'catch-up run');
    // Within the first interval after the restart exactly one catch-up run happened.
    await new Promise((r) => setTimeout(r, Math.max(0, before + 2000 - Date.now())));
    const runs = await timerRuns(src.id);
    const afterRestart = runs.filter((e: { at: number }) => e.at >= before - 100);
    expect(afterRestart).toHaveLength(1);
  });
});
