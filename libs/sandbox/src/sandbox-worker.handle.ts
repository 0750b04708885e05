import { ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { MessageBatcher } from './message.batcher';
import { crashError } from './sandbox-error.factory';
import { DescribeOutcome, FATAL_MARKER, SupervisorMessage, WorkerConfig, WorkerMessage } from './sandbox.protocol';
import type { SandboxInvocation, SandboxResult } from './sandbox.types';

/** How one worker process is run. */
export interface WorkerHandleOptions {
  script: string;
  config: WorkerConfig;
  /** A worker that has not answered a ping for this long is killed and restarted (ms). Default 15000. */
  heartbeatTimeoutMs?: number;
}

/** A call waiting for its answer; `sent` once it was written to a process (only those can be lost with it). */
type Pending = { sent: boolean } & (
  | { kind: 'invoke'; inv: SandboxInvocation; resolve: (result: SandboxResult) => void; startedAt: number }
  | { kind: 'describe'; codeId: string; bundle: string; resolve: (outcome: DescribeOutcome) => void }
);

const HEARTBEAT_PERIOD_MS = 1000;
const STDERR_TAIL_CHARS = 4096;
/** codeIds remembered as sent; past this the set is reset and bundles are sent again. */
const MAX_KNOWN_CODE_IDS = 10_000;
const RESTART_WINDOW_MS = 10_000;

/**
 * One supervised worker process. Calls are multiplexed over its IPC channel by message id and
 * pipelined; a bundle is sent once per codeId (the worker asks again if it has dropped it). When
 * the process dies, exactly the calls in flight on it resolve with a `crash` error and a new
 * process takes over, with back-off if it keeps dying.
 */
export class SandboxWorkerHandle {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private readonly known = new Set<string>();
  private readonly outbox: SupervisorMessage[] = [];
  private readonly outgoing = new MessageBatcher<SupervisorMessage>((batch) => this.write(batch));
  private readonly deaths: number[] = [];
  private nextId = 0;
  private stderrTail = '';
  private stopping = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private pingSentAt: number | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private onReady: (() => void) | null = null;
  /** Times the process was replaced after dying. */
  restarts = 0;

  constructor(private readonly options: WorkerHandleOptions) {}

  /** Pid of the current process (undefined while it is being replaced). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process; resolves when it is ready, rejects if it dies first. */
  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const child = this.spawn();
      this.onReady = () => {
        child.off('exit', failedEarly);
        resolve();
      };
      const failedEarly = () => reject(new Error(`the sandbox worker exited during start-up: ${this.deathDetail(null, null)}`));
      child.once('exit', failedEarly);
    });
  }

  invoke(inv: SandboxInvocation): Promise<SandboxResult> {
    return new Promise<SandboxResult>((resolve) => {
      const id = ++this.nextId;
      this.pending.set(id, { sent: false, kind: 'invoke', inv, resolve, startedAt: performance.now() });
      this.post({ t: 'invoke', id, inv: this.knows(inv.codeId) ? { ...inv, bundle: '' } : inv });
    });
  }

  describe(codeId: string, bundle: string): Promise<DescribeOutcome> {
    return new Promise<DescribeOutcome>((resolve) => {
      const id = ++this.nextId;
      this.pending.set(id, { sent: false, kind: 'describe', codeId, bundle, resolve });
      this.post({ t: 'describe', id, codeId, bundle: this.knows(codeId) ? '' : bundle });
    });
  }

  /** Stops the process; calls still in flight resolve with a `crash` error. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.stopHeartbeat();
    this.outgoing.drain();
    this.outbox.length = 0;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      // Disconnecting makes the worker exit by itself; SIGKILL covers a worker stuck in a loop.
      if (child.connected) child.disconnect();
      const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(killer);
    }
    this.failPending('the sandbox was stopped', false);
  }

  /** Records that the worker is being sent `codeId`'s bundle; true if it was sent before. */
  private knows(codeId: string): boolean {
    if (this.known.has(codeId)) return true;
    if (this.known.size >= MAX_KNOWN_CODE_IDS) this.known.clear();
    this.known.add(codeId);
    return false;
  }

  private post(message: SupervisorMessage): void {
    this.outgoing.push(message);
  }

  private write(batch: SupervisorMessage[]): void {
    const child = this.child;
    if (!child || !child.connected) {
      this.outbox.push(...batch);
      return;
    }
    for (const message of batch) {
      const call = message.t === 'ping' ? undefined : this.pending.get(message.id);
      if (call) call.sent = true;
    }
    child.send(batch);
  }

  private spawn(): ChildProcess {
    this.stderrTail = '';
    const child = fork(this.options.script, [JSON.stringify(this.options.config)], {
      execArgv: ['--no-node-snapshot'],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    child.on('message', (batch: WorkerMessage[]) => {
      for (const message of batch) this.received(message);
    });
    child.on('exit', (code, signal) => this.exited(child, code, signal));
    // 'error' is followed by 'exit' when the process could not run; sends to a dying channel also land here.
    child.on('error', () => undefined);
    const waiting = this.outbox.splice(0);
    if (waiting.length) child.send(waiting);
    this.startHeartbeat();
    return child;
  }

  private received(message: WorkerMessage): void {
    switch (message.t) {
      case 'ready':
        this.onReady?.();
        this.onReady = null;
        return;
      case 'pong':
        this.pingSentAt = null;
        return;
      case 'result': {
        const call = this.pending.get(message.id);
        if (call?.kind !== 'invoke') return;
        this.pending.delete(message.id);
        call.resolve(message.result);
        return;
      }
      case 'described': {
        const call = this.pending.get(message.id);
        if (call?.kind !== 'describe') return;
        this.pending.delete(message.id);
        call.resolve(message.outcome);
        return;
      }
      case 'needBundle': {
        const call = this.pending.get(message.id);
        if (!call) return;
        this.known.add(call.kind === 'invoke' ? call.inv.codeId : call.codeId);
        if (call.kind === 'invoke') this.post({ t: 'invoke', id: message.id, inv: call.inv });
        else this.post({ t: 'describe', id: message.id, codeId: call.codeId, bundle: call.bundle });
        return;
      }
    }
  }

  private deathDetail(code: number | null, signal: NodeJS.Signals | null): string {
    const fatal = this.stderrTail.lastIndexOf(FATAL_MARKER);
    if (fatal !== -1) return this.stderrTail.slice(fatal + FATAL_MARKER.length).split('\n')[0].trim();
    if (signal) return `the worker process was killed (${signal})`;
    if (code !== null) return `the worker process exited with code ${code}${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-3).join(' | ')}` : ''}`;
    return 'the worker process ended';
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.child = null;
    this.stopHeartbeat();
    this.known.clear();
    // Calls not written yet were never seen by the dead process: they go to its replacement.
    this.outbox.push(...this.outgoing.drain());
    this.failPending(this.deathDetail(code, signal), true);
    if (this.stopping) return;
    const now = performance.now();
    this.deaths.push(now);
    while (this.deaths.length && this.deaths[0] < now - RESTART_WINDOW_MS) this.deaths.shift();
    // A worker that keeps dying (a component crashing it on every run) is restarted with growing
    // delays so the supervisor does not spin; calls made meanwhile wait in the outbox.
    const delay = this.deaths.length <= 3 ? 0 : Math.min(5000, 100 * 2 ** (this.deaths.length - 3));
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      this.restarts++;
      this.spawn();
    }, delay);
  }

  private failPending(detail: string, onlySent: boolean): void {
    const calls: Pending[] = [];
    for (const [id, call] of this.pending) {
      if (onlySent && !call.sent) continue;
      calls.push(call);
      this.pending.delete(id);
    }
    const error = crashError(detail);
    for (const call of calls) {
      if (call.kind === 'describe') call.resolve({ error });
      else {
        call.resolve({
          ok: false,
          error,
          emits: [],
          logs: [{ level: 'error', message: `${error.name}: ${error.message}`, ts: Date.now() }],
          dbWrites: [],
          durationMs: performance.now() - call.startedAt,
          cpuMs: 0,
        });
      }
    }
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    const timeout = this.options.heartbeatTimeoutMs ?? 15_000;
    this.heartbeat = setInterval(() => {
      const child = this.child;
      if (!child || !child.connected) return;
      if (this.pingSentAt === null) {
        this.pingSentAt = performance.now();
        this.post({ t: 'ping', id: 0 });
      } else if (performance.now() - this.pingSentAt > timeout) {
        // The worker's event loop is stuck (it cannot even answer a ping): replace it.
        child.kill('SIGKILL');
      }
    }, Math.min(HEARTBEAT_PERIOD_MS, timeout));
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.pingSentAt = null;
  }
}
