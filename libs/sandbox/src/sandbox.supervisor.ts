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
  /** Worker processes (default 2). */
  workers?: number;
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
}

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
 */
export class SandboxSupervisor {
  private handles: SandboxWorkerHandle[] = [];
  private readonly breaker: CrashLoopBreaker;
  private starting: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: SandboxSupervisorOptions) {
    this.breaker = new CrashLoopBreaker(options.crashLoopThreshold ?? 3, options.crashLoopCooldownMs ?? 60_000);
  }

  /** Forks the workers and waits until each is ready. Idempotent. */
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
    };
    const count = Math.max(1, Math.floor(this.options.workers ?? 2));
    const onCulprit = (instanceId: string) => this.breaker.crashed(instanceId);
    this.handles = Array.from({ length: count }, () => new SandboxWorkerHandle({ script, config, heartbeatTimeoutMs: this.options.heartbeatTimeoutMs, onCulprit }));
    try {
      await Promise.all(this.handles.map((h) => h.start()));
    } catch (error) {
      await Promise.all(this.handles.map((h) => h.stop()));
      this.handles = [];
      this.starting = null;
      throw error;
    }
  }

  /** Runs one entry point of a component, on the warm isolate of `inv.instanceId` running `inv.codeId`. */
  invoke(inv: SandboxInvocation): Promise<SandboxResult> {
    try {
      if (typeof inv.bundle !== 'string') throw new TypeError('invoke: bundle must be a string');
      if (typeof inv.codeId !== 'string' || inv.codeId === '') throw new TypeError('codeId must be a non-empty string');
      const handle = this.handleFor(inv.instanceId, 'instanceId');
      const refusal = this.breaker.refusal(inv.instanceId);
      if (refusal) return Promise.resolve(failedResult(refusal, 0));
      return handle.invoke(inv).then((result) => {
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
      return this.handleFor(codeId, 'codeId').describe(codeId, bundle);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Which worker (index) serves `instanceId` (describe: the codeId). */
  workerIndexFor(instanceId: string): number {
    const n = this.handles.length || Math.max(1, Math.floor(this.options.workers ?? 2));
    return hash(instanceId) % n;
  }

  /** Pids of the current worker processes (a replaced worker gets a new pid). */
  workerPids(): (number | undefined)[] {
    return this.handles.map((h) => h.pid);
  }

  /** Times each worker was replaced after dying. */
  workerRestarts(): number[] {
    return this.handles.map((h) => h.restarts);
  }

  /** Stops every worker; calls in flight resolve with a `crash` error. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.handles.map((h) => h.stop()));
  }

  private handleFor(key: string, name: 'instanceId' | 'codeId'): SandboxWorkerHandle {
    if (this.stopped) throw new Error('the sandbox supervisor is stopped');
    if (this.handles.length === 0) throw new Error('the sandbox supervisor is not started: call start() first');
    if (typeof key !== 'string' || key === '') throw new TypeError(`${name} must be a non-empty string`);
    return this.handles[this.workerIndexFor(key)];
  }
}
