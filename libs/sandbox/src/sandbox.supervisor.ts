import type { EgressPolicy } from '@app/delivery';
import { CrashLoopBreaker } from './crash-loop.breaker';
import { failedResult } from './sandbox-error.factory';
import { SandboxWorkerHandle } from './sandbox-worker.handle';
import { resolveLimits, resolveOutputLimits } from './sandbox.limits';
import type { RunOutputLimits } from './guest/run-output-limits.guest';
import type { DescribeOutcome, WorkerConfig } from './sandbox.protocol';
import type { SandboxInvocation, SandboxLimits, SandboxResult } from './sandbox.types';
import { resolveWorkerScript } from './worker-script.locator';

/** How the sandbox runs. */
export interface SandboxSupervisorOptions {
  /** Worker processes at most (default 2). */
  workers?: number;
  /**
   * Worker processes started by `start()` (default: `workers`, all of them). With fewer, the
   * others start when load asks for them (see SandboxSupervisor), and with 0 the first call
   * starts the first worker.
   */
  minWorkers?: number;
  /** A worker beyond the first `minWorkers` with no call in flight for this long is stopped (ms, default 60000). */
  idleWorkerMs?: number;
  /** Where guests' `fetch` may go (besides the public internet): forwarded to every worker. */
  egress: EgressPolicy;
  /** Limits of invocations that set none (defaults: 128 MB, 30 s wall clock, 30 s CPU). */
  defaultLimits?: Partial<SandboxLimits>;
  /** Caps on what one run may emit and write (defaults: DEFAULT_RUN_OUTPUT_LIMITS). */
  outputLimits?: Partial<RunOutputLimits>;
  /** The compiled worker entry; found automatically (see resolveWorkerScript). */
  workerScript?: string;
  /** Warm isolates per worker before the least recently used is dropped (default 200). */
  maxIsolatesPerWorker?: number;
  /** A worker that does not answer pings for this long is killed and restarted (ms, default 15000). */
  heartbeatTimeoutMs?: number;
  /** Worker deaths in a row pinned on one instance before its calls are refused for a while (default 3). */
  crashLoopThreshold?: number;
  /** How long an instance's calls are refused once it reached the threshold (ms, default 60000). */
  crashLoopCooldownMs?: number;
  /** Warm isolates entered synchronously for single runs (default true; see `IsolatePoolOptions.syncEntries`). */
  syncEntries?: boolean;
  /** How long an instance whose synchronous entry was slow or stopped goes in asynchronously (ms, default 60000). */
  syncCooldownMs?: number;
}

/**
 * Calls in flight on a worker from which a new instance is placed on another (a worker not started
 * yet, while there is one), when workers start on demand.
 */
export const BUSY_WORKER_CALLS = 4;
/** Placements remembered when workers start on demand; past this, those with nothing in flight are forgotten. */
const MAX_PLACEMENTS = 50_000;

/** FNV-1a: a stable, cheap spread of instance ids over workers. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Runs component code in supervised worker processes. An instanceId always goes to the same worker,
 * so its warm isolate is reused; calls are pipelined. `invoke` and `describe` never reject for
 * anything the guest does (limits, errors, crashes come back as results); they reject only when
 * the supervisor is not started or already stopped. A worker that dies is replaced: the calls of
 * the instance that killed it fail with kind `crash`, the others in flight are re-run on the
 * replacement (see SandboxWorkerHandle). An instance that kills its worker
 * `crashLoopThreshold` times in a row has its calls refused for `crashLoopCooldownMs`, so it
 * cannot keep killing the worker it shares with others.
 *
 * With `minWorkers` below `workers`, workers start on demand, so an idle server holds no more
 * worker processes than it needs (each costs about 50 MB): an instance is placed, on its first
 * call, on the started worker with the fewest calls in flight, unless that worker has
 * {@link BUSY_WORKER_CALLS} or more and another worker can still be started, which then starts.
 * The placement sticks (the warm isolate lives there) until its worker is stopped: a worker beyond
 * the first `minWorkers` with no call in flight for `idleWorkerMs` is, and the instances placed
 * there are placed again at their next call. Otherwise every worker runs from the start and an
 * instance's worker is a hash of its id.
 */
