import { performance } from 'node:perf_hooks';
import { ComponentIsolate, PreludeScript, SYNC_ABANDONED, SYNC_BUDGET_MS } from './component.isolate';
import type { EgressFunction, StreamEgressFunction } from './egress';
import { EvictionTimer } from './eviction.timer';
import { guestPreludeSource } from './guest-prelude.loader';
import type { GuestOutcome } from './guest-result.parser';
import type { RunOutputLimits } from './guest/run-output-limits.guest';
import { requestChars } from './invocation-config';
import { InvocationRun } from './invocation.run';
import { LimitWatchdog } from './limit.watchdog';
import { syncWatchdog } from './sync-watchdog';
import { crashError } from './sandbox-error.factory';
import { resolveLimits } from './sandbox.limits';
import { type DescribeOutcome, describeInstanceId } from './sandbox.protocol';
import type { SandboxError, SandboxInvocation, SandboxLimits, SandboxResult } from './sandbox.types';

/** Returned by `invoke` when the pool does not hold the code and the invocation carried none. */
export const NEED_BUNDLE = Symbol('needBundle');

/** Tuning of an {@link IsolatePool}. */
export interface IsolatePoolOptions {
  /** Limits of invocations that do not set their own. */
  limits: SandboxLimits;
  egress: EgressFunction;
  /** Streamed requests (Node's `http`/`https` in the guest), through the same guard. */
  streamEgress: StreamEgressFunction;
  /** Caps on what one run may emit and write (defaults: DEFAULT_RUN_OUTPUT_LIMITS). */
  output?: RunOutputLimits;
  /** Instances kept (with their isolate) before the least recently used is dropped; also the number of bundles kept. */
  maxIsolates: number;
  /** A component unused this long is dropped (ms). Default 10 minutes. */
  idleMs?: number;
  /** Share of the memory limit a warm isolate may keep in use between runs before it is recycled. Default 0.5. */
  heapRecycleRatio?: number;
  /**
   * A run alone on a warm isolate enters it synchronously, on this thread (`ComponentIsolate.invokeSync`),
   * while its instance has not been slow (see {@link SYNC_SLOW_MS}). Default true; false enters
   * every run through isolated-vm's thread.
   */
  syncEntries?: boolean;
  /** How long an instance whose synchronous entry was slow or stopped is entered asynchronously before it is tried again (ms). Default 60000. */
  syncCooldownMs?: number;
}

interface PoolEntry {
  /** `<codeId> <instanceId>`: the isolate belongs to one deployed instance running one code version. */
  readonly key: string;
  /** Named in the worker's fatal line if this isolate takes the process down. */
  readonly instanceId: string;
  readonly bundle: string;
  component: ComponentIsolate | null;
  /** The instance's account (`SandboxInvocation.account`), or {@link NO_ACCOUNT}. */
  readonly account: string;
  /** Runs of one instance are serialised: each sees the isolate to itself. */
  tail: Promise<unknown>;
  /** Runs queued or running. */
  busy: number;
  /** Invocations waiting to run together, once the entry's runs before them are over (see `invoke`). */
  openBatch: BatchItem[] | null;
  /** Characters of the events' texts in `openBatch` (see {@link MAX_BATCH_EVENT_CHARS}). */
  openBatchChars: number;
  lastUsed: number;
  /**
   * Before this moment (`performance.now()`) the instance's runs are entered asynchronously: set
   * when one of its synchronous entries used more than {@link SYNC_SLOW_MS} of CPU or was stopped
   * at the budget, for `syncCooldownMs`; Infinity when synchronous entries are off.
   */
  syncAfter: number;
  /**
   * Synchronous entries of the instance since its last slow one (Infinity before any): a slow
   * entry with fewer than {@link SYNC_SLOW_SPACING} in between sends the instance to the cool-down.
   */
  syncsSinceSlow: number;
}

const HEAP_CHECK_EVERY = 16;

