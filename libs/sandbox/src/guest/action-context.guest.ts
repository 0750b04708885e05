import { InvocationRecord, isObject, toJson } from './component-instance.guest';
import { inspect } from './console-format.guest';
import { defineProperty, jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { httpResponseJson } from './http-response.guest';
import { MAX_EXPORT_BYTES, outputLimitMessages, RunOutputLimits } from './run-output-limits.guest';
import { utf8Length } from './web-encoding.guest';
import type { UrlClass } from './web-url.guest';

type Dict = Record<string, unknown>;

/** HTTP methods `$.send.http` performs. */
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
/** RFC 9110 token: what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** S3 bucket naming rules (lower case, digits, dots and dashes, 3 to 63 characters). */
const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const MAX_URL_CHARS = 8 * 1024;
const MAX_EXPORT_NAME_CHARS = 128;
const MAX_S3_PREFIX_CHARS = 1024;
const MAX_SUBJECT_CHARS = 998;
/** Names a later step reads in other ways (`$return_value`) or the host drops from guest JSON. */
const RESERVED_EXPORTS = new Set(['$return_value', '__proto__', 'constructor', 'prototype']);

/** What `$.flow.exit()` returns: a step returning it is not giving a return value. */
export interface FlowExitMarker {
  readonly $flowExit: true;
  readonly reason: string;
}

/** The `$` of one action run and the marker its `$.flow.exit()` returns. */
export interface ActionContext {
  $: Dict;
  exitMarker: FlowExitMarker | null;
}

function fail(kind: string, message: string): never {
  throw new TypeError(`$.send.${kind}: ${message}`);
}

function optionalString(kind: string, params: Dict, field: string): string | undefined {
  const value = params[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') fail(kind, `${field} must be a string, got ${inspect(value, 0)}`);
  return value;
}

function plainObject(kind: string, params: Dict, field: string): Dict | undefined {
  const value = params[field];
  if (value === undefined || value === null) return undefined;
  if (!isObject(value) || Array.isArray(value)) fail(kind, `${field} must be an object, got ${inspect(value, 0)}`);
  return value;
}

function httpSend(params: Dict, URL: UrlClass): Dict {
  const method = params.method === undefined || params.method === null ? 'GET' : params.method;
  if (typeof method !== 'string' || !HTTP_METHODS.includes(method.toUpperCase())) {
    fail('http', `method must be one of ${HTTP_METHODS.join(', ')}, got ${inspect(params.method, 0)}`);
  }
  const url = params.url;
  if (typeof url !== 'string' || url === '') fail('http', `url is required and must be a string, got ${inspect(url, 0)}`);
  if (url.length > MAX_URL_CHARS) fail('http', `url is ${url.length} characters long, more than the ${MAX_URL_CHARS} allowed`);
  const parsed = URL.parse(url);
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.hostname) {
    fail('http', `url must be an absolute http or https URL with a host, got ${inspect(url, 0)}`);
  }
  const out: Dict = { method: method.toUpperCase(), url: parsed.href };
  const headers = plainObject('http', params, 'headers');
  if (headers) {
    const checked: Record<string, string> = {};
    for (const name of objectKeys(headers)) {
      const value = headers[name];
      if (value === undefined || value === null) continue;
      if (!HEADER_NAME.test(name)) fail('http', `header name ${inspect(name, 0)} is not a valid HTTP header name`);
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        fail('http', `header ${name} must be a string, got ${inspect(value, 0)}`);
      }
      const text = String(value);
      if (/[\r\n\u0000]/.test(text)) fail('http', `header ${name} must not contain line breaks`);
      checked[name] = text;
    }
    out.headers = checked;
  }
  const query = plainObject('http', params, 'params');
  if (query) out.params = query;
  if (params.data !== undefined) out.data = params.data;
  return out;
}

function emailSend(params: Dict): Dict {
  const subject = params.subject;
  if (typeof subject !== 'string' || subject.trim() === '') fail('email', `subject is required and must be a non-empty string, got ${inspect(subject, 0)}`);
  if (subject.length > MAX_SUBJECT_CHARS) fail('email', `subject is ${subject.length} characters long, more than the ${MAX_SUBJECT_CHARS} allowed`);
  // A line break in the subject would let the step write its own mail headers.
  if (CONTROL_CHARS.test(subject)) fail('email', 'subject must not contain line breaks or control characters');
  const text = optionalString('email', params, 'text');
  const html = optionalString('email', params, 'html');
  if (text === undefined && html === undefined) fail('email', 'text or html is required');
  const out: Dict = { subject };
  if (text !== undefined) out.text = text;
  if (html !== undefined) out.html = html;
  return out;
}

function s3Send(params: Dict): Dict {
  const bucket = params.bucket;
  if (typeof bucket !== 'string' || !S3_BUCKET.test(bucket) || bucket.includes('..')) {
    fail('s3', `bucket must be a valid S3 bucket name (3 to 63 lower-case letters, digits, dots and dashes), got ${inspect(bucket, 0)}`);
  }
  const prefix = params.prefix;
  if (typeof prefix !== 'string') fail('s3', `prefix is required and must be a string, got ${inspect(prefix, 0)}`);
  if (prefix.length > MAX_S3_PREFIX_CHARS) fail('s3', `prefix is ${prefix.length} characters long, more than the ${MAX_S3_PREFIX_CHARS} allowed`);
  if (CONTROL_CHARS.test(prefix)) fail('s3', 'prefix must not contain control characters');
  if (params.payload === undefined) fail('s3', 'payload is required');
  return { bucket, prefix, payload: params.payload };
}

