import {
  buildInstance,
  describeDefinition,
  errorInfo,
  GuestErrorInfo,
  GuestInvocation,
  InvocationRecord,
  isObject,
} from './component-instance.guest';
import { createActionContext } from './action-context.guest';
import { additionalPropsJson, propOptionsJson } from './prop-configuration.guest';
import { formatLogArgs, inspect } from './console-format.guest';
import { dateNow, defineGlobal, defineProperty, jsonParse, jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { jsonRequestBody } from './json-request-body.guest';
import type { HostBindings, HostNowBindings } from './host-bindings.guest';
import { current, InvocationScope } from './invocation-scope.guest';
import { DEFAULT_RUN_OUTPUT_LIMITS } from './run-output-limits.guest';
import { createCrypto, createNodeHash, NODE_HASH_HOOK } from './web-crypto.guest';
import { atob, btoa, TextDecoder, TextEncoder } from './web-encoding.guest';
import { AbortController, AbortSignal, DOMException, Event, EventTarget } from './web-events.guest';
import { createFetch, fetchFailure, Headers, Request, Response } from './web-fetch.guest';
import { createStreamedRequest, STREAMED_REQUEST_HOOK, streamFailure } from './host-stream.guest';
import { useFetchForHttpRequests } from './http-request-prop.guest';
import { latin1ToBytes } from './web-encoding.guest';
import { structuredClone } from './web-clone.guest';
import { createTimers } from './web-timers.guest';
import { createUrlClass, URLSearchParams } from './web-url.guest';

/** Console lines kept per invocation; past it one notice is logged and the rest dropped. */
const MAX_LOG_LINES = 1000;
/** Longest console line kept (characters). */
const MAX_LOG_CHARS = 16 * 1024;

/** What the host calls in the guest. The host holds References to these; the guest global never does. */
export interface GuestControl {
  /** Marks the start of the bundle's top-level code: its console lines belong to invocation `seq`. */
  beginLoad(seq: number): void;
  /** Takes the bundle's exports; '' when they hold a definition, else the error as JSON. */
  register(exported: unknown): string;
  /** The registered definition as plain data (JSON). */
  describe(): string;
  /** Runs one entry point; resolves to the result JSON and never rejects. */
  invoke(invocationJson: string, bodies?: string): Promise<string>;
  /**
   * Runs a JSON array of invocations of this instance one after the other, each started once the
   * one before has settled, as `invoke` would. Stops starting more once `sliceMs` have passed or
   * after an invocation that armed a timer or started a request, so every invocation the host did
   * not get a result for is one that never started. Resolves to the results' JSON, one line each
   * (JSON text never holds a raw line break), and never rejects.
   */
  invokeBatch(invocationsJson: string, sliceMs: number, bodies?: string): Promise<string>;
  /**
   * Starts one entry point, entered synchronously from the host's thread (isolated-vm's
   * `applySync`, whose microtasks run before it returns). A run that settles before the entry
   * returns hands its result JSON to `settledNow`; one that waits for something (a request, a
   * timer) is left pending, and the host asks for it with `pendingResult`.
   */
  invokeNow(invocationJson: string, bodies?: string): void;
  /** The result of the run `invokeNow` left pending; never rejects. */
  pendingResult(): Promise<string>;
  /** A timer of invocation `seq` is due. */
  fireTimer(seq: number, id: number): void;
  /** The host's answer to request `id` of invocation `seq` (answer JSON, body as text or latin1). */
  fetchDone(seq: number, id: number, answerJson: string, body: string): void;
  /** One chunk (latin1) of streamed body `id`; false asks the host to wait for a `resume`. */
  streamChunk(seq: number, id: number, bytesLatin1: string): boolean;
  /** Streamed body `id` ended ('') or failed (JSON `{error, code}`). */
  streamEnd(seq: number, id: number, errorJson: string): void;
}

/** Where the `process` shim reads `PD_COMPONENT` (the runtime sets it for each invocation). */
const COMPONENT_ID_HOOK = Symbol.for('sluice.componentId');

interface FetchAnswer {
  error?: string;
  code?: string;
  status: number;
  statusText: string;
  headers: [string, string][];
  utf8: boolean;
}

type Level = 'log' | 'info' | 'warn' | 'error' | 'debug';

function createConsole(host: Pick<HostBindings, 'log'>): Record<string, (...args: unknown[]) => void> {
  const write = (level: Level, args: unknown[]): void => {
    const scope = current.scope;
    if (!scope) return;
    if (scope.logCount >= MAX_LOG_LINES) {
      if (scope.logCount++ === MAX_LOG_LINES) host.log(scope.seq, 'warn', `[more than ${MAX_LOG_LINES} console lines in this run: the rest are dropped]`);
      return;
    }
    scope.logCount++;
    let message = formatLogArgs(args);
    if (message.length > MAX_LOG_CHARS) message = `${message.slice(0, MAX_LOG_CHARS)}... [${message.length - MAX_LOG_CHARS} more characters]`;
    host.log(scope.seq, level, message);
  };
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  return {
    log: (...args) => write('log', args),
    info: (...args) => write('info', args),
    warn: (...args) => write('warn', args),
    error: (...args) => write('error', args),
    debug: (...args) => write('debug', args),
    trace: (...args) => write('debug', ['Trace:', ...args]),
    dir: (value) => write('log', [inspect(value, 2)]),
    table: (...args) => write('log', args),
    assert: (condition, ...args) => {
      if (!condition) write('error', ['Assertion failed', ...args]);
    },
    count: (label = 'default') => {
      const n = (counts.get(String(label)) ?? 0) + 1;
      counts.set(String(label), n);
      write('info', [`${String(label)}: ${n}`]);
    },
    countReset: (label = 'default') => {
      counts.delete(String(label));
    },
    time: (label = 'default') => {
      timers.set(String(label), Date.now());
    },
    timeLog: (label = 'default', ...args) => {
      const start = timers.get(String(label));
      if (start !== undefined) write('info', [`${String(label)}: ${Date.now() - start}ms`, ...args]);
    },
    timeEnd: (label = 'default') => {
      const start = timers.get(String(label));
      timers.delete(String(label));
      if (start !== undefined) write('info', [`${String(label)}: ${Date.now() - start}ms`]);
    },
    group: (...args) => {
      if (args.length) write('log', args);
    },
    groupCollapsed: (...args) => {
      if (args.length) write('log', args);
    },
    groupEnd: () => undefined,
  };
}

/** The action parts of a result: exports and summary always, sends and the flow exit only when the step succeeded. */
function actionJson(ok: boolean, record: InvocationRecord): string {
  const exported: string[] = [];
  for (const [name, json] of record.exports) exported.push(`${jsonStringify(name)}:${json}`);
  let out = `,"exports":{${exported.join(',')}}`;
  if (record.summary !== null) out += `,"summary":${jsonStringify(record.summary)}`;
  // A failed step's sends are never performed, so they are not reported as if they could be.
  if (ok) out += `,"sends":[${record.sends.join(',')}]`;
  if (ok && record.flowExit !== null) out += `,"flowExit":{"reason":${jsonStringify(record.flowExit)}}`;
  return out;
}

function resultJson(ok: boolean, record: InvocationRecord, extra: string, action = false): string {
  let out = `{"ok":${ok}${extra},"emits":[${record.emits.join(',')}],"dbWrites":[${record.dbWrites.join(',')}]`;
  if (record.httpResponse !== null) out += `,"httpResponse":${record.httpResponse}`;
  if (action) out += actionJson(ok, record);
  return `${out}}`;
}

function failureJson(record: InvocationRecord, error: GuestErrorInfo, kind: 'user' | 'invalid', action = false): string {
  return resultJson(false, record, `,"error":${jsonStringify({ ...error, kind })}`, action);
}

/**
 * Installs the web surface on the guest global, removes what must not be there (WebAssembly and
 * SharedArrayBuffer escape the isolate's memory limit) and returns the control functions.
 */
export function install(bindings: HostBindings & HostNowBindings): GuestControl {
  // True from an `invokeNow` until the next entry of another kind: the guest runs on the host's
  // thread, and its fire-and-forget calls go through the synchronous Callbacks (see
  // HostNowBindings). Every other entry clears it; left set by mistake it would cost speed only,
  // since a synchronous Callback works from any thread.
  let inSyncEntry = false;
  const host: HostBindings = {
    log: (seq, level, message) => (inSyncEntry ? bindings.logNow : bindings.log)(seq, level, message),
    timerStart: (seq, id, ms, repeat) => (inSyncEntry ? bindings.timerStartNow : bindings.timerStart)(seq, id, ms, repeat),
    timerClear: (seq, id) => (inSyncEntry ? bindings.timerClearNow : bindings.timerClear)(seq, id),
    fetchStart: (seq, id, requestJson, bodyLatin1) => (inSyncEntry ? bindings.fetchStartNow : bindings.fetchStart)(seq, id, requestJson, bodyLatin1),
    streamControl: (seq, id, action) => (inSyncEntry ? bindings.streamControlNow : bindings.streamControl)(seq, id, action),
    urlParse: bindings.urlParse,
    urlSet: bindings.urlSet,
    digest: bindings.digest,
    randomBytes: bindings.randomBytes,
    nodeHash: bindings.nodeHash,
  };
  /** The run the last `invokeNow` started, while its result has not been handed over. */
  let nowPending: Promise<string> | null = null;
  const URL = createUrlClass(host);
  const timers = createTimers(host);
  const fetch = createFetch(host, URL);
  useFetchForHttpRequests(fetch);
  const origin = Date.now();
  const globals: Record<string, unknown> = {
    self: globalThis,
    console: createConsole(host),
    setTimeout: timers.setTimeout,
    clearTimeout: timers.clearTimeout,
    setInterval: timers.setInterval,
    clearInterval: timers.clearInterval,
    queueMicrotask: (callback: unknown) => {
      if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
      void Promise.resolve().then(() => callback());
    },
    fetch,
    Headers,
    Request,
    Response,
    URL,
    URLSearchParams,
    TextEncoder,
    TextDecoder,
    atob,
    btoa,
    AbortController,
    AbortSignal,
    Event,
    EventTarget,
    DOMException,
    crypto: createCrypto(host),
    structuredClone,
    performance: { timeOrigin: origin, now: () => Date.now() - origin },
  };
  for (const name of objectKeys(globals)) defineGlobal(name, globals[name]);
  defineProperty(globalThis, NODE_HASH_HOOK, { value: createNodeHash(host), writable: false, configurable: false, enumerable: false });
  defineProperty(globalThis, STREAMED_REQUEST_HOOK, { value: createStreamedRequest(host), writable: false, configurable: false, enumerable: false });
  // Writable by the runtime only through this closure's defineProperty; the guest can overwrite
  // its own copy, which changes nothing the host relies on.
  // Redefined only when it changes (an isolate serves one instance): redefining a global property
  // on every run costs a dictionary update of the global object each time.
  let componentIdShown: string | undefined | null = null;
  const setComponentId = (id: string | null | undefined): void => {
    const value = typeof id === 'string' ? id : undefined;
    if (value === componentIdShown) return;
    componentIdShown = value;
    defineProperty(globalThis, COMPONENT_ID_HOOK, { value, writable: false, configurable: true, enumerable: false });
  };
  for (const name of ['WebAssembly', 'SharedArrayBuffer']) delete (globalThis as Record<string, unknown>)[name];

  let definition: Record<string, unknown> | null = null;

  /** Runs one entry point in `scope` (made for it); resolves to the result JSON and never rejects. */
  async function runOne(invocation: GuestInvocation, scope: InvocationScope, bodies: string): Promise<string> {
    current.scope = scope;
    if (invocation.bodyFromRaw === true) {
      // bodyRaw from the entry's bodies (or, without a span, in the event's text), then body, last
      // as the server's event has them.
      const event = invocation.event as { body?: unknown; bodyRaw: string };
      const at = invocation.bodyRawAt;
      if (at !== undefined) event.bodyRaw = bodies.slice(at[0], at[1]);
      event.body = jsonRequestBody(event.bodyRaw);
    }
    setComponentId(invocation.componentId);
    const record = new InvocationRecord();
    const action = invocation.entry === 'run' && isObject(invocation.action);
    // Configuring records nothing: emits or db writes made while listing options are dropped,
    // from a failed call's result too.
    const configuring = invocation.entry === 'options' || invocation.entry === 'additionalProps';
    try {
      if (!definition) return failureJson(record, { name: 'Error', message: 'no component is loaded' }, 'invalid', action);
      const instance = buildInstance(definition, invocation, record);
      if (configuring) {
        const uncaught = new Promise<never>((_, reject) => {
          scope.onUncaught = reject;
        });
        const configure = invocation.entry === 'options' ? propOptionsJson(definition, instance, invocation) : additionalPropsJson(definition, instance);
        const json = await Promise.race([configure, uncaught]);
        return resultJson(true, new InvocationRecord(), `,"returnValue":${json}`);
      }
      const context = action ? createActionContext(record, invocation.limits ?? DEFAULT_RUN_OUTPUT_LIMITS, URL) : null;
      if (context && typeof definition.run !== 'function') {
        return failureJson(record, { name: 'Error', message: 'the action has no run() method' }, 'invalid', true);
      }
      // An action's run gets `{ $, steps }`; a source's run gets the event.
      const argument = context ? { $: context.$, steps: isObject(invocation.action?.steps) ? invocation.action.steps : {} } : invocation.event;
      const hooks = isObject(definition.hooks) ? definition.hooks : {};
      const entry = invocation.entry === 'run' ? definition.run : hooks[invocation.entry];
      let value: unknown;
      if (typeof entry === 'function') {
        // An exception in a timer callback fails the run, as an uncaught exception ends a Node process.
        const uncaught = new Promise<never>((_, reject) => {
          scope.onUncaught = reject;
        });
        value = await Promise.race([entry.call(instance, invocation.entry === 'run' ? argument : undefined), uncaught]);
      } else if (invocation.entry === 'run') {
        // A timer source without run() emits the timer event itself.
        if (objectKeys(invocation.timerProps ?? {}).length === 0) {
          return failureJson(record, { name: 'Error', message: 'the component has no run() method' }, 'invalid');
        }
        (instance.$emit as (event: unknown) => void)(invocation.event);
      }
      let extra = '';
      // `return $.flow.exit(reason)` ends the run; the marker is not a value for later steps.
      if (context && context.exitMarker !== null && value === context.exitMarker) value = undefined;
      if (value !== undefined) {
        let json: string | undefined;
        try {
          json = jsonStringify(value);
        } catch (error) {
          host.log(scope.seq, 'warn', `the value returned by ${invocation.entry} is not JSON-serialisable and was dropped: ${errorInfo(error).message}`);
        }
        if (json !== undefined) extra = `,"returnValue":${json}`;
      }
      return resultJson(true, record, extra, action);
    } catch (error) {
      return failureJson(configuring ? new InvocationRecord() : record, errorInfo(error), 'user', action);
    } finally {
      if (current.scope === scope) current.scope = null;
    }
  }

  return {
    beginLoad(seq) {
      inSyncEntry = false;
      current.scope = new InvocationScope(seq, true);
    },

    register(exported) {
      inSyncEntry = false;
      current.scope = null;
      // An ES module's namespace carries `__esModule` (esbuild's iife output); CommonJS exports are the definition.
      const candidate = isObject(exported) && exported.__esModule === true ? exported.default : exported;
      if (!isObject(candidate) || Array.isArray(candidate)) {
        const found = candidate === undefined ? 'nothing' : Array.isArray(candidate) ? 'an array' : `a ${typeof candidate}`;
        return jsonStringify({
          name: 'Error',
          message: `the component must export its definition object (export default {...} or module.exports = {...}); it exported ${found}`,
        });
      }
      definition = candidate;
      return '';
    },

    describe() {
      inSyncEntry = false;
      if (!definition) throw new Error('no component is loaded');
      return describeDefinition(definition);
    },

    async invoke(invocationJson, bodies = '') {
      inSyncEntry = false;
      const invocation = jsonParse(invocationJson) as GuestInvocation;
      return runOne(invocation, new InvocationScope(invocation.seq, false), bodies);
    },

    invokeNow(invocationJson, bodies = '') {
      inSyncEntry = true;
      const invocation = jsonParse(invocationJson) as GuestInvocation;
      const run = runOne(invocation, new InvocationScope(invocation.seq, false), bodies);
      nowPending = run;
      void run.then((text) => {
        // Still inside the entry that started it: handed over at once. Otherwise the host is
        // waiting on `pendingResult`, which resolves with it.
        if (inSyncEntry && nowPending === run) {
          nowPending = null;
          bindings.settledNow(text);
        }
      });
    },

    pendingResult() {
      inSyncEntry = false;
      const run = nowPending;
      nowPending = null;
      return run ?? Promise.resolve(failureJson(new InvocationRecord(), { name: 'Error', message: 'no run is pending' }, 'invalid'));
    },

    async invokeBatch(invocationsJson, sliceMs, bodies = '') {
      inSyncEntry = false;
      const invocations = jsonParse(invocationsJson) as GuestInvocation[];
      const started = dateNow();
      let results = '';
      for (let i = 0; i < invocations.length; i++) {
        const scope = new InvocationScope(invocations[i].seq, false);
        const text = await runOne(invocations[i], scope, bodies);
        results = i === 0 ? text : `${results}\n${text}`;
        if (scope.usedHost || dateNow() - started >= sliceMs) break;
      }
      return results;
    },

    fireTimer(seq, id) {
      inSyncEntry = false;
      try {
        timers.fire(seq, id);
      } catch (error) {
        const scope = current.scope;
        if (scope && scope.seq === seq) scope.onUncaught?.(error);
      }
    },

    fetchDone(seq, id, answerJson, body) {
      inSyncEntry = false;
      const scope = current.scope;
      if (!scope || scope.seq !== seq) return;
      const stream = scope.streams.get(id);
      if (stream) {
        const answer = jsonParse(answerJson) as FetchAnswer;
        if (answer.error !== undefined) stream.end(streamFailure(answer.error, answer.code ?? 'network'));
        else stream.head(answer.status, answer.statusText, answer.headers);
        return;
      }
      const pending = scope.fetches.get(id);
      if (!pending) return;
      scope.fetches.delete(id);
      const answer = jsonParse(answerJson) as FetchAnswer;
      if (answer.error !== undefined) pending.reject(fetchFailure(answer.error, answer.code ?? 'network'));
      else pending.resolve({ ...answer, body });
    },

    streamChunk(seq, id, bytesLatin1) {
      inSyncEntry = false;
      const scope = current.scope;
      const stream = scope && scope.seq === seq ? scope.streams.get(id) : undefined;
      if (!stream) return false;
      try {
        return stream.chunk(latin1ToBytes(bytesLatin1));
      } catch (error) {
        scope?.onUncaught?.(error);
        return false;
      }
    },

    streamEnd(seq, id, errorJson) {
      inSyncEntry = false;
      const scope = current.scope;
      const stream = scope && scope.seq === seq ? scope.streams.get(id) : undefined;
      if (!stream) return;
      let error: Error | null = null;
      if (errorJson !== '') {
        const info = jsonParse(errorJson) as { error?: string; code?: string };
        error = streamFailure(info.error ?? 'the response failed', info.code ?? 'network');
      }
      try {
        stream.end(error);
      } catch (thrown) {
        scope?.onUncaught?.(thrown);
      }
    },
  };
}