/** Most invocations run in one entry into an isolate. */
const MAX_BATCH = 64;
/**
 * Characters of request text (`eventJson`, `bodyRaw`) one batch takes at most: more runs wait for the next.
 * A batch's invocations enter the isolate as one text and leave as one; past 128 KB V8 allocates a
 * string in its large-object space, at about 70 times the cost per byte of a smaller one (and each
 * such string brings the next full collection closer). With bodies of 64 KB at 200 requests a
 * second, a worker that fell behind made batches of several of them, fell further behind for it,
 * and spent 15 ms of CPU per run.
 */
const MAX_BATCH_EVENT_CHARS = 48 * 1024;
/** A batch starts no further invocation once it has run this long (ms). */
const BATCH_SLICE_MS = 10;
/** Runs whose time or CPU limit is shorter than this are never batched (ms). */
const MIN_BATCH_LIMIT_MS = 20 * BATCH_SLICE_MS;
/** The account of instances whose invocations named none: another account than any real one. */
const NO_ACCOUNT = '\u0000none';
/**
 * A synchronous entry whose guest used more CPU than this is slow (ms): a second slow one within
 * {@link SYNC_SLOW_SPACING} synchronous entries moves its instance to asynchronous entries for a
 * while (`syncCooldownMs`). An entry stopped at the budget does at once.
 */
const SYNC_SLOW_MS = 5;
/**
 * Quick synchronous entries after which a slow one counts as the first again. Until stop 65 one
 * slow entry was enough, and in two profile runs of six on a busy machine the bench's trivial
 * source was entered asynchronously through whole phases (its worker's main thread 2.8-3.0
 * wake-ups per event instead of 1.0; issue 10): a single entry over 5 ms of CPU (code met cold,
 * a collection in the isolate) cost the next 60 s. An instance slow every time still goes after
 * its first slow entry past a cool-down: no quick entry came in between.
 */
const SYNC_SLOW_SPACING = 64;
/** Runs whose time or CPU limit is shorter than this are never entered synchronously (ms): the budget must not decide their fate. */
const MIN_SYNC_LIMIT_MS = 10 * SYNC_BUDGET_MS;

interface BatchItem {
  inv: SandboxInvocation;
  limits: SandboxLimits;
  resolve(result: SandboxResult): void;
}

function errorLine(error: SandboxError): string {
  return error.stack ?? `${error.name}: ${error.message}`;
}

/**
 * The warm isolates of one worker process: one per deployed instance and code version
 * (instanceId, codeId), reused across that instance's invocations with a fresh `this` each time,
 * recreated after a limit breach, recycled when its heap grows, and evicted least-recently-used.
 * Two instances never share an isolate, so module state and `globalThis` never cross between
 * them; only the bundle text is shared, by codeId. `describe` runs on a throwaway isolate.
 * Invocations of one instance run one after the other, so CPU time and memory are attributed to
 * the run that used them and a breach only ends that run; those that queue up behind each other
 * go into the isolate together (`runBatch`), which keeps both true.
 */
export class IsolatePool {
  private readonly entries = new Map<string, PoolEntry>();
  /** Bundles by codeId, least recently used first: the same code text, whoever deploys it. */
  private readonly bundles = new Map<string, string>();
  private readonly watchdog = new LimitWatchdog();
  private readonly prelude: PreludeScript = { source: guestPreludeSource() };
  /** Looks for idle instances when the least recently used one can be idle long enough, not on an interval. */
  private readonly sweeper = new EvictionTimer(() => this.evictIdle());
  private readonly idleMs: number;
  private seq = 0;
  /** Runs queued or running in this worker, every instance's. */
  private inFlight = 0;
  /** Instances held, by account: runs are entered synchronously only while one account holds them all. */
  private readonly accounts = new Map<string, number>();

  constructor(private readonly options: IsolatePoolOptions) {
    this.idleMs = options.idleMs ?? 10 * 60_000;
  }

  /** Instances held (warm or waiting to be reloaded). */
  get size(): number {
    return this.entries.size;
  }