export class SandboxSupervisor {
  private handles: SandboxWorkerHandle[] = [];
  /** Where each instance (describe: codeId) was placed, and its calls in flight: workers started on demand only. */
  private readonly placements = new Map<string, { index: number; inFlight: number }>();
  /** Per worker index: the timer that stops it once it has been idle for `idleWorkerMs` (on demand only). */
  private readonly idleTimers = new Map<number, NodeJS.Timeout>();
  private readonly breaker: CrashLoopBreaker;
  private starting: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: SandboxSupervisorOptions) {
    this.breaker = new CrashLoopBreaker(options.crashLoopThreshold ?? 3, options.crashLoopCooldownMs ?? 60_000);
  }

  /** Forks the first `minWorkers` workers and waits until each is ready (the others start on demand). Idempotent. */
  start(): Promise<void> {
    if (!this.starting) this.starting = this.boot();
    return this.starting;
  }

  private async boot(): Promise<void> {
    const script = resolveWorkerScript(this.options.workerScript);
    const config: WorkerConfig = {
      egress: this.options.egress,
      limits: resolveLimits(this.options.defaultLimits),
      output: resolveOutputLimits(this.options.outputLimits),
      maxIsolates: this.options.maxIsolatesPerWorker ?? 200,
      syncEntries: this.options.syncEntries ?? true,
      syncCooldownMs: this.options.syncCooldownMs,
    };
    const count = this.maxWorkers();
    const onCulprit = (instanceId: string) => this.breaker.crashed(instanceId);
    this.handles = Array.from({ length: count }, () => new SandboxWorkerHandle({ script, config, heartbeatTimeoutMs: this.options.heartbeatTimeoutMs, onCulprit }));
    try {
      await Promise.all(this.handles.slice(0, this.minWorkers()).map((h) => h.start()));
    } catch (error) {
      await Promise.all(this.handles.map((h) => h.stop()));
      this.handles = [];
      this.starting = null;
      throw error;
    }
  }

  /**
   * Runs one entry point of a component, on the warm isolate of `inv.instanceId` running `inv.codeId`.
   * `holdMs`: how long the call may wait for others to share its write to the worker (0: written
   * at the end of this turn). Worth it only for a call nobody waits on while more are due within
   * the hold: the calls of one instance written together go into its isolate as one entry.
   */
  invoke(inv: SandboxInvocation, holdMs = 0): Promise<SandboxResult> {
    try {
      if (typeof inv.bundle !== 'string') throw new TypeError('invoke: bundle must be a string');
      if (inv.eventJson !== undefined && typeof inv.eventJson !== 'string') throw new TypeError('invoke: eventJson must be a string');
      if (inv.bodyRaw !== undefined && typeof inv.bodyRaw !== 'string') throw new TypeError('invoke: bodyRaw must be a string');
      if (typeof inv.codeId !== 'string' || inv.codeId === '') throw new TypeError('codeId must be a non-empty string');
      this.check(inv.instanceId, 'instanceId');
      const refusal = this.breaker.refusal(inv.instanceId);
      if (refusal) return Promise.resolve(failedResult(refusal, 0));
      return this.call(inv.placement ?? inv.instanceId, (handle) => handle.invoke(inv, holdMs)).then((result) => {
        if (result.error?.kind !== 'crash') this.breaker.survived(inv.instanceId);
        return result;
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Loads a bundle on a throwaway isolate and returns its definition as plain data, or why it cannot be loaded. */
  describe(codeId: string, bundle: string): Promise<DescribeOutcome> {
    try {
      this.check(codeId, 'codeId');
      return this.call(codeId, (handle) => handle.describe(codeId, bundle));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Which worker (index) serves `instanceId` (describe: the codeId). With workers started on
   * demand: where it was placed, or where it would be placed now.
   */
  workerIndexFor(instanceId: string): number {
    if (!this.onDemand()) return hash(instanceId) % this.maxWorkers();
    return this.placements.get(instanceId)?.index ?? this.place();
  }

  /** Worker processes started so far (each may be being replaced right now). */
  startedWorkers(): number {
    return this.handles.filter((h) => h.started).length;
  }

  /** Pids of the current worker processes (a replaced worker gets a new pid). */
  workerPids(): (number | undefined)[] {
    return this.handles.map((h) => h.pid);
  }

  /** Times each worker was replaced after dying. */
  workerRestarts(): number[] {
    return this.handles.map((h) => h.restarts);
  }

  /** Heartbeat pings written to each worker so far (a worker that keeps answering is not pinged). */
  workerPings(): number[] {
    return this.handles.map((h) => h.pings);
  }

  /** Stops every worker; calls in flight resolve with a `crash` error. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    await Promise.all(this.handles.map((h) => h.stop()));
  }

  private check(key: string, name: 'instanceId' | 'codeId'): void {
    if (this.stopped) throw new Error('the sandbox supervisor is stopped');
    if (this.handles.length === 0) throw new Error('the sandbox supervisor is not started: call start() first');
    if (typeof key !== 'string' || key === '') throw new TypeError(`${name} must be a non-empty string`);
  }

  private maxWorkers(): number {
    return Math.max(1, Math.floor(this.options.workers ?? 2));
  }

  private minWorkers(): number {
    return Math.min(this.maxWorkers(), Math.max(0, Math.floor(this.options.minWorkers ?? this.maxWorkers())));
  }

  private onDemand(): boolean {
    return this.minWorkers() < this.maxWorkers();
  }

  /** Runs `run` on the worker serving `key`, starting it if it is not running yet. */
  private call<T>(key: string, run: (handle: SandboxWorkerHandle) => Promise<T>): Promise<T> {
    if (!this.onDemand()) return run(this.handles[hash(key) % this.handles.length]);
    let placement = this.placements.get(key);
    if (!placement) {
      if (this.placements.size >= MAX_PLACEMENTS) {
        for (const [k, p] of this.placements) if (p.inFlight === 0) this.placements.delete(k);
      }
      placement = { index: this.place(), inFlight: 0 };
      this.placements.set(key, placement);
    }
    const index = placement.index;
    const handle = this.handles[index];
    const idle = this.idleTimers.get(index);
    if (idle) clearTimeout(idle);
    this.idleTimers.delete(index);
    handle.ensureStarted();
    placement.inFlight++;
    const settled = placement;
    const over = () => {
      settled.inFlight--;
      if (handle.inFlight === 0 && index >= this.minWorkers()) this.retireWhenIdle(index);
    };
    // What `finally` does, as one reaction: it made two promises more per invocation.
    return run(handle).then((value) => {
      over();
      return value;
    }, (error: unknown) => {
      over();
      throw error;
    });
  }

  /** Stops worker `index` if it is still idle after `idleWorkerMs`, forgetting the instances placed on it. */
  private retireWhenIdle(index: number): void {
    if (this.stopped || this.idleTimers.has(index)) return;
    const timer = setTimeout(() => {
      this.idleTimers.delete(index);
      const handle = this.handles[index];
      if (this.stopped || handle.inFlight > 0) return;
      if (!handle.retire()) return;
      for (const [key, p] of this.placements) if (p.index === index) this.placements.delete(key);
    }, this.options.idleWorkerMs ?? 60_000);
    timer.unref();
    this.idleTimers.set(index, timer);
  }

  /**
   * The worker for an instance seen for the first time: the started one with the fewest calls in
   * flight, unless it is busy and a worker is left to start (then that one); the first if none started.
   */
  private place(): number {
    let best = -1;
    for (let i = 0; i < this.handles.length; i++) {
      const h = this.handles[i];
      if (h.started && (best < 0 || h.inFlight < this.handles[best].inFlight)) best = i;
    }
    const unstarted = this.handles.findIndex((h) => !h.started);
    if (best < 0) return Math.max(0, unstarted);
    if (this.handles[best].inFlight >= BUSY_WORKER_CALLS && unstarted >= 0) return unstarted;
    return best;
  }
}
