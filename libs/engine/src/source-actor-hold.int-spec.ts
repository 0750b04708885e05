import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, SecretBox, SluiceEvent, SourceConfig } from '@app/domain';
import { SqliteEventStore, uuidv7 } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';

/**
 * Which runs may wait for company on their way to the worker (`holdable`, see
 * `EngineRuntime.invoke` and `InvocationHold`): the run of an HTTP request answered once it is
 * durable, and no other (a custom response's caller waits for its run; so do run-now, hooks,
 * timers and listeners' callers, or nobody measured them). Real SQLite store; the sandbox is a
 * function that notes what it was asked.
 */
describe('SourceActor: which runs\' invocations may be held', () => {
  const definition: ComponentDefinition = {
    name: 'Echo', version: '1.0.0', type: 'source', dedupe: undefined, hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http' }],
  };
  const config: SourceConfig = { componentId: 'sc_echo', name: 'echo', nameSlug: 'echo', configuredProps: {}, active: true, endpointKey: 'k-hold' };
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;
  let asked: { n: unknown; holdable: boolean | undefined }[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-actor-hold-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    asked = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function deployed(): Promise<SourceActor> {
    const actor = new SourceActor('dc_hold', {
      store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      component: () => ({ definition, bundle: '', codeHash: 'h' }),
      invoke: async (inv: SandboxInvocation, _account: string | undefined, holdable?: boolean): Promise<SandboxResult> => {
        if (inv.entry === 'run') asked.push({ n: (inv.event as { n?: unknown } | undefined)?.n, holdable });
        return { ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [], dbWrites: [] };
      },
    });
    await actor.deploy('u_1', config, 'u_1');
    return actor;
  }

  it('an HTTP request answered once durable: holdable, whether sent early or in its turn', async () => {
    const actor = await deployed();
    // The first run loads the actor (sent in its turn); the next ones are sent early.
    for (const n of [1, 2, 3]) {
      const { outcome, durable } = actor.start('http', { n }, uuidv7());
      await outcome;
      await durable;
    }
    expect(asked).toEqual([{ n: 1, holdable: true }, { n: 2, holdable: true }, { n: 3, holdable: true }]);
  });

  it('a custom response, a run without a request and a timer\'s run: not holdable', async () => {
    const actor = await deployed();
    const custom = actor.start('http', { n: 1 }, uuidv7(), undefined, true);
    await custom.outcome;
    await custom.durable;
    await actor.run('http', { n: 2 });
    await actor.run('timer', { n: 3 });
    expect(asked).toEqual([{ n: 1, holdable: false }, { n: 2, holdable: false }, { n: 3, holdable: false }]);
  });
});
