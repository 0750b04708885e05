import { performance } from 'node:perf_hooks';

/** Where the WAL's fsync runs: decided per fsync by the event loop's recent load (`auto`), or fixed. */
export type FsyncPlacementMode = 'auto' | 'loop' | 'pool';

/** Event-loop utilisation under which `auto` moves the fsync onto the loop. */
export const FSYNC_ON_LOOP_BELOW = 0.8;
/** Event-loop utilisation over which `auto` moves it back to the libuv pool. */
export const FSYNC_OFF_LOOP_ABOVE = 0.95;
/** The window the utilisation is measured over, at least (ms). */
export const FSYNC_PLACEMENT_WINDOW_MS = 100;

/**
 * Chooses where each fsync of the WAL runs. On the libuv pool (`fsync`) the event loop goes on
 * meanwhile, but the fsync costs two thread hand-offs: a pool thread woken for the work, and the
 * loop woken by its end. On the loop (`fsyncSync`) neither happens, and the loop waits for the
 * disk instead. Waiting costs nothing when the loop would be idle anyway, which is the case at
 * everyday rates: there the hand-offs are a good part of an event's CPU (measured in
 * docs/architecture.md, "Durability"). Under load the loop has better things to do than wait,
 * so `auto` keeps the fsync on the loop only while the loop was less than
 * {@link FSYNC_OFF_LOOP_ABOVE} busy over the last window, and moves it there again once it was
 * less than {@link FSYNC_ON_LOOP_BELOW} busy (two thresholds, so it does not flip at every window).
 */
export class FsyncPlacement {
  private onLoop: boolean;
  private mark = performance.eventLoopUtilization();
  private markAt = performance.now();

  constructor(readonly mode: FsyncPlacementMode = 'auto') {
    this.onLoop = mode !== 'pool';
  }

  /** True when the next fsync should run on the loop. */
  next(): boolean {
    if (this.mode !== 'auto') return this.mode === 'loop';
    const now = performance.now();
    if (now - this.markAt >= FSYNC_PLACEMENT_WINDOW_MS) {
      const current = performance.eventLoopUtilization();
      this.observe(performance.eventLoopUtilization(current, this.mark).utilization);
      this.mark = current;
      this.markAt = now;
    }
    return this.onLoop;
  }

  /** Takes one window's utilisation (0..1) into account; `next` calls it, tests may too. */
  observe(utilization: number): void {
    if (this.onLoop ? utilization > FSYNC_OFF_LOOP_ABOVE : utilization < FSYNC_ON_LOOP_BELOW) this.onLoop = !this.onLoop;
  }

  /** Where the fsync goes now, without measuring. */
  get placedOnLoop(): boolean {
    return this.mode === 'auto' ? this.onLoop : this.mode === 'loop';
  }
}