function emitSend(params: Dict, limits: RunOutputLimits): Dict {
  if (params.raw_event === undefined) fail('emit', 'raw_event is required');
  const name = optionalString('emit', params, 'name');
  if (name !== undefined && name.length > limits.maxEmitNameChars) {
    fail('emit', `name is ${name.length} characters long, more than the ${limits.maxEmitNameChars} allowed`);
  }
  return name === undefined ? { raw_event: params.raw_event } : { raw_event: params.raw_event, name };
}

function sseSend(params: Dict, limits: RunOutputLimits): Dict {
  const channel = params.channel;
  if (typeof channel !== 'string' || channel === '') fail('sse', `channel is required and must be a non-empty string, got ${inspect(channel, 0)}`);
  if (channel.length > limits.maxEmitNameChars) fail('sse', `channel is ${channel.length} characters long, more than the ${limits.maxEmitNameChars} allowed`);
  if (CONTROL_CHARS.test(channel)) fail('sse', 'channel must not contain control characters');
  if (params.payload === undefined) fail('sse', 'payload is required');
  return { channel, payload: params.payload };
}

/**
 * Queues one send. Its arguments are checked now, so a bad destination fails the step that made
 * it, where the author sees it, rather than a send performed later. Sends share the emit caps of
 * a run (count, bytes per send, bytes in all), counted apart from emits.
 */
function createSend(kind: string, check: (params: Dict) => Dict, record: InvocationRecord, limits: RunOutputLimits): (params: unknown) => void {
  return function send(params: unknown): void {
    if (!isObject(params) || Array.isArray(params)) fail(kind, `takes an object, got ${inspect(params, 0)}`);
    if (record.sends.length >= limits.maxEmits) throw new RangeError(outputLimitMessages.sendCount(limits.maxEmits));
    const checked = check(params);
    const json = toJson(checked, `$.send.${kind}: the send`);
    const bytes = utf8Length(json);
    if (bytes > limits.maxEmitBytes) throw new RangeError(outputLimitMessages.sendBytes(kind, bytes, limits.maxEmitBytes));
    const total = record.sendBytes + bytes;
    if (total > limits.maxRunEmitBytes) throw new RangeError(outputLimitMessages.runSendBytes(kind, total, limits.maxRunEmitBytes));
    record.sendBytes = total;
    record.sends.push(`{"kind":${jsonStringify(kind)},"params":${json}}`);
  };
}

function summaryText(value: unknown, max: number): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else {
    try {
      text = jsonStringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  // A summary is a label for people: a long one is cut, never a reason to fail the step.
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function createExport(record: InvocationRecord, limits: RunOutputLimits): (name: unknown, value: unknown) => void {
  let exportBytes = 0;
  return function $export(name: unknown, value: unknown): void {
    if (typeof name !== 'string' || name === '') throw new TypeError(`$.export: the name must be a non-empty string, got ${inspect(name, 0)}`);
    if (name === '$summary') {
      record.summary = summaryText(value, limits.maxEmitSummaryChars);
      return;
    }
    if (name.length > MAX_EXPORT_NAME_CHARS) throw new RangeError(`$.export: the name is ${name.length} characters long, more than the ${MAX_EXPORT_NAME_CHARS} allowed`);
    if (RESERVED_EXPORTS.has(name)) throw new TypeError(`$.export: "${name}" is reserved and cannot be exported`);
    const json = toJson(value, `$.export("${name}"): the value`);
    const previous = record.exports.get(name);
    const total = exportBytes - (previous === undefined ? 0 : utf8Length(name) + utf8Length(previous)) + utf8Length(name) + utf8Length(json);
    if (total > MAX_EXPORT_BYTES) throw new RangeError(outputLimitMessages.exportBytes(name, total, MAX_EXPORT_BYTES));
    exportBytes = total;
    record.exports.set(name, json);
  };
}

function unsupported(what: string): () => never {
  return () => {
    throw new Error(`${what} is not supported by this server`);
  };
}

/**
 * Builds the `$` an action's `run({ $, steps })` receives: exports and the summary, `$.respond`,
 * `$.flow.exit` and the `$.send.*` destinations, each recording into `record` at the call.
 */
export function createActionContext(record: InvocationRecord, limits: RunOutputLimits, URL: UrlClass): ActionContext {
  const context: ActionContext = { $: {}, exitMarker: null };
  const send: Dict = {
    http: createSend('http', (p) => httpSend(p, URL), record, limits),
    email: createSend('email', emailSend, record, limits),
    s3: createSend('s3', s3Send, record, limits),
    emit: createSend('emit', (p) => emitSend(p, limits), record, limits),
    sse: createSend('sse', (p) => sseSend(p, limits), record, limits),
  };
  const flow: Dict = {
    exit(reason?: unknown): FlowExitMarker {
      const text = reason === undefined || reason === null ? '' : summaryText(reason, limits.maxEmitSummaryChars);
      record.flowExit = text;
      context.exitMarker = Object.freeze({ $flowExit: true as const, reason: text });
      return context.exitMarker;
    },
    delay: unsupported('$.flow.delay()'),
    rerun: unsupported('$.flow.rerun()'),
    suspend: unsupported('$.flow.suspend()'),
  };
  const $: Dict = {
    export: createExport(record, limits),
    respond(response: unknown): void {
      if (record.httpResponse !== null) throw new Error('$.respond() was already called in this run');
      const immediate = isObject(response) && response.immediate === true;
      record.httpResponse = httpResponseJson(response, '$.respond()', immediate ? { immediate: true } : {});
    },
    send: Object.freeze(send),
    flow: Object.freeze(flow),
  };
  for (const name of objectKeys($)) defineProperty(context.$, name, { value: $[name], enumerable: true, writable: false, configurable: false });
  return context;
}
