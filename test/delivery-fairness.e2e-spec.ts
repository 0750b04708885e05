import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE, FLOOD_SOURCE } from './support/fixtures';


const CONCURRENCY = 8;

describe('delivery lanes stay fair between accounts under a flood', () => {
  let server: SluiceProcess;
  let keyB: string;
  // A's receiver holds every request until the end: A's flood can never drain during the test.
  const receiverA = new WebhookReceiver();
  const receiverB = new WebhookReceiver();
  let arrivedA = 0;
  let releaseA!: () => void;
  const heldA = new Promise<void>((r) => (releaseA = r));

  beforeAll(async () => {
    const dir = newDataDir();
    const keyA = 'sk_alice_0123456789abcdef';
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', keyA]);
    keyB = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    receiverA.respond = async () => {
      arrivedA++;
      await heldA;
      return 200;
    };
    await receiverA.start();
    await receiverB.start();
    server = await startSluice({
      dataDir: dir, apiKey: keyA,
      env: { SLUICE_DELIVERY_TIMEOUT_MS: '120000', SLUICE_DELIVERY_CONCURRENCY: String(CONCURRENCY) },
    });
  });
  afterAll(async () => {
    releaseA();
    await server?.stop();
    await receiverA.stop();
    await receiverB.stop();
    if (server) removeDataDir(server.dataDir);
  });

  async function webhookFor(key: string, receiver: WebhookReceiver, code: string) {
    const c = api(server.url, key);
    const wh = (await c.post('/v1/webhooks', { url: receiver.url, name: 'r' })).body.data;
    receiver.secrets = [wh.signing_secret];
    const src = (await c.post('/v1/sources', { component_code: code })).body.data;
    expect((await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id })).status).toBe(200);
    return { c, wh, src };
  }

  async function post(endpoint: string, body: unknown) {
    const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(r.status).toBe(200);
  }

  let a: Awaited<ReturnType<typeof webhookFor>>;
  let b: Awaited<ReturnType<typeof webhookFor>>;

  it('B\'s event is delivered while A\'s flood of 1,000 to a stuck receiver has not drained', async () => {
    a = await webhookFor(server.apiKey, receiverA, FLOOD_SOURCE);
    b = await webhookFor(keyB, receiverB, ECHO_SOURCE);
    await post(a.src.endpoint_url, { n: 1000 });
    await eventually(() => arrivedA >= CONCURRENCY, 20_000, 'A\'s flood reaching its receiver');
    await post(b.src.endpoint_url, { n: 1 });
    await eventually(() => receiverB.deliveredIds().length === 1, 20_000, 'B\'s delivery');
    // Causality: A's receiver has answered nothing yet, and has seen at most its lane's concurrency.
    expect(receiverA.received).toHaveLength(0);
    expect(arrivedA).toBeLessThanOrEqual(CONCURRENCY);
  });

  it('B\'s due work found by the schedule poll is not queued behind A\'s backlog (re-enabled webhook)', async () => {
    // Another 1,000 for A: its backlog in the schedule is now larger than one poll's page.
    await post(a.src.endpoint_url, { n: 1000 });
    expect((await b.c.put(`/v1/webhooks/${b.wh.id}`, { active: false })).status).toBe(200);
    await post(b.src.endpoint_url, { n: 2 });
    await eventually(async () => {
      const list = (await b.c.get(`/v1/webhooks/${b.wh.id}/deliveries`, { limit: '10' })).body.data as { status: string }[];
      return list.length === 2 && list[0].status === 'pending';
    }, 20_000, 'B\'s second delivery waiting in the schedule');
    expect((await b.c.put(`/v1/webhooks/${b.wh.id}`, { active: true })).status).toBe(200);
    await eventually(() => receiverB.deliveredIds().length === 2, 20_000, 'B\'s delivery after re-enabling');
    expect((receiverB.received[1].json as { n: number }).n).toBe(2);
    expect(receiverA.received).toHaveLength(0);
    expect(arrivedA).toBeLessThanOrEqual(CONCURRENCY);
  });

  it('A\'s whole flood is delivered once its receiver answers (deliveries left to the schedule are not lost)', async () => {
    releaseA();
    await eventually(() => new Set(receiverA.deliveredIds()).size === 2000, 60_000, 'A\'s 2,000 deliveries');
    expect(receiverA.received.every((r) => r.verified)).toBe(true);
  });
});
