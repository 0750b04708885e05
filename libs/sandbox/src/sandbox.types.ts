/** What the sandbox needs to run one entry point of a component. Only plain data crosses. */
export interface SandboxInvocation {
  /**
   * Stable id of the code version (e.g. the bundle's sha256). Keys only the bundle a worker keeps,
   * which is safe to share: it is the same text for everyone who deploys it.
   */
  codeId: string;
  /**
   * The deployed instance that runs the code (e.g. `<source id>@<code hash>`). A warm isolate, and
   * so every module-level variable and `globalThis` property, belongs to one (instanceId, codeId)
   * pair: two instances never share one, even with the same code. Also picks the worker.
   */
  instanceId: string;
  /**
   * The account that owns the instance. A worker enters a run synchronously, on its own thread
   * (see `IsolatePool`), only while every instance it holds has this same account: a step that
   * holds that thread can then hold up no other account's runs. Absent: never synchronously.
   */
  account?: string;
  /** The bundled code produced by `bundleComponent`. */
  bundle: string;
  /**
   * Which function to call on the definition: `run`, a hook, a prop's `options` (named by
   * `propOptions`; the result's `returnValue` is `{options, context}`) or `additionalProps` (the
   * result's `returnValue` is the added props described as PropDescription[]). The last two see
   * `this` built as for `run` from `props`, the props configured so far, and record nothing.
   */
  entry: 'run' | 'deploy' | 'activate' | 'deactivate' | 'options' | 'additionalProps';
  /**
   * For `options`: the prop, the page (0-based), the context the previous page returned, and the
   * user's query (passed to the method only when the prop has `useQuery`).
   */
  propOptions?: { prop: string; page: number; prevContext: unknown; query?: string };
  /** The argument passed to `run` (ignored for hooks). */
  event?: unknown;
  /**
   * `event` as JSON text, sent instead of it when the server has that text anyway (an HTTP
   * request, serialised once for its record in the log): the worker hands it to the guest as it
   * is, where it used to parse the event from the message and serialise it again.
   */
  eventJson?: string;
  /**
   * `eventJson` is an HTTP request's event with a JSON content type, without its `bodyRaw` and
   * its `body`: `bodyRaw` is the member below, and `body` is `jsonRequestBody(bodyRaw)`, which the
   * guest makes. So a JSON body crosses to the worker once, and the server never parses it (see
   * `requestTexts`).
   */
  bodyFromRaw?: boolean;
  /**
   * With `bodyFromRaw`, the request's raw body, as a string of its own: inside `eventJson` it was
   * escaped twice on its way to the guest (in the event's text, then in the channel's JSON) and
   * unescaped twice (by the worker's parse of the message, by the guest's of its invocation).
   * It now crosses the channel escaped once and reaches the guest as a string, not as JSON text.
   */
  bodyRaw?: string;
  /** `this.<prop>` values: plain configured values (already decrypted); an app prop's value is `{ $auth: {...} }`. */
  props: Record<string, unknown>;
  /** Names of props that are `$.interface.http`: `this.<name>` becomes `{endpoint, respond()}`. */
  httpProps?: Record<string, { endpoint: string; customResponse: boolean }>;
  /** Names of `$.service.db` props (and `db` is always available as `this.db` too when declared). */
  dbProps?: string[];
  /** Names of `$.interface.timer` props with their configured value. */
  timerProps?: Record<string, unknown>;
  /** Snapshot of the source's db values before the run. */
  db?: Record<string, unknown>;
  /** UTF-8 bytes the source's db holds (keys plus values as JSON), for the per-source db cap. */
  dbBytes?: number;
  limits?: Partial<SandboxLimits>;
  /**
   * Set for an action (a workflow step or `POST /v1/actions/run`): `run` is called as
   * `run({ $, steps })` with this `steps` (the trigger and earlier steps), and the result carries
   * the step's exports, summary, queued sends, respond and flow exit.
   */
  action?: { steps: Record<string, unknown> };
  /**
   * The caller never changes `props`, `httpProps`, `dbProps` and `timerProps` once it has made
   * this invocation, and passes the same objects for every run of one configuration (a source's
   * invocation template). The supervisor then serialises them once per set of objects and sends
   * their text (`configJson`) instead of the objects; the worker places that text in the guest's
   * invocation as it is, where it parsed the objects and serialised them again for every run.
   */
  stableConfig?: boolean;
  /**
   * Wire only, set by the supervisor for a `stableConfig` invocation: the JSON members
   * `"props":...,"httpProps":...,"dbProps":...,"timerProps":...` (no braces), sent instead of the
   * four objects.
   */
  configJson?: string;
  /**
   * Which worker serves the call: calls with the same placement go to the same worker (default:
   * the instanceId). A workflow's steps share one, so a chain of them finds every isolate there.
   */
  placement?: string;
  /**
   * Workflow steps to run right after this one, in the same worker, while they may (see
   * `invocation.chain.ts`): their results come back in `SandboxResult.chained`.
   */
  chain?: InvocationChain;
}

