import type { EgressPolicy } from '@app/delivery';
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
}

/** FNV-1a: a stable, cheap spread of codeIds over workers. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Runs component code in supervised worker processes. A codeId always goes to the same worker, so
 * its warm isolate is reused; calls are pipelined. `invoke` and `describe` never reject for
 * anything the guest does (limits, errors, crashes come back as results); they reject only when
 * the supervisor is not started or already stopped. A worker that dies is replaced; only the calls
 * it was running fail, with kind `crash`.
 */
export class SandboxSupervisor {
  private handles: SandboxWorkerHandle[] = [];
  private starting: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: SandboxSupervisorOptions) {}

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
    this.handles = Array.from({ length: count }, () => new SandboxWorkerHandle({ script, config, heartbeatTimeoutMs: this.options.heartbeatTimeoutMs }));
    try {
      await Promise.all(this.handles.map((h) => h.start()));
    } catch (error) {
      await Promise.all(this.handles.map((h) => h.stop()));
      this.handles = [];
      this.starting = null;
      throw error;
    }
  }

  /** Runs one entry point of a component. */
  invoke(inv: SandboxInvocation): Promise<SandboxResult> {
    try {
      if (typeof inv.bundle !== 'string') throw new TypeError('invoke: bundle must be a string');
      return this.handleFor(inv.codeId).invoke(inv);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Loads a bundle and returns its definition as plain data, or why it cannot be loaded. */
  describe(codeId: string, bundle: string): Promise<DescribeOutcome> {
    try {
      return this.handleFor(codeId).describe(codeId, bundle);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Which worker (index) serves `codeId`. */
  workerIndexFor(codeId: string): number {
    const n = this.handles.length || Math.max(1, Math.floor(this.options.workers ?? 2));
    return hash(codeId) % n;
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

  private handleFor(codeId: string): SandboxWorkerHandle {
    if (this.stopped) throw new Error('the sandbox supervisor is stopped');
    if (this.handles.length === 0) throw new Error('the sandbox supervisor is not started: call start() first');
    if (typeof codeId !== 'string' || codeId === '') throw new TypeError('codeId must be a non-empty string');
    return this.handles[this.workerIndexFor(codeId)];
  }
}
