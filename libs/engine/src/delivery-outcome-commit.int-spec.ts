import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventTypes, SecretBox, type SluiceEvent } from '@app/domain';
import { generateWebhookSecret } from '@app/delivery';
import { SqliteEventStore, type AppendOptions } from '@app/event-store';
import type { ReadModelQueries, WebhookRow } from '@app/projections';
import { DeliverySender, OUTCOME_LINGER_MS } from './delivery-sender';

/**
 * A delivery's outcome at everyday rates: a real SQLite store, a real receiver on loopback. The
 * outcome does not take a commit (and a wake-up of the loop) of its own: it waits, long enough for
 * the next request of a source sending 10 events a second, and is written with the next append.
 */
describe('DeliverySender: an outcome shares the next append\'s commit (real store, real HTTP)', () => {
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;
  let receiver: Server;
  let url: string;
  const received: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-outcome-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    receiver = createServer((req, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await store.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits at least OUTCOME_LINGER_MS (at least 100 ms) for another append, then commits with it, acknowledged at its commit', async () => {
    expect(OUTCOME_LINGER_MS).toBeGreaterThanOrEqual(100);
    const box = new SecretBox(randomBytes(32));
    const webhook: WebhookRow = {
      id: 'wh_1', account_id: 'u_1', url, name: 'hook', description: '', active: 1,
      secret: JSON.stringify(box.seal(generateWebhookSecret())), prev_secret: null, prev_valid_until: null, created_at: 0, updated_at: 0, pos: 1,
    };
    const queries = {
      dueDeliveries: () => [], nextDeliveryDueAfter: () => undefined, webhook: (id: string) => (id === webhook.id ? webhook : undefined),
    } as unknown as ReadModelQueries;
    const sender = new DeliverySender(store, queries, box, {
      retrySchedule: [0, 5], timeoutMs: 2000, egress: { allow: ['127.0.0.1'] }, concurrencyPerWebhook: 4,
    });
    let commits = 0;
    store.onAppended(() => commits++);
    // Resolves when the sender hands its outcome to the store.
    const outcomeQueued = new Promise<AppendOptions | undefined>((resolve) => {
      const append = store.append.bind(store);
      jest.spyOn(store, 'append').mockImplementation((stream, events, options) => {
        const result = append(stream, events, options);
        if (stream === 'delivery-wh_1') resolve(options);
        return result;
      });
    });
    sender.start();
    sender.enqueue({ deliveryId: 'd-1', webhookId: 'wh_1', emitId: 'em-1', emitterId: 'dc_1', eventName: '', body: '{"n":1}', attempts: 0 });
    const options = await outcomeQueued;
    expect(received).toEqual(['em-1']);
    expect(options).toMatchObject({ durability: 'commit', lingerMs: OUTCOME_LINGER_MS });
    // Queued, not committed: nothing else has been appended yet.
    expect(commits).toBe(0);
    // The next request (an append that does not wait) takes it along: one commit for both.
    await store.append('inbox-dc_1', [{ type: EventTypes.httpRequestReceived, data: {
      sourceId: 'dc_1', requestId: '01a21b6a-865f-7032-a4f1-8765b5f9e4f8', method: 'POST', path: '/', url: 'http://sluice.test/e/k', query: {}, headers: {}, bodyRaw: '{}', body: {},
    } }]);
    expect(commits).toBe(1);
    const log = await store.readAll();
    expect(log.map((e) => e.type)).toEqual([EventTypes.deliverySucceeded, EventTypes.httpRequestReceived]);
    expect(log[0].data).toMatchObject({ deliveryId: 'd-1', webhookId: 'wh_1', attempt: 1, statusCode: 200 });
    jest.restoreAllMocks();
    await sender.stop();
  });
});
