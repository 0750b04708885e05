import { BUSY_WORKER_CALLS, SandboxSupervisor } from '@app/sandbox';
import { RequestGate } from '../../../test/support/request-gate';
import { component, invocation, TestComponent } from './sandbox-test.helper';

// Stays inside its run until the gate opens: while the gate is closed, a run that fetched it is in flight.
const GATED = 'export default { async run(e) { const r = await fetch(e.gate); return { n: e.n, gate: await r.text() }; } }';
const ECHO = 'export default { run(e) { return e.n; } }';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SandboxSupervisor with workers started on demand (minWorkers below workers)', () => {
  let gated: TestComponent;
  let echo: TestComponent;
  let gate: RequestGate;
  beforeAll(async () => {
    [gated, echo] = await Promise.all([component(GATED), component(ECHO)]);
  });
  beforeEach(async () => {
    gate = new RequestGate();
    await gate.start();
  });
  afterEach(() => gate.stop());

  it('starts no worker before the first call, then one; a second starts only when the first is busy', async () => {
    const sandbox = new SandboxSupervisor({ workers: 2, minWorkers: 0, egress: { allow: ['127.0.0.1'] } });
    await sandbox.start();
    try {
      expect(sandbox.startedWorkers()).toBe(0);
      expect(sandbox.workerPids()).toEqual([undefined, undefined]);

      // The first call starts a worker and runs there.
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_a', event: { n: 1 } }))).returnValue).toBe(1);
      expect(sandbox.startedWorkers()).toBe(1);
      const first = sandbox.workerPids()[0];
      expect(first).toEqual(expect.any(Number));
      // Another instance, while that worker is idle, shares it.
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_b', event: { n: 2 } }))).returnValue).toBe(2);
      expect(sandbox.startedWorkers()).toBe(1);
      expect(sandbox.workerIndexFor('dc_b')).toBe(sandbox.workerIndexFor('dc_a'));

      // Busy: BUSY_WORKER_CALLS calls in flight on it (each inside its run at the gate).
      const held = Array.from({ length: BUSY_WORKER_CALLS }, (_, n) => sandbox.invoke(invocation(gated, { instanceId: `dc_gated_${n}`, event: { n, gate: gate.url } })));
      await gate.waitForHits(BUSY_WORKER_CALLS);
      expect(sandbox.startedWorkers()).toBe(1);
      // A new instance now goes to a second worker, started for it; the known ones stay where they are.
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_c', event: { n: 3 } }))).returnValue).toBe(3);
      expect(sandbox.startedWorkers()).toBe(2);
      expect(sandbox.workerIndexFor('dc_c')).not.toBe(sandbox.workerIndexFor('dc_a'));
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_a', event: { n: 4 } }))).returnValue).toBe(4);
      expect(sandbox.workerPids()[sandbox.workerIndexFor('dc_a')]).toBe(first);

      gate.open();
      expect((await Promise.all(held)).map((r) => r.returnValue)).toEqual(Array.from({ length: BUSY_WORKER_CALLS }, (_, n) => ({ n, gate: 'open' })));
    } finally {
      await sandbox.stop();
    }
  });

  it('stops a worker beyond minWorkers once it has been idle for idleWorkerMs; its instances are placed again at their next call', async () => {
    const sandbox = new SandboxSupervisor({ workers: 2, minWorkers: 1, idleWorkerMs: 300, egress: { allow: ['127.0.0.1'] } });
    await sandbox.start();
    try {
      const first = sandbox.workerPids()[0]!;
      const held = Array.from({ length: BUSY_WORKER_CALLS }, (_, n) => sandbox.invoke(invocation(gated, { instanceId: `dc_gated_${n}`, event: { n, gate: gate.url } })));
      await gate.waitForHits(BUSY_WORKER_CALLS);
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_extra', event: { n: 1 } }))).returnValue).toBe(1);
      expect(sandbox.startedWorkers()).toBe(2);
      const extra = sandbox.workerPids()[1]!;
      gate.open();
      await Promise.all(held);

      // Idle: the extra worker goes, the first (within minWorkers) stays.
      await until(() => sandbox.startedWorkers() === 1, 'the idle extra worker to stop');
      await until(() => !alive(extra), 'the extra worker process to exit');
      expect(sandbox.workerPids()).toEqual([first, undefined]);
      // Its instance runs again, placed anew (on the idle first worker).
      expect((await sandbox.invoke(invocation(echo, { instanceId: 'dc_extra', event: { n: 2 } }))).returnValue).toBe(2);
      expect(sandbox.workerIndexFor('dc_extra')).toBe(0);
      expect(sandbox.workerRestarts()).toEqual([0, 0]);
    } finally {
      await sandbox.stop();
    }
  });

  it('pings a worker only while calls are in flight: a stuck worker with a call is replaced, an idle one is left alone', async () => {
    const sandbox = new SandboxSupervisor({ workers: 1, minWorkers: 1, heartbeatTimeoutMs: 300, egress: { allow: ['127.0.0.1'] } });
    await sandbox.start();
    try {
      const pid = sandbox.workerPids()[0]!;
      // Idle and frozen for several heartbeat timeouts: nobody waits for it, so it is not killed.
      process.kill(pid, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, 1500));
      process.kill(pid, 'SIGCONT');
      expect((await sandbox.invoke(invocation(echo, { event: { n: 5 } }))).returnValue).toBe(5);
      expect(sandbox.workerPids()[0]).toBe(pid);
      expect(sandbox.workerRestarts()[0]).toBe(0);

      // Frozen with a call inside its run: the heartbeat finds it, and the call is re-run on the replacement.
      const call = sandbox.invoke(invocation(gated, { instanceId: 'dc_stuck', event: { n: 6, gate: gate.url } }));
      await gate.waitForHits(1);
      process.kill(pid, 'SIGSTOP');
      await until(() => sandbox.workerRestarts()[0] === 1, 'the frozen worker to be replaced');
      gate.open();
      expect((await call).returnValue).toEqual({ n: 6, gate: 'open' });
      expect(sandbox.workerPids()[0]).not.toBe(pid);
    } finally {
      await sandbox.stop();
    }
  });

  it('pings a worker with a call in flight only once it has been silent for a period: results count as answers', async () => {
    // Timeout 600 ms: a period of 200 ms.
    const sandbox = new SandboxSupervisor({ workers: 1, minWorkers: 1, heartbeatTimeoutMs: 600, egress: { allow: ['127.0.0.1'] } });
    await sandbox.start();
    try {
      // A run held open for 1.2 s (six periods) while other runs come back every 20 ms: never silent, never pinged.
      const held = sandbox.invoke(invocation(gated, { instanceId: 'dc_held', event: { n: 1, gate: gate.url } }));
      await gate.waitForHits(1);
      const until1200 = Date.now() + 1200;
      for (let n = 0; Date.now() < until1200; n++) {
        expect((await sandbox.invoke(invocation(echo, { event: { n } }))).returnValue).toBe(n);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(sandbox.workerPings()).toEqual([0]);

      // The same run alone for 1 s: silent, so pinged (about once per period, each answered at once), and not killed.
      await new Promise((r) => setTimeout(r, 1000));
      const pings = sandbox.workerPings()[0];
      expect(pings).toBeGreaterThanOrEqual(2);
      expect(pings).toBeLessThanOrEqual(6);
      expect(sandbox.workerRestarts()).toEqual([0]);
      gate.open();
      expect((await held).returnValue).toEqual({ n: 1, gate: 'open' });

      // Nothing in flight: the heartbeat stops, no more pings.
      await new Promise((r) => setTimeout(r, 800));
      expect(sandbox.workerPings()[0]).toBe(pings);
    } finally {
      await sandbox.stop();
    }
  });
});
