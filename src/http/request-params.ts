import { ApiError } from './api-error';
import { decodeCursor } from '@app/projections';
import type { PageRequest } from '@app/projections';
import { maxLengthOf, MAX_OBJECT_PARAM_JSON } from './field-limits';

/** Request parameters: the query string and a JSON object body merged (API.md: either may carry them). */
export type Params = Record<string, unknown>;

export function mergeParams(query: unknown, body: unknown): Params {
  const out: Params = {};
  if (query && typeof query === 'object') Object.assign(out, query);
  if (body !== undefined && body !== null && body !== '') {
    if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.badRequest('the JSON body must be an object', undefined, 'invalid_body');
    Object.assign(out, body);
  }
  return out;
}

function tooLong(field: string, max: number, length: number): ApiError {
  return ApiError.fields([{ field, message: `must be at most ${max} characters (got ${length})` }]);
}

/**
 * A string parameter; `required` makes a missing or empty one a 400 naming it, and one longer
 * than its limit (`FIELD_MAX_LENGTH`) is a 400 naming the field and the limit.
 */
export function stringParam(p: Params, name: string, required: true): string;
export function stringParam(p: Params, name: string, required?: false): string | undefined;
export function stringParam(p: Params, name: string, required = false): string | undefined {
  const v = p[name];
  if (v === undefined || v === null || v === '') {
    if (required) throw ApiError.fields([{ field: name, message: 'is required' }]);
    return undefined;
  }
  if (typeof v !== 'string') {
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    throw ApiError.fields([{ field: name, message: 'must be a string' }]);
  }
  const max = maxLengthOf(name);
  if (v.length > max) throw tooLong(name, max, v.length);
  return v;
}

/** A boolean parameter from JSON (`true`) or the query string (`"true"`). */
export function boolParam(p: Params, name: string): boolean | undefined {
  const v = p[name];
  if (v === undefined || v === null || v === '') return undefined;
  if (v === true || v === 'true' || v === '1') return true;
  if (v === false || v === 'false' || v === '0') return false;
  throw ApiError.fields([{ field: name, message: 'must be true or false' }]);
}

/** An object parameter: a JSON object, or a JSON string of one (query strings). */
export function objectParam(p: Params, name: string): Record<string, unknown> | undefined {
  let v = p[name];
  if (v === undefined || v === null || v === '') return undefined;
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  if (text.length > MAX_OBJECT_PARAM_JSON) throw tooLong(name, MAX_OBJECT_PARAM_JSON, text.length);
  if (typeof v === 'string') {
    try {
      v = safeJsonParse(v);
    } catch {
      throw ApiError.fields([{ field: name, message: 'must be a JSON object' }]);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw ApiError.fields([{ field: name, message: 'must be an object' }]);
  return v as Record<string, unknown>;
}

/** `limit`: an integer from 1 to 100, `fallback` when absent. */
export function limitParam(p: Params, fallback = 10): number {
  const raw = p.limit;
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw ApiError.fields([{ field: 'limit', message: 'must be an integer from 1 to 100' }]);
  return n;
}

/**
 * `limit` (1..100, default 10), `after`, `before`. A cursor must be one this API handed out
 * (`start_cursor` / `end_cursor`): anything else is a 400 naming it, never a silent first page.
 */
export function pageParams(p: Params): PageRequest {
  const limit = limitParam(p);
  const after = stringParam(p, 'after');
  const before = stringParam(p, 'before');
  for (const [field, cursor] of [['after', after], ['before', before]] as const) {
    if (cursor !== undefined && decodeCursor(cursor) === undefined) {
      throw ApiError.fields([{ field, message: 'is not a cursor of this list (use page_info.start_cursor or end_cursor)' }]);
    }
  }
  return { limit, after, before };
}

/** Validates an http(s) URL with a host. */
export function checkUrl(field: string, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw ApiError.fields([{ field, message: `must be an absolute http or https URL, got "${url.slice(0, 200)}"` }]);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
    throw ApiError.fields([{ field, message: 'must be an http or https URL with a host' }]);
  }
}

/** JSON.parse that drops `__proto__`, `constructor` and `prototype` keys (no prototype pollution downstream). */
export function safeJsonParse(text: string): unknown {
  return JSON.parse(text, (key, value) => (key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value));
}
