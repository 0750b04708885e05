import { parseGuestJson } from './guest-json.parser';
import type { ComponentDescription, PropDescription, SandboxEmit, SandboxError, SandboxHttpResponse, SandboxResult, SandboxSend } from './sandbox.types';

/** What the guest reports about one invocation, checked and reduced to the documented shape. */
export type GuestOutcome = Pick<
  SandboxResult,
  'ok' | 'error' | 'returnValue' | 'emits' | 'dbWrites' | 'httpResponse' | 'exports' | 'summary' | 'sends' | 'flowExit'
>;

type Dict = Record<string, unknown>;

function isDict(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function malformed(what: string): never {
  throw new Error(`the component's result is malformed: ${what}`);
}

function emitOf(raw: unknown): SandboxEmit {
  if (!isDict(raw) || !isDict(raw.meta)) malformed('an emit is not {event, meta}');
  const meta: SandboxEmit['meta'] = {};
  const { id, name, summary, ts } = raw.meta;
  if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))) meta.id = id;
  if (typeof name === 'string') meta.name = name;
  if (typeof summary === 'string') meta.summary = summary;
  if (typeof ts === 'number' && Number.isFinite(ts)) meta.ts = ts;
  return { event: raw.event === undefined ? null : raw.event, meta };
}

function httpResponseOf(raw: unknown): SandboxHttpResponse {
  if (!isDict(raw)) malformed('httpResponse is not an object');
  const status = raw.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) malformed('httpResponse.status');
  const headers: Record<string, string> = {};
  if (isDict(raw.headers)) {
    for (const [name, value] of Object.entries(raw.headers)) if (typeof value === 'string') headers[name] = value;
  }
  const response: SandboxHttpResponse = { status, headers };
  if (typeof raw.body === 'string') response.body = raw.body;
  if (typeof raw.bodyBase64 === 'string') response.bodyBase64 = raw.bodyBase64;
  if (raw.immediate === true) response.immediate = true;
  return response;
}

const SEND_KINDS = new Set(['http', 'email', 's3', 'emit', 'sse']);

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * One send as the guest recorded it. The guest validated it at the call; here only what the
 * host's performers rely on is checked again (a tampered runtime could skip the guest's checks).
 */
function sendOf(raw: unknown): SandboxSend {
  if (!isDict(raw) || typeof raw.kind !== 'string' || !SEND_KINDS.has(raw.kind) || !isDict(raw.params)) malformed('a send is not {kind, params}');
  const p = raw.params;
  const str = (v: unknown) => typeof v === 'string';
  const optionalStr = (v: unknown) => v === undefined || typeof v === 'string';
  const ok =
    raw.kind === 'http' ? str(p.method) && isHttpUrl(p.url) && (p.headers === undefined || isDict(p.headers)) && (p.params === undefined || isDict(p.params))
    : raw.kind === 'email' ? str(p.subject) && optionalStr(p.text) && optionalStr(p.html)
    : raw.kind === 's3' ? str(p.bucket) && str(p.prefix)
    : raw.kind === 'emit' ? optionalStr(p.name)
    : str(p.channel);
  if (!ok) malformed(`a $.send.${raw.kind} has bad parameters`);
  return { kind: raw.kind, params: p } as SandboxSend;
}

function exportsOf(raw: unknown): Record<string, unknown> {
  if (!isDict(raw)) malformed('exports is not an object');
  // parseGuestJson already dropped __proto__, constructor and prototype.
  return raw;
}

function errorOf(raw: unknown): SandboxError {
  if (!isDict(raw)) return { name: 'Error', message: 'the component failed without details', kind: 'user' };
  const error: SandboxError = {
    name: typeof raw.name === 'string' ? raw.name : 'Error',
    message: typeof raw.message === 'string' ? raw.message : '',
    kind: raw.kind === 'invalid' ? 'invalid' : 'user',
  };
  if (typeof raw.stack === 'string') error.stack = raw.stack;
  return error;
}

/**
 * Parses the JSON the guest runtime returns for an invocation. Throws when it does not have the
 * runtime's shape (only possible if the component tampered with the runtime); the caller reports
 * that as an invalid component.
 */
export function parseGuestResult(text: unknown): GuestOutcome {
  if (typeof text !== 'string') malformed(`expected JSON text, got ${typeof text}`);
  const raw = parseGuestJson(text);
  if (!isDict(raw) || typeof raw.ok !== 'boolean' || !Array.isArray(raw.emits) || !Array.isArray(raw.dbWrites)) {
    malformed('missing ok, emits or dbWrites');
  }
  const outcome: GuestOutcome = {
    ok: raw.ok,
    emits: raw.emits.map(emitOf),
    dbWrites: raw.dbWrites.map((w) => {
      if (!isDict(w) || typeof w.key !== 'string') malformed('a db write has no string key');
      return { key: w.key, value: w.value === undefined ? null : w.value };
    }),
  };
  if (raw.returnValue !== undefined) outcome.returnValue = raw.returnValue;
  if (raw.httpResponse !== undefined) outcome.httpResponse = httpResponseOf(raw.httpResponse);
  if (raw.exports !== undefined) outcome.exports = exportsOf(raw.exports);
  if (typeof raw.summary === 'string') outcome.summary = raw.summary;
  if (raw.sends !== undefined) {
    if (!Array.isArray(raw.sends)) malformed('sends is not an array');
    outcome.sends = raw.sends.map(sendOf);
  }
  if (raw.flowExit !== undefined) {
    if (!isDict(raw.flowExit) || typeof raw.flowExit.reason !== 'string') malformed('flowExit has no reason');
    outcome.flowExit = { reason: raw.flowExit.reason };
  }
  if (!raw.ok) outcome.error = errorOf(raw.error);
  return outcome;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** Parses the guest's description of a definition into a ComponentDescription (shape enforced). */
export function parseGuestDescription(text: unknown): ComponentDescription {
  if (typeof text !== 'string') malformed(`expected JSON text, got ${typeof text}`);
  const raw = parseGuestJson(text);
  if (!isDict(raw) || !Array.isArray(raw.props)) malformed('the description has no props list');
  const props: PropDescription[] = raw.props
    .filter((p): p is Dict => isDict(p) && typeof p.name === 'string')
    .map((p) => ({ ...p, name: p.name as string, type: p.type as string }));
  return {
    name: raw.name,
    key: raw.key,
    version: raw.version,
    type: raw.type,
    description: raw.description,
    dedupe: raw.dedupe,
    props,
    hooks: stringList(raw.hooks),
    methods: stringList(raw.methods),
    hasRun: raw.hasRun === true,
    hasAdditionalProps: raw.hasAdditionalProps === true,
  };
}
