import { performance } from 'node:perf_hooks';
import {
  FSYNC_OFF_LOOP_ABOVE, FSYNC_ON_LOOP_BELOW, FSYNC_PLACEMENT_WINDOW_MS, FsyncPlacement, SLOW_DISK_POOL_MS, SLOW_FSYNC_MS, SLOW_FSYNC_WINDOW,
  STALLING_FSYNC_MS,
} from '../src/fsync-placement';
import { QuietLoop } from './scripted-load';

describe('FsyncPlacement', () => {
  it('fixed modes stay where they are, whatever the load', () => {
    const loop = new FsyncPlacement('loop');
    const pool = new FsyncPlacement('pool');
    for (const u of [0, 0.5, 1]) {
      loop.observe(u);
      pool.observe(u);
      expect(loop.next()).toBe(true);
      expect(pool.next()).toBe(false);
    }
  });

  it('auto starts on the loop, leaves it above the upper threshold and comes back only below the lower one', () => {
    const p = new FsyncPlacement('auto');
    const seen: boolean[] = [];
    for (const u of [0.1, 0.9, FSYNC_OFF_LOOP_ABOVE, 0.99, 0.9, FSYNC_ON_LOOP_BELOW, 0.5, 0.94, 1]) {
      p.observe(u);
      seen.push(p.placedOnLoop);
    }
    // Between the thresholds it keeps whatever it had: no flip at every window.
    expect(seen).toEqual([true, true, true, false, false, false, true, true, false]);
  });

  it('auto says the loop is saturated from the upper threshold until it is back under the lower one; fixed modes never do', () => {
    const p = new FsyncPlacement('auto');
    const seen: boolean[] = [];
    for (const u of [0.5, 0.99, 0.9, 0.5]) {
      p.observe(u);
      seen.push(p.loopSaturated);
    }
    expect(seen).toEqual([false, true, true, false]);
    // A slow disk sends the fsync to the pool, but the loop is not saturated for it.
    p.tookOnLoop(STALLING_FSYNC_MS + 1);
    expect(p.placedOnLoop).toBe(false);
    expect(p.loopSaturated).toBe(false);
    for (const mode of ['loop', 'pool'] as const) {
      const fixed = new FsyncPlacement(mode);
      fixed.observe(1);
      expect(fixed.loopSaturated).toBe(false);
    }
  });

  it('auto measures the event loop itself: a busy loop sends the fsync to the pool, an idle one brings it back', async () => {
    const p = new FsyncPlacement('auto');
    // The loop busy for two windows (a synchronous spin is the loop's own work).
    const spinUntil = Date.now() + 2 * FSYNC_PLACEMENT_WINDOW_MS;
    while (Date.now() < spinUntil) { /* busy */ }
    expect(p.next()).toBe(false);
    // Then idle. A window counts as idle only for the time the loop waited in its poll; on a
    // loaded CI machine a collection of the test runner's heap or its own messages can fill one
    // window, so up to five pairs of windows are given: a placement that never comes back fails all.
    let back = false;
    for (let i = 0; i < 5 && !back; i++) {
      await new Promise((r) => setTimeout(r, 2 * FSYNC_PLACEMENT_WINDOW_MS));
      back = p.next();
    }
    expect(back).toBe(true);
  });

  it('a second slow fsync among the last few on the loop sends the next ones to the pool for a while; one alone does not', () => {
    // The loop's measured load left out (a stalled test runner would read as busy): only the disk decides.
    const p = new QuietLoop();
    p.tookOnLoop(SLOW_FSYNC_MS);
    expect(p.next()).toBe(true);
    // One slow fsync (an outlier of a noisy disk) leaves the fsync on the loop ...
    p.tookOnLoop(SLOW_FSYNC_MS + 40);
    expect(p.next()).toBe(true);
    // ... and so does another once SLOW_FSYNC_WINDOW quick ones came between them.
    for (let i = 0; i < SLOW_FSYNC_WINDOW - 1; i++) p.tookOnLoop(1);
    p.tookOnLoop(SLOW_FSYNC_MS + 40);
    expect(p.next()).toBe(true);
    // A second slow one within the window: the disk stays slow, the fsyncs go to the pool.
    for (let i = 0; i < SLOW_FSYNC_WINDOW - 2; i++) p.tookOnLoop(1);
    p.tookOnLoop(SLOW_FSYNC_MS + 40);
    expect(p.next()).toBe(false);
    expect(p.placedOnLoop).toBe(false);
    // The loop itself still has time to spare: what the WAL's checkpoints are sized by.
    expect(p.loopHasTimeToSpare).toBe(true);
    // Its time is up: back on the loop (the loop is idle here), the disk judged afresh: the
    // slow fsyncs before the pool do not count with the next one.
    const past = performance.now() - SLOW_DISK_POOL_MS - 1;
    p.tookOnLoop(STALLING_FSYNC_MS + 1, past);
    expect(p.next()).toBe(true);
    p.tookOnLoop(SLOW_FSYNC_MS + 40);
    expect(p.next()).toBe(true);
    // A fixed placement stays where it is.
    const loop = new FsyncPlacement('loop');
    loop.tookOnLoop(1000);
    loop.tookOnLoop(1000);
    expect(loop.next()).toBe(true);
    expect(loop.loopHasTimeToSpare).toBe(false);
  });

  it('one fsync on the loop long enough to stall it sends the next ones to the pool at once', () => {
    const p = new QuietLoop();
    p.tookOnLoop(STALLING_FSYNC_MS);
    expect(p.next()).toBe(true);
    const q = new QuietLoop();
    q.tookOnLoop(STALLING_FSYNC_MS + 1);
    expect(q.next()).toBe(false);
  });

  it('keeps measuring the loop while a slow disk holds the fsync on the pool', () => {
    const p = new FsyncPlacement('auto');
    p.tookOnLoop(STALLING_FSYNC_MS + 1);
    // The loop busy for a window, while the fsync is on the pool for the slow disk.
    const spinUntil = Date.now() + FSYNC_PLACEMENT_WINDOW_MS + 20;
    while (Date.now() < spinUntil) { /* busy */ }
    expect(p.next()).toBe(false);
    expect(p.loopHasTimeToSpare).toBe(false);
  });
});
