import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * Fetches the URL it is sent (a failure fails the run, so the error is in the run's log) and emits
 * the answer; without a URL it just emits. The error is not caught and logged with console.log:
 * console lines written after an awaited host answer can miss the run's log (a known sandbox bug, noted on issue 6).
 */
const FETCHER = `
export default {
  name: "Fetcher",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    if (!event.body.url) return this.$emit({ outcome: "no fetch" });
    const res = await fetch(event.body.url);
    this.$emit({ outcome: "status " + res.status + " " + (await res.text()) });
  },
};`;

/** The internal service a tenant's code must not reach by default: a loopback HTTP server. */
async function startInternalService(): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.end('internal secret');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`, hits: () => hits };
}

describe('egress allow-lists: the server\'s own requests and component code are allowed separately', () => {
  const receiver = new WebhookReceiver();
  let internal: Awaited<ReturnType<typeof startInternalService>>;

  beforeAll(async () => {
    await receiver.start();
    internal = await startInternalService();
  });
  afterAll(async () => {
    await receiver.stop();
    internal.server.close();
  });

  /** Deploys the fetcher with a loopback webhook; sends a request without and one with a fetch. */
  async function fetchFromComponent(server: SluiceProcess) {
    const c = api(server.url, server.apiKey);
    const wh = (await c.post('/v1/webhooks', { url: receiver.url, name: 'loopback receiver', description: '' })).body.data;
    receiver.secrets = [wh.signing_secret];
    const src = (await c.post('/v1/sources', { component_code: FETCHER })).body.data;
    expect((await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id })).status).toBe(200);
    const send = async (body: object) => {
      const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(r.status).toBe(200);
    };
    await send({});
    await send({ url: internal.url });
    const runs = await eventually(async () => {
      const l = (await c.get(`/v1/sources/${src.id}/logs`)).body.data as Array<{ kind: string; ok: boolean; error?: { message: string } }>;
      const found = l.filter((x) => x.kind === 'run');
      return found.length === 2 ? found : undefined;
    }, 20_000, 'two run logs');
    // Logs are newest first.
    const fetchRun = runs![0];
    const outcomes = () => receiver.received.filter((d) => d.verified && d.headers['webhook-id'] && (d.json as { outcome?: string })?.outcome !== undefined);
    return { c, src, fetchRun, outcomes };
  }

  it('with only SLUICE_EGRESS_ALLOW=127.0.0.1 a loopback webhook is delivered, but component fetch to loopback is refused', async () => {
    const server = await startSluice({ env: { SLUICE_EGRESS_ALLOW: '127.0.0.1' } });
    try {
      const hitsBefore = internal.hits();
      const { fetchRun, outcomes } = await fetchFromComponent(server);
      expect(fetchRun.ok).toBe(false);
      expect(fetchRun.error!.message).toMatch(/egress to 127\.0\.0\.1 denied: it resolves to 127\.0\.0\.1 \(loopback address\); allow it with SLUICE_COMPONENT_EGRESS_ALLOW/);
      expect(JSON.stringify(fetchRun)).toMatch(/"level":"error","message":"[^"]*egress to 127\.0\.0\.1 denied/);
      // The server's own request to 127.0.0.1 (the webhook delivery) went through.
      const delivered = await eventually(() => outcomes().find((d) => (d.json as { outcome: string }).outcome === 'no fetch'), 20_000, 'the webhook delivery');
      expect(delivered!.verified).toBe(true);
      expect(internal.hits()).toBe(hitsBefore);
    } finally {
      await server.stop();
      removeDataDir(server.dataDir);
      receiver.received.length = 0;
    }
  });

  it('with SLUICE_COMPONENT_EGRESS_ALLOW=127.0.0.1 the component reaches the loopback service', async () => {
    const server = await startSluice({ env: { SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    try {
      const { fetchRun, outcomes } = await fetchFromComponent(server);
      expect(fetchRun).toMatchObject({ ok: true, emitted: 1 });
      await eventually(() => outcomes().find((d) => (d.json as { outcome: string }).outcome === 'status 200 internal secret'), 20_000, 'the fetched answer delivered');
    } finally {
      await server.stop();
      removeDataDir(server.dataDir);
      receiver.received.length = 0;
    }
  });

  it('a bad SLUICE_COMPONENT_EGRESS_ALLOW stops the server at start, naming the variable', async () => {
    await expect(startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1:80' } })).rejects.toThrow(/SLUICE_COMPONENT_EGRESS_ALLOW: "127\.0\.0\.1:80"/);
  });
});
