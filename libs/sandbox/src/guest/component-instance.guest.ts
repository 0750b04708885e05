import { inspect } from './console-format.guest';
import { defineProperty, hasOwn, jsonParse, jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { DEFAULT_RUN_OUTPUT_LIMITS, outputLimitMessages, RunOutputLimits } from './run-output-limits.guest';
import { httpResponseJson } from './http-response.guest';
import { createHttpRequestProp } from './http-request-prop.guest';
import { utf8Length } from './web-encoding.guest';

/** Largest value `db.set` accepts, measured as UTF-8 bytes of its JSON. */
export const MAX_DB_VALUE_BYTES = 60 * 1024;

type Dict = Record<string, unknown>;

/** One invocation as the host sends it (plain JSON). */
export interface GuestInvocation {
  seq: number;
  entry: 'run' | 'deploy' | 'activate' | 'deactivate' | 'options' | 'additionalProps';
  event?: unknown;
  /** `event.body` is left out: it is `jsonRequestBody(event.bodyRaw)` (see `SandboxInvocation.bodyFromRaw`). */
  bodyFromRaw?: true;
  /** With `bodyFromRaw`: `event.bodyRaw` is this span of the bodies string the entry was given (see `SandboxInvocation.bodyRaw`). */
  bodyRawAt?: [number, number];
  /** Set for `options`: which prop, and the page, previous context and query the user is at. */
  propOptions?: { prop: string; page: number; prevContext: unknown; query?: string };
  props: Dict;
  httpProps: Record<string, { endpoint: string; customResponse: boolean }>;
  dbProps: string[];
  timerProps: Dict;
  db: Dict;
  /** UTF-8 bytes the source's db holds before the run (keys plus values as JSON). */
  dbBytes?: number;
  limits?: RunOutputLimits;
  /** Set for an action: `run` is called as `run({ $, steps })`. */
  action?: { steps: Dict };
  /** The deployed component owning the isolate (`dc_...` / `p_...`), shown as `process.env.PD_COMPONENT`. */
  componentId?: string | null;
}

/**
 * What one invocation produced. Everything is recorded as JSON text at the moment of the call, so
 * a component mutating an object after emitting it cannot change what was emitted.
 */
export class InvocationRecord {
  readonly emits: string[] = [];
  readonly dbWrites: string[] = [];
  readonly dbLatest = new Map<string, string>();
  httpResponse: string | null = null;
  /** UTF-8 bytes of the events emitted so far (as JSON). */
  emitBytes = 0;
  /** UTF-8 bytes written by db.set so far (keys plus values as JSON). */
  dbWriteBytes = 0;
  /** Actions: `$.export` values as JSON by name (last wins), `$summary` apart. */
  readonly exports = new Map<string, string>();
  /** Actions: the text given to `$.export("$summary", text)`. */
  summary: string | null = null;
  /** Actions: `$.send.*` calls as JSON `{kind, params}`, in call order. */
  readonly sends: string[] = [];
  /** Actions: UTF-8 bytes of the sends so far (as JSON). */
  sendBytes = 0;
  /** Actions: the reason given to `$.flow.exit()`, once it was called. */
  flowExit: string | null = null;
}

/** A thrown value as plain data. `ConfigurationError` carries no stack: its message is for the user. */
export interface GuestErrorInfo {
  name: string;
  message: string;
  stack?: string;
}

/** True for any non-null object (arrays included). */
export function isObject(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null;
}

function setOwn(target: Dict, key: string, value: unknown): void {
  // defineProperty, not assignment: a prop named `__proto__` must stay a plain property.
  defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The value as JSON text (undefined becomes null); a TypeError naming `what` when it is not JSON-serialisable. */
export function toJson(value: unknown, what: string): string {
  let json: string | undefined;
  try {
    json = value === undefined ? 'null' : jsonStringify(value);
  } catch (error) {
    throw new TypeError(`${what} must be JSON-serialisable: ${describeError(error)}`);
  }
  if (json === undefined) throw new TypeError(`${what} must be JSON-serialisable, got a ${typeof value}`);
  return json;
}

function deepFreeze<T>(value: T): T {
  if (isObject(value) && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of objectKeys(value)) deepFreeze(value[key]);
  }
  return value;
}

/** Reads what a thrown value says about itself without ever throwing (getters may throw). */
export function errorInfo(error: unknown): GuestErrorInfo {
  try {
    if (isObject(error)) {
      const name = typeof error.name === 'string' && error.name ? error.name : 'Error';
      const message = error.message !== undefined ? String(error.message) : inspect(error, 2);
      const stack = typeof error.stack === 'string' && name !== 'ConfigurationError' ? error.stack : undefined;
      return stack === undefined ? { name, message } : { name, message, stack };
    }
    return { name: 'Error', message: typeof error === 'string' ? error : `Uncaught ${inspect(error, 2)}` };
  } catch {
    return { name: 'Error', message: 'Uncaught exception (its details could not be read)' };
  }
}

function checkLength(field: 'id' | 'name' | 'summary', value: string, max: number): void {
  if (value.length > max) throw new RangeError(outputLimitMessages.metaChars(field, value.length, max));
}

function normaliseMeta(meta: unknown, limits: RunOutputLimits): Dict {
  if (meta === undefined || meta === null) return {};
  if (!isObject(meta)) throw new TypeError(`this.$emit: meta must be an object {id, name, summary, ts}, got a ${typeof meta}`);
  const out: Dict = {};
  const { id, name, summary, ts } = meta;
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id))) {
      throw new TypeError(`this.$emit: meta.id must be a string or a number, got ${inspect(id, 0)}`);
    }
    if (typeof id === 'string') checkLength('id', id, limits.maxEmitIdChars);
    out.id = id;
  }
  if (name !== undefined && name !== null) {
    if (typeof name !== 'string') throw new TypeError(`this.$emit: meta.name must be a string, got ${inspect(name, 0)}`);
    checkLength('name', name, limits.maxEmitNameChars);
    out.name = name;
  }
  if (summary !== undefined && summary !== null) {
    if (typeof summary !== 'string') throw new TypeError(`this.$emit: meta.summary must be a string, got ${inspect(summary, 0)}`);
    checkLength('summary', summary, limits.maxEmitSummaryChars);
    out.summary = summary;
  }
  if (ts !== undefined && ts !== null) {
    if (typeof ts !== 'number' || !Number.isFinite(ts)) throw new TypeError(`this.$emit: meta.ts must be a number (epoch ms), got ${inspect(ts, 0)}`);
    out.ts = ts;
  }
  return out;
}