  /** Runs one invocation; {@link NEED_BUNDLE} when the code is unknown here and `inv.bundle` is empty. */
  invoke(inv: SandboxInvocation): Promise<SandboxResult> | typeof NEED_BUNDLE {
    const entry = this.entryFor(inv.instanceId, inv.codeId, inv.bundle, inv.account);
    if (!entry) return NEED_BUNDLE;
    if (inv.entry !== 'run') {
      // Runs sent after this one must not join a batch queued before it.
      entry.openBatch = null;
      return this.enqueue(entry, () => this.runInvocation(entry, inv, undefined, true));
    }
    // Runs that queue up behind the instance's run in progress wait together and go into the
    // isolate as one batch (runBatch). A run that finds the instance idle is a batch of one and
    // goes in at once, as before.
    const limits = resolveLimits(this.options.limits, inv.limits);
    return new Promise<SandboxResult>((resolve) => {
      const item: BatchItem = { inv, limits, resolve };
      const chars = requestChars(inv);
      const open = entry.openBatch;
      if (open && open.length < MAX_BATCH && entry.openBatchChars + chars <= MAX_BATCH_EVENT_CHARS && sameLimits(open[0].limits, limits)) {
        open.push(item);
        entry.openBatchChars += chars;
        return;
      }
      const batch = [item];
      entry.openBatch = batch;
      entry.openBatchChars = chars;
      void this.enqueue(entry, () => {
        if (entry.openBatch === batch) entry.openBatch = null;
        return this.runBatch(entry, batch);
      });
    });
  }

  /**
   * Loads the code on a throwaway isolate and describes its definition. Never on an instance's
   * isolate: whoever describes code must not see module state that someone's runs left there.
   */
  describe(codeId: string, bundle: string): Promise<DescribeOutcome> | typeof NEED_BUNDLE {
    const code = this.bundleFor(codeId, bundle);
    if (code === null) return NEED_BUNDLE;
    const entry = this.newEntry(describeInstanceId(codeId), code);
    return this.enqueue(entry, () => this.runDescribe(entry)).finally(() => entry.component?.dispose());
  }

  /** Disposes every isolate (worker shutdown). */
  dispose(): void {
    this.sweeper.stop();
    for (const entry of this.entries.values()) entry.component?.dispose();
    this.entries.clear();
    this.accounts.clear();
  }

  private entryFor(instanceId: string, codeId: string, bundle: string, account = NO_ACCOUNT): PoolEntry | null {
    const key = `${codeId} ${instanceId}`;
    const known = this.entries.get(key);
    if (known) {
      // Re-inserting keeps the Map in least-recently-used order.
      this.entries.delete(key);
      this.entries.set(key, known);
      return known;
    }
    const code = this.bundleFor(codeId, bundle);
    if (code === null) return null;
    const entry = this.newEntry(instanceId, code, key, account);
    this.entries.set(key, entry);
    this.accounts.set(account, (this.accounts.get(account) ?? 0) + 1);
    this.evictOverflow();
    this.sweeper.lookBy(entry.lastUsed + this.idleMs);
    return entry;
  }

  /** Drops an instance (its isolate disposed by the caller). */
  private forget(entry: PoolEntry): void {
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    const left = (this.accounts.get(entry.account) ?? 1) - 1;
    if (left > 0) this.accounts.set(entry.account, left);
    else this.accounts.delete(entry.account);
  }

  /** The instance's runs go in asynchronously for `syncCooldownMs` (its synchronous entry was slow, or stopped). */
  private coolDown(entry: PoolEntry): void {
    entry.syncAfter = performance.now() + (this.options.syncCooldownMs ?? 60_000);
    // Past the cool-down, a slow entry sends it back at once, whatever sent it there.
    entry.syncsSinceSlow = 0;
  }

  /** True while every instance this worker holds belongs to `account` (a real one). */
  private soleAccount(account: string): boolean {
    return account !== NO_ACCOUNT && this.accounts.size === 1 && this.accounts.has(account);
  }

  private newEntry(instanceId: string, bundle: string, key = instanceId, account = NO_ACCOUNT): PoolEntry {
    return { key, instanceId, account, bundle, component: null, tail: Promise.resolve(), busy: 0, openBatch: null, openBatchChars: 0, lastUsed: performance.now(), syncAfter: this.options.syncEntries === false ? Infinity : 0, syncsSinceSlow: Infinity };
  }

