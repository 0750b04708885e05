import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE } from './support/fixtures';

/**
 * The sender keeps a webhook's row (URL, secrets, active) between deliveries: a change committed
 * to the webhook must reach the next delivery all the same.
 */
describe('deliveries follow the changes of their webhook', () => {
  let server: SluiceProcess;
  const first = new WebhookReceiver();
  const second = new WebhookReceiver();

  beforeAll(async () => {
    await first.start();
    await second.start();
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    await first.stop();
    await second.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('signs with the rotated secret and posts to the new URL once changed', async () => {
    const c = api(server.url, server.apiKey);
    const wh = (await c.post('/v1/webhooks', { url: first.url, name: 'changes', description: '' })).body.data;
    const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    expect((await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id })).status).toBe(200);
    const post = async (n: number) => {
      const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(r.status).toBe(200);
    };
    const got = (receiver: WebhookReceiver, n: number) => receiver.received.find((r) => (r.json as { n?: number } | undefined)?.n === n);

    first.secrets = [wh.signing_secret];
    await post(1);
    await eventually(() => got(first, 1) !== undefined, 20_000, 'the first delivery');
    expect(got(first, 1)!.verified).toBe(true);

    // After a rotation, the delivery carries a signature made with the new secret.
    const rotated = (await c.post(`/v1/webhooks/${wh.id}/secret/rotate`)).body.data.signing_secret as string;
    expect(rotated).not.toBe(wh.signing_secret);
    first.secrets = [rotated];
    await post(2);
    await eventually(() => got(first, 2) !== undefined, 20_000, 'the delivery after the rotation');
    expect(got(first, 2)!.verified).toBe(true);

    // After a URL change, the next delivery goes to the new URL.
    expect((await c.put(`/v1/webhooks/${wh.id}`, { url: second.url })).status).toBe(200);
    second.secrets = [rotated];
    await post(3);
    await eventually(() => got(second, 3) !== undefined, 20_000, 'the delivery to the new URL');
    expect(got(second, 3)!.verified).toBe(true);
    expect(got(first, 3)).toBeUndefined();
  });
});