// A refused call records nothing: what the run recorded before it stays, as for any thrown error.
function createEmit(record: InvocationRecord, limits: RunOutputLimits): (event?: unknown, meta?: unknown) => void {
  return function $emit(event?: unknown, meta?: unknown): void {
    if (record.emits.length >= limits.maxEmits) throw new RangeError(outputLimitMessages.emitCount(limits.maxEmits));
    const eventJson = toJson(event, 'this.$emit: the event');
    const bytes = utf8Length(eventJson);
    if (bytes > limits.maxEmitBytes) throw new RangeError(outputLimitMessages.emitBytes(bytes, limits.maxEmitBytes));
    const total = record.emitBytes + bytes;
    if (total > limits.maxRunEmitBytes) throw new RangeError(outputLimitMessages.runEmitBytes(total, limits.maxRunEmitBytes));
    const metaJson = jsonStringify(normaliseMeta(meta, limits));
    record.emitBytes = total;
    record.emits.push(`{"event":${eventJson},"meta":${metaJson}}`);
  };
}

/** The db's running size: what the source held before the run, changed by this run's writes. */
interface DbSize {
  total: number;
}

function createDb(snapshot: Dict, record: InvocationRecord, limits: RunOutputLimits, size: DbSize): { get(key: unknown): unknown; set(key: unknown, value: unknown): void } {
  const entryBytes = (key: string): number => {
    const written = record.dbLatest.get(key);
    if (written !== undefined) return utf8Length(key) + utf8Length(written);
    return hasOwn(snapshot, key) ? utf8Length(key) + utf8Length(jsonStringify(snapshot[key] ?? null)) : 0;
  };
  return {
    get(key: unknown): unknown {
      const k = String(key);
      const written = record.dbLatest.get(k);
      if (written !== undefined) return jsonParse(written);
      // A copy each time: mutating what get() returned must not change the stored value.
      return hasOwn(snapshot, k) && snapshot[k] !== undefined ? jsonParse(jsonStringify(snapshot[k])) : undefined;
    },
    set(key: unknown, value: unknown): void {
      if (typeof key !== 'string') throw new TypeError(`db.set: the key must be a string, got a ${typeof key}`);
      if (key.length > limits.maxDbKeyChars) throw new RangeError(outputLimitMessages.dbKeyChars(key, limits.maxDbKeyChars));
      const json = toJson(value, `db.set("${key}"): the value`);
      const bytes = utf8Length(json);
      if (bytes > MAX_DB_VALUE_BYTES) {
        throw new RangeError(`db.set("${key}"): the value is ${bytes} bytes as JSON, more than the ${MAX_DB_VALUE_BYTES / 1024} KB allowed`);
      }
      const written = utf8Length(key) + bytes;
      const runTotal = record.dbWriteBytes + written;
      if (runTotal > limits.maxDbWriteBytesPerRun) throw new RangeError(outputLimitMessages.dbRunBytes(key, runTotal, limits.maxDbWriteBytesPerRun));
      const before = entryBytes(key);
      const sourceTotal = size.total - before + written;
      // Only growth is refused, so a source over the cap (a lowered cap) can still shrink its db.
      if (written > before && sourceTotal > limits.maxDbBytesPerSource) {
        throw new RangeError(outputLimitMessages.dbSourceBytes(key, sourceTotal, limits.maxDbBytesPerSource));
      }
      record.dbWriteBytes = runTotal;
      size.total = sourceTotal;
      record.dbLatest.set(key, json);
      record.dbWrites.push(`{"key":${jsonStringify(key)},"value":${json}}`);
    },
  };
}