  /**
   * Keeps a bundle sent for a call that may not run it (a chained step after the step where the
   * chain stopped): the supervisor counts it as sent, and leaves it out of the next call's message.
   */
  keepBundle(codeId: string, bundle: string): void {
    if (bundle) this.bundleFor(codeId, bundle);
  }

  /** The code of `codeId`: the bundle given (remembered for later) or the one kept; null if neither. */
  private bundleFor(codeId: string, bundle: string): string | null {
    const kept = bundle || this.bundles.get(codeId);
    if (!kept) return null;
    this.bundles.delete(codeId);
    this.bundles.set(codeId, kept);
    for (const oldest of this.bundles.keys()) {
      if (this.bundles.size <= this.options.maxIsolates) break;
      this.bundles.delete(oldest);
    }
    return kept;
  }

  private enqueue<T>(entry: PoolEntry, task: () => Promise<T>): Promise<T> {
    entry.busy++;
    this.inFlight++;
    const result = entry.tail.then(task);
    entry.tail = result.then(
      () => this.settled(entry),
      () => this.settled(entry),
    );
    return result;
  }

  private settled(entry: PoolEntry): void {
    entry.busy--;
    this.inFlight--;
    entry.lastUsed = performance.now();
  }

  private evictOverflow(): void {
    for (const entry of this.entries.values()) {
      if (this.entries.size <= this.options.maxIsolates) return;
      if (entry.busy > 0) continue;
      entry.component?.dispose();
      this.forget(entry);
    }
  }

  /**
   * Drops the instances unused for `idleMs`; returns when the next one can be (none left: never).
   * A busy instance is looked at again `idleMs` later.
   */
  private evictIdle(): number | undefined {
    const now = performance.now();
    const cutoff = now - this.idleMs;
    let next: number | undefined;
    for (const entry of this.entries.values()) {
      if (entry.busy === 0 && entry.lastUsed < cutoff) {
        entry.component?.dispose();
        this.forget(entry);
        continue;
      }
      const due = entry.busy > 0 ? now + this.idleMs : entry.lastUsed + this.idleMs;
      if (next === undefined || due < next) next = due;
    }
    return next;
  }

  /** The entry's isolate if it is alive and has the right memory limit, else a new one. */
  private isolateFor(entry: PoolEntry, memoryMb: number): ComponentIsolate {
    const current = entry.component;
    if (current && current.alive && current.memoryMb === memoryMb) return current;
    current?.dispose();
    entry.component = new ComponentIsolate(memoryMb, { prelude: this.prelude, egress: this.options.egress, streamEgress: this.options.streamEgress }, entry.instanceId);
    return entry.component;
  }

  /**
   * Runs `work` as `run` on the entry's isolate, loading the bundle first on a fresh isolate. The
   * watchdog covers the load too: a bundle whose top-level code never ends is a timeout like any other.
   */
  private async session<T>(entry: PoolEntry, run: InvocationRun, work: (c: ComponentIsolate) => Promise<T>, failed: (e: SandboxError) => T): Promise<T> {
    let component: ComponentIsolate;
    try {
      component = this.isolateFor(entry, run.limits.memoryMb);
    } catch (error) {
      entry.component = null;
      return failed(crashError(`no isolate could be created: ${error instanceof Error ? error.message : String(error)}`));
    }
    component.attach(run);
    this.watchdog.watch(run, component);
    let loadFailed = false;
    try {
      if (!component.loaded) {
        const loadError = await component.load(entry.bundle, run);
        if (loadError) {
          loadFailed = true;
          return failed(loadError);
        }
      }
      return await work(component);
    } finally {
      this.watchdog.unwatch(run);
      component.detach(run);
      // Code that failed to load is loaded afresh next time, on a clean isolate.
      if (loadFailed) component.dispose();
      this.afterRun(entry, component, run);
    }
  }

