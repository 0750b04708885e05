import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

/** The window a check looks at (ms): the first after activity, and each while the loop stays busy (a wake-up of a lightly loaded server: as few as the old interval's). */
export const IDLE_CHECK_MS = 5_000;
/** Event-loop utilisation over a check window under which the server counts as idle. */
export const IDLE_BELOW = 0.01;
/** Heap growth since the last collection (bytes) that makes an idle collection worth its cost. */
export const IDLE_COLLECT_GROWTH = 16 * 1024 * 1024;
/** Young generation (bytes, committed) above which an idle server asks V8 to shrink it. */
export const IDLE_SHRINK_YOUNG_ABOVE = 4 * 1024 * 1024;
/** Attempts to shrink the young generation per idle stretch (V8 may decline, see {@link IdleCollector}). */
export const IDLE_SHRINK_ATTEMPTS = 3;
/**
 * How long after the last busy window a shrink of the young generation is tried (ms), and between
 * attempts: V8 shrinks it only in a collection that finds the last 5 s allocated little.
 */
export const IDLE_SHRINK_AFTER_MS = 5_000;

export interface IdleCollectorDeps {
  /** A full garbage collection (`globalThis.gc` under `--expose-gc`). */
  gc(): void;
  /** A collection of the young generation only (a scavenge: about a millisecond on an idle heap). */
  minorGc(): void;
  /** Bytes the young generation holds in memory (its two semi-spaces), used or not. */
  youngCommitted(): number;
  /** Bytes of the JS heap in use (live and not yet collected). */
  heapUsed(): number;
  /** The loop's utilisation since the previous call (0..1). */
  utilization(): number;
}

/**
 * V8 collects its old generation when it is about to grow it, not when the process goes idle:
 * after a burst the server kept 30-86 MB of garbage in its heap (heap used 61-117 MB, of which
 * 31 MB live) and 230-290 MB of RSS for as long as it stayed idle, since nothing allocated
 * enough to trigger the next collection. This collects once the loop was idle over a whole check
 * window and the heap grew by {@link IDLE_COLLECT_GROWTH} since the last collection: once per
 * burst, never under load, never for an idle server that allocates nothing.
 *
 * It also gives back the young generation. Its semi-spaces grow to their maximum (32 MB each under
 * the server's flags) while Nest starts or under load, and V8 shrinks them only in a collection
 * that finds the allocation rate of the last 5 s low: a server that goes idle collects nothing,
 * so it kept its young generation (16 MB when the semi-spaces were 8 MB each), almost all of it
 * empty, for as long as it stayed idle.
 * Once the loop has been idle for {@link IDLE_SHRINK_AFTER_MS} and the young generation holds
 * more than {@link IDLE_SHRINK_YOUNG_ABOVE}, a scavenge lets V8 shrink it (to 1 MB). A few
 * attempts per idle stretch at most, {@link IDLE_SHRINK_AFTER_MS} apart: should V8 decline, an
 * idle server does not scavenge for nothing.
 *
 * Each check says when the next one is wanted: {@link IDLE_CHECK_MS} later while the loop is busy
 * (a check is a wake-up of a lightly loaded server), at the time of the next shrink attempt, or
 * never (`undefined`) once there is nothing left to do, so an idle server has no timer of its own
 * (see {@link startIdleCollector}).
 */
export class IdleCollector {
  private baseline: number;
  private shrinkAttempts = 0;
  private lastBusy: number;
  private active = false;

  constructor(
    private readonly deps: IdleCollectorDeps, now = performance.now(),
    private readonly timing: { checkMs: number; shrinkAfterMs: number } = { checkMs: IDLE_CHECK_MS, shrinkAfterMs: IDLE_SHRINK_AFTER_MS },
  ) {
    this.baseline = deps.heapUsed();
    this.lastBusy = now;
  }

  /**
   * Something happened in the current window (a commit): the window is busy, however little of
   * the loop it took. At 10 events/s the loop can be under 1% busy over half a second, and a
   * collection between two requests stalls the next one.
   */
  noteActivity(): void {
    this.active = true;
  }