function createHttp(
  propName: string,
  config: { endpoint: string; customResponse: boolean },
  entry: GuestInvocation['entry'],
  record: InvocationRecord,
): { endpoint: string; respond(response: unknown): void } {
  return {
    endpoint: config.endpoint,
    respond(response: unknown): void {
      if (!config.customResponse) {
        throw new Error(`this.${propName}.respond() needs customResponse: true on the "${propName}" prop; without it the service answers requests itself`);
      }
      if (entry !== 'run') throw new Error(`this.${propName}.respond() may only be called in run(), not in the ${entry} hook`);
      if (record.httpResponse !== null) throw new Error(`this.${propName}.respond() was already called in this run`);
      record.httpResponse = httpResponseJson(response, `this.${propName}.respond()`);
    },
  };
}

/** An app prop's object: its definition's fields, a read-only `$auth` and its methods bound to it. */
export function createApp(definition: Dict, configured: unknown): Dict {
  const app: Dict = {};
  for (const key of objectKeys(definition)) if (key !== 'methods' && key !== '$auth') setOwn(app, key, definition[key]);
  const auth = isObject(configured) && hasOwn(configured, '$auth') ? configured.$auth : (configured ?? {});
  defineProperty(app, '$auth', { value: deepFreeze(auth), enumerable: true, writable: false, configurable: false });
  const methods = isObject(definition.methods) ? definition.methods : {};
  for (const name of objectKeys(methods)) {
    const method = methods[name];
    if (typeof method === 'function') setOwn(app, name, method.bind(app));
  }
  return app;
}

function copyDefault(value: unknown): unknown {
  try {
    return value === undefined ? undefined : jsonParse(jsonStringify(value));
  } catch {
    return value;
  }
}

/**
 * Builds the `this` of one invocation: methods bound to it, configured prop values (prop defaults
 * when not configured), app props with read-only `$auth` and their own bound methods, the HTTP
 * interface, the db service and `$emit`.
 */
