import { performance } from 'node:perf_hooks';
import type { InvocationRun, LimitKind } from './invocation.run';

/** What the watchdog needs from the isolate running a run. */
export interface Watched {
  cpuNs(): bigint | null;
  breach(run: InvocationRun, kind: LimitKind): void;
}

/**
 * Enforces wall-clock and CPU budgets of active runs from the host's event loop. isolated-vm's
 * per-entry timeout cannot see code resumed later (after a fetch, in a timer, a promise that never
 * settles); this ticker can, because it runs on the main thread while isolates run on their own.
 */
export class LimitWatchdog {
  private readonly watched = new Map<InvocationRun, Watched>();
  private ticker: NodeJS.Timeout | null = null;

  constructor(private readonly periodMs = 10) {}

  watch(run: InvocationRun, target: Watched): void {
    this.watched.set(run, target);
    if (!this.ticker) {
      this.ticker = setInterval(() => this.check(), this.periodMs);
      this.ticker.unref();
    }
  }

  unwatch(run: InvocationRun): void {
    this.watched.delete(run);
  }

  private check(): void {
    // Stopped lazily, on a tick that finds nothing to watch: back-to-back runs do not re-arm it each time.
    if (this.watched.size === 0 && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = null;
      return;
    }
    const now = performance.now();
    for (const [run, target] of this.watched) {
      if (now >= run.deadline) {
        target.breach(run, 'timeout');
        continue;
      }
      const cpu = target.cpuNs();
      if (cpu === null) continue;
      run.lastCpuNs = cpu;
      if (cpu - run.cpuStartNs > BigInt(run.limits.cpuMs) * 1_000_000n) target.breach(run, 'cpu');
    }
  }
}
