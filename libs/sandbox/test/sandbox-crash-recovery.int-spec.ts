import { SandboxSupervisor } from '@app/sandbox';
import { RequestGate } from '../../../test/support/request-gate';
import { component, invocation, TestComponent } from './sandbox-test.helper';

// Stays inside its run until the gate opens: while the gate is closed, a run that fetched it is in flight.
const GATED = 'export default { async run(e) { const r = await fetch(e.gate); return { n: e.n, gate: await r.text() }; } }';
const BOMB = 'export default { run() { Array(1e9).fill(0); } }';

describe('SandboxSupervisor: a worker killed by one instance does not lose the others\' calls', () => {
  // One worker: every instance shares it, as half of them do with two workers.
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: ['127.0.0.1'] }, crashLoopThreshold: 3, crashLoopCooldownMs: 60_000 });
  let gated: TestComponent;
  let bomb: TestComponent;
  let gate: RequestGate;
  beforeAll(async () => {
    await sandbox.start();
    [gated, bomb] = await Promise.all([component(GATED), component(BOMB)]);
  });
  beforeEach(async () => {
    gate = new RequestGate();
    await gate.start();
  });
  afterEach(() => gate.stop());
  afterAll(() => sandbox.stop());

  /** Four calls of three bystander instances (one queued behind another), three of them inside their run. */
  async function bystandersInFlight() {
    const calls = [1, 2, 3, 4].map((n) => sandbox.invoke(invocation(gated, { instanceId: `dc_bystander_${n % 3}`, event: { n, gate: gate.url } })));
    await gate.waitForHits(3);
    return calls;
  }

  it('the culprit\'s call fails naming it; the bystanders in flight are re-run on the new worker and succeed', async () => {
    const restarts = sandbox.workerRestarts()[0];
    const calls = await bystandersInFlight();
    const crashed = await sandbox.invoke(invocation(bomb, { instanceId: 'dc_culprit' }));
    expect(crashed.ok).toBe(false);
    expect(crashed.error).toMatchObject({ kind: 'crash', name: 'SandboxCrashError' });
    expect(crashed.error?.message).toMatch(/exhausted the memory of its sandbox worker and took the worker down/);
    // The bystanders were inside their runs when the worker died; they fetch again once re-run.
    gate.open();
    const results = await Promise.all(calls);
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(results.map((r) => r.returnValue)).toEqual([1, 2, 3, 4].map((n) => ({ n, gate: 'open' })));
    expect(gate.hits).toBe(3 + 4);
    expect(sandbox.workerRestarts()[0]).toBe(restarts + 1);
  });

  it('a worker killed from outside (no culprit named): every call in flight is re-run', async () => {
    const calls = await bystandersInFlight();
    const pid = sandbox.workerPids()[0]!;
    const restarts = sandbox.workerRestarts()[0];
    process.kill(pid, 'SIGKILL');
    while (sandbox.workerRestarts()[0] === restarts) await new Promise((r) => setTimeout(r, 20));
    gate.open();
    const results = await Promise.all(calls);
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true]);
    expect(sandbox.workerPids()[0]).not.toBe(pid);
  });

  it('an instance that takes its worker down 3 times in a row is refused for the cool-down, before reaching the worker', async () => {
    for (let i = 0; i < 3; i++) {
      const crashed = await sandbox.invoke(invocation(bomb, { instanceId: 'dc_repeat_offender' }));
      expect(crashed.error).toMatchObject({ kind: 'crash', name: 'SandboxCrashError' });
    }
    gate.open();
    const innocent = (n: number) => sandbox.invoke(invocation(gated, { instanceId: 'dc_innocent', event: { n, gate: gate.url } }));
    expect(await innocent(8)).toMatchObject({ ok: true, returnValue: { n: 8, gate: 'open' } });
    const pid = sandbox.workerPids()[0];
    const restarts = sandbox.workerRestarts()[0];
    const refused = await sandbox.invoke(invocation(bomb, { instanceId: 'dc_repeat_offender' }));
    expect(refused.ok).toBe(false);
    expect(refused.error).toMatchObject({ kind: 'crash', name: 'SandboxCrashLoopError' });
    expect(refused.error?.message).toMatch(/took its sandbox worker down 3 times in a row.*refused until/);
    // Other instances are served, and the refused call did not reach (and kill) the worker.
    expect(await innocent(9)).toMatchObject({ ok: true, returnValue: { n: 9, gate: 'open' } });
    expect(sandbox.workerPids()[0]).toBe(pid);
    expect(sandbox.workerRestarts()[0]).toBe(restarts);
  });
});