  private afterRun(entry: PoolEntry, component: ComponentIsolate, run: InvocationRun): void {
    if (!component.alive) {
      if (entry.component === component) entry.component = null;
      return;
    }
    // Module-level state a component keeps between runs must not creep up to its memory limit:
    // the heap is checked once every HEAP_CHECK_EVERY runs, however they were grouped into entries.
    // Not after every batch: reading it takes the isolate's lock, which isolated-vm's thread still
    // holds for a moment after it has woken us with the batch's results, so the worker's main
    // thread slept on it and woke again before it could answer (a switch and a wait per batch).
    if (component.invocations - component.heapCheckedAt >= HEAP_CHECK_EVERY || run.durationMs() > 100) {
      component.heapCheckedAt = component.invocations;
      const heap = component.heapBytes();
      const ratio = this.options.heapRecycleRatio ?? 0.5;
      if (heap === null || heap > component.memoryMb * 1024 * 1024 * ratio) {
        component.dispose();
        if (entry.component === component) entry.component = null;
      }
    }
  }

  /**
   * Runs queued invocations of one instance, in order, each seeing the isolate to itself as when run
   * one by one. Two or more on a warm isolate go in as one entry (`ComponentIsolate.invokeBatch`):
   * an asynchronous entry into an isolate costs two thread wake-ups, which at saturation were most
   * of a sandbox worker's CPU per run. The batch as a whole is watched with the limits of one of
   * its runs; if it breaks one, or crashes, its isolate is gone with every result in it, and its
   * runs go in again one by one on a fresh isolate, where the culprit breaks its limit alone and is
   * named for it. That is safe because the guest ends a batch after any run that armed a timer or
   * made a request: a run that finished inside a failed batch touched nothing outside it (its logs
   * are dropped with it). Runs with limits under {@link MIN_BATCH_LIMIT_MS} are not batched: their
   * batches would pass them too often.
   */
  private async runBatch(entry: PoolEntry, items: BatchItem[]): Promise<void> {
    let next = 0;
    let oneByOne = false;
    try {
      while (next < items.length) {
        const component = entry.component;
        const { inv, limits } = items[next];
        if (oneByOne || next === items.length - 1 || !component || !batchable(component, limits)) {
          // Synchronously only as a batch of one: the runs of a larger one share their hop anyway.
          items[next].resolve(await this.runInvocation(entry, inv, limits, items.length === 1));
          next++;
          continue;
        }
        const ran = await this.runTogether(entry, component, items.slice(next));
        if (ran === 0) oneByOne = true;
        next += ran;
      }
    } catch (error) {
      const failure = crashError(error instanceof Error ? error.message : String(error));
      for (const item of items.slice(next)) item.resolve(resultOf({ ok: false, error: failure, emits: [], dbWrites: [] }, [], 0, 0));
    }
  }

  /** One entry of several invocations; returns how many of them ran (0: the batch failed, none is answered). */
  private async runTogether(entry: PoolEntry, component: ComponentIsolate, items: BatchItem[]): Promise<number> {
    const limits = items[0].limits;
    const runs = items.map(() => new InvocationRun(++this.seq, limits, this.options.output));
    // Watched with one run's own limits: a batch takes at least the time and CPU of every run in
    // it, so none escapes its limit. Runs that pass them only together are run again one by one.
    const batchRun = new InvocationRun(++this.seq, limits, this.options.output);
    component.attach(batchRun);
    this.watchdog.watch(batchRun, component);
    let outcomes: GuestOutcome[] | null;
    try {
      outcomes = await component.invokeBatch(items.map((item) => item.inv), runs, batchRun, BATCH_SLICE_MS);
    } finally {
      this.watchdog.unwatch(batchRun);
      component.detach(batchRun);
      this.afterRun(entry, component, batchRun);
    }
    if (!outcomes) return 0;
    // Time and CPU are read for the batch as a whole and shared out evenly.
    const durationMs = batchRun.durationMs() / outcomes.length;
    const cpuMs = batchRun.cpuMs() / outcomes.length;
    outcomes.forEach((outcome, i) => items[i].resolve(resultOf(outcome, runs[i].logs, durationMs, cpuMs, outcomes.length)));
    return outcomes.length;
  }