export function buildInstance(definition: Dict, invocation: GuestInvocation, record: InvocationRecord): Dict {
  const instance: Dict = {};
  const methods = isObject(definition.methods) ? definition.methods : {};
  for (const name of objectKeys(methods)) {
    const method = methods[name];
    if (typeof method === 'function') setOwn(instance, name, method.bind(instance));
  }
  const props = invocation.props ?? {};
  const propDefinitions = isObject(definition.props) ? definition.props : {};
  for (const name of objectKeys(propDefinitions)) {
    const prop = propDefinitions[name];
    if (isObject(prop) && prop.type === 'app') setOwn(instance, name, createApp(prop, props[name]));
    else if (isObject(prop) && prop.type === 'http_request') setOwn(instance, name, createHttpRequestProp(hasOwn(props, name) ? props[name] : copyDefault(prop.default)));
    else if (hasOwn(props, name)) setOwn(instance, name, props[name]);
    else if (isObject(prop) && prop.default !== undefined) setOwn(instance, name, copyDefault(prop.default));
  }
  for (const name of objectKeys(props)) {
    // Values of props not in the static definition (additionalProps) are set too.
    if (!hasOwn(propDefinitions, name)) setOwn(instance, name, props[name]);
  }
  const timers = invocation.timerProps ?? {};
  for (const name of objectKeys(timers)) setOwn(instance, name, timers[name]);
  const http = invocation.httpProps ?? {};
  for (const name of objectKeys(http)) setOwn(instance, name, createHttp(name, http[name], invocation.entry, record));
  const limits = invocation.limits ?? DEFAULT_RUN_OUTPUT_LIMITS;
  // One size shared by every db prop: they are views of the same db.
  const size: DbSize = { total: invocation.dbBytes ?? 0 };
  for (const name of invocation.dbProps ?? []) setOwn(instance, name, createDb(invocation.db ?? {}, record, limits, size));
  setOwn(instance, '$emit', createEmit(record, limits));
  return instance;
}

/** JSON-able copy of definition data: functions and symbols dropped, cycles cut, depth bounded. */
function plainData(value: unknown, depth: number, seen: object[]): unknown {
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (!isObject(value)) return value;
  if (depth <= 0 || seen.includes(value)) return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  const inner = [...seen, value];
  if (Array.isArray(value)) return value.map((v) => plainData(v, depth - 1, inner) ?? null);
  const out: Dict = {};
  for (const key of objectKeys(value)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    const v = plainData(value[key], depth - 1, inner);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function functionNames(value: unknown): string[] {
  return isObject(value) ? objectKeys(value).filter((k) => typeof value[k] === 'function') : [];
}

/**
 * Props as plain data, in declaration order, each with its `name` and the names of its function
 * fields (`functions`: e.g. `options` when they are loaded by a method).
 */
export function describeProps(propDefinitions: Dict): Dict[] {
  const props: Dict[] = [];
  for (const name of objectKeys(propDefinitions)) {
    const prop = propDefinitions[name];
    // `db: "$.service.db"` is shorthand for `db: { type: "$.service.db" }`.
    const data = isObject(prop)
      ? (plainData(prop, 12, []) as Dict)
      : typeof prop === 'string'
        ? { type: prop }
        : { invalid: `a prop must be an object, got ${prop === null ? 'null' : typeof prop}` };
    // A prop reusing an app's propDefinition has the functions of that definition too (its async options).
    const ref = isObject(prop) && Array.isArray(prop.propDefinition) ? prop.propDefinition : [];
    const shared = isObject(ref[0]) && isObject(ref[0].propDefinitions) && typeof ref[1] === 'string' ? ref[0].propDefinitions[ref[1]] : undefined;
    const functions = [...functionNames(shared)];
    for (const fn of functionNames(prop)) if (!functions.includes(fn)) functions.push(fn);
    props.push({ ...data, name, ...(functions.length ? { functions } : {}) });
  }
  return props;
}

/** The definition as plain data (what the host validates at save), as JSON. */
export function describeDefinition(definition: Dict): string {
  const props = describeProps(isObject(definition.props) ? definition.props : {});
  const top = (key: string) => plainData(definition[key], 4, []);
  return jsonStringify({
    name: top('name'),
    key: top('key'),
    version: top('version'),
    type: top('type'),
    description: top('description'),
    dedupe: top('dedupe'),
    props,
    hooks: functionNames(definition.hooks),
    methods: functionNames(definition.methods),
    hasRun: typeof definition.run === 'function',
    hasAdditionalProps: typeof definition.additionalProps === 'function',
  });
}
