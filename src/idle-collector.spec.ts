import {
  IDLE_BELOW, IDLE_CHECK_MS, IDLE_COLLECT_GROWTH, IDLE_SHRINK_AFTER_MS, IDLE_SHRINK_ATTEMPTS, IDLE_SHRINK_YOUNG_ABOVE, IdleCollector, startIdleCollector,
} from './idle-collector';

const MB = 1024 * 1024;

describe('IdleCollector', () => {
  /** A collector over scripted windows: each is [loop utilisation, heap used in MB]. Returns the windows it collected in, and what each check asked for. */
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
    }, 0);
    const next: (number | undefined)[] = [];
    for (; i < windows.length; i++) next.push(c.check((i + 1) * IDLE_CHECK_MS));
    return { gcs, next };
  }

  it('collects once the loop is idle after the heap grew, not under load, and once per burst', () => {
    // Busy windows while the heap grows, then idle ones: one collection, at the first idle window.
    expect(run([[0.6, 60], [0.9, 120], [0.5, 90], [0.001, 95], [0.001, 30], [0.002, 31]]).gcs).toEqual([3]);
  });

  it('asks for the next check IDLE_CHECK_MS later while busy, and for none once idle with nothing left to do', () => {
    expect(run([[0.6, 60], [0.001, 60], [0.001, 30]]).next).toEqual([IDLE_CHECK_MS, undefined, undefined]);
  });

  it('an idle server whose heap did not grow by the threshold is left alone', () => {
    const grown = 40 + IDLE_COLLECT_GROWTH / MB - 1;
    expect(run([[0.001, 41], [0.001, grown], [0.005, grown]]).gcs).toEqual([]);
  });

  it('a window at the idle threshold or above is not idle', () => {
    expect(run([[IDLE_BELOW, 200], [0.2, 200]]).gcs).toEqual([]);
    expect(run([[IDLE_BELOW, 200], [IDLE_BELOW / 2, 200]]).gcs).toEqual([1]);
  });

  it('a window with activity in it is busy, however idle the loop was: no collection under light load', () => {
    let heap = 100 * MB;
    let gcs = 0;
    const c = new IdleCollector({
      gc: () => {
        gcs++;
        heap = 30 * MB;
      },
      minorGc: () => undefined, youngCommitted: () => 0, heapUsed: () => heap, utilization: () => 0.001,
    }, 0);
    heap = 200 * MB;
    // Commits in each window (10 events/s: the loop nearly idle): busy, looked at again later.
    c.noteActivity();
    expect(c.check(IDLE_CHECK_MS)).toBe(IDLE_CHECK_MS);
    c.noteActivity();
    expect(c.check(IDLE_CHECK_MS + IDLE_CHECK_MS)).toBe(IDLE_CHECK_MS);
    expect(gcs).toBe(0);
    // A window without any: collected.
    expect(c.check(IDLE_CHECK_MS + 2 * IDLE_CHECK_MS)).toBeUndefined();
    expect(gcs).toBe(1);
  });

  it('counts growth from the lowest heap seen: V8 collecting by itself resets it', () => {
    // The heap fell to 20 MB by V8's own collection; 30 MB later is 10 MB of growth only.
    expect(run([[0.5, 20], [0.001, 30]]).gcs).toEqual([]);
    expect(run([[0.5, 20], [0.001, 20 + IDLE_COLLECT_GROWTH / MB]]).gcs).toEqual([1]);
  });
});

