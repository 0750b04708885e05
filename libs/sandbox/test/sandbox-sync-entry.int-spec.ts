import { readdirSync, readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { SandboxSupervisor } from '@app/sandbox';
import type { SandboxInvocation } from '@app/sandbox';
import { component, invocation, TestComponent } from './sandbox-test.helper';

/** An invocation of account `acct_a` (a worker enters runs synchronously only while one account holds all its instances). */
const ofA = (c: TestComponent, extra: Partial<SandboxInvocation> = {}) => invocation(c, { account: 'acct_a', ...extra });

/** CPU time (user + system, in clock ticks of 10 ms) of the thread of `pid` named `name`; null when there is none. */
function threadTicks(pid: number, name: string): number | null {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() !== name) continue;
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return null;
}

/**
 * A run alone on a warm isolate is entered synchronously, on the worker's own thread
 * (`ComponentIsolate.invokeSync`), at most 20 ms (SYNC_BUDGET_MS) before the watchdog stops it and
 * the run starts again asynchronously on a fresh isolate; only for the worker's one run in flight,
 * and only while every instance the worker holds belongs to the run's account. These tests run
 * real worker processes.
 */
describe('SandboxSupervisor: synchronous entries into warm isolates', () => {
  let server: Server;
  let base: string;
  /** Requests the local server received, by path. */
  const hits = new Map<string, number>();
  // Slow synchronous entries (two in a short while) or a stopped one send an instance to asynchronous entries for 2 s here (60 s by default).
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: ['127.0.0.1'] }, defaultLimits: { timeoutMs: 5000, cpuMs: 5000 }, syncCooldownMs: 2000 });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await sandbox.start();
  });
  afterAll(async () => {
    await sandbox.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  const lines = (r: { logs: { level: string; message: string }[] }) => r.logs.map((l) => `${l.level} ${l.message}`);

  it('enters every run after the first synchronously, with module state, logs, emits and return values as before', async () => {
    const c = await component(`let n = 0;
      export default { async run(e) {
        n++;
        console.log('before', e.i);
        this.$emit({ i: e.i, n });
        await null;
        console.warn('after a microtask', e.i);
        return { i: e.i, n };
      } }`);
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await sandbox.invoke(ofA(c, { event: { i } })));
    results.forEach((r, i) => {
      expect(r.ok).toBe(true);
      expect(r.returnValue).toEqual({ i, n: i + 1 });
      expect(r.emits).toEqual([expect.objectContaining({ event: { i, n: i + 1 } })]);
      // The lines made inside the entry are held and handed over before the result, in order.
      expect(lines(r)).toEqual([`log before ${i}`, `warn after a microtask ${i}`]);
    });
    // The first run loads the code (asynchronously); the warm ones after it are entered synchronously.
    expect(results.map((r) => r.enteredSync === true)).toEqual([false, true, true, true, true]);
  });

  it('a run that waits for a request or a timer goes on asynchronously after its synchronous entry', async () => {
    const c = await component(`export default { async run(e) {
      console.log('asking', e.i);
      const answer = await (await fetch(e.url)).json();
      await new Promise((resolve) => setTimeout(resolve, 5));
      console.log('answered', e.i);
      return answer.path;
    } }`);
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await sandbox.invoke(ofA(c, { event: { i, url: `${base}/wait-${i}` } })));
    results.forEach((r, i) => {
      expect(r.ok).toBe(true);
      expect(r.returnValue).toBe(`/wait-${i}`);
      expect(lines(r)).toEqual([`log asking ${i}`, `log answered ${i}`]);
      expect(hits.get(`/wait-${i}`)).toBe(1);
    });
    expect(results.map((r) => r.enteredSync === true)).toEqual([false, true, true]);
  });

  it('a run past the budget starts again asynchronously, and its request made before the budget ran out is sent once', async () => {
    const c = await component(`let n = 0;
      export default { async run(e) {
        n++;
        console.log('start', e.i, n);
        const pending = fetch(e.url);
        if (e.spin) { const until = Date.now() + 60; while (Date.now() < until) {} }
        return { i: e.i, n, path: (await (await pending).json()).path };
      } }`);
    const first = await sandbox.invoke(ofA(c, { event: { i: 0, url: `${base}/budget-0` } }));
    const quick = await sandbox.invoke(ofA(c, { event: { i: 1, url: `${base}/budget-1` } }));
    const slow = await sandbox.invoke(ofA(c, { event: { i: 2, url: `${base}/budget-2`, spin: true } }));
    const after = await sandbox.invoke(ofA(c, { event: { i: 3, url: `${base}/budget-3` } }));
    expect([first, quick, slow, after].map((r) => r.ok)).toEqual([true, true, true, true]);
    expect(quick.enteredSync).toBe(true);
    // The synchronous attempt was stopped at 20 ms with its request held: only the run that
    // started again sent it. It ran on a fresh isolate (the stopped one was half-way through its
    // run), so the module's counter starts over there.
    expect(hits.get('/budget-2')).toBe(1);
    expect(slow.enteredSync).toBeUndefined();
    expect(slow.returnValue).toEqual({ i: 2, n: 1, path: '/budget-2' });
    expect(lines(slow)).toEqual(['log start 2 1']);
    // The instance is entered asynchronously for a while (the cool-down).
    expect(after.enteredSync).toBeUndefined();
    expect(after.returnValue).toEqual({ i: 3, n: 2, path: '/budget-3' });
  });

  it('an instance whose synchronous runs used more than 5 ms of CPU twice in a short while goes in asynchronously for the cool-down, then synchronously again; others are not affected', async () => {
    const slowCode = await component(`export default { run(e) {
      if (e.spin) { const until = Date.now() + 10; while (Date.now() < until) {} }
      return e.i;
    } }`);
    const other = await component('export default { run(e) { return 10 - e.i; } }');
    const kinds = [];
    // Runs 1 and 3 spin 10 ms (inside the 20 ms budget, over the 5 ms of CPU that make an entry slow).
    for (let i = 0; i < 6; i++) {
      const r = await sandbox.invoke(ofA(slowCode, { event: { i, spin: i === 1 || i === 3 } }));
      expect(r.returnValue).toBe(i);
      kinds.push(r.enteredSync === true);
    }
    // Run 0 met the isolate cold (asynchronously); one slow run (1) is let go: run 2 still goes in
    // synchronously; the second slow one (3), one quick entry later, sends runs 4 and 5 to asynchronous entries.
    expect(kinds).toEqual([false, true, true, true, false, false]);
    const others = [];
    for (let i = 0; i < 3; i++) others.push(await sandbox.invoke(ofA(other, { event: { i } })));
    expect(others.map((r) => [r.returnValue, r.enteredSync === true])).toEqual([[10, false], [9, true], [8, true]]);
    // Past the 2 s cool-down the instance is tried synchronously again, and a slow entry then, with
    // no quick one since the last, sends it back at once.
    await new Promise((r) => setTimeout(r, 2100));
    const again = await sandbox.invoke(ofA(slowCode, { event: { i: 6, spin: true } }));
    const next = await sandbox.invoke(ofA(slowCode, { event: { i: 7 } }));
    expect([again.returnValue, again.enteredSync, next.returnValue, next.enteredSync === true]).toEqual([6, true, 7, false]);
  });

  it('a run that never ends is stopped by its own time limit; runs of another instance meanwhile complete', async () => {
    // Entered synchronously (the worker's one run in flight), stopped at the budget, run again asynchronously.
    const looping = await component('export default { run(e) { if (e.loop) for (;;) {} return e.i; } }');
    const other = await component('export default { run(e) { return e.i * 2; } }');
    await sandbox.invoke(ofA(looping, { event: { i: 0 } }));
    await sandbox.invoke(ofA(other, { event: { i: 0 } }));
    const order: string[] = [];
    const loop = sandbox.invoke(ofA(looping, { event: { i: 1, loop: true }, limits: { timeoutMs: 1500, cpuMs: 1500 } })).then((r) => {
      order.push('loop');
      return r;
    });
    const others = await Promise.all(Array.from({ length: 5 }, (_, i) => sandbox.invoke(ofA(other, { event: { i } })).then((r) => {
      order.push(`other ${i}`);
      return r;
    })));
    const stopped = await loop;
    expect(stopped.ok).toBe(false);
    expect(stopped.error?.kind).toBe('timeout');
    expect(others.map((r) => r.returnValue)).toEqual([0, 2, 4, 6, 8]);
    // The loop held the worker's thread for its 20 ms budget at most, then went on on
    // isolated-vm's thread: the other instance's runs were answered long before it was stopped.
    expect(order.at(-1)).toBe('loop');
  });

  it('a run that exhausts its memory fails with kind memory, and the instance runs again on a fresh isolate', async () => {
    // Filling arrays in a 32 MB isolate: V8 collects before each failure, so whether isolated-vm's
    // memory limit or the 20 ms budget stops the synchronous entry first varies; either way the
    // run must end as a memory failure (on the asynchronous run that follows a stopped entry).
    const c = await component(`export default { run(e) {
      if (e.hog) { const keep = []; for (;;) keep.push(new Array(1e6).fill(e.i)); }
      return e.i;
    } }`);
    const limits = { memoryMb: 32 };
    expect((await sandbox.invoke(ofA(c, { event: { i: 0 }, limits }))).returnValue).toBe(0);
    expect((await sandbox.invoke(ofA(c, { event: { i: 1 }, limits }))).enteredSync).toBe(true);
    const hog = await sandbox.invoke(ofA(c, { event: { i: 2, hog: true }, limits }));
    expect(hog.ok).toBe(false);
    expect(hog.error?.kind).toBe('memory');
    const next = await sandbox.invoke(ofA(c, { event: { i: 3 }, limits }));
    expect(next.returnValue).toBe(3);
  });

  it('runs made while other runs are in flight in the worker go in asynchronously', async () => {
    const c = await component('export default { run(e) { return e.i; } }');
    const d = await component('export default { async run(e) { await new Promise((r) => setTimeout(r, e.ms)); return e.i; } }');
    for (let i = 0; i < 2; i++) {
      await sandbox.invoke(ofA(c, { event: { i } }));
      await sandbox.invoke(ofA(d, { event: { i, ms: 0 } }));
    }
    expect((await sandbox.invoke(ofA(c, { event: { i: 9 } }))).enteredSync).toBe(true);
    // Sent together: they queue behind each other and share entries (batches).
    const together = await Promise.all(Array.from({ length: 10 }, (_, i) => sandbox.invoke(ofA(c, { event: { i } }))));
    expect(together.map((r) => r.returnValue)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(together.filter((r) => r.enteredSync).length).toBeLessThanOrEqual(1);
    // Another instance's run waiting for its timer: this one does not hold the thread meanwhile.
    const slow = sandbox.invoke(ofA(d, { event: { i: 1, ms: 300 } }));
    await new Promise((r) => setTimeout(r, 50));
    const meanwhile = await sandbox.invoke(ofA(c, { event: { i: 4 } }));
    expect(meanwhile.returnValue).toBe(4);
    expect(meanwhile.enteredSync).toBeUndefined();
    expect((await slow).returnValue).toBe(1);
  });

  it('runs with limits shorter than 200 ms are never entered synchronously', async () => {
    const c = await component('export default { run(e) { return e.i; } }');
    const limits = { timeoutMs: 150, cpuMs: 150 };
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await sandbox.invoke(ofA(c, { event: { i }, limits })));
    expect(results.map((r) => [r.returnValue, r.enteredSync === true])).toEqual([[0, false], [1, false], [2, false]]);
  });
});

