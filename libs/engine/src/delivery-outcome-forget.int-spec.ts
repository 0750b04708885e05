import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { generateWebhookSecret } from '@app/delivery';
import { EventTypes, Streams } from '@app/domain';
import { uuidv7 } from '@app/event-store';
import { EngineRuntime } from './engine-runtime';

/**
 * The sender remembers an attempt it recorded only until the read models have folded its outcome
 * (`DeliverySender.outcomeFolded`, called after each read-model commit). It used to keep every
 * delivery of the process's life: entries went only when a poll met their row again, which a
 * delivered row never is. A real engine runtime (SQLite file, its projection, its sender) delivers
 * to a real receiver on loopback; after the deliveries are recorded the sender remembers none.
 */
describe('DeliverySender: a delivered attempt is not remembered once its outcome is in the read models', () => {
  let dataDir: string;
  let receiver: Server;
  let url: string;
  let received = 0;
  /** With this set, the first attempt of each delivery is answered 503 (its retry 200). */
  let failFirst = false;
  const seen = new Set<string>();

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      received++;
      const id = String(req.headers['webhook-id']);
      const fail = failFirst && !seen.has(id);
      seen.add(id);
      req.resume();
      req.on('end', () => {
        res.statusCode = fail ? 503 : 200;
        res.end(fail ? 'later' : 'ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-outcome-forget-'));
    received = 0;
    seen.clear();
  });
  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function deliverAll(attemptsEach: number): Promise<void> {
    const rt = new EngineRuntime(loadConfig({
      SLUICE_DATA_DIR: dataDir, SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_SQLITE_SYNC: 'normal', SLUICE_RETRY_SCHEDULE: '0,1,1',
    }), { sandbox: false });
    try {
      await rt.startReadModels();
      rt.goLive();
      rt.sender.start();
      const accountId = 'u_test';
      const webhookId = 'wh_forget';
      const sourceId = 'dc_forget';
      await rt.appendAndProject(Streams.webhook(webhookId), [{
        type: EventTypes.webhookCreated,
        data: { webhookId, accountId, url, name: 'hook', description: '', secret: rt.box.seal(generateWebhookSecret()) },
      }]);
      const subscriptionId = 'sub_forget';
      await rt.appendAndProject(Streams.subscription(subscriptionId), [{
        type: EventTypes.subscriptionCreated, data: { subscriptionId, accountId, emitterId: sourceId, listenerId: webhookId, eventName: '' },
      }]);
      const emits = 40;
      for (let i = 0; i < emits; i++) {
        await rt.appendAndProject(Streams.source(sourceId), [{
          type: EventTypes.sourceEventEmitted,
          data: {
            sourceId, accountId, emitId: uuidv7(), runId: uuidv7(), summaryId: `${Date.now()}-${i}`, event: { n: i },
            meta: { summary: `event ${i}` }, deliveryIds: 'ordered',
          },
        }]);
      }
      const deadline = Date.now() + 20_000;
      const rows = () => rt.queries.deliveries(webhookId, { limit: 100 }).rows;
      const delivered = () => rows().filter((d) => d.status === 'delivered').length;
      while ((received < emits * attemptsEach || delivered() < emits) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(received).toBe(emits * attemptsEach);
      expect(delivered()).toBe(emits);
      for (const row of rows()) expect(JSON.parse(row.attempts)).toHaveLength(attemptsEach);
      // Every outcome is folded: none is remembered (before, all 40 were, for the process's life).
      await rt.settle();
      expect(rt.sender.outcomesAwaitingFold).toBe(0);
    } finally {
      await rt.sender.stop();
      await rt.projections.stop();
      await rt.store.close();
    }
  }

  it('forgets each outcome once folded, and the schedule shows every delivery delivered', async () => {
    failFirst = false;
    await deliverAll(1);
  });

  it('forgets a failed attempt once folded, then its retry once that is folded', async () => {
    failFirst = true;
    await deliverAll(2);
  });
});
