import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

describe('SandboxSupervisor: warm isolates and their lifecycle', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, maxIsolatesPerWorker: 2, defaultLimits: { timeoutMs: 2000 } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  it('a breach ends only the offending run: queued runs of the same component get a fresh isolate', async () => {
    const c = await component(`let warm = 0;
      export default { run(e) { warm++; if (e.loop) while (true) {} return { n: e.n, warm }; } }`);
    const [before, looping, after1, after2] = await Promise.all([
      sandbox.invoke(invocation(c, { event: { n: 1 } })),
      sandbox.invoke(invocation(c, { event: { loop: true }, limits: { timeoutMs: 300 } })),
      sandbox.invoke(invocation(c, { event: { n: 2 } })),
      sandbox.invoke(invocation(c, { event: { n: 3 } })),
    ]);
    expect(before.returnValue).toEqual({ n: 1, warm: 1 });
    expect(looping.error?.kind).toBe('timeout');
    // Module state starts over: the isolate that ran the loop was disposed.
    expect(after1.returnValue).toEqual({ n: 2, warm: 1 });
    expect(after2.returnValue).toEqual({ n: 3, warm: 2 });
  });

  it('drops the least recently used component beyond the limit and reloads it on demand', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => component(`let runs = 0; export default { run() { return { name: "${name}", runs: ++runs } } }`)));
    expect((await sandbox.invoke(invocation(a))).returnValue).toEqual({ name: 'a', runs: 1 });
    expect((await sandbox.invoke(invocation(a))).returnValue).toEqual({ name: 'a', runs: 2 });
    await sandbox.invoke(invocation(b));
    await sandbox.invoke(invocation(c));
    // `a` was evicted with its bundle: the worker asks for the code again and starts it cold.
    expect((await sandbox.invoke(invocation(a))).returnValue).toEqual({ name: 'a', runs: 1 });
  });

  it('bounds describe by the default limits', async () => {
    const c = await component('export default { get name() { for (;;) {} }, run() {} }');
    const described = await sandbox.describe(c.codeId, c.bundle);
    expect(described).toEqual({ error: expect.objectContaining({ kind: 'timeout' }) });
  });

  it('recreates the isolate when an invocation asks for another memory limit', async () => {
    const c = await component('let runs = 0; export default { run() { return ++runs } }');
    expect((await sandbox.invoke(invocation(c))).returnValue).toBe(1);
    expect((await sandbox.invoke(invocation(c))).returnValue).toBe(2);
    expect((await sandbox.invoke(invocation(c, { limits: { memoryMb: 64 } }))).returnValue).toBe(1);
  });

  it('rejects calls only for caller mistakes', async () => {
    await expect(sandbox.invoke({ ...invocation(await component('export default {}')), codeId: '' })).rejects.toThrow(/codeId/);
    const stopped = new SandboxSupervisor({ egress: { allow: [] } });
    await expect(stopped.invoke(invocation(await component('export default {}')))).rejects.toThrow(/not started/);
  });
});
