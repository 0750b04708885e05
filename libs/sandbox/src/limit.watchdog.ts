import { performance } from 'node:perf_hooks';
import type { InvocationRun, LimitKind } from './invocation.run';

/** What the watchdog needs from the isolate running a run. */
export interface Watched {
  cpuNs(): bigint | null;
  breach(run: InvocationRun, kind: LimitKind): void;
}

/** Never look again sooner than this after a look that found the run within its budgets (ms). */
const MIN_RECHECK_MS = 1;

/**
 * Enforces wall-clock and CPU budgets of active runs from the host's event loop, alone: entries
 * into an isolate pass no `timeout` to isolated-vm. Its per-entry timeout cannot see code resumed
 * later (after a fetch, in a timer, a promise that never settles), which this watchdog can, since
 * it runs on the main thread while isolates run on their own; and each such timeout stays queued
 * on isolated-vm's timer thread until its deadline even once its entry has ended (a dead timer is
 * only dropped when it comes due). With the 30 s default, every run left a wake-up of that thread
 * 30 s later: about one per run under steady load, and some 500 a second for half a minute after a
 * burst, in a worker that had nothing left to do (issue 10). A breach disposes the isolate, which
 * stops code running in it as isolated-vm's timeout would.
 *
 * It wakes only when a limit can have been reached: one timer per run, set to the run's deadline
 * or to the moment its CPU budget could be spent, whichever comes first. A run uses its isolate's
 * CPU on one thread, so it cannot spend CPU faster than the clock runs: a look at a time when the
 * budget is not spent yet sets the next one to when the rest could be. Most runs end long before
 * either, so they cost a timer armed and cleared and no wake-up (a 10 ms ticker woke the worker
 * up to 100 times a second while runs came in, issue 10).
 */
export class LimitWatchdog {
  private readonly timers = new Map<InvocationRun, NodeJS.Timeout>();

  watch(run: InvocationRun, target: Watched): void {
    this.unwatch(run);
    this.arm(run, target, Math.min(run.deadline, performance.now() + run.limits.cpuMs) - performance.now());
  }

  unwatch(run: InvocationRun): void {
    const timer = this.timers.get(run);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(run);
  }

  /** Runs being watched (for tests). */
  get watching(): number {
    return this.timers.size;
  }

  private arm(run: InvocationRun, target: Watched, inMs: number): void {
    const timer = setTimeout(() => this.check(run, target), Math.max(MIN_RECHECK_MS, Math.ceil(inMs)));
    timer.unref();
    this.timers.set(run, timer);
  }

  private check(run: InvocationRun, target: Watched): void {
    this.timers.delete(run);
    if (run.finished || run.breach) return;
    const now = performance.now();
    if (now >= run.deadline) {
      target.breach(run, 'timeout');
      return;
    }
    // A CPU budget no smaller than the time limit cannot be the one a run breaks: its CPU starts
    // counting after its clock and cannot run faster. Such a run is watched for its deadline only,
    // so a run that spins until both are spent is named for its time limit, whatever the readings.
    if (run.limits.cpuMs >= run.limits.timeoutMs) {
      this.arm(run, target, run.deadline - now);
      return;
    }
    const cpu = target.cpuNs();
    // No reading: the isolate is gone (disposed), nothing is left running to stop.
    if (cpu === null) return;
    run.lastCpuNs = cpu;
    const budgetNs = BigInt(run.limits.cpuMs) * 1_000_000n;
    const spentNs = cpu - run.cpuStartNs;
    if (spentNs > budgetNs) {
      target.breach(run, 'cpu');
      return;
    }
    const cpuLeftMs = Number(budgetNs - spentNs) / 1e6;
    this.arm(run, target, Math.min(run.deadline - now, cpuLeftMs));
  }
}