describe('SandboxSupervisor: synchronous entries and accounts', () => {
  it('a worker holding instances of two accounts, or of none named, enters every run asynchronously', async () => {
    const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await sandbox.start();
    try {
      const c = await component('let n = 0; export default { run() { return ++n; } }');
      const d = await component('let n = 0; export default { run() { return 100 + ++n; } }');
      const runs = async (make: () => SandboxInvocation) => {
        const out = [];
        for (let i = 0; i < 3; i++) out.push(await sandbox.invoke(make()));
        return out.map((r) => [r.returnValue, r.enteredSync === true]);
      };
      // One account so far: synchronous once warm.
      expect(await runs(() => ofA(c))).toEqual([[1, false], [2, true], [3, true]]);
      // Another account's instance arrives in the same worker: neither enters synchronously now.
      expect(await runs(() => invocation(d, { account: 'acct_b' }))).toEqual([[101, false], [102, false], [103, false]]);
      expect(await runs(() => ofA(c))).toEqual([[4, false], [5, false], [6, false]]);
    } finally {
      await sandbox.stop();
    }
  });

  it('an invocation that names no account is never entered synchronously, nor are the others of its worker', async () => {
    const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await sandbox.start();
    try {
      const c = await component('let n = 0; export default { run() { return ++n; } }');
      const out = [];
      for (let i = 0; i < 3; i++) out.push(await sandbox.invoke(invocation(c)));
      expect(out.map((r) => r.enteredSync === true)).toEqual([false, false, false]);
    } finally {
      await sandbox.stop();
    }
  });

  it('an entry that never returns (a catastrophic out-of-memory) ends the worker within seconds, naming its instance; the other runs are re-run', async () => {
    // The heartbeat would only kill the worker after a minute, and would name nobody.
    const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, heartbeatTimeoutMs: 60_000 });
    await sandbox.start();
    try {
      const hog = await component('export default { run(e) { if (e.hog) return Array(1e9).fill(0).length; return e.i; } }');
      const other = await component('export default { async run(e) { await new Promise((r) => setTimeout(r, 50)); return e.i * 3; } }');
      expect((await sandbox.invoke(ofA(hog, { event: { i: 1 } }))).returnValue).toBe(1);
      expect((await sandbox.invoke(ofA(hog, { event: { i: 2 } }))).enteredSync).toBe(true);
      await sandbox.invoke(ofA(other, { event: { i: 0 } }));
      // The hog's run is the worker's only one in flight (the condition for a synchronous entry);
      // the other run is sent once the hog holds the worker's thread, and waits unread behind it.
      const stuckRun = sandbox.invoke(ofA(hog, { event: { hog: true } }));
      await new Promise((r) => setTimeout(r, 500));
      const waiting = sandbox.invoke(ofA(other, { event: { i: 5 } }));
      // Meanwhile the watchdog waits for the entry, asking V8 to stop it every 10 ms, without
      // spinning: its waits are on the monotonic clock it computes them in (on a condition
      // variable left on the default realtime clock, each wait ended at once: a core's worth of CPU).
      if (process.platform === 'linux') {
        const pid = sandbox.workerPids()[0]!;
        await new Promise((r) => setTimeout(r, 500));
        const before = threadTicks(pid, 'sync-watchdog');
        await new Promise((r) => setTimeout(r, 1000));
        const after = threadTicks(pid, 'sync-watchdog');
        expect(before).not.toBeNull();
        // Measured: 0; spinning, about 100 (V8's own threads meanwhile take some 40 on the hog's heap).
        expect(after! - before!).toBeLessThan(10);
      }
      const stuck = await stuckRun;
      expect(stuck.ok).toBe(false);
      expect(stuck.error).toMatchObject({ kind: 'crash', name: 'SandboxCrashError' });
      // Named by the watchdog's line (a heartbeat kill names nobody, and would come after a minute).
      expect(stuck.error?.message).toMatch(/held the worker's thread for more than 5 s/);
      const rerun = await waiting;
      expect(rerun.ok).toBe(true);
      expect(rerun.returnValue).toBe(15);
      expect((await sandbox.invoke(ofA(other, { event: { i: 7 } }))).returnValue).toBe(21);
    } finally {
      await sandbox.stop();
    }
  }, 60_000);
});

describe('SandboxSupervisor with syncEntries: false', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, syncEntries: false });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  it('enters every run through isolated-vm\'s thread', async () => {
    const c = await component('let n = 0; export default { run() { return ++n; } }');
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await sandbox.invoke(ofA(c)));
    expect(results.map((r) => [r.returnValue, r.enteredSync === true])).toEqual([[1, false], [2, false], [3, false]]);
  });
});
