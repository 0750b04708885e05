import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, SecretBox, SluiceEvent, SourceConfig } from '@app/domain';
import { SqliteEventStore } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';

/**
 * What every run of one configuration sends (code, instance, props with secret ones opened) is
 * made once per configuration: a secret prop is decrypted once, not at every run, and a deploy
 * or update (a new configuration) is seen by the next run. Real SQLite store and SecretBox; the
 * sandbox is a function that records the invocations.
 */
describe('SourceActor: the parts of an invocation one configuration always sends', () => {
  const SOURCE = 'dc_template';
  const definition: ComponentDefinition = {
    name: 'Keyed', version: '1.0.0', type: 'source', dedupe: undefined, hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http' }, { name: 'token', type: 'string', secret: true }, { name: 'label', type: 'string' }],
  };
  const component = { definition, bundle: 'bundle', codeHash: 'code-1' };
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-invocation-template-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens a secret prop once per configuration, and the runs after an update send the new values', async () => {
    const box = new SecretBox(randomBytes(32));
    const opened = jest.spyOn(box, 'open');
    let publicUrl = 'http://sluice.test';
    const runs: SandboxInvocation[] = [];
    const actor = new SourceActor(SOURCE, {
      store, box, publicUrl: () => publicUrl, maxDbBytesPerSource: 1024 * 1024,
      component: () => component,
      invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => {
        if (inv.entry === 'run') runs.push(inv);
        return { ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [], dbWrites: [] };
      },
    });
    const configOf = (token: string, label: string): SourceConfig => ({
      componentId: 'sc_1', name: 'keyed', nameSlug: 'keyed', configuredProps: { token: box.seal(token), label }, active: true, endpointKey: 'k-1',
    });
    // The deploy hook's invocation and the runs after it share the template.
    await actor.deploy('u_1', configOf('first-secret', 'one'), 'u_1');
    for (let i = 0; i < 3; i++) await actor.run('http', { n: i }, `018f0000-0000-7000-8000-00000000000${i}`);
    expect(opened).toHaveBeenCalledTimes(1);
    expect(runs.map((r) => r.props)).toEqual(Array(3).fill({ token: 'first-secret', label: 'one' }));
    expect(runs.map((r) => r.httpProps)).toEqual(Array(3).fill({ http: { endpoint: 'http://sluice.test/e/k-1', customResponse: false } }));
    expect(runs.map((r) => [r.codeId, r.instanceId, r.bundle])).toEqual(Array(3).fill(['code-1', `${SOURCE}@code-1`, 'bundle']));
    expect(runs.map((r) => r.event)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);

    await actor.update(configOf('second-secret', 'two'), 'u_1');
    opened.mockClear();
    runs.length = 0;
    await actor.run('http', { n: 3 }, '018f0000-0000-7000-8000-000000000003');
    await actor.run('http', { n: 4 }, '018f0000-0000-7000-8000-000000000004');
    expect(opened).toHaveBeenCalledTimes(1);
    expect(runs.map((r) => r.props)).toEqual([{ token: 'second-secret', label: 'two' }, { token: 'second-secret', label: 'two' }]);

    // The public URL is part of what the template was made from.
    publicUrl = 'https://hooks.example.com';
    await actor.run('http', { n: 5 }, '018f0000-0000-7000-8000-000000000005');
    expect(runs[2].httpProps).toEqual({ http: { endpoint: 'https://hooks.example.com/e/k-1', customResponse: false } });
  });
});
