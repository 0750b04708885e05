import { ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { MessageBatcher } from './message.batcher';
import { requestChars, wireInvocation } from './invocation-config';
import { crashError, culpritCrashError, failedResult, invalidError } from './sandbox-error.factory';
import { DescribeOutcome, describeInstanceId, SupervisorMessage, WorkerConfig, WorkerMessage } from './sandbox.protocol';
import type { SandboxError, SandboxInvocation, SandboxResult } from './sandbox.types';
import { parseFatalLine } from './worker-fatal.line';
import { WORKER_NODE_FLAGS } from './worker-node.flags';

/** How one worker process is run. */
export interface WorkerHandleOptions {
  script: string;
  config: WorkerConfig;
  /** A worker that has not answered a ping for this long is killed and restarted (ms). Default 15000. */
  heartbeatTimeoutMs?: number;
  /** Told when a worker's death is pinned on an instance (its isolate wrote the fatal line). */
  onCulprit?: (instanceId: string) => void;
}

/**
 * A call waiting for its answer; `sent` once it was written to a process (only those can be lost
 * with it); `resends` counts the times it was re-sent after a worker died under it.
 */
type Pending = { sent: boolean; resends: number } & (
  | { kind: 'invoke'; inv: SandboxInvocation; resolve: (result: SandboxResult) => void; startedAt: number }
  | { kind: 'describe'; codeId: string; bundle: string; resolve: (outcome: DescribeOutcome) => void }
);

/**
 * How long a worker with calls in flight may stay silent before it is pinged (ms; a third of
 * `heartbeatTimeoutMs` when that is shorter). Any message from it counts as an answer, so a worker
 * that keeps returning results is never pinged, and the timer fires about once per period while
 * calls are in flight. It was a 1 s interval that pinged at every tick finding a call in flight,
 * results or not: at 10 events a second a wake-up of the server a second, and with each ping one
 * of the worker and one more of the server for its answer (issue 10).
 */
const HEARTBEAT_PERIOD_MS = 5000;
const STDERR_TAIL_CHARS = 4096;
/** codeIds remembered as sent; past this the set is reset and bundles are sent again. */
const MAX_KNOWN_CODE_IDS = 10_000;
const RESTART_WINDOW_MS = 10_000;
/**
 * Times a call is re-sent after its worker died for a cause that was not the call's own. Bounded so
 * a cause nobody can be blamed for (an external SIGKILL, a heartbeat kill) cannot loop forever.
 */
export const MAX_RESENDS = 3;
/**
 * Messages written to a worker in one IPC write at most (the batcher's own bound, which the
 * outbox a replacement worker is handed does not go through). A write is one JSON text, and V8's
 * strings stop at 512 MB: that outbox holds every call its predecessor died with, large bodies
 * included, and one write of them all threw from a timer and took the server down (1,300 requests
 * of 256 KB waiting for a hung source). A batch within this bound can still be too long: see `writeSome`.
 */
export const MAX_MESSAGES_PER_WRITE = 256;

/**
 * One supervised worker process. Calls are multiplexed over its IPC channel by message id and
 * pipelined; a bundle is sent once per codeId (the worker asks again if it has dropped it). When
 * the process dies, a new one takes over (with back-off if it keeps dying). If the worker named the
 * instance whose isolate killed it, that instance's calls in flight resolve with a `crash` error
 * and every other call in flight is re-sent to the new process: a bystander's run is not lost
 * for someone else's fault. With no culprit named, every call in flight is re-sent. A call is
 * re-sent at most {@link MAX_RESENDS} times, then it fails with a `crash` error.
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
  /** When the current process last sent anything (`performance.now()`). */
  private lastHeard = 0;
  /** Pings written so far. */
  pings = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private onReady: (() => void) | null = null;
  /** Whether a process was ever spawned (by start() or by the first call of a lazy handle). */
  private begun = false;
  /** Times the process was replaced after dying. */
  restarts = 0;

  constructor(private readonly options: WorkerHandleOptions) {}

  /** Pid of the current process (undefined while it is being replaced). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Whether the process was started (it may be being replaced right now). */
  get started(): boolean {
    return this.begun;
  }

  /** Calls written or waiting to be written, not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Starts the process unless it was started before; does not wait for it. Calls made meanwhile
   * wait in the outbox and are written as soon as the process exists (it reads its IPC channel
   * once ready). A process that dies during start-up is replaced like any other.
   */
  ensureStarted(): void {
    if (this.begun || this.stopping) return;
    this.begun = true;
    this.spawn();
  }

  /**
   * Ends the process of a handle with no call in flight (false, and nothing done, otherwise); the
   * next call starts a new one. For workers started on demand that went idle.
   */
  retire(): boolean {
    const child = this.child;
    if (this.pending.size > 0 || this.stopping || !child || this.restartTimer) return false;
    // Detached first: its exit is then not a death to replace or to charge anyone for.
    this.child = null;
    this.begun = false;
    this.stopHeartbeat();
    this.known.clear();
    if (child.connected) child.disconnect();
    const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
    killer.unref();
    child.once('exit', () => clearTimeout(killer));
    return true;
  }

  /** Starts the process; resolves when it is ready, rejects if it dies first. */
  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.begun = true;
      const child = this.spawn();
      this.onReady = () => {
        child.off('close', failedEarly);
        resolve();
      };
      const failedEarly = () => reject(new Error(`the sandbox worker exited during start-up: ${this.deathDetail(null, null)}`));
      child.once('close', failedEarly);
    });
  }

  /**
   * Runs `inv` on the worker. `holdMs`: how long its write may wait for company (see
   * {@link MessageBatcher.push}), taken only when the worker has no other call in flight: a worker
   * that is running something is awake anyway, and runs queued behind an instance's run in
   * progress share its next entry into the isolate without waiting here.
   */
  invoke(inv: SandboxInvocation, holdMs = 0): Promise<SandboxResult> {
    return new Promise<SandboxResult>((resolve) => {
      const id = ++this.nextId;
      const call: Pending = { sent: false, resends: 0, kind: 'invoke', inv, resolve, startedAt: performance.now() };
      const hold = this.pending.size === 0 ? holdMs : 0;
      this.pending.set(id, call);
      this.callStarted();
      this.send(id, call, hold);
    });
  }

  describe(codeId: string, bundle: string): Promise<DescribeOutcome> {
    return new Promise<DescribeOutcome>((resolve) => {
      const id = ++this.nextId;
      const call: Pending = { sent: false, resends: 0, kind: 'describe', codeId, bundle, resolve };
      this.pending.set(id, call);
      this.callStarted();
      this.send(id, call);
    });
  }

  /** Posts a call, without its bundle when the worker was sent that code before (and a stable configuration as text). */
  private send(id: number, call: Pending, holdMs = 0): void {
    if (call.kind === 'invoke') this.post({ t: 'invoke', id, inv: this.wire(call.inv) }, holdMs, requestChars(call.inv));
    else this.post({ t: 'describe', id, codeId: call.codeId, bundle: this.knows(call.codeId) ? '' : call.bundle });
  }

  /** `inv` as written to the worker: each bundle (its own, its chained steps') only when the worker was not sent it before. */
  private wire(inv: SandboxInvocation): SandboxInvocation {
    const wired = wireInvocation(inv, !this.knows(inv.codeId));
    if (!inv.chain) return wired;
    const links = inv.chain.links.map((link) => ({ name: link.name, inv: wireInvocation(link.inv, !this.knows(link.inv.codeId)) }));
    return Object.assign({}, wired, { chain: { name: inv.chain.name, links } });
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
      // 'exit', not 'close': after our own disconnect() Node never emits 'close'.
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      // Disconnecting makes the worker exit by itself; SIGKILL covers a worker stuck in a loop.
      if (child.connected) child.disconnect();
      const killer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(killer);
    }
    this.failPending(crashError('the sandbox was stopped'));
  }

  /** Records that the worker is being sent `codeId`'s bundle; true if it was sent before. */
  private knows(codeId: string): boolean {
    if (this.known.has(codeId)) return true;
    if (this.known.size >= MAX_KNOWN_CODE_IDS) this.known.clear();
    this.known.add(codeId);
    return false;
  }

  private post(message: SupervisorMessage, holdMs = 0, chars = 0): void {
    this.outgoing.push(message, holdMs, chars);
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
    if (batch.length <= MAX_MESSAGES_PER_WRITE) this.writeSome(child, batch);
    else for (let i = 0; i < batch.length; i += MAX_MESSAGES_PER_WRITE) this.writeSome(child, batch.slice(i, i + MAX_MESSAGES_PER_WRITE));
  }

  /**
   * One IPC write. A batch whose text would be too long for a string is written one message at a
   * time (halves of it were still hundreds of MB, which a worker reads and parses for seconds); a
   * message too long on its own fails its call. Nothing else is lost, and nothing throws out of here.
   */
  private writeSome(child: ChildProcess, batch: SupervisorMessage[]): void {
    try {
      child.send(batch);
    } catch (error) {
      // By name: the RangeError comes from Node's own realm, which a test runner's may not share.
      if ((error as Error | undefined)?.name !== 'RangeError') throw error;
      if (batch.length > 1) {
        for (const message of batch) this.writeSome(child, [message]);
        return;
      }
      const [message] = batch;
      const call = message.t === 'ping' ? undefined : this.pending.get(message.id);
      if (call) this.settle(message.id, call, invalidError('InvocationTooLargeError', `the call is too large to hand to a sandbox worker (${(error as Error).message})`));
    }
  }

  private spawn(): ChildProcess {
    this.stderrTail = '';
    const child = fork(this.options.script, [JSON.stringify(this.options.config)], {
      // SLUICE_SANDBOX_WORKER_EXEC_ARGV: extra node flags for the workers, for diagnosis (the
      // profile bench passes `--cpu-prof`, which NODE_OPTIONS may not carry).
      execArgv: [...WORKER_NODE_FLAGS, ...(process.env.SLUICE_SANDBOX_WORKER_EXEC_ARGV?.split(' ').filter(Boolean) ?? [])],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    // A new process has a period to say it is ready before a call in flight has it pinged.
    this.lastHeard = performance.now();
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    child.on('message', (batch: WorkerMessage[]) => {
      // Any answer shows its loop is not stuck: a ping written behind hundreds of MB of calls
      // waits until the worker has read them all, while it answers them one by one meanwhile.
      this.pingSentAt = null;
      this.lastHeard = performance.now();
      for (const message of batch) this.received(message);
    });
    // 'close' comes after stderr is drained, so the fatal line naming the culprit has been read.
    child.on('close', (code, signal) => this.exited(child, code, signal));
    // 'error' is followed by 'exit' when the process could not run; sends to a dying channel also land here.
    child.on('error', () => undefined);
    const waiting = this.outbox.splice(0);
    if (waiting.length) this.write(waiting);
    if (this.pending.size > 0) this.startHeartbeat();
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
    const fatal = parseFatalLine(this.stderrTail);
    if (fatal) return fatal.message;
    if (signal) return `the worker process was killed (${signal})`;
    if (code !== null) return `the worker process exited with code ${code}${this.stderrTail ? `: ${this.stderrTail.trim().split('\n').slice(-3).join(' | ')}` : ''}`;
    return 'the worker process ended';
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.child = null;
    this.stopHeartbeat();
    this.known.clear();
    // Calls not written yet were never seen by the dead process: they go to its replacement,
    // after the calls re-sent below (which were written before them).
    const unsent = this.outgoing.drain();
    if (this.stopping) {
      this.outbox.push(...unsent);
      return;
    }
    this.callsLost(parseFatalLine(this.stderrTail)?.culprit, this.deathDetail(code, signal));
    this.outbox.push(...this.outgoing.drain(), ...unsent);
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

  /**
   * Settles the calls that were in flight on a dead process: the culprit's fail, the others are
   * re-sent (posted, so they reach the replacement) until they run out of re-sends.
   */
  private callsLost(culprit: string | undefined, detail: string): void {
    let blamed = false;
    for (const [id, call] of this.pending) {
      if (!call.sent) continue;
      const instanceId = call.kind === 'invoke' ? call.inv.instanceId : describeInstanceId(call.codeId);
      if (culprit !== undefined && instanceId === culprit) {
        blamed = true;
        this.settle(id, call, culpritCrashError(detail));
      } else if (call.resends >= MAX_RESENDS) {
        this.settle(id, call, crashError(`${detail} (the call was re-sent ${call.resends} times and its worker died under it each time)`));
      } else {
        call.resends++;
        call.sent = false;
        // Its own step alone: a chained step that killed the worker is then run (and blamed) on its own.
        if (call.kind === 'invoke' && call.inv.chain) call.inv = Object.assign({}, call.inv, { chain: undefined });
        this.send(id, call);
      }
    }
    if (blamed && culprit !== undefined) this.options.onCulprit?.(culprit);
  }

  private failPending(error: SandboxError): void {
    for (const [id, call] of this.pending) this.settle(id, call, error);
  }

  private settle(id: number, call: Pending, error: SandboxError): void {
    this.pending.delete(id);
    if (call.kind === 'describe') call.resolve({ error });
    else call.resolve(failedResult(error, performance.now() - call.startedAt));
  }

  /**
   * The heartbeat runs only while calls are in flight: a worker nobody waits for costs nothing
   * when idle, and a worker stuck while idle is found by the heartbeat the next call starts.
   */
  private callStarted(): void {
    if (!this.heartbeat && this.child) this.startHeartbeat();
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    this.armHeartbeat(this.heartbeatPeriod());
  }

  private heartbeatTimeout(): number {
    return this.options.heartbeatTimeoutMs ?? 15_000;
  }

  private heartbeatPeriod(): number {
    return Math.min(HEARTBEAT_PERIOD_MS, Math.max(1, Math.floor(this.heartbeatTimeout() / 3)));
  }

  private armHeartbeat(ms: number): void {
    this.heartbeat = setTimeout(() => this.heartbeatTick(), Math.max(1, Math.ceil(ms)));
    this.heartbeat.unref();
  }

  /**
   * Nothing in flight: the heartbeat stops (the next call starts it). Otherwise a worker silent
   * for a period is pinged, and one that has not answered a ping within `heartbeatTimeoutMs` is
   * killed (its loop is stuck: it cannot even answer), the next look timed for the moment it
   * could be due. So a stuck worker is replaced at most a period plus the timeout after its last word.
   */
  private heartbeatTick(): void {
    this.heartbeat = null;
    if (this.pending.size === 0) {
      this.pingSentAt = null;
      return;
    }
    const period = this.heartbeatPeriod();
    const child = this.child;
    if (!child || !child.connected) {
      this.armHeartbeat(period);
      return;
    }
    const now = performance.now();
    if (this.pingSentAt !== null) {
      const timeout = this.heartbeatTimeout();
      if (now - this.pingSentAt >= timeout) {
        // The worker's event loop is stuck: replace it (the new process starts its own heartbeat).
        child.kill('SIGKILL');
        return;
      }
      this.armHeartbeat(this.pingSentAt + timeout - now);
      return;
    }
    const quiet = now - this.lastHeard;
    if (quiet < period) {
      this.armHeartbeat(period - quiet);
      return;
    }
    this.pingSentAt = now;
    this.pings++;
    this.post({ t: 'ping', id: 0 });
    this.armHeartbeat(this.heartbeatTimeout());
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearTimeout(this.heartbeat);
    this.heartbeat = null;
    this.pingSentAt = null;
  }
}
