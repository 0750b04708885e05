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
import { DeliverySender, OUTCOME_LINGER_ALONE_MS, OUTCOME_LINGER_BUSY_MS } from './delivery-sender';

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
  /** Answers are held until this many requests are waiting (to have several deliveries in flight). */
  let holdUntil = 1;
  let held: (() => void)[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-outcome-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    receiver = createServer((req, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => {
        held.push(() => res.end('ok'));
        if (held.length >= holdUntil) {
          for (const answer of held) answer();
          held = [];
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await store.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  function newSender(): DeliverySender {
    const box = new SecretBox(randomBytes(32));
    const webhook: WebhookRow = {
      id: 'wh_1', account_id: 'u_1', url, name: 'hook', description: '', active: 1,
      secret: JSON.stringify(box.seal(generateWebhookSecret())), prev_secret: null, prev_valid_until: null, created_at: 0, updated_at: 0, pos: 1,
    };
    const queries = {
      dueDeliveries: () => [], nextDeliveryDueAfter: () => undefined, webhook: (id: string) => (id === webhook.id ? webhook : undefined),
    } as unknown as ReadModelQueries;
    return new DeliverySender(store, queries, box, {
      retrySchedule: [0, 5], timeoutMs: 2000, egress: { allow: ['127.0.0.1'] }, concurrencyPerWebhook: 4,
    });
  }

  /** Resolves with the options of the outcome appends, once `count` of them were handed to the store. */
  function outcomesQueued(count: number): Promise<(AppendOptions | undefined)[]> {
    const seen: (AppendOptions | undefined)[] = [];
    return new Promise((resolve) => {
      const append = store.append.bind(store);
      jest.spyOn(store, 'append').mockImplementation((stream, events, options) => {
        const result = append(stream, events, options);
        if (stream === 'delivery-wh_1') {
          seen.push(options);
          if (seen.length === count) resolve(seen);
        }
        return result;
      });
    });
  }

  const job = (n: number) => ({ deliveryId: `d-${n}`, webhookId: 'wh_1', emitId: `em-${n}`, emitterId: 'dc_1', eventName: '', body: `{"n":${n}}`, attempts: 0 });

  afterEach(() => jest.restoreAllMocks());

  it('alone in flight: waits at least 100 ms for another append, then commits with it, acknowledged at its commit', async () => {
    expect(OUTCOME_LINGER_ALONE_MS).toBeGreaterThanOrEqual(100);
    const sender = newSender();
    let commits = 0;
    const stopCounting = store.onAppended(() => commits++);
    const queued = outcomesQueued(1);
    sender.start();
    sender.enqueue(job(1));
    const [options] = await queued;
    expect(received).toEqual(['em-1']);
    expect(options).toMatchObject({ durability: 'commit', lingerMs: OUTCOME_LINGER_ALONE_MS });
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
    stopCounting();
    await sender.stop();
  });

  it('with others in flight (busy rates): waits only OUTCOME_LINGER_BUSY_MS, and commits on its own when nothing else comes', async () => {
    expect(OUTCOME_LINGER_BUSY_MS).toBeLessThan(OUTCOME_LINGER_ALONE_MS);
    const sender = newSender();
    const before = (await store.readAll()).length;
    // Both requests are answered together: each outcome is recorded while the other is in flight.
    holdUntil = 2;
    const queued = outcomesQueued(2);
    sender.start();
    sender.enqueue(job(2));
    sender.enqueue(job(3));
    const options = await queued;
    expect(options[0]).toMatchObject({ durability: 'commit', lingerMs: OUTCOME_LINGER_BUSY_MS });
    // No other append: the linger's own timer commits them.
    for (let i = 0; i < 100 && (await store.readAll()).length < before + 2; i++) await new Promise((r) => setTimeout(r, 10));
    const log = (await store.readAll()).slice(before);
    expect(log.map((e) => e.data)).toEqual(expect.arrayContaining([
      expect.objectContaining({ deliveryId: 'd-2', statusCode: 200 }), expect.objectContaining({ deliveryId: 'd-3', statusCode: 200 }),
    ]));
    holdUntil = 1;
    await sender.stop();
  });
});
