import { performance } from 'node:perf_hooks';

/** Where the WAL's fsync runs: decided per fsync by the event loop's recent load (`auto`), or fixed. */
export type FsyncPlacementMode = 'auto' | 'loop' | 'pool';

/** Event-loop utilisation under which `auto` moves the fsync onto the loop. */
export const FSYNC_ON_LOOP_BELOW = 0.8;
/** Event-loop utilisation over which `auto` moves it back to the libuv pool. */
export const FSYNC_OFF_LOOP_ABOVE = 0.95;
/** The window the utilisation is measured over, at least (ms). */
export const FSYNC_PLACEMENT_WINDOW_MS = 100;
/** An fsync on the loop that took longer than this (ms) is slow (see {@link SLOW_FSYNCS_FOR_POOL}). */
export const SLOW_FSYNC_MS = 10;
/**
 * Slow fsyncs among the last {@link SLOW_FSYNC_WINDOW} on the loop that send the next ones to the
 * pool for {@link SLOW_DISK_POOL_MS}: a disk that stays slow, not one fsync that was.
 */
export const SLOW_FSYNCS_FOR_POOL = 2;
export const SLOW_FSYNC_WINDOW = 8;
/** An fsync on the loop this long (ms) sends the next ones to the pool at once. */
export const STALLING_FSYNC_MS = 100;
export const SLOW_DISK_POOL_MS = 5_000;

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
 * The loop waits for the disk only while the disk is quick: a second fsync on the loop over
 * {@link SLOW_FSYNC_MS} among the last {@link SLOW_FSYNC_WINDOW} (writeback under pressure, a busy
 * device), or one over {@link STALLING_FSYNC_MS}, sends the fsyncs to the pool for
 * {@link SLOW_DISK_POOL_MS}, so a slow disk stalls the loop twice at most, not at every commit.
 * One slow fsync alone does not: on a noisy day this disk took over 10 ms for one fsync in a few
 * thousand, and when the first slow one sent the fsyncs to the pool, a sixth to a third of them
 * ran there at 200 events/s, each with its two hand-offs.
 */
export class FsyncPlacement {
  private onLoop: boolean;
  private mark = performance.eventLoopUtilization();
  private markAt = performance.now();
  private poolUntil = 0;
  /** The last {@link SLOW_FSYNC_WINDOW} fsyncs on the loop, one bit each (1: slow), newest lowest. */
  private slowBits = 0;

  constructor(readonly mode: FsyncPlacementMode = 'auto') {
    this.onLoop = mode !== 'pool';
  }

  /** True when the next fsync should run on the loop. */
  next(): boolean {
    if (this.mode !== 'auto') return this.mode === 'loop';
    const now = performance.now();
    // Measured even while a slow disk keeps the fsync on the pool: the checkpoints' size follows
    // the load alone (loopHasTimeToSpare).
    if (now - this.markAt >= FSYNC_PLACEMENT_WINDOW_MS) {
      const current = performance.eventLoopUtilization();
      this.observe(performance.eventLoopUtilization(current, this.mark).utilization);
      this.mark = current;
      this.markAt = now;
    }
    return this.onLoop && now >= this.poolUntil;
  }

  /** How long (ms) an fsync on the loop took; `now` for tests. */
  tookOnLoop(ms: number, now = performance.now()): void {
    if (this.mode !== 'auto') return;
    this.slowBits = ((this.slowBits << 1) | (ms > SLOW_FSYNC_MS ? 1 : 0)) & ((1 << SLOW_FSYNC_WINDOW) - 1);
    if (ms > STALLING_FSYNC_MS || bitCount(this.slowBits) >= SLOW_FSYNCS_FOR_POOL) {
      this.poolUntil = now + SLOW_DISK_POOL_MS;
      // Back on the loop, the disk is judged afresh.
      this.slowBits = 0;
    }
  }

  /** Takes one window's utilisation (0..1) into account; `next` calls it, tests may too. */
  observe(utilization: number): void {
    if (this.onLoop ? utilization > FSYNC_OFF_LOOP_ABOVE : utilization < FSYNC_ON_LOOP_BELOW) this.onLoop = !this.onLoop;
  }

  /**
   * True while `auto` found the loop with time to spare at its last measure, whether or not a
   * slow disk has sent the fsync to the pool meanwhile (fixed modes: false). The WAL's checkpoints
   * are sized by this (`SqliteEventStoreOptions.walCheckpointPages`).
   */
  get loopHasTimeToSpare(): boolean {
    return this.mode === 'auto' && this.onLoop;
  }

  /**
   * True while `auto` found the loop saturated at its last measure (over the upper threshold,
   * not yet back under the lower one); fixed modes do not measure and say false. Lingering
   * appends are written at once while it holds (`SqliteEventStoreOptions.lingerOnlyWithTimeToSpare`).
   */
  get loopSaturated(): boolean {
    return this.mode === 'auto' && !this.onLoop;
  }

  /** Where the fsync goes now, without measuring. */
  get placedOnLoop(): boolean {
    return this.mode === 'auto' ? this.onLoop && performance.now() >= this.poolUntil : this.mode === 'loop';
  }
}

/** Set bits of a small non-negative integer. */
function bitCount(bits: number): number {
  let n = 0;
  for (let b = bits; b !== 0; b &= b - 1) n++;
  return n;
}
