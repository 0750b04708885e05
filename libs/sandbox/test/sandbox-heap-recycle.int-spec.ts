import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

/**
 * Module-level state a component keeps between runs grows its isolate's heap. The pool reads the
 * heap every few runs and replaces an isolate past half its memory limit with a fresh one (the
 * module state starts again), so such a component never reaches its limit and never fails for it,
 * whether its runs entered the isolate one by one or together.
 */
describe('SandboxSupervisor: an isolate whose module state grows is replaced before its memory limit', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 5000 } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  // Each run keeps about half a megabyte more (62,500 numbers of 8 bytes); 32 MB is the limit.
  const growing = () => component(`const keep = [];
    export default { run(e) { keep.push(new Array(62500).fill(e.i)); return keep.length; } }`);
  const limits = { memoryMb: 32 };

  it('one run at a time: 120 runs, none fails, the kept state starts again', async () => {
    const c = await growing();
    const kept: number[] = [];
    for (let i = 0; i < 120; i++) {
      const r = await sandbox.invoke(invocation(c, { event: { i }, limits }));
      expect(r.error).toBeUndefined();
      kept.push(r.returnValue as number);
    }
    // 120 runs would keep about 60 MB in one isolate: it must have been replaced, more than once.
    const restarts = kept.filter((n, i) => i > 0 && n < kept[i - 1]).length;
    expect(restarts).toBeGreaterThanOrEqual(2);
    expect(Math.max(...kept)).toBeLessThan(64);
  });

  it('runs that enter the isolate together: 120 runs in groups of 6, none fails, the state starts again', async () => {
    const c = await growing();
    await sandbox.invoke(invocation(c, { event: { i: -1 }, limits }));
    const kept: number[] = [];
    let together = 0;
    for (let g = 0; g < 20; g++) {
      const results = await Promise.all(Array.from({ length: 6 }, (_, j) => sandbox.invoke(invocation(c, { event: { i: g * 6 + j }, limits }))));
      for (const r of results) {
        expect(r.error).toBeUndefined();
        kept.push(r.returnValue as number);
        if ((r.entryRuns ?? 1) > 1) together++;
      }
    }
    expect(together).toBeGreaterThan(60);
    const restarts = kept.filter((n, i) => i > 0 && n < kept[i - 1]).length;
    expect(restarts).toBeGreaterThanOrEqual(2);
    expect(Math.max(...kept)).toBeLessThan(64);
  });
});
