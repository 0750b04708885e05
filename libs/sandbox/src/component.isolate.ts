import { createHash, createHmac, randomBytes } from 'node:crypto';
import { writeSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { isUtf8 } from 'node:buffer';
import ivm from 'isolated-vm';
import { COMPONENT_GLOBAL } from './component.bundler';
import { EgressFunction, egressFailureCode, StreamEgressFunction } from './egress';
import { parseGuestDescription, parseGuestResult, GuestOutcome } from './guest-result.parser';
import { parseGuestJson } from './guest-json.parser';
import { InvocationRun, LimitKind } from './invocation.run';
import { configMembersJson } from './invocation-config';
import { ResponseStreamRelay } from './response-stream.relay';
import { enforceRunOutput } from './run-output.enforcer';
import { invalidError, limitError, crashError } from './sandbox-error.factory';
import type { DescribeOutcome } from './sandbox.protocol';
import { fatalLine } from './worker-fatal.line';
import { SYNC_BUDGET_MS, SYNC_STUCK_MS, type SyncWatchdog, type WatchedIsolate } from './sync-watchdog';
import type { SandboxError, SandboxInvocation } from './sandbox.types';

/** Guest requests in flight per run; more are refused (bounds what one run can make the host do). */
const MAX_FETCHES_IN_FLIGHT = 50;
/** Response bytes a guest fetch may receive. */
const MAX_FETCH_RESPONSE_BYTES = 8 * 1024 * 1024;
/**
 * Bytes one streamed response (Node's `http`/`https`) may deliver. Larger than a fetch's because a
 * stream is consumed as it arrives (a feed parser keeps items, not the text), still bounded so a
 * run cannot pull unbounded data through the host; past it the stream fails with a clear error.
 */
const MAX_STREAM_RESPONSE_BYTES = 32 * 1024 * 1024;
const FETCH_DEADLINE_GRACE_MS = 250;
/** Timers armed at once per run. */
const MAX_TIMERS = 1000;
const PRELUDE_TIMEOUT_MS = 5000;

/**
 * The longest a synchronous entry may keep the worker's thread (ms). A run still going then is
 * stopped by the watchdog (`sync-watchdog.ts`), its isolate dropped and the run started again
 * asynchronously (`ComponentIsolate.invokeSync` returns {@link SYNC_ABANDONED}); the pool then
 * enters that instance asynchronously for a while (`IsolatePoolOptions.syncCooldownMs`).
 */
export { SYNC_BUDGET_MS };

/** What `invokeSync` returns when its entry passed {@link SYNC_BUDGET_MS}: nothing of the run was kept, run it again. */
export const SYNC_ABANDONED = Symbol('syncAbandoned');

/** A fire-and-forget call the guest made during a synchronous entry, held until the entry has returned. */
type HeldCall = readonly [(...args: unknown[]) => void, unknown[]];
const DIGESTS: Record<string, string> = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };
const NODE_HASHES = new Set(['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512']);
const URL_PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'] as const;
const SETTABLE_URL_PARTS = new Set(['protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);

/** The guest runtime's source and, once the first isolate compiled it, V8's code cache for it. */
export interface PreludeScript {
  source: string;
  cachedData?: ivm.ExternalCopy<ArrayBuffer>;
}

/** What every isolate of a worker shares. */
export interface ComponentIsolateDeps {
  prelude: PreludeScript;
  egress: EgressFunction;
  streamEgress: StreamEgressFunction;
}

/** References (held by the host only) to the guest runtime's control functions. */
interface GuestRefs {
  beginLoad: ivm.Reference;
  register: ivm.Reference;
  describe: ivm.Reference;
  invoke: ivm.Reference;
  invokeBatch: ivm.Reference;
  fireTimer: ivm.Reference;
  fetchDone: ivm.Reference;
  streamChunk: ivm.Reference;
  streamEnd: ivm.Reference;
  invokeNow: ivm.Reference;
  pendingResult: ivm.Reference;
}

// V8 has lost control of an isolate: the process cannot be trusted to continue. SIGKILL rather than
// abort(): no core dump, and the supervisor restarts the worker either way. The line names the
// culprit instance so the supervisor fails only its calls and re-sends everyone else's.
function dieOfCatastrophicError(culprit: string, message: string): void {
  try {
    writeSync(2, fatalLine(culprit, message));
  } finally {
    process.kill(process.pid, 'SIGKILL');
  }
}

function urlParts(url: URL): string {
  return JSON.stringify(URL_PARTS.map((part) => url[part]));
}

function sluiceHostUrlParse(input: unknown, base: unknown): string {
  if (typeof input !== 'string' || (base !== undefined && typeof base !== 'string')) return '';
  try {
    return urlParts(base === undefined ? new URL(input) : new URL(input, base));
  } catch {
    return '';
  }
}

function sluiceHostUrlSet(href: unknown, part: unknown, value: unknown): string {
  try {
    const url = new URL(String(href));
    if (typeof part === 'string' && SETTABLE_URL_PARTS.has(part)) {
      (url as unknown as Record<string, string>)[part] = String(value);
    }
    return urlParts(url);
  } catch {
    return sluiceHostUrlParse('about:blank', undefined);
  }
}

function sluiceHostDigest(algorithm: unknown, data: unknown): string {
  const name = typeof algorithm === 'string' ? DIGESTS[algorithm] : undefined;
  if (!name || typeof data !== 'string') return '';
  return createHash(name).update(Buffer.from(data, 'latin1')).digest().toString('latin1');
}

function sluiceHostNodeHash(algorithm: unknown, data: unknown, key: unknown): string {
  if (typeof algorithm !== 'string' || !NODE_HASHES.has(algorithm) || typeof data !== 'string') return '';
  const bytes = Buffer.from(data, 'latin1');
  if (key === null) return createHash(algorithm).update(bytes).digest().toString('latin1');
  if (typeof key !== 'string') return '';
  return createHmac(algorithm, Buffer.from(key, 'latin1')).update(bytes).digest().toString('latin1');
}

function sluiceHostRandomBytes(count: unknown): string {
  const n = typeof count === 'number' && Number.isInteger(count) ? Math.min(Math.max(count, 1), 1 << 20) : 16;
  return randomBytes(n).toString('latin1');
}

/**
 * The component id a guest's `process.env.PD_COMPONENT` shows: the deployed source (`dc_...`) or
 * the workflow (`p_...`) owning the isolate, read from the instance id (`<owner>[/<step>]@<hash>`).
 * Anything else (an action run on its own) shows none, so no other host identifier reaches the guest.
 */
export function componentIdOf(instanceId: string): string | null {
  const owner = instanceId.split(/[/@]/, 1)[0];
  return /^(?:dc|p)_[A-Za-z0-9]+$/.test(owner) ? owner : null;
}

/** Settled once; what `enterShallow` chains its entries on. */
const SETTLED = Promise.resolve();
const referenceApply = ivm.Reference.prototype.apply;

/**
 * An asynchronous entry into an isolate, made with no JavaScript frame of ours under it.
 * isolated-vm captures the caller's stack (10 frames) on every asynchronous `apply`, for the stack
 * of an error it may reject with, and capturing an optimised frame means translating its
 * deoptimisation data. From a run's call path (several functions inlined into each frame) that
 * cost 10-15% of a sandbox worker's main thread at 200 runs a second; from a `queueMicrotask`
 * callback, one frame (Node's `runMicrotask` with the callback inlined), it still was 15% of that
 * thread's instructions (`BENCH_ONLY=instructions`). Here `apply` itself, bound, is the reaction
 * of a settled promise: V8's microtask loop calls it with no JavaScript frame between (the
 * reaction passes the promise's value as a fourth argument, which `apply` ignores). The host
 * frames it would have shown are cut from guest errors anyway (`failure`).
 */
function enterShallow(ref: ivm.Reference, args: unknown[], options?: ivm.ReferenceApplyOptions): Promise<unknown> {
  return SETTLED.then(referenceApply.bind(ref, undefined, args, options) as () => Promise<unknown>);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * What the guest's `invoke` takes for `inv` run as `run` in the isolate of component `componentId`
 * (throws when `inv` is not JSON-serialisable).
 */
function invocationJson(inv: SandboxInvocation, run: InvocationRun, componentId: string | null, bodyAt = 0): string {
  const fromRaw = inv.eventJson !== undefined && inv.bodyFromRaw === true;
  const rest = JSON.stringify({
    seq: run.seq,
    entry: inv.entry,
    event: inv.eventJson === undefined ? inv.event : undefined,
    bodyFromRaw: fromRaw ? true : undefined,
    // Where its raw body is in the bodies string the entry is given (see `bodiesOf`).
    bodyRawAt: fromRaw && inv.bodyRaw !== undefined ? [bodyAt, bodyAt + inv.bodyRaw.length] : undefined,
    db: inv.db ?? {},
    dbBytes: inv.dbBytes ?? 0,
    action: inv.action,
    propOptions: inv.propOptions,
    componentId,
  });
  // The event's text as the server made it (JSON.stringify of the event), and a stable
  // configuration's as the supervisor made it (`configJson`), placed as they are; the run's output
  // caps are the same object run after run, serialised once.
  const head = inv.eventJson === undefined ? '{' : `{"event":${inv.eventJson},`;
  return `${head}${inv.configJson ?? configMembersJson(inv)},"limits":${outputLimitsJson(run.output)},${rest.slice(1)}`;
}

/**
 * The raw bodies (`SandboxInvocation.bodyRaw`) of an entry's invocations, one after the other:
 * handed to the guest as one string beside the invocations' JSON, each invocation naming its span
 * (`bodyRawAt`), so a body is never escaped into JSON text on its way in.
 */
function bodiesOf(invs: SandboxInvocation[]): string {
  let bodies = '';
  for (const inv of invs) if (inv.bodyFromRaw === true && inv.bodyRaw !== undefined) bodies += inv.bodyRaw;
  return bodies;
}

let lastOutput: InvocationRun['output'] | undefined;
let lastOutputJson = '';

/** `JSON.stringify(output)`, remembered for the last object (the worker's caps, the same for every run). */
function outputLimitsJson(output: InvocationRun['output']): string {
  if (output !== lastOutput) {
    lastOutputJson = JSON.stringify(output);
    lastOutput = output;
  }
  return lastOutputJson;
}

/** The outcome of one invocation from the guest's result text, its output checked against `run`'s caps. */
function outcomeOf(text: unknown, run: InvocationRun): GuestOutcome {
  try {
    return enforceRunOutput(parseGuestResult(text), run.output, (warning) => run.log('warn', warning), typeof text === 'string' ? text.length : undefined);
  } catch (error) {
    return { ok: false, error: invalidError('Error', message(error)), emits: [], dbWrites: [] };
  }
}

/**
 * One isolate and context running one component version. Invocations must be serialised by the
 * caller (one run attached at a time). After a limit breach, a memory overflow or `dispose()` the
 * isolate is gone (`alive` is false) and the caller creates a new one.
 */
export class ComponentIsolate {
  private readonly isolate: ivm.Isolate;
  private readonly context: ivm.Context;
  private readonly refs: GuestRefs;
  private run: InvocationRun | null = null;
  /** The runs of the batch in progress (`invokeBatch`), by seq: each is served while the batch runs. */
  private batch: Map<number, InvocationRun> | null = null;
  private disposed = false;
  /** Invocations served; the pool checks the heap every few of them. */
  invocations = 0;
  /** `invocations` when the pool last checked the heap. */
  heapCheckedAt = 0;
  /** True once a bundle has been evaluated and its definition registered. */
  loaded = false;
  /** What the guest's `process.env.PD_COMPONENT` shows: the isolate serves one instance, so it is derived once. */
  private readonly componentId: string | null;
  /** True during a synchronous entry (`invokeNow`): the guest's fire-and-forget calls are held in `held`. */
  private inSync = false;
  private held: HeldCall[] = [];
  /** The result a synchronous entry's run handed over before the entry returned. */
  private nowText: string | null = null;
  /**
   * CPU the guest used in the last synchronous entry (ms): what it held the thread for by its own
   * work (wall-clock time would count the moments the machine gave the thread to others).
   */
  lastSyncCpuMs = 0;
  /** This isolate as the sync watchdog knows it, from its first synchronous entry. */
  private watched: WatchedIsolate | undefined;
  /** What the watchdog writes if a synchronous entry of this isolate never returns: the instance named as culprit. */
  private readonly stuckLine: string;

  /** `instanceId` is named as the culprit if this isolate takes the process down. */
  constructor(
    readonly memoryMb: number,
    private readonly deps: ComponentIsolateDeps,
    instanceId: string,
  ) {
    this.componentId = componentIdOf(instanceId);
    this.stuckLine = fatalLine(instanceId, `a synchronous run held the worker's thread for more than ${SYNC_STUCK_MS / 1000} s in one step and the worker was ended`);
    this.isolate = new ivm.Isolate({ memoryLimit: memoryMb, onCatastrophicError: (message) => dieOfCatastrophicError(instanceId, message) });
    try {
      this.context = this.isolate.createContextSync();
      const prelude = deps.prelude;
      const script: ivm.Script & ivm.CachedDataResult = this.isolate.compileScriptSync(prelude.source, {
        filename: 'sluice:guest-runtime',
        ...(prelude.cachedData ? { cachedData: prelude.cachedData } : { produceCachedData: true }),
      });
      if (!prelude.cachedData && script.cachedData) prelude.cachedData = script.cachedData;
      const install = script.runSync(this.context, { reference: true, timeout: PRELUDE_TIMEOUT_MS }) as ivm.Reference;
      script.release();
      const control = install.applySync(undefined, this.hostCallbacks(), {
        result: { reference: true },
        timeout: PRELUDE_TIMEOUT_MS,
      }) as ivm.Reference<Record<string, unknown>>;
      install.release();
      const ref = (name: string) => control.getSync(name, { reference: true }) as ivm.Reference;
      this.refs = {
        beginLoad: ref('beginLoad'),
        register: ref('register'),
        describe: ref('describe'),
        invoke: ref('invoke'),
        invokeBatch: ref('invokeBatch'),
        fireTimer: ref('fireTimer'),
        fetchDone: ref('fetchDone'),
        streamChunk: ref('streamChunk'),
        streamEnd: ref('streamEnd'),
        invokeNow: ref('invokeNow'),
        pendingResult: ref('pendingResult'),
      };
      control.release();
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /** False once the isolate is disposed, by us or by isolated-vm (memory limit). */
  get alive(): boolean {
    if (this.disposed) return false;
    try {
      return !this.isolate.isDisposed;
    } catch {
      return false;
    }
  }

  /** CPU time the isolate has used so far (ns), or null once it is gone. */
  cpuNs(): bigint | null {
    try {
      return this.isolate.cpuTime;
    } catch {
      return null;
    }
  }

  /** Heap in use, external allocations included (bytes), or null once the isolate is gone. */
  heapBytes(): number | null {
    try {
      const stats = this.isolate.getHeapStatisticsSync();
      return stats.used_heap_size + stats.externally_allocated_size;
    } catch {
      return null;
    }
  }

  /** Makes `run` the run whose callbacks (logs, timers, requests) this isolate serves. */
  attach(run: InvocationRun): void {
    this.run = run;
    const cpu = this.cpuNs();
    run.cpuStartNs = cpu ?? 0n;
    run.lastCpuNs = run.cpuStartNs;
  }

  /** Ends `run`: its timers are disarmed and its late callbacks ignored. */
  detach(run: InvocationRun): void {
    const cpu = this.cpuNs();
    if (cpu !== null) run.lastCpuNs = cpu;
    run.finish();
    if (this.run === run) this.run = null;
  }

  /** Ends `run` for breaking a limit: the isolate is disposed, which stops whatever it is running. */
  breach(run: InvocationRun, kind: LimitKind): void {
    if (run.breach || run.finished) return;
    run.breach = kind;
    this.dispose();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    try {
      this.isolate.dispose();
    } catch {
      // Already disposed by isolated-vm (memory limit): nothing left to free.
    }
  }

  /** Evaluates the bundle and registers its definition; null on success, else why it failed. */
  async load(bundle: string, run: InvocationRun): Promise<SandboxError | null> {
    try {
      this.refs.beginLoad.applySync(undefined, [run.seq]);
      // Wrapped in a function so the bundle's top-level var stays local; lineOffset keeps the
      // bundle's own line numbers in stack traces.
      const wrapped = `(function () {\n${bundle}\nreturn typeof ${COMPONENT_GLOBAL} === 'undefined' ? undefined : ${COMPONENT_GLOBAL};\n})()`;
      const script = await this.isolate.compileScript(wrapped, { filename: 'file:///component.js', lineOffset: -1 });
      const exported = (await script.run(this.context, { reference: true })) as ivm.Reference;
      script.release();
      const registered = await this.refs.register.apply(undefined, [exported.derefInto()]);
      exported.release();
      if (typeof registered === 'string' && registered !== '') {
        const info = parseGuestJson(registered) as { name?: unknown; message?: unknown };
        return invalidError(String(info.name ?? 'Error'), String(info.message ?? 'the component could not be loaded'));
      }
      this.loaded = true;
      return null;
    } catch (error) {
      return this.failure(run, error, 'invalid');
    }
  }

  /** Counts an invocation and makes its JSON for the guest; the failed outcome if it cannot be serialised. */
  private invocationText(inv: SandboxInvocation, run: InvocationRun): string | GuestOutcome {
    this.invocations++;
    try {
      return invocationJson(inv, run, this.componentId);
    } catch (error) {
      return { ok: false, error: invalidError('TypeError', `the invocation is not JSON-serialisable: ${message(error)}`), emits: [], dbWrites: [] };
    }
  }

  /** Runs one entry point. Never rejects: limit breaches and guest errors come back as `ok: false`. */
  async invoke(inv: SandboxInvocation, run: InvocationRun): Promise<GuestOutcome> {
    const json = this.invocationText(inv, run);
    if (typeof json !== 'string') return json;
    let text: unknown;
    try {
      text = await enterShallow(this.refs.invoke, [json, bodiesOf([inv])], { result: { promise: true } });
    } catch (error) {
      return { ok: false, error: this.failure(run, error, 'crash'), emits: [], dbWrites: [] };
    }
    return outcomeOf(text, run);
  }

  /**
   * Runs one entry point entered synchronously: the guest runs on this thread, with no hand-off to
   * isolated-vm's thread and back (at 200 runs a second that cost the worker 2.8 wake-ups of its
   * main thread and 1.5 of its other threads per run). A run that settles inside the entry is answered at
   * once; one that waits for a request or a timer is awaited as an asynchronous entry's would be.
   * The entry may keep the thread {@link SYNC_BUDGET_MS} at most: past that the watchdog stops the
   * guest, the isolate is disposed (the run's state in it is half-made) and {@link SYNC_ABANDONED}
   * is returned. Nothing of the run has left the isolate then: its fire-and-forget calls (logs,
   * timers, requests) are held during the entry and made once it has returned whole, and dropped
   * with the run otherwise. The caller's limits must be longer than the budget, and `watchdog`
   * (`syncWatchdog()`) names the instance if the entry never returns.
   */
  async invokeSync(inv: SandboxInvocation, run: InvocationRun, watchdog: SyncWatchdog): Promise<GuestOutcome | typeof SYNC_ABANDONED> {
    const json = this.invocationText(inv, run);
    if (typeof json !== 'string') return json;
    this.watched ??= watchdog.watch(this.context);
    this.inSync = true;
    this.nowText = null;
    let threw = false;
    let failure: unknown;
    watchdog.enter(this.watched, this.stuckLine);
    try {
      this.refs.invokeNow.applySync(undefined, [json, bodiesOf([inv])]);
    } catch (error) {
      threw = true;
      failure = error;
    }
    // True also for an entry stopped just as it returned: the isolate may still hold the request
    // to stop, so it goes either way, and with it what the run made.
    const stopped = watchdog.leave();
    this.inSync = false;
    if (stopped || threw) this.held = [];
    if (stopped) {
      this.dispose();
      return SYNC_ABANDONED;
    }
    if (threw) return { ok: false, error: this.failure(run, failure, 'crash'), emits: [], dbWrites: [] };
    const cpu = this.cpuNs();
    this.lastSyncCpuMs = cpu === null ? 0 : Number(cpu - run.cpuStartNs) / 1e6;
    const held = this.held;
    this.held = [];
    for (const [call, args] of held) call(...args);
    let text: unknown = this.nowText;
    this.nowText = null;
    if (text === null) {
      try {
        text = await enterShallow(this.refs.pendingResult, [], { result: { promise: true } });
      } catch (error) {
        return { ok: false, error: this.failure(run, error, 'crash'), emits: [], dbWrites: [] };
      }
    }
    return outcomeOf(text, run);
  }

  /**
   * Runs several invocations of this instance in one entry into the isolate, one after the other
   * (the guest starts each once the one before has settled): one hop to isolated-vm's thread and
   * back for all of them instead of one each. `batchRun` is attached and watched for the whole
   * batch; `runs[i]` receives the logs, timers and requests of `invs[i]`. Returns the outcome of
   * each invocation that ran, in order (the guest stops early after an invocation that armed a
   * timer or made a request, or once `sliceMs` have passed: the rest never started), or null when
   * the batch failed as a whole: a limit of `batchRun` or a crash (the isolate is then disposed and
   * nothing of the batch is kept; since every invocation in it that finished made no request,
   * running them again is safe), or an invocation that cannot be serialised (nothing ran).
   */
  async invokeBatch(invs: SandboxInvocation[], runs: InvocationRun[], batchRun: InvocationRun, sliceMs: number): Promise<GuestOutcome[] | null> {
    let json: string;
    try {
      let at = 0;
      json = `[${invs.map((inv, i) => {
        const text = invocationJson(inv, runs[i], this.componentId, at);
        if (inv.bodyFromRaw === true && inv.bodyRaw !== undefined) at += inv.bodyRaw.length;
        return text;
      }).join(',')}]`;
    } catch {
      return null;
    }
    this.batch = new Map(runs.map((run) => [run.seq, run]));
    let text: unknown;
    try {
      text = await enterShallow(this.refs.invokeBatch, [json, sliceMs, bodiesOf(invs)], { result: { promise: true } });
    } catch (error) {
      // Disposes the isolate, whatever the failure was.
      this.failure(batchRun, error, 'crash');
      return null;
    } finally {
      this.batch = null;
      for (const run of runs) run.finish();
    }
    if (typeof text !== 'string' || text === '') {
      this.dispose();
      return null;
    }
    const lines = text.split('\n');
    if (lines.length > runs.length) {
      this.dispose();
      return null;
    }
    this.invocations += lines.length;
    return lines.map((line, i) => outcomeOf(line, runs[i]));
  }

  /** The loaded definition as plain data. */
  async describe(run: InvocationRun): Promise<DescribeOutcome> {
    try {
      const text = await this.refs.describe.apply(undefined, []);
      return parseGuestDescription(text);
    } catch (error) {
      return { error: this.failure(run, error, 'invalid') };
    }
  }

  /**
   * Classifies a rejected entry. A breach we declared wins (the watchdog's time and CPU limits);
   * otherwise a disposed isolate means isolated-vm's memory limit (the only other disposer).
   * Anything else thrown by the guest is `fallback` (bad code at load, describe).
   */
  private failure(run: InvocationRun, error: unknown, fallback: 'invalid' | 'crash'): SandboxError {
    let kind: LimitKind | null = run.breach;
    if (!kind && !this.alive) kind = 'memory';
    if (kind) {
      this.breach(run, kind);
      return limitError(kind, run.limits);
    }
    if (fallback === 'crash') {
      this.dispose();
      return crashError(message(error));
    }
    const e = error as { name?: unknown; stack?: unknown };
    // isolated-vm appends the host's frames after its boundary marker: they are ours, not the author's.
    const stack = typeof e?.stack === 'string' ? e.stack.split('\n    at (<isolated-vm boundary>)')[0] : undefined;
    return invalidError(typeof e?.name === 'string' ? e.name : 'Error', message(error), stack);
  }

  /** A host → guest entry failed while a run is active (a timer tick or a request's answer). */
  private entryFailed(run: InvocationRun): void {
    if (run.finished || run.breach) return;
    if (!this.alive) this.breach(run, 'memory');
  }

  private activeRun(seq: unknown): InvocationRun | null {
    const run = this.run && this.run.seq === seq ? this.run : typeof seq === 'number' ? this.batch?.get(seq) : undefined;
    return run && !run.finished ? run : null;
  }

  /** True while `run` is the run this isolate serves (alone, or as one of a batch's). */
  private serves(run: InvocationRun): boolean {
    return this.run === run || this.batch?.get(run.seq) === run;
  }

  // Named sluiceHost*: the hostile-code test walks the guest global for functions with these names.
  private hostCallbacks(): ivm.Callback[] {
    const sluiceHostLog = (seq: unknown, level: unknown, text: unknown) => this.activeRun(seq)?.log(level, text);
    const sluiceHostTimerStart = (seq: unknown, id: unknown, ms: unknown, repeat: unknown) => this.timerStart(seq, id, ms, repeat);
    const sluiceHostTimerClear = (seq: unknown, id: unknown) => this.timerClear(seq, id);
    const sluiceHostFetchStart = (seq: unknown, id: unknown, meta: unknown, body: unknown) => this.fetchStart(seq, id, meta, body);
    const sluiceHostStreamControl = (seq: unknown, id: unknown, action: unknown) => this.streamControl(seq, id, action);
    // The synchronous twins (HostNowBindings): inside a synchronous entry the call is held until
    // the entry has returned whole; anywhere else (a twin used from an asynchronous entry) made at once.
    const now = (call: (...a: unknown[]) => void, args: unknown[]): void => {
      if (this.inSync) this.held.push([call, args]);
      else call(...args);
    };
    const sluiceHostLogNow = (...args: unknown[]) => now(sluiceHostLog as (...a: unknown[]) => void, args);
    const sluiceHostTimerStartNow = (...args: unknown[]) => now(sluiceHostTimerStart as (...a: unknown[]) => void, args);
    const sluiceHostTimerClearNow = (...args: unknown[]) => now(sluiceHostTimerClear as (...a: unknown[]) => void, args);
    const sluiceHostFetchStartNow = (...args: unknown[]) => now(sluiceHostFetchStart as (...a: unknown[]) => void, args);
    const sluiceHostStreamControlNow = (...args: unknown[]) => now(sluiceHostStreamControl as (...a: unknown[]) => void, args);
    const sluiceHostSettledNow = (text: unknown) => {
      if (this.inSync && typeof text === 'string') this.nowText = text;
    };
    return [
      new ivm.Callback(sluiceHostLog, { ignored: true }),
      new ivm.Callback(sluiceHostTimerStart, { ignored: true }),
      new ivm.Callback(sluiceHostTimerClear, { ignored: true }),
      new ivm.Callback(sluiceHostFetchStart, { ignored: true }),
      new ivm.Callback(sluiceHostUrlParse),
      new ivm.Callback(sluiceHostUrlSet),
      new ivm.Callback(sluiceHostDigest),
      new ivm.Callback(sluiceHostRandomBytes),
      new ivm.Callback(sluiceHostNodeHash),
      new ivm.Callback(sluiceHostStreamControl, { ignored: true }),
      new ivm.Callback(sluiceHostLogNow),
      new ivm.Callback(sluiceHostTimerStartNow),
      new ivm.Callback(sluiceHostTimerClearNow),
      new ivm.Callback(sluiceHostFetchStartNow),
      new ivm.Callback(sluiceHostStreamControlNow),
      new ivm.Callback(sluiceHostSettledNow),
    ];
  }

  private timerStart(seq: unknown, id: unknown, ms: unknown, repeat: unknown): void {
    const run = this.activeRun(seq);
    if (!run || typeof id !== 'number' || typeof ms !== 'number') return;
    if (run.timers.size >= MAX_TIMERS) {
      run.log('warn', `more than ${MAX_TIMERS} timers armed at once: this one will never fire`);
      return;
    }
    const delay = Math.min(Math.max(ms, 0), 2147483647);
    const tick = () => this.fireTimer(run, id, repeat === true);
    run.timers.set(id, repeat === true ? setInterval(tick, Math.max(1, delay)) : setTimeout(tick, delay));
  }

  private timerClear(seq: unknown, id: unknown): void {
    const run = this.activeRun(seq);
    if (!run || typeof id !== 'number') return;
    const timer = run.timers.get(id);
    if (timer) clearTimeout(timer);
    run.timers.delete(id);
  }

  private fireTimer(run: InvocationRun, id: number, repeat: boolean): void {
    if (!repeat) run.timers.delete(id);
    if (run.finished || !this.serves(run) || run.firing.has(id)) return;
    run.firing.add(id);
    this.refs.fireTimer
      .apply(undefined, [run.seq, id])
      .catch(() => this.entryFailed(run))
      .finally(() => run.firing.delete(id));
  }

  private fetchStart(seq: unknown, id: unknown, metaJson: unknown, body: unknown): void {
    const run = this.activeRun(seq);
    if (!run || typeof id !== 'number' || typeof metaJson !== 'string' || typeof body !== 'string') return;
    if (run.fetchesInFlight >= MAX_FETCHES_IN_FLIGHT) {
      this.fetchDone(run, id, JSON.stringify({ error: `more than ${MAX_FETCHES_IN_FLIGHT} requests in flight`, code: 'network' }), '');
      return;
    }
    let request: { url: string; method: string; headers: Record<string, string>; hasBody: boolean; stream: boolean };
    try {
      const meta = parseGuestJson(metaJson) as Record<string, unknown>;
      const headers: Record<string, string> = {};
      if (typeof meta.headers === 'object' && meta.headers !== null) {
        for (const [name, value] of Object.entries(meta.headers)) if (typeof value === 'string') headers[name] = value;
      }
      if (typeof meta.url !== 'string' || typeof meta.method !== 'string') throw new Error('bad request');
      request = { url: meta.url, method: meta.method, headers, hasBody: meta.hasBody === true, stream: meta.stream === true };
    } catch {
      this.fetchDone(run, id, JSON.stringify({ error: 'malformed request', code: 'invalid_url' }), '');
      return;
    }
    run.fetchesInFlight++;
    if (request.stream) {
      this.streamStart(run, id, request, body);
      return;
    }
    this.deps
      .egress({
        url: request.url,
        method: request.method,
        headers: request.headers,
        body: request.hasBody ? Buffer.from(body, 'latin1') : undefined,
        // A little past the run's deadline: a request still running then is the run's timeout, not a fetch failure.
        timeoutMs: Math.max(1, Math.floor(run.remainingMs())) + FETCH_DEADLINE_GRACE_MS,
        maxResponseBytes: MAX_FETCH_RESPONSE_BYTES,
      })
      .then(
        (response): [string, string] => {
          // Valid UTF-8 crosses as text (no decoding in the guest); anything else as latin1 bytes.
          const utf8 = isUtf8(response.body);
          const answer = {
            status: response.status,
            statusText: STATUS_CODES[response.status] ?? '',
            headers: Object.entries(response.headers),
            utf8,
          };
          return [JSON.stringify(answer), response.body.toString(utf8 ? 'utf8' : 'latin1')];
        },
        (error: unknown): [string, string] => [JSON.stringify({ error: message(error), code: egressFailureCode(error) }), ''],
      )
      .then(([answer, responseBody]) => {
        run.fetchesInFlight--;
        this.fetchDone(run, id, answer, responseBody);
      });
  }

  /**
   * A streamed request (the guest's Node `http`/`https`): the head goes to the guest through
   * `fetchDone` like a fetch's answer, then the body chunk by chunk (see ResponseStreamRelay).
   * The request counts as in flight until its body ends or is cancelled.
   */
  private streamStart(run: InvocationRun, id: number, request: { url: string; method: string; headers: Record<string, string>; hasBody: boolean }, body: string): void {
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      run.fetchesInFlight--;
      run.streams.delete(id);
    };
    this.deps
      .streamEgress({
        url: request.url,
        method: request.method,
        headers: request.headers,
        body: request.hasBody ? Buffer.from(body, 'latin1') : undefined,
        timeoutMs: Math.max(1, Math.floor(run.remainingMs())) + FETCH_DEADLINE_GRACE_MS,
        maxResponseBytes: MAX_STREAM_RESPONSE_BYTES,
      })
      .then(
        async (response) => {
          if (run.finished || !this.serves(run)) {
            response.abort();
            release();
            return;
          }
          const relay = new ResponseStreamRelay(response, {
            chunk: async (bytes) => (await this.guestEntry(run, this.refs.streamChunk, [run.seq, id, bytes.toString('latin1')])) === true,
            end: async (error) => {
              await this.guestEntry(run, this.refs.streamEnd, [run.seq, id, error ? JSON.stringify({ error: error.message, code: error.code }) : '']);
            },
          }, release);
          run.streams.set(id, relay);
          const head = { status: response.status, statusText: STATUS_CODES[response.status] ?? '', headers: Object.entries(response.headers), utf8: false, stream: true };
          await this.guestEntry(run, this.refs.fetchDone, [run.seq, id, JSON.stringify(head), '']);
          if (run.streams.get(id) === relay) relay.start();
        },
        (error: unknown) => {
          release();
          this.fetchDone(run, id, JSON.stringify({ error: message(error), code: egressFailureCode(error) }), '');
        },
      )
      .catch(() => release());
  }

  /** The guest's word on a streamed body: `resume` (it read from a full buffer) or `cancel`. */
  private streamControl(seq: unknown, id: unknown, action: unknown): void {
    const run = this.activeRun(seq);
    const relay = run && typeof id === 'number' ? run.streams.get(id) : undefined;
    if (!relay) return;
    if (action === 'resume') relay.resume();
    else if (action === 'cancel') relay.cancel();
  }

  /** One host → guest entry for run `run`; rejects when the run is over or the entry failed. */
  private async guestEntry(run: InvocationRun, ref: ivm.Reference, args: (string | number)[]): Promise<unknown> {
    if (run.finished || !this.serves(run)) throw new Error('the run is over');
    try {
      return await ref.apply(undefined, args);
    } catch (error) {
      this.entryFailed(run);
      throw error;
    }
  }

  private fetchDone(run: InvocationRun, id: number, answer: string, body: string): void {
    if (run.finished || !this.serves(run)) return;
    this.refs.fetchDone
      .apply(undefined, [run.seq, id, answer, body])
      .catch(() => this.entryFailed(run));
  }
}
