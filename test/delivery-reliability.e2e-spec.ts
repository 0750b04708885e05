import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE } from './support/fixtures';

async function setup(server: SluiceProcess, receiver: WebhookReceiver) {
  const c = api(server.url, server.apiKey);
  const wh = (await c.post('/v1/webhooks', { url: receiver.url, name: 'r', description: 'd' })).body.data;
  receiver.secrets = [wh.signing_secret];
  const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
  await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id });
  return { c, wh, src };
}

async function post(endpoint: string, n: number) {
  const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
  expect(r.status).toBe(200);
}

describe('delivery reliability', () => {
  const receivers: WebhookReceiver[] = [];
  const servers: SluiceProcess[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      await s.stop();
      removeDataDir(s.dataDir);
    }
    for (const r of receivers.splice(0)) await r.stop();
  });

  it('a receiver failing the first attempts still gets every event; repeats carry the same webhook-id', async () => {
    const receiver = new WebhookReceiver();
    receivers.push(receiver);
    await receiver.start();
    const failures = new Map<string, number>();
    // Each event fails 3 times (503, then 500, then 429 with Retry-After 0) before it is accepted.
    receiver.respond = (req) => {
      const id = String(req.headers['webhook-id']);
      const seen = failures.get(id) ?? 0;
      failures.set(id, seen + 1);
      return seen < 3 ? [503, 500, 429][seen] : 200;
    };
    const server = await startSluice();
    servers.push(server);
    const { c, wh, src } = await setup(server, receiver);
    const n = 10;
    for (let i = 0; i < n; i++) await post(src.endpoint_url, i);
    await eventually(() => new Set(receiver.deliveredIds()).size === n, 30_000, 'all events delivered');
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    for (const [id, count] of failures) {
      expect(count).toBe(4);
      expect(receiver.received.filter((r) => r.id === id).every((r) => (r.json as { n: number }).n === (receiver.received.find((x) => x.id === id)!.json as { n: number }).n)).toBe(true);
    }
    const list = await eventually(async () => {
      const d = (await c.get(`/v1/webhooks/${wh.id}/deliveries`, { limit: '100' })).body.data;
      return d.every((x: { status: string }) => x.status === 'delivered') && d.length === n ? d : undefined;
    }, 10_000, 'deliveries recorded');
    expect(list[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 500, 429, 200]);
  });

  it('exhausts after the schedule, then a manual retry and recover re-send', async () => {
    const receiver = new WebhookReceiver();
    receivers.push(receiver);
    await receiver.start();
    let healthy = false;
    receiver.respond = () => (healthy ? 200 : 500);
    const server = await startSluice({ env: { SLUICE_RETRY_SCHEDULE: '0,0.1,0.1' } });
    servers.push(server);
    const { c, wh, src } = await setup(server, receiver);
    await post(src.endpoint_url, 1);
    await post(src.endpoint_url, 2);
    const exhausted = await eventually(async () => {
      const d = (await c.get(`/v1/webhooks/${wh.id}/deliveries`)).body.data;
      return d.length === 2 && d.every((x: { status: string }) => x.status === 'exhausted') ? d : undefined;
    }, 15_000, 'exhausted');
    expect(exhausted[0].attempts).toHaveLength(3);
    expect(exhausted[0].next_attempt_at).toBeNull();
    healthy = true;
    const retried = await c.post(`/v1/webhooks/${wh.id}/deliveries/${exhausted[0].id}/retry`);
    expect(retried.status).toBe(202);
    await eventually(() => receiver.deliveredIds().length === 1, 10_000, 'manual retry delivered');
    const rec = await c.post(`/v1/webhooks/${wh.id}/recover`, { since: '0' });
    expect(rec.status).toBe(202);
    expect(rec.body.data.retried).toBe(1);
    await eventually(() => new Set(receiver.deliveredIds()).size === 2, 10_000, 'recover delivered');
    const again = await c.post(`/v1/webhooks/${wh.id}/deliveries/${exhausted[0].id}/retry`);
    expect(again.status).toBe(409);
  });

  it('one dead (hanging) webhook does not delay delivery to another', async () => {
    const slow = new WebhookReceiver();
    const fast = new WebhookReceiver();
    receivers.push(slow, fast);
    await slow.start();
    await fast.start();
    // The slow receiver holds every request until the fast one has everything: the check below is
    // causal (all fast deliveries while not one slow request was answered), not a measured time.
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => (release = r));
    slow.respond = () => released.then(() => 200);
    const server = await startSluice({ env: { SLUICE_DELIVERY_CONCURRENCY: '2', SLUICE_DELIVERY_TIMEOUT_MS: '60000' } });
    servers.push(server);
    const { c, src } = await setup(server, fast);
    const whSlow = (await c.post('/v1/webhooks', { url: slow.url, name: 'slow', description: '' })).body.data;
    await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: whSlow.id });
    for (let i = 0; i < 20; i++) await post(src.endpoint_url, i);
    await eventually(() => fast.deliveredIds().length === 20, 30_000, 'fast receiver served while the slow one hangs');
    expect(slow.received.length).toBe(0);
    release();
    await eventually(() => slow.deliveredIds().length === 20, 30_000, 'slow receiver served once it answers');
  });

  it('a retry the schedule holds for later is sent at its time after a restart, with no other traffic to wake the server', async () => {
    const receiver = new WebhookReceiver();
    receivers.push(receiver);
    await receiver.start();
    let up = false;
    receiver.respond = () => (up ? 200 : 503);
    // The second attempt is 4 s after the first: due after the restart, found only by the timer set for it.
    const env = { SLUICE_RETRY_SCHEDULE: '0,4' };
    const server = await startSluice({ env });
    const { c, wh, src } = await setup(server, receiver);
    await post(src.endpoint_url, 1);
    await eventually(async () => {
      const d = (await c.get(`/v1/webhooks/${wh.id}/deliveries`, { limit: '10' })).body.data;
      return d.length === 1 && d[0].attempts.length === 1;
    }, 10_000, 'the first attempt recorded as failed');
    await server.kill();

    up = true;
    const restarted = await startSluice({ dataDir: server.dataDir, env });
    servers.push(restarted);
    await eventually(() => receiver.deliveredIds().length === 1, 20_000, 'the retry sent after the restart');
    expect(receiver.received.map((r) => r.answered)).toEqual([503, 200]);
    // The retry's body is read from the emit in the log (the schedule keeps no copy): the same
    // bytes as the first attempt's, signed again, under the same webhook-id.
    expect(receiver.received[0].json).toMatchObject({ n: 1 });
    expect(receiver.received[1].body).toBe(receiver.received[0].body);
    expect(receiver.received[1].id).toBe(receiver.received[0].id);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const c2 = api(restarted.url, restarted.apiKey);
    const list = await eventually(async () => {
      const d = (await c2.get(`/v1/webhooks/${wh.id}/deliveries`, { limit: '10' })).body.data;
      return d[0]?.status === 'delivered' ? d : undefined;
    }, 10_000, 'the delivery recorded as delivered');
    expect(list[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 200]);
  });

  it('SIGKILL with deliveries and runs pending: nothing lost after restart, read models intact', async () => {
    const receiver = new WebhookReceiver();
    receivers.push(receiver);
    await receiver.start();
    let up = false;
    receiver.respond = () => (up ? 200 : 503);
    const server = await startSluice({ env: { SLUICE_RETRY_SCHEDULE: '0,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5' } });
    const { c, wh, src } = await setup(server, receiver);
    const n = 30;
    await Promise.all([...Array(n).keys()].map((i) => post(src.endpoint_url, i)));
    await eventually(() => receiver.received.length >= 5, 10_000, 'some failed attempts');
    const before = {
      source: (await c.get(`/v1/sources/${src.id}`)).body.data,
      webhook: (await c.get(`/v1/webhooks/${wh.id}`)).body.data,
      subs: (await c.get('/v1/users/me/subscriptions')).body.data,
    };
    await server.kill();

    up = true;
    const restarted = await startSluice({ dataDir: server.dataDir });
    servers.push(restarted);
    const c2 = api(restarted.url, restarted.apiKey);
    await eventually(() => new Set(receiver.deliveredIds()).size === n, 30_000, 'every event delivered after the restart').catch(async (err) => {
      // What was left, so a failure says where: runs not re-run, deliveries not sent, or extra ids.
      const rows = (await c2.get(`/v1/webhooks/${wh.id}/deliveries`, { limit: '100' })).body.data as { status: string; next_attempt_at: number | null; attempts: unknown[] }[];
      const summaries = (await c2.get(`/v1/sources/${src.id}/event_summaries`)).body.page_info.total_count;
      throw new Error(`${(err as Error).message}; delivered ids ${new Set(receiver.deliveredIds()).size} of ${n}, ` +
        `received ${JSON.stringify(receiver.received.map((r) => r.answered))}, event summaries ${summaries}, now ${Date.now()}, ` +
        `deliveries ${JSON.stringify(rows.map((d) => [d.status, d.next_attempt_at, d.attempts.length]))}\n` +
        `killed server printed:\n${server.output().slice(-3000)}\nrestarted server printed:\n${restarted.output().slice(-3000)}`);
    });
    const bodies = [...new Set(receiver.received.filter((r) => r.answered === 200).map((r) => (r.json as { n: number }).n))].sort((a, b) => a - b);
    expect(bodies).toEqual([...Array(n).keys()]);
    // Repeats (if any) are the same event under the same webhook-id.
    const byId = new Map<string, string>();
    for (const r of receiver.received) {
      if (byId.has(r.id)) expect(byId.get(r.id)).toBe(r.body);
      byId.set(r.id, r.body);
    }
    expect(byId.size).toBe(n);
    const after = {
      source: (await c2.get(`/v1/sources/${src.id}`)).body.data,
      webhook: (await c2.get(`/v1/webhooks/${wh.id}`)).body.data,
      subs: (await c2.get('/v1/users/me/subscriptions')).body.data,
    };
    // `backlog` is what this process has waiting, not a read model: runs were pending when
    // `before` was read (the test's point), and none are once every event has been delivered.
    expect({ ...after, source: { ...after.source, endpoint_url: undefined, configured_props: undefined, backlog: undefined } })
      .toEqual({ ...before, source: { ...before.source, endpoint_url: undefined, configured_props: undefined, backlog: undefined } });
    expect(after.source.backlog).toMatchObject({ runs_waiting: 0, bytes_waiting: 0 });
    const summaries = await c2.get(`/v1/sources/${src.id}/event_summaries`);
    expect(summaries.body.page_info.total_count).toBe(n);
  });
});
