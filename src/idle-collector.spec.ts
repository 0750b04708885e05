import { IDLE_BELOW, IDLE_COLLECT_GROWTH, IDLE_SHRINK_ATTEMPTS, IDLE_SHRINK_YOUNG_ABOVE, IdleCollector, startIdleCollector } from './idle-collector';

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
      minorGc: () => undefined,
      youngCommitted: () => 0,
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

describe('IdleCollector: the young generation', () => {
  /**
   * Scripted windows of [loop utilisation, young generation committed in MB (unchanged when left
   * out)]; `v8Shrinks`: whether a scavenge brings it to 1 MB. Returns the windows in which it scavenged.
   */
  function run(windows: [number, number?][], v8Shrinks = true) {
    let i = 0;
    let young = 0;
    const scavenges: number[] = [];
    const c = new IdleCollector({
      gc: () => undefined,
      minorGc: () => {
        scavenges.push(i);
        if (v8Shrinks) young = 1 * MB;
      },
      youngCommitted: () => young,
      heapUsed: () => 40 * MB,
      utilization: () => {
        const [u, mb] = windows[i];
        if (mb !== undefined) young = mb * MB;
        return u;
      },
    });
    for (; i < windows.length; i++) c.check();
    return scavenges;
  }

  it('scavenges once the loop was idle a whole window and the young generation is large, then leaves it', () => {
    // Busy with 16 MB, then idle: one scavenge at the first idle window; V8 shrank it, so no more.
    expect(run([[0.5, 16], [0.3, 16], [0.001, 16], [0.001], [0.002]])).toEqual([2]);
  });

  it('never under load, nor for a young generation at or under the threshold', () => {
    expect(run([[0.5, 16], [IDLE_BELOW, 16], [0.2, 16]])).toEqual([]);
    const small = IDLE_SHRINK_YOUNG_ABOVE / MB;
    expect(run([[0.001, small], [0.001, small]])).toEqual([]);
  });

  it('when V8 declines to shrink, tries a few times per idle stretch, again after load', () => {
    const idle: [number, number][] = Array.from({ length: IDLE_SHRINK_ATTEMPTS + 3 }, () => [0.001, 16]);
    const once = run([...idle], false);
    expect(once).toEqual(Array.from({ length: IDLE_SHRINK_ATTEMPTS }, (_, k) => k));
    const twice = run([...idle, [0.4, 16], ...idle], false);
    expect(twice).toHaveLength(2 * IDLE_SHRINK_ATTEMPTS);
    expect(twice[IDLE_SHRINK_ATTEMPTS]).toBe(idle.length + 1);
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
    }, () => heap, () => 0);
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
