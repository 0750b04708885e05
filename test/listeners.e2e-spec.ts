import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';
import { RequestGate } from './support/request-gate';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * A source that listens: its `run` gets the emitted event and re-emits it on the `heard` channel
 * (after fetching `gate`, when set, so a test can hold it in the middle of a run).
 */
const LISTENER_SOURCE = `
export default {
  name: "Listener",
  version: "0.1.0",
  props: { gate: { type: "string", optional: true } },
  async run(event) {
    if (this.gate) await fetch(this.gate);
    this.$emit({ heard: event }, { name: "heard", summary: "heard" });
  },
};`;

/** A source that re-emits whatever it hears on its default channel: subscribed to itself, a loop. */
const PARROT_SOURCE = `
export default {
  name: "Parrot",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    this.$emit({ again: true });
  },
};`;

const ENV = { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' };

type Client = ReturnType<typeof api>;

async function deploy(c: Client, code: string, name: string, props: Record<string, unknown> = {}): Promise<{ id: string; endpoint_url?: string }> {
  const r = await c.post('/v1/sources', { component_code: code, name, configured_props: props });
  expect(r.status).toBe(200);
  return r.body.data;
}

async function subscribe(c: Client, emitterId: string, listenerId: string, eventName = ''): Promise<void> {
  const r = await c.post('/v1/subscriptions', { emitter_id: emitterId, listener_id: listenerId, event_name: eventName });
  expect(r.status).toBe(200);
}

async function emitsOf(c: Client, sourceId: string, channel: string): Promise<{ event: unknown }[]> {
  const r = await c.get(`/v1/sources/${sourceId}/event_summaries`, { event_name: channel, expand: 'event', limit: '100' });
  expect(r.status).toBe(200);
  return r.body.data;
}

async function post(url: string, body: unknown): Promise<void> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
}

describe('issue 8.5: sources as listeners, and the $logs channel', () => {
  let server: SluiceProcess;
  let c: Client;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    await receiver.start();
    server = await startSluice({ env: ENV });
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('accepts dc_ listeners and p_* emitters, 404s unknown workflows naming the field, and 400s other prefixes', async () => {
    const a = await deploy(c, ECHO_SOURCE, 'validate emitter');
    const b = await deploy(c, LISTENER_SOURCE, 'validate listener');
    expect((await c.post('/v1/subscriptions', { emitter_id: a.id, listener_id: b.id })).status).toBe(200);
    expect((await c.post('/v1/subscriptions', { emitter_id: 'p_*', listener_id: b.id })).status).toBe(200);
    let r = await c.post('/v1/subscriptions', { emitter_id: a.id, listener_id: 'p_unknown' });
    expect(r.status).toBe(404);
    expect(r.body.details.fields).toHaveProperty('listener_id');
    r = await c.post('/v1/subscriptions', { emitter_id: 'p_unknown', listener_id: b.id });
    expect(r.status).toBe(404);
    expect(r.body.details.fields).toHaveProperty('emitter_id');
    r = await c.post('/v1/subscriptions', { emitter_id: a.id, listener_id: 'dc_unknown' });
    expect(r.status).toBe(404);
    expect(r.body.details.fields).toHaveProperty('listener_id');
    r = await c.post('/v1/subscriptions', { emitter_id: a.id, listener_id: 'x_1' });
    expect(r.status).toBe(400);
    expect(r.body.details.fields).toHaveProperty('listener_id');
  });

  it('a source subscribed to another source\'s channel receives its events in run (its own emits prove it), each once', async () => {
    const a = await deploy(c, ECHO_SOURCE, 'talker');
    const b = await deploy(c, LISTENER_SOURCE, 'hearer');
    await subscribe(c, a.id, b.id);
    for (let n = 1; n <= 3; n++) await post(a.endpoint_url!, { n });
    const heard = await eventually(async () => {
      const e = await emitsOf(c, b.id, 'heard');
      return e.length >= 3 ? e : undefined;
    }, 20_000, 'three events heard');
    expect(heard!.map((e) => (e.event as { heard: { n: number } }).heard.n).sort()).toEqual([1, 2, 3]);
    // One more emit of A is a barrier: once it is heard, a repeated dispatch would have shown.
    await post(a.endpoint_url!, { n: 4 });
    await eventually(async () => (await emitsOf(c, b.id, 'heard')).length >= 4, 20_000, 'the fourth event heard');
    expect((await emitsOf(c, b.id, 'heard')).map((e) => (e.event as { heard: { n: number } }).heard.n).sort()).toEqual([1, 2, 3, 4]);
  });

  it('a source listening to itself stops after the hop cap (8 listener runs)', async () => {
    const p = await deploy(c, PARROT_SOURCE, 'parrot');
    await subscribe(c, p.id, p.id);
    await post(p.endpoint_url!, { go: 1 });
    // The HTTP run emits with 0 hops; each listener run emits with one more; an emit with 8 is heard by nobody.
    await eventually(async () => (await emitsOf(c, p.id, '')).length >= 9, 20_000, 'nine emits');
    await new Promise((r) => setTimeout(r, 1500));
    expect(await emitsOf(c, p.id, '')).toHaveLength(9);
  });

  it('$logs of a source reaches a subscribed webhook, signed, once per run, with the run\'s logs', async () => {
    const wh = await c.post('/v1/webhooks', { url: receiver.url, name: 'logs' });
    receiver.secrets = [wh.body.data.signing_secret];
    const a = await deploy(c, ECHO_SOURCE, 'logger');
    await subscribe(c, a.id, wh.body.data.id, '$logs');
    await post(`${a.endpoint_url}/first`, { n: 1 });
    const logs = () => receiver.received.filter((r) => r.headers['x-pd-event-name'] === '$logs' && r.headers['x-pd-emitter-id'] === a.id);
    await eventually(() => logs().length >= 1, 20_000, 'the $logs delivery');
    // A second run is the barrier: its delivery arriving means the first one's would have been repeated by now.
    await post(`${a.endpoint_url}/second`, { n: 2 });
    await eventually(() => logs().length >= 2, 20_000, 'the second $logs delivery');
    const got = logs();
    expect(got).toHaveLength(2);
    expect(got.every((r) => r.verified)).toBe(true);
    expect(new Set(got.map((r) => r.id)).size).toBe(2);
    const first = got.find((r) => JSON.stringify(r.json).includes('/first'))!.json as { run_id: string; trigger: string; ok: boolean; logs: { level: string; message: string }[] };
    expect(first).toMatchObject({ trigger: 'http', ok: true });
    expect(first.run_id).toEqual(expect.any(String));
    expect(first.logs).toEqual([expect.objectContaining({ level: 'log', message: 'got POST /first' })]);
  });

  it('a source listening to $logs of another hears each run\'s logs in run', async () => {
    const a = await deploy(c, ECHO_SOURCE, 'log talker');
    const b = await deploy(c, LISTENER_SOURCE, 'log hearer');
    await subscribe(c, a.id, b.id, '$logs');
    await post(`${a.endpoint_url}/x`, { n: 1 });
    const heard = await eventually(async () => {
      const e = await emitsOf(c, b.id, 'heard');
      return e.length >= 1 ? e : undefined;
    }, 20_000, 'the logs heard');
    expect((heard![0].event as { heard: { logs: { message: string }[] } }).heard.logs[0].message).toBe('got POST /x');
  });
});

