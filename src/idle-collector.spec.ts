import { IDLE_BELOW, IDLE_COLLECT_GROWTH, IdleCollector, startIdleCollector } from './idle-collector';

const MB = 1024 * 1024;

describe('IdleCollector', () => {
  /** A collector over scripted windows: each is [loop utilisation, heap used in MB]. */
  function run(windows: [number, number][]) {
    let i = 0;
    let heap = 40 * MB;
    const gcs: number[] = [];
    const c = new IdleCollector({
      gc: () => {
        gcs.push(i);
        heap = 30 * MB;
      },
      heapUsed: () => heap,
      utilization: () => {
        const [u, used] = windows[i];
        heap = used * MB;
        return u;
      },
    });
    for (; i < windows.length; i++) c.check();
    return gcs;
  }

  it('collects once the loop is idle after the heap grew, not under load, and once per burst', () => {
    // Busy windows while the heap grows, then idle ones: one collection, at the first idle window.
    expect(run([[0.6, 60], [0.9, 120], [0.5, 90], [0.001, 95], [0.001, 30], [0.002, 31]])).toEqual([3]);
  });

  it('an idle server whose heap did not grow by the threshold is left alone', () => {
    const grown = 40 + IDLE_COLLECT_GROWTH / MB - 1;
    expect(run([[0.001, 41], [0.001, grown], [0.005, grown]])).toEqual([]);
  });

  it('a window at the idle threshold or above is not idle', () => {
    expect(run([[IDLE_BELOW, 200], [0.2, 200]])).toEqual([]);
    expect(run([[IDLE_BELOW, 200], [IDLE_BELOW / 2, 200]])).toEqual([1]);
  });

  it('counts growth from the lowest heap seen: V8 collecting by itself resets it', () => {
    // The heap fell to 20 MB by V8's own collection; 30 MB later is 10 MB of growth only.
    expect(run([[0.5, 20], [0.001, 30]])).toEqual([]);
    expect(run([[0.5, 20], [0.001, 20 + IDLE_COLLECT_GROWTH / MB]])).toEqual([1]);
  });
});

describe('startIdleCollector', () => {
  it('does nothing without a gc (node started without --expose-gc)', () => {
    const stop = startIdleCollector(10, undefined);
    stop();
  });

  it('measures this process\'s event loop: collects once the loop went idle after the heap grew, and only once', async () => {
    // The heap is scripted (a jest worker's own heap moves with whatever V8 collects meanwhile);
    // the loop's utilisation and the timer are this process's own.
    let heap = 100 * MB;
    let collections = 0;
    const stop = startIdleCollector(100, () => {
      collections++;
      heap = 100 * MB;
    }, () => heap);
    try {
      // Busy windows while the heap grows: no collection, however much it grew.
      heap += 64 * MB;
      const until = Date.now() + 350;
      while (Date.now() < until) { /* busy */ }
      // The timer, overdue, fires now: its window was busy.
      await new Promise((r) => setTimeout(r, 5));
      expect(collections).toBe(0);
      // Then idle: collected once, at the first idle window.
      for (let waited = 0; collections === 0 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(collections).toBe(1);
      await new Promise((r) => setTimeout(r, 400));
      expect(collections).toBe(1);
    } finally {
      stop();
    }
  });
});
