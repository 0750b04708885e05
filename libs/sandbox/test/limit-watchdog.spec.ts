import { performance } from 'node:perf_hooks';
import { InvocationRun, type LimitKind } from '../src/invocation.run';
import { LimitWatchdog, type Watched } from '../src/limit.watchdog';

/** An isolate stand-in whose CPU clock the test drives: `busy` runs it at wall-clock speed. */
class FakeIsolate implements Watched {
  readings = 0;
  /** `afterMs`: since this isolate's CPU clock started; `runMs`: since the run started (its deadline's origin). */
  breached: { kind: LimitKind; afterMs: number; runMs: number } | null = null;
  busy = false;
  gone = false;
  private cpuAtStart = 0n;
  private readonly started = performance.now();

  cpuNs(): bigint | null {
    this.readings++;
    if (this.gone) return null;
    return this.busy ? this.cpuAtStart + BigInt(Math.round((performance.now() - this.started) * 1e6)) : this.cpuAtStart;
  }

  breach(run: InvocationRun, kind: LimitKind): void {
    run.breach = kind;
    const now = performance.now();
    this.breached = { kind, afterMs: now - this.started, runMs: now - run.startedAt };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LimitWatchdog', () => {
  it('does not look at a run that ends before any limit can be reached', async () => {
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 200, cpuMs: 100 });
    const isolate = new FakeIsolate();
    dog.watch(run, isolate);
    expect(dog.watching).toBe(1);
    await sleep(20);
    dog.unwatch(run);
    expect(dog.watching).toBe(0);
    await sleep(250);
    expect(isolate.readings).toBe(0);
    expect(isolate.breached).toBeNull();
  });

  it('stops a run that spends its CPU budget, soon after it is spent', async () => {
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 60 });
    const isolate = new FakeIsolate();
    isolate.busy = true;
    dog.watch(run, isolate);
    await sleep(400);
    expect(isolate.breached?.kind).toBe('cpu');
    expect(isolate.breached!.afterMs).toBeGreaterThanOrEqual(60);
    expect(run.lastCpuNs).toBeGreaterThan(60_000_000n);
    expect(dog.watching).toBe(0);
  });

  it('names runs that spin past equal time and CPU budgets for their time limit, without reading their CPU', async () => {
    // Equal budgets: the CPU budget cannot be spent before the deadline (CPU counts from later and
    // no faster), so only the deadline is watched, even if a reading ran ahead of the clock (as
    // these isolates' do, at twice the wall clock). In CI a run spinning with 400 ms of each was
    // once named for its CPU (sandbox-batch.int-spec.ts); it must be named the same every time.
    // A timer can fire up to a millisecond before performance.now() reaches its time, and a look
    // then read the CPU: 30 runs armed at scattered sub-millisecond moments make that likely.
    const dog = new LimitWatchdog();
    const watched: FakeIsolate[] = [];
    for (let i = 0; i < 30; i++) {
      const run = new InvocationRun(i, { memoryMb: 64, timeoutMs: 60, cpuMs: 60 });
      const isolate = new FakeIsolate();
      isolate.busy = true;
      const cpuNs = isolate.cpuNs.bind(isolate);
      isolate.cpuNs = () => {
        const ns = cpuNs();
        return ns === null ? null : ns * 2n;
      };
      dog.watch(run, isolate);
      watched.push(isolate);
      const until = performance.now() + 0.37;
      while (performance.now() < until) { /* scatter the next arming */ }
    }
    await sleep(300);
    expect(watched.map((w) => w.breached?.kind)).toEqual(watched.map(() => 'timeout'));
    // Timed from each run's own start: the isolate stand-in is made after the run, and under load
    // (CI, once) more than a millisecond after it.
    expect(watched.every((w) => w.breached!.runMs >= 60)).toBe(true);
    expect(watched.map((w) => w.readings)).toEqual(watched.map(() => 0));
  });

  it('lets an idle run (waiting on a fetch, say) live until its deadline, then ends it as a timeout, looking only a few times', async () => {
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 150, cpuMs: 40 });
    const isolate = new FakeIsolate();
    dog.watch(run, isolate);
    await sleep(100);
    expect(isolate.breached).toBeNull();
    await sleep(250);
    expect(isolate.breached?.kind).toBe('timeout');
    expect(isolate.breached!.runMs).toBeGreaterThanOrEqual(150);
    // A 10 ms ticker would have looked about 15 times; the watchdog looks when the CPU budget
    // could be spent (at 40, 80 and 120 ms) and then when the rest of the wall-clock budget is up.
    // A timer can fire up to a millisecond before performance.now() reaches its time (libuv arms
    // it from the loop's cached clock), which adds one look on a busy machine (seen once in CI).
    expect(isolate.readings).toBeGreaterThanOrEqual(1);
    expect(isolate.readings).toBeLessThanOrEqual(4);
  });

  it('stops looking at a run whose isolate is gone', async () => {
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 30 });
    const isolate = new FakeIsolate();
    isolate.gone = true;
    dog.watch(run, isolate);
    await sleep(120);
    expect(isolate.readings).toBe(1);
    expect(isolate.breached).toBeNull();
    expect(dog.watching).toBe(0);
  });

  it('watches several runs on their own clocks', async () => {
    const dog = new LimitWatchdog();
    const quick = new InvocationRun(1, { memoryMb: 64, timeoutMs: 50, cpuMs: 1_000 });
    const slow = new InvocationRun(2, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 1_000 });
    const a = new FakeIsolate();
    const b = new FakeIsolate();
    dog.watch(quick, a);
    dog.watch(slow, b);
    await sleep(150);
    expect(a.breached?.kind).toBe('timeout');
    expect(b.breached).toBeNull();
    expect(dog.watching).toBe(1);
    dog.unwatch(slow);
    expect(dog.watching).toBe(0);
  });
});