  /**
   * A check window is over at `now` (ms): collects when it was idle and the heap grew enough.
   * Returns in how many ms the next check is wanted, or undefined when none is (until activity).
   */
  check(now = performance.now()): number | undefined {
    const idle = this.deps.utilization() < IDLE_BELOW && !this.active;
    this.active = false;
    const used = this.deps.heapUsed();
    // The heap also shrinks by V8's own collections: the growth counts from the lowest seen.
    if (used < this.baseline) this.baseline = used;
    if (!idle) {
      this.lastBusy = now;
      this.shrinkAttempts = 0;
      return this.timing.checkMs;
    }
    if (used - this.baseline >= IDLE_COLLECT_GROWTH) {
      this.deps.gc();
      this.baseline = this.deps.heapUsed();
    }
    if (this.shrinkAttempts >= IDLE_SHRINK_ATTEMPTS || this.deps.youngCommitted() <= IDLE_SHRINK_YOUNG_ABOVE) return undefined;
    const due = this.lastBusy + this.timing.shrinkAfterMs - now;
    if (due > 0) return due;
    this.shrinkAttempts++;
    this.deps.minorGc();
    return this.shrinkAttempts < IDLE_SHRINK_ATTEMPTS && this.deps.youngCommitted() > IDLE_SHRINK_YOUNG_ABOVE ? this.timing.shrinkAfterMs : undefined;
  }
}

/** `gc` of `--expose-gc`: a full collection, or a young-generation one with `{ type: 'minor' }`. */
type GcFunction = (options?: { type: 'major' | 'minor' }) => void;

/** Physical size of V8's new space (both semi-spaces). */
function youngCommitted(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
}

export interface IdleCollectorOptions {
  /** Registers a listener called on activity (the engine's commits); returns its removal. */
  onActivity?: (listener: () => void) => () => void;
  /** Defaults: `globalThis.gc` of `--expose-gc`, V8's heap statistics (tests replace them). */
  gc?: GcFunction;
  heapUsed?: () => number;
  youngCommitted?: () => number;
  /** The windows (ms): {@link IDLE_CHECK_MS}, {@link IDLE_SHRINK_AFTER_MS} unless a test shortens them. */
  checkMs?: number;
  shrinkAfterMs?: number;
}

/** A started idle collector. */
export interface RunningIdleCollector {
  /** Something happened: checks follow until the loop has been idle and nothing is left to do. */
  touch(): void;
  /** True while a check is scheduled (an idle server that has nothing left to collect has none). */
  readonly scheduled: boolean;
  stop(): void;
}

/**
 * Starts the idle collector of this process when `--expose-gc` gave it a `gc` (the server's
 * flags do: SERVER_NODE_FLAGS); otherwise it does nothing. No timer runs while the server is
 * idle: activity (each commit of the engine, by `onActivity`, and the start itself) schedules a
 * check {@link IDLE_CHECK_MS} later, and checks go on only while they have something to wait for.
 * Activity while a check is scheduled makes its window busy ({@link IdleCollector.noteActivity}). A periodic
 * timer woke the idle server every 5 s, and on this machine a wake-up after a long sleep costs
 * about a millisecond of CPU.
 */
export function startIdleCollector(options: IdleCollectorOptions = {}): RunningIdleCollector {
  const gc = 'gc' in options ? options.gc : (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== 'function') return { touch: () => undefined, scheduled: false, stop: () => undefined };
  let mark = performance.eventLoopUtilization();
  const collector = new IdleCollector({
    gc: () => gc(),
    minorGc: () => gc({ type: 'minor' }),
    youngCommitted: options.youngCommitted ?? youngCommitted,
    heapUsed: options.heapUsed ?? (() => getHeapStatistics().used_heap_size),
    utilization: () => {
      const now = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(now, mark).utilization;
      mark = now;
      return u;
    },
  }, performance.now(), { checkMs: options.checkMs ?? IDLE_CHECK_MS, shrinkAfterMs: options.shrinkAfterMs ?? IDLE_SHRINK_AFTER_MS });
  const checkMs = options.checkMs ?? IDLE_CHECK_MS;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (ms: number): void => {
    timer = setTimeout(() => {
      timer = undefined;
      const next = collector.check();
      if (next !== undefined && !stopped) schedule(next);
    }, ms);
    timer.unref();
  };
  const touch = (): void => {
    if (stopped) return;
    if (timer) {
      collector.noteActivity();
      return;
    }
    // The window starts now, after the activity that armed it: a long idle stretch before it
    // must not dilute a busy window into an idle one.
    mark = performance.eventLoopUtilization();
    schedule(checkMs);
  };
  const removeListener = options.onActivity?.(touch);
  touch();
  return {
    touch,
    get scheduled() {
      return timer !== undefined;
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      removeListener?.();
    },
  };
}