  /** One run in its own entry; `alone` (not part of a batch) lets it enter synchronously. */
  private async runInvocation(entry: PoolEntry, inv: SandboxInvocation, limits = resolveLimits(this.options.limits, inv.limits), alone = false): Promise<SandboxResult> {
    const run = new InvocationRun(++this.seq, limits, this.options.output);
    // Synchronously only on a warm isolate: a run right after a load meets cold code (its first
    // run's compile), and the load itself is asynchronous anyway. And only as the worker's one run
    // in flight: with others queued (busy rates) the hop is shared by batches, and results that
    // come back a little later come back together, in fewer and larger commits on the server.
    const component = entry.component;
    // And only where the watchdog runs (it names an entry that never returns).
    const watchdog = alone && this.inFlight === 1 && performance.now() >= entry.syncAfter
      && component !== null && batchable(component, limits)
      && limits.timeoutMs >= MIN_SYNC_LIMIT_MS && limits.cpuMs >= MIN_SYNC_LIMIT_MS
      && this.soleAccount(entry.account) ? syncWatchdog() : null;
    const sync = watchdog !== null;
    let outcome: GuestOutcome | typeof SYNC_ABANDONED;
    try {
      outcome = await this.session(entry, run, async (c) => {
        if (!watchdog) return c.invoke(inv, run);
        const now = await c.invokeSync(inv, run, watchdog);
        if (c.lastSyncCpuMs <= SYNC_SLOW_MS) entry.syncsSinceSlow++;
        else {
          // One slow entry among many quick ones (a collection in the guest, code met for the first
          // time, a busy machine) is let go; a second one soon after is not.
          if (entry.syncsSinceSlow < SYNC_SLOW_SPACING) this.coolDown(entry);
          else entry.syncsSinceSlow = 0;
        }
        return now;
      }, (error) => ({ ok: false, error, emits: [], dbWrites: [] }));
    } catch (error) {
      outcome = { ok: false, error: crashError(error instanceof Error ? error.message : String(error)), emits: [], dbWrites: [] };
    }
    if (outcome === SYNC_ABANDONED) {
      // Stopped at the budget with nothing of it kept (its isolate is gone): run again, asynchronously.
      this.coolDown(entry);
      return this.runInvocation(entry, inv, limits, alone);
    }
    const result = resultOf(outcome, run.logs, run.durationMs(), run.cpuMs());
    if (sync) result.enteredSync = true;
    return result;
  }

  private async runDescribe(entry: PoolEntry): Promise<DescribeOutcome> {
    const run = new InvocationRun(++this.seq, resolveLimits(this.options.limits));
    try {
      return await this.session(entry, run, (c) => c.describe(run), (error) => ({ error }));
    } catch (error) {
      return { error: crashError(error instanceof Error ? error.message : String(error)) };
    }
  }
}

/** True when runs with `limits` may go into `component` together: it is warm with their memory limit, and their budgets are long enough to share. */
function batchable(component: ComponentIsolate, limits: SandboxLimits): boolean {
  return component.alive && component.loaded && component.memoryMb === limits.memoryMb && limits.timeoutMs >= MIN_BATCH_LIMIT_MS && limits.cpuMs >= MIN_BATCH_LIMIT_MS;
}

function sameLimits(a: SandboxLimits, b: SandboxLimits): boolean {
  return a.memoryMb === b.memoryMb && a.timeoutMs === b.timeoutMs && a.cpuMs === b.cpuMs;
}

/** What the worker answers for one invocation. */
function resultOf(outcome: GuestOutcome, logs: SandboxResult['logs'], durationMs: number, cpuMs: number, entryRuns = 1): SandboxResult {
  if (!outcome.ok && outcome.error) logs.push({ level: 'error', message: errorLine(outcome.error), ts: Date.now() });
  const result: SandboxResult = { ok: outcome.ok, emits: outcome.emits, logs, dbWrites: outcome.dbWrites, durationMs, cpuMs, entryRuns };
  if (outcome.error) result.error = outcome.error;
  if (outcome.returnValue !== undefined) result.returnValue = outcome.returnValue;
  if (outcome.httpResponse) result.httpResponse = outcome.httpResponse;
  if (outcome.exports) result.exports = outcome.exports;
  if (outcome.summary !== undefined) result.summary = outcome.summary;
  if (outcome.sends) result.sends = outcome.sends;
  if (outcome.flowExit) result.flowExit = outcome.flowExit;
  return result;
}
