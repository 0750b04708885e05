import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, EventTypes, SecretBox, SluiceEvent, SourceConfig, Streams } from '@app/domain';
import { SqliteEventStore, uuidv7 } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';

/**
 * A custom response is answered from the run's result as soon as it is final (`ran`), not once
 * the run's record has been built and queued (`outcome`). Real SQLite store; the sandbox is a
 * function that answers each run with a response naming its request.
 */
describe('SourceActor: a run\'s result is handed over before its record is built', () => {
  const definition: ComponentDefinition = {
    name: 'Respond', version: '1.0.0', type: 'source', dedupe: undefined, hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http', customResponse: true }],
  };
  const config: SourceConfig = { componentId: 'sc_respond', name: 'respond', nameSlug: 'respond', configuredProps: {}, active: true, endpointKey: 'k-ran' };
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-actor-ran-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function deployed(): Promise<SourceActor> {
    const actor = new SourceActor('dc_ran', {
      store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      component: () => ({ definition, bundle: '', codeHash: 'h' }),
      invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => ({
        ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [], dbWrites: [],
        httpResponse: { status: 201, headers: {}, body: `n=${String((inv.event as { n?: unknown } | undefined)?.n)}` },
      }),
    });
    await actor.deploy('u_1', config, 'u_1');
    return actor;
  }

  it('hands over the result before the outcome, and records the run all the same', async () => {
    const actor = await deployed();
    for (const n of [1, 2, 3]) {
      const order: string[] = [];
      const requestId = uuidv7();
      const { ran, outcome, durable } = actor.start('http', { n }, requestId, undefined, true);
      const result = ran.then((r) => {
        order.push('ran');
        return r;
      });
      void outcome.then(() => order.push('outcome'));
      expect((await result)?.httpResponse).toEqual({ status: 201, headers: {}, body: `n=${n}` });
      await outcome;
      await durable;
      expect(order).toEqual(['ran', 'outcome']);
    }
    const recorded = (await store.readStream(Streams.source('dc_ran'))).filter((e) => e.type === EventTypes.sourceRunCompleted);
    expect(recorded).toHaveLength(3);
  });

  it('a request that already ran hands over nothing the second time', async () => {
    const actor = await deployed();
    const requestId = uuidv7();
    const first = actor.start('http', { n: 9 }, requestId, undefined, true);
    expect((await first.ran)?.httpResponse).toEqual({ status: 201, headers: {}, body: 'n=9' });
    await first.durable;
    const again = actor.start('http', { n: 9 }, requestId, undefined, true);
    expect(await again.ran).toBeUndefined();
    expect(await again.outcome).toBeUndefined();
  });
});