/**
 * The steps after an action's own, run by the worker without a round trip to the server each.
 * `name` is this step's name (its result joins `steps` under it); each link's `inv.props` may hold
 * `{{steps...}}` references, resolved in the worker against the results before it.
 */
export interface InvocationChain {
  name: string;
  links: { name: string; inv: SandboxInvocation }[];
}

export interface SandboxLimits {
  memoryMb: number;
  /** Wall-clock limit for the whole invocation including awaits and timers. */
  timeoutMs: number;
  /** CPU time budget for the invocation. */
  cpuMs: number;
}

export interface SandboxLog {
  level: 'log' | 'info' | 'warn' | 'error' | 'debug';
  message: string;
  /** epoch ms */
  ts: number;
}

export interface SandboxEmit {
  /** JSON-serialisable event (undefined becomes null). */
  event: unknown;
  meta: { id?: string | number; name?: string; summary?: string; ts?: number };
}

export interface SandboxHttpResponse {
  status: number;
  headers: Record<string, string>;
  /** Body as a string; `bodyBase64` set when the guest gave bytes. */
  body?: string;
  bodyBase64?: string;
  /** Actions: `$.respond({immediate: true})`: the caller gets the response at once and the run goes on. */
  immediate?: boolean;
}

export interface SandboxError {
  name: string;
  message: string;
  stack?: string;
  /** `timeout`, `memory`, `cpu`, `crash` (worker died), `user` (the code threw), `invalid` (bad code). */
  kind: 'timeout' | 'memory' | 'cpu' | 'crash' | 'user' | 'invalid';
}

/**
 * The outcome of one invocation. Never thrown for guest failures: `ok: false` with `error`, and
 * the error is also the last line of `logs`. Emits, db writes and the HTTP response are those
 * recorded before a thrown error; a run ended by a limit or a crash reports none. Emits and db
 * writes never exceed the run output caps (RunOutputLimits): the worker cuts a result that does.
 */
export interface SandboxResult {
  ok: boolean;
  error?: SandboxError;
  /** JSON-serialisable value returned by the entry point. */
  returnValue?: unknown;
  emits: SandboxEmit[];
  logs: SandboxLog[];
  /** db.set calls in order (last write wins). */
  dbWrites: { key: string; value: unknown }[];
  httpResponse?: SandboxHttpResponse;
  /** Actions: `$.export(name, value)` calls (last wins), without `$summary`. */
  exports?: Record<string, unknown>;
  /** Actions: `$.export("$summary", text)`. */
  summary?: string;
  /**
   * Actions: `$.send.*` calls, validated in the guest when called, performed by the host after the
   * step succeeds. Absent when the step failed (its sends are never performed).
   */
  sends?: SandboxSend[];
  /** Actions: the step returned `$.flow.exit(reason)`: the run ends `exited`, later steps are skipped. */
  flowExit?: { reason: string };
  durationMs: number;
  cpuMs: number;
  /**
   * Runs that went into the isolate in the same entry as this one, itself included (queued runs of
   * one instance are batched; 1 when it ran alone). With more than one, `durationMs` and `cpuMs`
   * are the batch's shared out evenly.
   */
  entryRuns?: number;
  /**
   * True when the run was entered synchronously on the worker's thread (a run alone on a warm
   * isolate, see `IsolatePool`); absent when it went through isolated-vm's thread.
   */
  enteredSync?: boolean;
  /** Results of the invocation's chained steps that ran, in order (see `SandboxInvocation.chain`). */
  chained?: SandboxResult[];
}

/** One `$.send.*` call of an action, as plain data (validated by the guest, re-checked by the host). */
export type SandboxSend =
  | { kind: 'http'; params: { method: string; url: string; headers?: Record<string, string>; params?: Record<string, unknown>; data?: unknown } }
  | { kind: 'email'; params: { subject: string; text?: string; html?: string } }
  | { kind: 's3'; params: { bucket: string; prefix: string; payload: unknown } }
  | { kind: 'emit'; params: { raw_event: unknown; name?: string } }
  | { kind: 'sse'; params: { channel: string; payload: unknown } };

/** A prop as described by the definition, functions removed. */
export interface PropDescription {
  name: string;
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  default?: unknown;
  secret?: boolean;
  min?: number;
  max?: number;
  options?: unknown;
  /** Keys whose values were functions (removed), e.g. `options` when options are loaded dynamically. */
  functions?: string[];
  /** Any other JSON-able property of the prop (customResponse, app, ...). */
  [extra: string]: unknown;
}

/** The component definition as plain data (what `describe` returns). */
export interface ComponentDescription {
  name?: unknown;
  key?: unknown;
  version?: unknown;
  type?: unknown;
  description?: unknown;
  dedupe?: unknown;
  props: PropDescription[];
  /** Names of hooks present (`deploy`, `activate`, `deactivate`). */
  hooks: string[];
  methods: string[];
  hasRun: boolean;
  /** True when the definition has an `additionalProps` method (dynamic props). */
  hasAdditionalProps?: boolean;
}
