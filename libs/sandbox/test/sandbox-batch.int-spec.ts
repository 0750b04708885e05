import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

/**
 * Runs of one instance that queue up behind each other go into their isolate together, one entry
 * for several runs (IsolatePool.runBatch). Each must still behave as if it ran alone: its own
 * result, logs and limits, in order, and a run that breaks a limit must fail alone.
 */
describe('SandboxSupervisor: queued runs of one instance share an entry into the isolate', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 2000 } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  const logLines = (r: { logs: { message: string }[] }) => r.logs.map((l) => l.message);

  it('keeps order, module state, results and logs per run', async () => {
    const c = await component(`let n = 0;
      export default { run(e) { n++; console.log('run ' + e.i + ' sees ' + n); this.$emit({ i: e.i }); return { i: e.i, n }; } }`);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => sandbox.invoke(invocation(c, { event: { i } }))));
    results.forEach((r, i) => {
      expect(r.ok).toBe(true);
      // One isolate, runs in the order they were sent: the i-th run is the (i+1)-th the module saw.
      expect(r.returnValue).toEqual({ i, n: i + 1 });
      expect(r.emits).toEqual([expect.objectContaining({ event: { i } })]);
      expect(logLines(r)).toEqual([`run ${i} sees ${i + 1}`]);
    });
    // The first run loads the code alone; the others were queued behind it and went in together.
    expect(results[0].entryRuns).toBe(1);
    expect(Math.max(...results.map((r) => r.entryRuns ?? 0))).toBeGreaterThan(1);
  });

  it('a batch takes at most 48 KB of event text: queued runs with large events go in several smaller batches', async () => {
    const c = await component('export default { run(e) { return { i: e.i, size: e.pad.length }; } }');
    const eventOf = (i: number, kb: number) => ({ i, pad: 'x'.repeat(kb * 1024) });
    // Events as text (an HTTP request's), as the batch counts them: 20 KB each fit two to a batch, 1 KB ones many more.
    const run = (i: number, kb: number) => sandbox.invoke(invocation(c, { eventJson: JSON.stringify(eventOf(i, kb)) }));
    const big = await Promise.all(Array.from({ length: 12 }, (_, i) => run(i, 20)));
    expect(big.map((r) => r.returnValue)).toEqual(Array.from({ length: 12 }, (_, i) => ({ i, size: 20 * 1024 })));
    expect(Math.max(...big.map((r) => r.entryRuns ?? 0))).toBe(2);
    const small = await Promise.all(Array.from({ length: 12 }, (_, i) => run(i, 1)));
    expect(Math.max(...small.map((r) => r.entryRuns ?? 0))).toBeGreaterThan(2);
  });

  it('hands each run of a batch its own raw body (bodyRaw beside the event\'s text) and the body made from it', async () => {
    const c = await component('export default { run(e) { return { keys: Object.keys(e), raw: e.bodyRaw, body: e.body }; } }');
    const lean = JSON.stringify({ method: 'POST', path: '/', url: 'http://x/e/k', query: {}, headers: { 'content-type': 'application/json' } });
    // Bodies of different lengths (one empty of JSON, one not JSON, one with a number to round-trip), queued so they share entries.
    const raws = Array.from({ length: 30 }, (_, i) => (i % 5 === 3 ? 'not json ' + i : i % 5 === 4 ? `{"i":${i},"z":-0}` : JSON.stringify({ i, s: 'é"\\'.repeat(i) })));
    const results = await Promise.all(raws.map((raw) => sandbox.invoke(invocation(c, { eventJson: lean, bodyFromRaw: true, bodyRaw: raw }))));
    results.forEach((r, i) => {
      expect(r.ok).toBe(true);
      const raw = raws[i];
      let body: unknown = raw;
      try { body = JSON.parse(JSON.stringify(JSON.parse(raw))); } catch { /* not JSON: the raw text */ }
      expect(r.returnValue).toEqual({ keys: ['method', 'path', 'url', 'query', 'headers', 'bodyRaw', 'body'], raw, body });
    });
    expect(Math.max(...results.map((r) => r.entryRuns ?? 0))).toBeGreaterThan(1);
  });

  it('a run that never ends times out alone; the runs queued with it complete, their logs once', async () => {
    const c = await component(`let n = 0;
      export default { run(e) { n++; console.log('start ' + e.i); if (e.loop) while (true) {} return e.i; } }`);
    const limits = { timeoutMs: 400, cpuMs: 400 };
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => sandbox.invoke(invocation(c, { event: { i, loop: i === 6 }, limits }))));
    results.forEach((r, i) => {
      if (i === 6) {
        expect(r.ok).toBe(false);
        expect(r.error?.kind).toBe('timeout');
        return;
      }
      expect(r.ok).toBe(true);
      expect(r.returnValue).toBe(i);
      // The batch that held the loop was dropped with its logs; each run's line is there once.
      expect(logLines(r)).toEqual([`start ${i}`]);
    });
    // The loop is named once, as the one run that broke its limit.
    expect(results.filter((r) => r.error?.kind === 'timeout')).toHaveLength(1);
  });

  it('a run that runs out of memory fails alone', async () => {
    const c = await component(`export default { run(e) {
      if (e.hog) { const keep = []; for (;;) keep.push(new Array(1e6).fill(e.i)); }
      return e.i; } }`);
    const limits = { memoryMb: 32 };
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => sandbox.invoke(invocation(c, { event: { i, hog: i === 4 }, limits }))));
    results.forEach((r, i) => {
      if (i === 4) expect(r.error?.kind).toBe('memory');
      else expect(r.returnValue).toBe(i);
    });
  });

  it('ends a batch after a run that waits for a timer or makes a request', async () => {
    const c = await component(`export default { async run(e) {
      if (e.wait) await new Promise((resolve) => setTimeout(resolve, 2));
      return e.i; } }`);
    // Every run waits: none shares its entry, and each still gets its own timer.
    const waiting = await Promise.all(Array.from({ length: 8 }, (_, i) => sandbox.invoke(invocation(c, { event: { i, wait: true } }))));
    waiting.forEach((r, i) => {
      expect(r.returnValue).toBe(i);
      expect(r.entryRuns).toBe(1);
    });
    // Runs that wait alternate with runs that do not: a batch may take runs up to the first that waits.
    const mixed = await Promise.all(Array.from({ length: 16 }, (_, i) => sandbox.invoke(invocation(c, { event: { i, wait: i % 4 === 3 } }))));
    mixed.forEach((r, i) => expect(r.returnValue).toBe(i));
    expect(Math.max(...mixed.map((r) => r.entryRuns ?? 0))).toBeGreaterThan(1);
    // A request ends its batch too, even one the egress guard refuses.
    const f = await component(`export default { async run(e) {
      let failed = false;
      try { await fetch('http://127.0.0.1:9/'); } catch { failed = true; }
      return { i: e.i, failed }; } }`);
    const fetching = await Promise.all(Array.from({ length: 8 }, (_, i) => sandbox.invoke(invocation(f, { event: { i } }))));
    fetching.forEach((r, i) => {
      expect(r.returnValue).toEqual({ i, failed: true });
      expect(r.entryRuns).toBe(1);
    });
  });

  it('keeps a hook in its place among queued runs', async () => {
    const c = await component(`const seen = [];
      export default { hooks: { activate() { seen.push('activate'); } }, run(e) { seen.push(e.i); return seen.slice(); } }`);
    const sent = [0, 1, 'activate', 2, 3].map((step) => sandbox.invoke(step === 'activate' ? invocation(c, { entry: 'activate' }) : invocation(c, { event: { i: step } })));
    const results = await Promise.all(sent);
    expect(results[4].returnValue).toEqual([0, 1, 'activate', 2, 3]);
  });

  it('does not batch runs whose limits are too short to share', async () => {
    const c = await component(`export default { run(e) { return e.i; } }`);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => sandbox.invoke(invocation(c, { event: { i }, limits: { timeoutMs: 100 } }))));
    results.forEach((r, i) => {
      expect(r.returnValue).toBe(i);
      expect(r.entryRuns).toBe(1);
    });
  });
});
