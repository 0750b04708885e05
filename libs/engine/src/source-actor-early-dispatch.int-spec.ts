import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, SecretBox, SluiceEvent, SourceConfig } from '@app/domain';
import { SqliteEventStore } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';

/**
 * A run's invocation leaves for the sandbox as soon as the run starts (`dispatchEarly`), ahead of
 * its turn in the actor's mailbox. It stands only if the source's config is still the one it was
 * built from when the turn comes: a run queued behind an update runs with the updated component.
 * Real SQLite store; the sandbox is a function that answers with the code it was given.
 */
describe('SourceActor: a run sent early and an update queued before its turn', () => {
  const SOURCE = 'dc_early';
  const definition: ComponentDefinition = {
    name: 'Echo', version: '1.0.0', type: 'source', dedupe: undefined, hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http' }],
  };
  const configOf = (componentId: string): SourceConfig => ({
    componentId, name: 'echo', nameSlug: 'echo', configuredProps: {}, active: true, endpointKey: 'k-early',
  });
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;
  /** Each run invocation: the request's `n` and the code it was sent to. */
  let invoked: { n: number; code: string }[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-early-dispatch-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    invoked = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends the run again with the new config, and records what the new code answered', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const actor = new SourceActor(SOURCE, {
      store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      // The bundle's hash is the component's id, so each answer names the code that gave it.
      component: (id) => ({ definition, bundle: '', codeHash: id }),
      invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => {
        const n = (inv.event as { n?: number } | undefined)?.n;
        if (inv.entry === 'run' && typeof n === 'number') {
          invoked.push({ n, code: inv.codeId });
          // The first run holds the mailbox until the update and the second run are queued.
          if (n === 1) await gate;
        }
        return { ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [{ event: { n, code: inv.codeId }, meta: {} }], dbWrites: [] };
      },
    });
    await actor.deploy('u_1', configOf('sc_a'), 'u_1');
    await actor.run('http', { n: 0 }, '018f0000-0000-7000-8000-000000000000');

    const first = actor.run('http', { n: 1 }, '018f0000-0000-7000-8000-000000000001');
    const updated = actor.update(configOf('sc_b'), 'u_1');
    const second = actor.start('http', { n: 2 }, '018f0000-0000-7000-8000-000000000002');
    release();
    await first;
    await updated;
    const outcome = await second.outcome;
    await second.durable;

    // Sent early to the old code (the source was deployed with it then), then again to the new one.
    expect(invoked.filter((i) => i.n === 2)).toEqual([{ n: 2, code: 'sc_a' }, { n: 2, code: 'sc_b' }]);
    expect(outcome?.emitted.map((e) => e.event)).toEqual([{ n: 2, code: 'sc_b' }]);
    // The first run, already in its turn when the update came, kept the code it was sent to.
    expect(invoked.filter((i) => i.n === 1)).toEqual([{ n: 1, code: 'sc_a' }]);
  });

  it('uses the invocation sent early when nothing changed in between (one invocation per run)', async () => {
    const actor = new SourceActor(SOURCE, {
      store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      component: (id) => ({ definition, bundle: '', codeHash: id }),
      invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => {
        const n = (inv.event as { n?: number } | undefined)?.n;
        if (inv.entry === 'run' && typeof n === 'number') invoked.push({ n, code: inv.codeId });
        return { ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [{ event: { n }, meta: {} }], dbWrites: [] };
      },
    });
    await actor.deploy('u_1', configOf('sc_a'), 'u_1');
    const runs = [0, 1, 2, 3].map((n) => actor.run('http', { n }, `018f0000-0000-7000-8000-00000000001${n}`));
    const outcomes = await Promise.all(runs);
    expect(outcomes.map((o) => o?.emitted.map((e) => e.event))).toEqual([[{ n: 0 }], [{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
    // The first run found the actor not yet loaded (nothing sent early); each of the others was sent once.
    expect(invoked.map((i) => i.n).sort()).toEqual([0, 1, 2, 3]);
  });
});
