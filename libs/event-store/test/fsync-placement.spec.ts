import { FSYNC_OFF_LOOP_ABOVE, FSYNC_ON_LOOP_BELOW, FSYNC_PLACEMENT_WINDOW_MS, FsyncPlacement } from '../src/fsync-placement';

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

  it('auto measures the event loop itself: a busy loop sends the fsync to the pool, an idle one brings it back', async () => {
    const p = new FsyncPlacement('auto');
    // The loop busy for two windows (a synchronous spin is the loop's own work).
    const spinUntil = Date.now() + 2 * FSYNC_PLACEMENT_WINDOW_MS;
    while (Date.now() < spinUntil) { /* busy */ }
    expect(p.next()).toBe(false);
    // Then idle for two windows.
    await new Promise((r) => setTimeout(r, 2 * FSYNC_PLACEMENT_WINDOW_MS));
    expect(p.next()).toBe(true);
  });
});
