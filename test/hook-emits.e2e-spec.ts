import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * A polling source in the registry's style: `deploy` emits the history (the last items), `run`
 * emits what is new. Both dedupe `unique` on the item id, so a run that sees the history again
 * emits only the items after it. `activate` emits a marker on its own channel.
 */
const HISTORY_SOURCE = `
const ITEMS = [1, 2, 3, 4, 5].map((n) => ({ id: "item-" + n, n }));
export default {
  name: "History",
  version: "0.1.0",
  dedupe: "unique",
  props: { db: "$.service.db", timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } },
  hooks: {
    async deploy() {
      for (const item of ITEMS.slice(0, 3)) this.$emit(item, { id: item.id, summary: "history " + item.n, ts: item.n });
      this.db.set("seen", 3);
    },
    async activate() {
      this.$emit({ active: true }, { id: "activated", name: "lifecycle" });
    },
  },
  async run() {
    const seen = this.db.get("seen");
    for (const item of ITEMS.slice(0, seen + 2)) this.$emit(item, { id: item.id, summary: "item " + item.n, ts: item.n });
    this.db.set("seen", seen + 2);
  },
};`;

/** A deploy hook that emits, then throws: the deploy fails and nothing it emitted is kept. */
const FAILING_HISTORY = `
export default {
  name: "Failing history",
  version: "0.1.0",
  hooks: {
    async deploy() {
      this.$emit({ lost: true }, { summary: "lost" });
      throw new Error("the API refused the first page");
    },
  },
  async run() {},
};`;

/** The same kind of source written in TypeScript with the types package's helper, sent as component_code. */
const TYPESCRIPT_SOURCE = `
import { defineSource } from "@pipedream/types";

interface Greeting { text: string; length: number }

function greet(name: string): Greeting {
  const text: string = \`hello \${name}\`;
  return { text, length: text.length };
}

export default defineSource({
  key: "ts-greeter",
  name: "TypeScript greeter",
  version: "0.1.0",
  type: "source",
  props: { who: { type: "string", label: "Who" }, http: { type: "$.interface.http", customResponse: true } },
  async run(event: { body?: { n?: number } }) {
    const greeting: Greeting = greet(this.who as string);
    this.$emit({ ...greeting, n: event.body?.n ?? null }, { summary: greeting.text });
    this.http.respond({ status: "201", body: greeting });
  },
});`;

type Client = ReturnType<typeof api>;

describe('issue 9.4 and 9.5: hooks that emit, TypeScript as component_code', () => {
  let server: SluiceProcess;
  let c: Client;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    await receiver.start();
    server = await startSluice({ env: { SLUICE_EGRESS_ALLOW: '127.0.0.1' } });
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    if (server) removeDataDir(server.dataDir);
  });

  async function summaries(sourceId: string, channel?: string): Promise<{ id: string; event: { id?: string; n?: number }; metadata: { summary?: string } }[]> {
    const r = await c.get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: '100', ...(channel ? { event_name: channel } : {}) });
    expect(r.status).toBe(200);
    return r.body.data;
  }

  it('the history a deploy hook emits is recorded, listed and delivered to an auto-subscribed webhook, and later runs dedupe against it', async () => {
    const wh = await c.post('/v1/webhooks', { url: receiver.url, name: 'history receiver' });
    expect(wh.status).toBe(200);
    receiver.secrets = [wh.body.data.signing_secret];
    expect((await c.post('/v1/auto_subscriptions', { listener_id: wh.body.data.id })).status).toBe(200);

    const deployed = await c.post('/v1/sources', { component_code: HISTORY_SOURCE, name: 'history' });
    expect(deployed.status).toBe(200);
    const id = deployed.body.data.id;

    // Listed right after the deploy answered.
    const history = await summaries(id);
    expect(history.map((e) => e.event.id).sort()).toEqual(['item-1', 'item-2', 'item-3']);
    expect((await summaries(id, 'lifecycle')).map((e) => e.event)).toEqual([{ active: true }]);

    // Delivered, signed, to the webhook auto-subscribed before the deploy.
    await eventually(() => receiver.deliveredIds().length >= 3, 20_000, 'the history delivered');
    const deliveredItems = receiver.received.map((r) => (r.json as { event?: { id?: string } })?.event?.id ?? (r.json as { id?: string })?.id);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect(JSON.stringify(receiver.received.map((r) => r.json))).toContain('item-3');
    expect(deliveredItems.length).toBe(3);

    // A run sees items 1..5: only 4 and 5 are new.
    const run = await c.post(`/v1/sources/${id}/run`, {});
    expect(run.status).toBe(200);
    const after = await summaries(id);
    expect(after.map((e) => e.event.id).sort()).toEqual(['item-1', 'item-2', 'item-3', 'item-4', 'item-5']);
    await eventually(() => receiver.deliveredIds().length >= 5, 20_000, 'the new items delivered');
    expect(new Set(receiver.deliveredIds()).size).toBe(5);
  });

  it('a deploy hook that emits and then fails fails the deploy, and its emits are neither kept nor delivered', async () => {
    const r = await c.post('/v1/sources', { component_code: FAILING_HISTORY, name: 'failing history' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'hook_failed', details: { hook: 'deploy', error: { message: 'the API refused the first page' } } });
    // A later deploy's history reaches the same auto-subscribed webhook; the failed one's never did.
    const marker = HISTORY_SOURCE.replace('"History"', '"Marker"').replace('ITEMS.slice(0, 3)', 'ITEMS.slice(0, 1).map((i) => ({ ...i, marker: true }))');
    const before = receiver.received.length;
    expect((await c.post('/v1/sources', { component_code: marker, name: 'marker' })).status).toBe(200);
    await eventually(() => receiver.received.slice(before).some((d) => d.body.includes('"marker":true')), 20_000, 'the marker delivered');
    expect(receiver.received.some((d) => d.body.includes('"lost"'))).toBe(false);
  });

  it('TypeScript sent as component_code is compiled: types, interfaces, defineSource, and a numeric string status', async () => {
    const saved = await c.post('/v1/components', { component_code: TYPESCRIPT_SOURCE });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({ key: 'ts-greeter', name: 'TypeScript greeter', version: '0.1.0' });
    expect(saved.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual(['who', 'http']);

    const deployed = await c.post('/v1/sources', { component_id: saved.body.data.id, configured_props: { who: 'typescript' } });
    expect(deployed.status).toBe(200);
    const answer = await fetch(deployed.body.data.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":7}' });
    expect(answer.status).toBe(201);
    expect(await answer.json()).toEqual({ text: 'hello typescript', length: 16 });
    // The custom response is sent once the run is over, before its record is durable and listed.
    const events = await eventually(async () => {
      const listed = await summaries(deployed.body.data.id);
      return listed.length > 0 ? listed : undefined;
    }, 10_000, 'the emitted event listed');
    expect(events!.map((e) => e.event)).toEqual([{ text: 'hello typescript', length: 16, n: 7 }]);
  });

  it('code that is neither JavaScript nor TypeScript is a 400 that says where', async () => {
    const r = await c.post('/v1/components', { component_code: 'export default { name: "x", version: "1", run( {' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('component_invalid');
    expect(JSON.stringify(r.body)).toMatch(/line 1/);
  });
});
