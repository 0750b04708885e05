import * as net from 'node:net';
import { Webhook } from 'standardwebhooks';
import { deliverWebhook, WebhookDeliveryRequest } from '../src/deliver-webhook';
import { closeIdleOutboundConnections } from '../src/outbound-http';
import { nextAttemptDelayMs } from '../src/retry-schedule';
import { generateWebhookSecret } from '../src/webhook-signer';
import { LoopbackServer, ReceivedRequest, startLoopbackServer } from './loopback-server.helper';

const servers: LoopbackServer[] = [];
async function receiver(handle: Parameters<typeof startLoopbackServer>[0] = (_req, res) => res.end()): Promise<LoopbackServer> {
  const started = await startLoopbackServer(handle);
  servers.push(started);
  return started;
}

afterEach(async () => {
  closeIdleOutboundConnections();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  jest.restoreAllMocks();
});

const event = { type: 'order.created', id: 42, text: 'grüße' };

function attempt(url: string, overrides: Partial<WebhookDeliveryRequest> = {}): WebhookDeliveryRequest {
  return {
    url,
    secrets: [generateWebhookSecret()],
    msgId: 'emit_01HZX3',
    body: JSON.stringify(event),
    emitterId: 'dc_source1',
    eventName: 'orders',
    timeoutMs: 5000,
    policy: { allow: ['127.0.0.1'] },
    ...overrides,
  };
}

function headersOf(received: ReceivedRequest): Record<string, string> {
  return received.headers as Record<string, string>;
}

