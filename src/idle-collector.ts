import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

/** How often the collector looks (ms): one timer tick, unref'd. */
export const IDLE_CHECK_MS = 5_000;
/** Event-loop utilisation over a check window under which the server counts as idle. */
export const IDLE_BELOW = 0.01;
/** Heap growth since the last collection (bytes) that makes an idle collection worth its cost. */
export const IDLE_COLLECT_GROWTH = 16 * 1024 * 1024;
/** Young generation (bytes, committed) above which an idle server asks V8 to shrink it. */
export const IDLE_SHRINK_YOUNG_ABOVE = 4 * 1024 * 1024;
/** Attempts to shrink the young generation per idle stretch (V8 may decline, see {@link IdleCollector}). */
export const IDLE_SHRINK_ATTEMPTS = 3;

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
 * It also gives back the young generation. Its semi-spaces grow to their maximum (8 MB each under
 * the server's flags) while Nest starts or under load, and V8 shrinks them only in a collection
 * that finds the allocation rate of the last 5 s low: a server that goes idle collects nothing,
 * so it kept 16 MB of young generation, almost all of it empty, for as long as it stayed idle.
 * Once a whole window was idle (so the last 5 s allocated next to nothing) and the young
 * generation holds more than {@link IDLE_SHRINK_YOUNG_ABOVE}, a scavenge lets V8 shrink it (to
 * 1 MB). A few attempts per idle stretch at most: should V8 decline, an idle server does not
 * scavenge every window for nothing.
 */
export class IdleCollector {
  private baseline: number;
  private shrinkAttempts = 0;

  constructor(private readonly deps: IdleCollectorDeps) {
    this.baseline = deps.heapUsed();
  }

  /** One check window is over: collects when it was idle and the heap grew enough. */
  check(): void {
    const idle = this.deps.utilization() < IDLE_BELOW;
    const used = this.deps.heapUsed();
    // The heap also shrinks by V8's own collections: the growth counts from the lowest seen.
    if (used < this.baseline) this.baseline = used;
    if (!idle) {
      this.shrinkAttempts = 0;
      return;
    }
    if (used - this.baseline >= IDLE_COLLECT_GROWTH) {
      this.deps.gc();
      this.baseline = this.deps.heapUsed();
    }
    if (this.shrinkAttempts < IDLE_SHRINK_ATTEMPTS && this.deps.youngCommitted() > IDLE_SHRINK_YOUNG_ABOVE) {
      this.shrinkAttempts++;
      this.deps.minorGc();
    }
  }
}

/** `gc` of `--expose-gc`: a full collection, or a young-generation one with `{ type: 'minor' }`. */
type GcFunction = (options?: { type: 'major' | 'minor' }) => void;

/** Physical size of V8's new space (both semi-spaces). */
function youngCommitted(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
}

/**
 * Starts the idle collector of this process when `--expose-gc` gave it a `gc` (the server's
 * flags do: SERVER_NODE_FLAGS); otherwise does nothing. Returns the function that stops it.
 */
export function startIdleCollector(
  intervalMs = IDLE_CHECK_MS, gc = (globalThis as { gc?: GcFunction }).gc, heapUsed = () => getHeapStatistics().used_heap_size,
  young = youngCommitted,
): () => void {
  if (typeof gc !== 'function') return () => undefined;
  let mark = performance.eventLoopUtilization();
  const collector = new IdleCollector({
    gc: () => gc(),
    minorGc: () => gc({ type: 'minor' }),
    youngCommitted: young,
    heapUsed,
    utilization: () => {
      const now = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(now, mark).utilization;
      mark = now;
      return u;
    },
  });
  const timer = setInterval(() => collector.check(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