describe('issue 8.5: a restart between an emit and its listener\'s run', () => {
  const gate = new RequestGate();
  let server: SluiceProcess | undefined;

  beforeAll(async () => {
    await gate.start();
  });
  afterAll(async () => {
    gate.open();
    await server?.stop();
    await gate.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('neither loses nor repeats the listener run', async () => {
    server = await startSluice({ env: ENV });
    let c = api(server.url, server.apiKey);
    const a = await deploy(c, ECHO_SOURCE, 'crash talker');
    const b = await deploy(c, LISTENER_SOURCE, 'crash hearer', { gate: gate.url });
    await subscribe(c, a.id, b.id);
    await post(a.endpoint_url!, { n: 1 });
    // B's run is inside its isolate, held at the gate: the emit is recorded, its listener run is not.
    await gate.waitForHits(1);
    await server.kill();

    gate.open();
    server = await startSluice({ dataDir: server.dataDir, env: ENV });
    c = api(server.url, server.apiKey);
    const heard = await eventually(async () => {
      const e = await emitsOf(c, b.id, 'heard');
      return e.length >= 1 ? e : undefined;
    }, 20_000, 'the interrupted listener run resumed');
    expect(heard!.map((e) => e.event)).toEqual([{ heard: { n: 1 } }]);
    expect(gate.hits).toBe(2);

    // A clean restart after the run is recorded does not run it again; a new emit is the barrier
    // (dispatches found pending at start-up go first).
    await server.stop();
    server = await startSluice({ dataDir: server.dataDir, env: ENV });
    c = api(server.url, server.apiKey);
    // A new port after the restart; the endpoint key stays.
    await post(`${server.url}${new URL(a.endpoint_url!).pathname}`, { n: 2 });
    await eventually(async () => (await emitsOf(c, b.id, 'heard')).length >= 2, 20_000, 'the second event heard');
    const all = (await emitsOf(c, b.id, 'heard')).map((e) => (e.event as { heard: { n: number } }).heard.n).sort();
    expect(all).toEqual([1, 2]);
    expect(gate.hits).toBe(3);
  });
});