describe('deliverWebhook against real loopback receivers', () => {
  it('delivers a POST that the standardwebhooks package verifies', async () => {
    const target = await receiver();
    const secret = generateWebhookSecret();
    const result = await deliverWebhook(attempt(target.url(), { secrets: [secret] }));
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(result.error).toBeUndefined();
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    const [received] = target.requests;
    expect(received.method).toBe('POST');
    expect(received.body).toBe(JSON.stringify(event));
    expect(new Webhook(secret).verify(received.body, headersOf(received))).toEqual(event);
    expect(received.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'emit_01HZX3',
      'x-pd-emit-id': 'emit_01HZX3',
      'x-pd-emitter-id': 'dc_source1',
      'x-pd-event-name': 'orders',
    });
    expect(Number(received.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1);
  });

  it('keeps the id and takes a fresh timestamp on every attempt', async () => {
    const target = await receiver();
    const secret = generateWebhookSecret();
    const start = Date.now();
    await deliverWebhook(attempt(target.url(), { secrets: [secret], now: () => start - 120_000 }));
    await deliverWebhook(attempt(target.url(), { secrets: [secret], now: () => start }));
    const [first, second] = target.requests;
    expect(first.headers['webhook-id']).toBe(second.headers['webhook-id']);
    expect(Number(second.headers['webhook-timestamp']) - Number(first.headers['webhook-timestamp'])).toBe(120);
    expect(first.headers['webhook-signature']).not.toBe(second.headers['webhook-signature']);
    for (const received of [first, second]) expect(new Webhook(secret).verify(received.body, headersOf(received))).toEqual(event);
  });

  it('signs with both secrets during a rotation so each verifies, and no other does', async () => {
    const target = await receiver();
    const newer = generateWebhookSecret();
    const older = generateWebhookSecret();
    await deliverWebhook(attempt(target.url(), { secrets: [newer, older] }));
    const [received] = target.requests;
    expect(received.headers['webhook-signature']?.toString().split(' ')).toHaveLength(2);
    expect(new Webhook(newer).verify(received.body, headersOf(received))).toEqual(event);
    expect(new Webhook(older).verify(received.body, headersOf(received))).toEqual(event);
    expect(() => new Webhook(generateWebhookSecret()).verify(received.body, headersOf(received))).toThrow(/No matching signature/);
  });

  it('reports a timeout against a receiver that never answers, without throwing', async () => {
    const target = await receiver(() => undefined);
    const result = await deliverWebhook(attempt(target.url(), { timeoutMs: 300 }));
    expect(result).toMatchObject({ ok: false, errorCode: 'timeout' });
    expect(result.statusCode).toBeUndefined();
    expect(result.error).toMatch(/timed out after 300 ms/);
    expect(result.durationMs).toBeGreaterThanOrEqual(250);
    expect(result.durationMs).toBeLessThan(2000);
  });

  it('does not follow a 302', async () => {
    const target = await receiver((req, res) => {
      if (req.url === '/hook') res.writeHead(302, { location: `http://127.0.0.1:${target.port}/moved` }).end();
      else res.end();
    });
    const result = await deliverWebhook(attempt(target.url()));
    expect(result).toMatchObject({ ok: false, statusCode: 302 });
    expect(result.error).toMatch(/HTTP 302 Found.*redirects are not followed/);
    expect(target.requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it('surfaces Retry-After of a 503 and a 429, which then sets the next delay', async () => {
    const answers = [
      { status: 503, retryAfter: '120' },
      { status: 429, retryAfter: new Date(Date.now() + 3_600_000).toUTCString() },
      { status: 500, retryAfter: '120' },
    ];
    const target = await receiver((_req, res) => {
      const next = answers[target.requests.length - 1];
      res.writeHead(next.status, { 'retry-after': next.retryAfter }).end('busy');
    });
    const unavailable = await deliverWebhook(attempt(target.url()));
    expect(unavailable).toMatchObject({ ok: false, statusCode: 503, retryAfter: '120', error: 'HTTP 503 Service Unavailable' });
    expect(nextAttemptDelayMs([0, 5, 300], 1, { jitter: 0, retryAfterHeader: unavailable.retryAfter })).toBe(120_000);
    const limited = await deliverWebhook(attempt(target.url()));
    expect(limited).toMatchObject({ ok: false, statusCode: 429, retryAfter: answers[1].retryAfter });
    const failed = await deliverWebhook(attempt(target.url()));
    expect(failed).toMatchObject({ ok: false, statusCode: 500 });
    expect(failed.retryAfter).toBeUndefined();
  });

  it('counts any 2xx as delivered', async () => {
    const target = await receiver((_req, res) => res.writeHead(204).end());
    expect(await deliverWebhook(attempt(target.url()))).toMatchObject({ ok: true, statusCode: 204 });
  });

  it('does not read a huge receiver answer to the end', async () => {
    const huge = Buffer.alloc(20 * 1024 * 1024, 'z');
    const target = await receiver((_req, res) => res.end(huge));
    const result = await deliverWebhook(attempt(target.url()));
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
  });

  it('refuses loopback without an allow-list entry and never contacts the receiver', async () => {
    const target = await receiver();
    const result = await deliverWebhook(attempt(target.url(), { policy: { allow: [] } }));
    expect(result).toMatchObject({ ok: false, errorCode: 'egress_denied' });
    expect(result.error).toContain('127.0.0.1 (loopback address)');
    expect(target.connections()).toBe(0);
  });

  it.each([
    [['127.0.0.1'], '127.0.0.1'],
    [['127.0.0.0/8'], '127.0.0.1'],
    [['localhost'], 'localhost'],
  ])('delivers to loopback allowed by %p', async (allow, host) => {
    const target = await receiver();
    const result = await deliverWebhook(attempt(`http://${host}:${target.port}/hook`, { policy: { allow } }));
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(target.requests).toHaveLength(1);
  });

  it('refuses a private address quickly without any connection attempt', async () => {
    const connect = jest.spyOn(net.Socket.prototype, 'connect');
    const result = await deliverWebhook(attempt('http://10.255.255.1/hook', { timeoutMs: 15_000 }));
    expect(result).toMatchObject({ ok: false, errorCode: 'egress_denied' });
    // Far below the 15 s timeout (a loaded machine may take a while to answer anything at all).
    expect(result.durationMs).toBeLessThan(2000);
    expect(connect).not.toHaveBeenCalled();
  });

  it('never throws, even for an unusable URL or secret', async () => {
    await expect(deliverWebhook(attempt('ftp://127.0.0.1/'))).resolves.toMatchObject({ ok: false, errorCode: 'invalid_url' });
    await expect(deliverWebhook(attempt('http://127.0.0.1/', { secrets: ['whsec_!!'] }))).resolves.toMatchObject({ ok: false, errorCode: 'signing' });
    await expect(deliverWebhook(attempt('http://127.0.0.1/', { secrets: [] }))).resolves.toMatchObject({ ok: false, errorCode: 'signing' });
    await expect(deliverWebhook(attempt('http://127.0.0.1/', { timeoutMs: -1 }))).resolves.toMatchObject({ ok: false, errorCode: 'invalid_request' });
  });
});
