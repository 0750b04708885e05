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

/**
 * Most cases run on a clock the test drives: timers and `performance.now()` (which the watchdog,
 * the run and the stand-in all read) advance only when the test says so. On real timers a 20 ms
 * sleep on a loaded machine can last past the 100 ms at which the watchdog first looks, and such
 * a case failed once while a CI run used the other core. The case about timers firing before the
 * clock reaches their time needs real timers, and its checks do not depend on how late they fire.
 */
function drivenClock(): { advance(ms: number): void } {
  jest.useFakeTimers();
  // `jest.now()` is the fake clock; `performance` from node:perf_hooks is not replaced by jest.
  jest.spyOn(performance, 'now').mockImplementation(() => jest.now());
  return { advance: (ms) => jest.advanceTimersByTime(ms) };
}

describe('LimitWatchdog', () => {
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('does not look at a run that ends before any limit can be reached', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 200, cpuMs: 100 });
    const isolate = new FakeIsolate();
    dog.watch(run, isolate);
    expect(dog.watching).toBe(1);
    clock.advance(99);
    expect(isolate.readings).toBe(0);
    dog.unwatch(run);
    expect(dog.watching).toBe(0);
    clock.advance(1_000);
    expect(isolate.readings).toBe(0);
    expect(isolate.breached).toBeNull();
  });

  it('stops a run that spends its CPU budget, soon after it is spent', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 60 });
    const isolate = new FakeIsolate();
    isolate.busy = true;
    dog.watch(run, isolate);
    clock.advance(59);
    expect(isolate.breached).toBeNull();
    // At 60 ms the budget is exactly spent, not over it: the next look, a millisecond on, stops it.
    clock.advance(3);
    expect(isolate.breached?.kind).toBe('cpu');
    expect(isolate.breached!.afterMs).toBeGreaterThan(60);
    expect(isolate.breached!.afterMs).toBeLessThanOrEqual(62);
    expect(run.lastCpuNs).toBeGreaterThan(60_000_000n);
    expect(dog.watching).toBe(0);
  });

  it('looks again when the rest of a CPU budget could be spent, not before', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 100 });
    const isolate = new FakeIsolate();
    dog.watch(run, isolate);
    // Idle for the first 100 ms (one look, nothing spent), then busy: 100 ms more spends it.
    clock.advance(100);
    expect(isolate.readings).toBe(1);
    isolate.busy = true;
    clock.advance(99);
    expect(isolate.readings).toBe(1);
    expect(isolate.breached).toBeNull();
    clock.advance(1);
    expect(isolate.readings).toBe(2);
    expect(isolate.breached?.kind).toBe('cpu');
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

  it('lets an idle run (waiting on a fetch, say) live until its deadline, then ends it as a timeout, looking only a few times', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 150, cpuMs: 40 });
    const isolate = new FakeIsolate();
    dog.watch(run, isolate);
    clock.advance(149);
    expect(isolate.breached).toBeNull();
    clock.advance(1);
    expect(isolate.breached?.kind).toBe('timeout');
    expect(isolate.breached!.runMs).toBe(150);
    // A 10 ms ticker would have looked about 15 times; the watchdog looks when the CPU budget
    // could be spent (at 40, 80 and 120 ms) and then at the deadline, which reads no CPU.
    expect(isolate.readings).toBe(3);
    expect(dog.watching).toBe(0);
  });

  it('stops looking at a run whose isolate is gone', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const run = new InvocationRun(1, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 30 });
    const isolate = new FakeIsolate();
    isolate.gone = true;
    dog.watch(run, isolate);
    clock.advance(6_000);
    expect(isolate.readings).toBe(1);
    expect(isolate.breached).toBeNull();
    expect(dog.watching).toBe(0);
  });

  it('watches several runs on their own clocks', () => {
    const clock = drivenClock();
    const dog = new LimitWatchdog();
    const quick = new InvocationRun(1, { memoryMb: 64, timeoutMs: 50, cpuMs: 1_000 });
    const slow = new InvocationRun(2, { memoryMb: 64, timeoutMs: 5_000, cpuMs: 1_000 });
    const a = new FakeIsolate();
    const b = new FakeIsolate();
    dog.watch(quick, a);
    dog.watch(slow, b);
    clock.advance(50);
    expect(a.breached?.kind).toBe('timeout');
    expect(b.breached).toBeNull();
    expect(dog.watching).toBe(1);
    dog.unwatch(slow);
    expect(dog.watching).toBe(0);
  });
});