describe('IdleCollector: the young generation', () => {
  /**
   * Checks at the times the collector asks for (the first at `firstAt`), each window's loop
   * utilisation taken from `utilisations` (idle once they run out); `v8Shrinks`: whether a
   * scavenge brings the 16 MB young generation to 1 MB. Returns the times it scavenged at.
   */
  function run(utilisations: number[], v8Shrinks: boolean, firstAt = IDLE_CHECK_MS) {
    let young = 16 * MB;
    let now = firstAt;
    const scavenges: number[] = [];
    let i = 0;
    const c = new IdleCollector({
      gc: () => undefined,
      minorGc: () => {
        scavenges.push(now);
        if (v8Shrinks) young = 1 * MB;
      },
      youngCommitted: () => young,
      heapUsed: () => 40 * MB,
      utilization: () => utilisations[i++] ?? 0.001,
    }, 0);
    for (let checks = 0; checks < 50; checks++) {
      const next = c.check(now);
      if (next === undefined) break;
      now += next;
    }
    return scavenges;
  }

  it('scavenges once the loop has been idle long enough for V8 to shrink it, then asks for nothing more', () => {
    // Busy for two checks (the last at IDLE_CHECK_MS + IDLE_CHECK_MS): the scavenge comes IDLE_SHRINK_AFTER_MS after it.
    expect(run([0.5, 0.3], true)).toEqual([IDLE_CHECK_MS + IDLE_CHECK_MS + IDLE_SHRINK_AFTER_MS]);
  });

  it('never under load, nor for a young generation at or under the threshold', () => {
    const c = new IdleCollector({
      gc: () => undefined, minorGc: () => { throw new Error('scavenged'); }, youngCommitted: () => IDLE_SHRINK_YOUNG_ABOVE,
      heapUsed: () => 40 * MB, utilization: () => 0.001,
    }, 0);
    expect(c.check(IDLE_SHRINK_AFTER_MS * 2)).toBeUndefined();
    const busy = new IdleCollector({
      gc: () => undefined, minorGc: () => { throw new Error('scavenged'); }, youngCommitted: () => 16 * MB,
      heapUsed: () => 40 * MB, utilization: () => IDLE_BELOW,
    }, 0);
    expect(busy.check(IDLE_SHRINK_AFTER_MS * 2)).toBe(IDLE_CHECK_MS);
  });

  it('when V8 declines to shrink, tries a few times, IDLE_SHRINK_AFTER_MS apart, then stops asking', () => {
    const times = run([0.5], false);
    expect(times).toHaveLength(IDLE_SHRINK_ATTEMPTS);
    for (let k = 1; k < times.length; k++) expect(times[k] - times[k - 1]).toBe(IDLE_SHRINK_AFTER_MS);
  });

  it('tries again after load', () => {
    let busy = true;
    let scavenges = 0;
    const c = new IdleCollector({
      gc: () => undefined, minorGc: () => scavenges++, youngCommitted: () => 16 * MB,
      heapUsed: () => 40 * MB, utilization: () => (busy ? 0.5 : 0.001),
    }, 0);
    /** Follows the checks the collector asks for from `at` until it asks for none; returns when that was. */
    const follow = (at: number): number => {
      for (let next = c.check(at); next !== undefined; next = c.check(at)) at += next;
      return at;
    };
    expect(c.check(IDLE_CHECK_MS)).toBe(IDLE_CHECK_MS);
    busy = false;
    const end = follow(2 * IDLE_CHECK_MS);
    expect(scavenges).toBe(IDLE_SHRINK_ATTEMPTS);
    // Activity later (the server's touch schedules a check): a busy window, then idle again.
    busy = true;
    expect(c.check(end + 60_000)).toBe(IDLE_CHECK_MS);
    busy = false;
    follow(end + 60_000 + IDLE_CHECK_MS);
    expect(scavenges).toBe(2 * IDLE_SHRINK_ATTEMPTS);
  });
});

describe('startIdleCollector', () => {
  it('does nothing without a gc (node started without --expose-gc)', () => {
    const collector = startIdleCollector({ gc: undefined });
    expect(collector.scheduled).toBe(false);
    collector.stop();
  });

  it('measures this process\'s event loop: collects once the loop went idle after the heap grew, then keeps no timer until activity', async () => {
    // The heap is scripted (a jest worker's own heap moves with whatever V8 collects meanwhile);
    // the loop's utilisation and the timers are this process's own.
    let heap = 100 * MB;
    let collections = 0;
    let activity: (() => void) | undefined;
    const collector = startIdleCollector({
      gc: () => {
        collections++;
        heap = 100 * MB;
      },
      heapUsed: () => heap,
      youngCommitted: () => 0,
      onActivity: (listener) => {
        activity = listener;
        return () => (activity = undefined);
      },
      // Short windows: this process (jest's) is not an idle server, so a window under 1% busy
      // comes sooner among short ones.
      checkMs: 200,
    });
    try {
      // Busy while the heap grows: no collection, however much it grew.
      heap += 64 * MB;
      const until = Date.now() + 300;
      while (Date.now() < until) { /* busy */ }
      // The check, overdue, runs now: its window was busy.
      await new Promise((r) => setTimeout(r, 5));
      expect(collections).toBe(0);
      expect(collector.scheduled).toBe(true);
      // Then idle: collected once, at the first idle window, and nothing is scheduled after it.
      for (let waited = 0; collections === 0 && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(collections).toBe(1);
      expect(collector.scheduled).toBe(false);
      // Activity (a commit) schedules a check again; the heap grew again, so it collects again.
      heap += 32 * MB;
      activity!();
      expect(collector.scheduled).toBe(true);
      for (let waited = 0; collections === 1 && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(collections).toBe(2);
      expect(collector.scheduled).toBe(false);
    } finally {
      collector.stop();
    }
    expect(activity).toBeUndefined();
  }, 60_000);
});
