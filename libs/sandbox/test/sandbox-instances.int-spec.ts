import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

// Code that keeps whatever secret it was configured with in module state and on globalThis, and
// reports what it found there first. Two deployments of this same text must not see each other.
const STASHER = `let stash = null;
export default {
  get name() { return stash === null && globalThis.leaked === undefined ? "clean" : "dirty:" + stash; },
  props: { token: { type: "string", secret: true } },
  run() {
    const seen = { module: stash, global: globalThis.leaked ?? null };
    stash = this.token;
    globalThis.leaked = this.token;
    return seen;
  },
};`;

describe('SandboxSupervisor: isolates belong to one deployed instance', () => {
  const sandbox = new SandboxSupervisor({ workers: 2, egress: { allow: [] } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  it('two instances of the same code get different isolates: no module state or globalThis crosses', async () => {
    const code = await component(STASHER);
    const alice = { instanceId: `dc_alice@${code.codeId}` };
    const bob = { instanceId: `dc_bob@${code.codeId}` };

    const first = await sandbox.invoke(invocation(code, { ...alice, props: { token: 'alice-secret' } }));
    expect(first).toMatchObject({ ok: true, returnValue: { module: null, global: null } });
    // The instance's own isolate stays warm: its second run sees what its first left.
    const again = await sandbox.invoke(invocation(code, { ...alice, props: { token: 'alice-secret' } }));
    expect(again.returnValue).toEqual({ module: 'alice-secret', global: 'alice-secret' });

    const other = await sandbox.invoke(invocation(code, { ...bob, props: { token: 'bob-secret' } }));
    expect(other).toMatchObject({ ok: true, returnValue: { module: null, global: null } });
    expect(JSON.stringify(other)).not.toContain('alice-secret');
    const aliceAfterBob = await sandbox.invoke(invocation(code, { ...alice, props: { token: 'alice-secret' } }));
    expect(aliceAfterBob.returnValue).toEqual({ module: 'alice-secret', global: 'alice-secret' });
  });

  it('describe loads the code on a throwaway isolate, never on one a deployed instance ran in', async () => {
    const code = await component(STASHER);
    // Instances with state on both workers, so whichever one the describe lands on holds some.
    const workersWithState = new Set<number>();
    for (let i = 0; workersWithState.size < 2; i++) {
      const instanceId = `dc_${i}@${code.codeId}`;
      workersWithState.add(sandbox.workerIndexFor(instanceId));
      await sandbox.invoke(invocation(code, { instanceId, props: { token: `secret-${i}` } }));
    }
    const described = await sandbox.describe(code.codeId, code.bundle);
    expect(described).toMatchObject({ name: 'clean' });
    // And a describe leaves nothing behind for the instances either.
    const fresh = await sandbox.invoke(invocation(code, { instanceId: `dc_new@${code.codeId}`, props: { token: 't' } }));
    expect(fresh.returnValue).toEqual({ module: null, global: null });
  });
});
