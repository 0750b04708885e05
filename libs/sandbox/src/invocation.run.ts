import { performance } from 'node:perf_hooks';
import { DEFAULT_RUN_OUTPUT_LIMITS, RunOutputLimits } from './guest/run-output-limits.guest';
import type { SandboxLimits, SandboxLog } from './sandbox.types';

/** A limit the sandbox enforces by ending the run. */
export type LimitKind = 'timeout' | 'cpu' | 'memory';

/** Console lines kept per run on the host side, whatever the guest sends. */
const MAX_LOG_LINES = 1001;
const MAX_LOG_CHARS = 17 * 1024;
/**
 * Characters of console output kept per run, all lines together. Every run's logs go into its
 * run record in the log, so without a total a run could write 1,001 x 17 KB into every record.
 */
export const MAX_RUN_LOG_CHARS = 256 * 1024;
const LOG_LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);

/**
 * Host-side state of one invocation (or of a load or describe): its budgets, its logs and the
 * timers it armed. Only one run is active per isolate at a time, so CPU time read from the
 * isolate belongs to this run alone.
 */
export class InvocationRun {
  readonly startedAt = performance.now();
  readonly deadline: number;
  cpuStartNs = 0n;
  /** Latest CPU reading, kept so a result can report CPU time after the isolate is gone. */
  lastCpuNs = 0n;
  readonly logs: SandboxLog[] = [];
  private logChars = 0;
  private logsTruncated = false;
  readonly timers = new Map<number, NodeJS.Timeout>();
  /** Repeating timers whose previous tick is still running in the isolate (ticks are skipped, not queued). */
  readonly firing = new Set<number>();
  fetchesInFlight = 0;
  /** Streamed response bodies being relayed to the guest, by request id; cancelled when the run ends. */
  readonly streams = new Map<number, { cancel(): void; resume(): void }>();
  breach: LimitKind | null = null;
  finished = false;

  constructor(
    readonly seq: number,
    readonly limits: SandboxLimits,
    /** Caps on what the run may emit and write, checked in the guest and again on its result. */
    readonly output: RunOutputLimits = DEFAULT_RUN_OUTPUT_LIMITS,
  ) {
    this.deadline = this.startedAt + limits.timeoutMs;
  }

  remainingMs(): number {
    return Math.max(0, this.deadline - performance.now());
  }

  cpuMs(): number {
    return Number(this.lastCpuNs - this.cpuStartNs) / 1e6;
  }

  durationMs(): number {
    return performance.now() - this.startedAt;
  }

  log(level: unknown, message: unknown): void {
    if (this.logs.length >= MAX_LOG_LINES || this.logsTruncated || typeof message !== 'string') return;
    let text = message.length > MAX_LOG_CHARS ? message.slice(0, MAX_LOG_CHARS) : message;
    const room = MAX_RUN_LOG_CHARS - this.logChars;
    if (text.length > room) {
      text = text.slice(0, room);
      this.logsTruncated = true;
    }
    this.logChars += text.length;
    this.logs.push({
      level: typeof level === 'string' && LOG_LEVELS.has(level) ? (level as SandboxLog['level']) : 'log',
      message: text,
      ts: Date.now(),
    });
    if (this.logsTruncated) {
      this.logs.push({ level: 'warn', message: `logs truncated: a run keeps at most ${MAX_RUN_LOG_CHARS / 1024} KB of console output`, ts: Date.now() });
    }
  }

  /** Ends the run: timers are disarmed and late callbacks are ignored from now on. */
  finish(): void {
    this.finished = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const stream of [...this.streams.values()]) stream.cancel();
    this.streams.clear();
  }
}
