import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { loopTimer } from '../src/loop-timer';

const DIST_TIMER = join(__dirname, '..', '..', '..', 'dist', 'libs', 'event-store', 'src', 'loop-timer.js');

/** Runs `body` in a fresh Node process with `loopTimer` in scope; returns what it printed. */
function inChild(body: string): string {
  const script = `const { loopTimer } = require(${JSON.stringify(DIST_TIMER)});\n${body}`;
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
}

describe('loopTimer (libs/event-store/native/loop-timer.c)', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('is the native timer here (the build compiles it)', () => {
    const t = loopTimer(() => undefined);
    expect(t.native).toBe(true);
    t.close();
  });

  it.each([true, false])('calls back once per start, a new start replaces the time, stop and close stop it (native: %s)', async (useNative) => {
    const calls: number[] = [];
    const t0 = performance.now();
    const t = loopTimer(() => calls.push(performance.now() - t0), useNative);
    t.start(10);
    await sleep(60);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toBeGreaterThanOrEqual(9);
    // Re-armed later, then sooner: it fires once, at the sooner time.
    t.start(500);
    t.start(5);
    await sleep(60);
    expect(calls).toHaveLength(2);
    t.start(5);
    t.stop();
    await sleep(40);
    expect(calls).toHaveLength(2);
    t.start(5);
    t.close();
    await sleep(40);
    expect(calls).toHaveLength(2);
  });

  it('a stopped timer lets the process exit; an armed one keeps it alive until it fires', () => {
    expect(inChild(`const t = loopTimer(() => console.log('fired')); t.start(60_000); t.stop(); console.log('end of script');`)).toBe('end of script\n');
    expect(inChild(`const t = loopTimer(() => console.log('fired')); t.start(30); console.log('armed');`)).toBe('armed\nfired\n');
  });

  it.each([true, false])('a timer made with keepsAlive false lets the process exit while armed, and still fires while it runs (native: %s)', (useNative) => {
    expect(inChild(`const t = loopTimer(() => console.log('fired'), ${useNative}, false); t.start(60_000); console.log('end of script');`)).toBe('end of script\n');
    expect(inChild(`const t = loopTimer(() => console.log('fired'), ${useNative}, false); t.start(10); setTimeout(() => console.log('later'), 60); console.log('armed');`))
      .toBe('armed\nfired\nlater\n');
  });

  it('a callback that throws reaches uncaughtException, and its microtasks run, as with setTimeout', () => {
    const run = (useNative: boolean) => inChild(`
      process.on('uncaughtException', (e) => console.log('caught', e.message));
      const t = loopTimer(() => { Promise.resolve().then(() => console.log('microtask')); throw new Error('boom'); }, ${useNative});
      t.start(5);
      setTimeout(() => console.log('after'), 50);`);
    const native = run(true);
    expect(native).toBe('caught boom\nmicrotask\nafter\n');
    expect(run(false)).toBe(native);
  });

  (process.platform === 'linux' ? it : it.skip)('a timer stopped before its time wakes the loop at no time; a cleared setTimeout does (Linux: counts from /proc)', () => {
    if (process.platform !== 'linux') console.log('skipped: counts the main thread\'s wake-ups from /proc (Linux only)');
    // 30 cycles of: arm for 5 ms, stop at once, then sleep 20 ms on a setTimeout. The sleep is one
    // wake-up; with setTimeout and clearTimeout the cleared timer wakes the loop at 5 ms as well.
    const out = inChild(`
      const fs = require('fs');
      const wakes = () => Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]);
      (async () => {
        const result = {};
        for (const useNative of [true, false]) {
          const t = loopTimer(() => {}, useNative);
          await new Promise((r) => setTimeout(r, 20));
          const before = wakes();
          for (let i = 0; i < 30; i++) {
            t.start(5);
            t.stop();
            await new Promise((r) => setTimeout(r, 20));
          }
          result[useNative ? 'native' : 'setTimeout'] = wakes() - before;
          t.close();
        }
        console.log(JSON.stringify(result));
      })();`);
    const wakes = JSON.parse(out) as { native: number; setTimeout: number };
    // Measured: 30 and 60.
    expect(wakes.setTimeout).toBeGreaterThanOrEqual(55);
    expect(wakes.native).toBeLessThan(40);
  });

  /**
   * Runs `cycle` (the body of a loop over `i`, awaiting a store's appends) `count` times in a fresh
   * process, on a real store with its fsyncs on the loop, after one append and `settleMs` of quiet;
   * with `standIn`, the store's loop timers are the setTimeout stand-in. Returns the main thread's
   * wake-ups (voluntary context switches, from /proc) and the fsyncs made during the loop.
   */
  const storeCycles = (standIn: boolean, count: number, settleMs: number, cycle: string) => JSON.parse(inChild(`
      if (${standIn}) {
        const timers = require(${JSON.stringify(DIST_TIMER)});
        const native = timers.loopTimer;
        timers.loopTimer = (callback, useNative, keepsAlive) => native(callback, false, keepsAlive);
      }
      const { SqliteEventStore } = require(${JSON.stringify(join(__dirname, '..', '..', '..', 'dist', 'libs', 'event-store', 'src', 'index.js'))});
      const fs = require('fs'), os = require('os'), path = require('path');
      const wakes = () => Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-loop-timer-'));
      const store = new SqliteEventStore({ file: path.join(dir, 'e.db'), synchronous: 'full', locking: 'exclusive', fsyncPlacement: 'loop' });
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      (async () => {
        await store.append('warm', [{ type: 't.v1', data: {} }]);
        await sleep(${settleMs});
        const before = wakes(), fsyncs = store.fsyncCount;
        for (let i = 0; i < ${count}; i++) {
          ${cycle}
        }
        console.log(JSON.stringify({ wakes: wakes() - before, fsyncs: store.fsyncCount - fsyncs }));
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      })();`)) as { wakes: number; fsyncs: number };

  /**
   * The stand-in's wake-ups less the store's, for `cycles` run each way, measured up to `tries`
   * times until it reaches `atLeast`. Other wake-ups (a GC thread, the disk, a test beside this one
   * in CI) come and go between runs; the store's own extra wake-ups do not: a regression gives a
   * difference near 0 on every try. Also returns each run's fsyncs, which do not vary.
   */
  const bestDifference = (atLeast: number, cycles: (standIn: boolean) => { wakes: number; fsyncs: number }, tries = 3) => {
    let best = -Infinity;
    const fsyncs: number[][] = [];
    for (let i = 0; i < tries && best < atLeast; i++) {
      const built = cycles(false);
      const standIn = cycles(true);
      fsyncs.push([built.fsyncs, standIn.fsyncs]);
      best = Math.max(best, standIn.wakes - built.wakes);
    }
    return { best, fsyncs };
  };

  (process.platform === 'linux' ? it : it.skip)('the store\'s linger: an append taken along by the next commit leaves no wake-up behind (Linux: counts from /proc)', () => {
    if (process.platform !== 'linux') console.log('skipped: counts the main thread\'s wake-ups from /proc (Linux only)');
    // 30 cycles of: an append lingering 20 ms, an append that does not linger (which writes both,
    // with one fsync on the loop), then a 40 ms sleep. Run once with the store as built, once with
    // its timer made the setTimeout stand-in; the difference is the cleared timers' wake-ups.
    const cycles = (standIn: boolean) => storeCycles(standIn, 30, 50, `
          const lingering = store.append('inbox', [{ type: 't.v1', data: { i } }], { lingerMs: 20 });
          await store.append('run', [{ type: 't.v1', data: { i } }]);
          await lingering;
          await sleep(40);`);
    // The stand-in's cleared timer adds one wake-up per cycle at most; the store's own timer none.
    // Measured: 132-138 against 164 at stop 64, a difference of 19 in one CI run at stop 65 (a
    // ghost wake-up can coincide with another): half the cycles is the bound, 0 when it regresses.
    const { best, fsyncs } = bestDifference(15, cycles);
    // Each lingering append was written with the next one: one fsync per cycle either way.
    for (const pair of fsyncs) expect(pair).toEqual([30, 30]);
    expect(best).toBeGreaterThanOrEqual(15);
  });

  (process.platform === 'linux' ? it : it.skip)('the store\'s lazy fsync: a commit-only append that a later fsync covers leaves no wake-up behind (Linux: counts from /proc)', () => {
    if (process.platform !== 'linux') console.log('skipped: counts the main thread\'s wake-ups from /proc (Linux only)');
    // 20 cycles of: an append acknowledged at its commit (as a delivery outcome is), which arms the
    // store's 200 ms fsync of such commits; 5 ms later a durable append, whose fsync covers it; then
    // 260 ms of sleep, past the 200 ms. The store as built stops its timer at that fsync; with the
    // setTimeout stand-in the cleared timer still wakes the loop at 200 ms (and before this change
    // the timer was not stopped at all and fired, to find nothing to sync).
    const cycles = (standIn: boolean) => storeCycles(standIn, 20, 300, `
          await store.append('outcome', [{ type: 't.v1', data: { i } }], { durability: 'commit' });
          await sleep(5);
          await store.append('request', [{ type: 't.v1', data: { i } }]);
          await sleep(260);`);
    // The stand-in adds one wake-up per cycle, the store's own timer none: measured 16-20 of 20,
    // 12 once in a CI run at stop 68 (tests beside it; hence the tries), 0 when it regresses.
    const { best, fsyncs } = bestDifference(14, cycles);
    // One fsync per cycle either way: the durable append's, which covered the commit-only one.
    for (const pair of fsyncs) expect(pair).toEqual([20, 20]);
    expect(best).toBeGreaterThanOrEqual(14);
  });
});
