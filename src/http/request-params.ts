import { ApiError } from '../engine/api-error';
import type { PageRequest } from '@app/projections';

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

/** A string parameter; `required` makes a missing or empty one a 400 naming it. */
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
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      throw ApiError.fields([{ field: name, message: 'must be a JSON object' }]);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw ApiError.fields([{ field: name, message: 'must be an object' }]);
  return v as Record<string, unknown>;
}

/** `limit` (1..100, default 10), `after`, `before`. */
export function pageParams(p: Params): PageRequest {
  const raw = p.limit;
  let limit = 10;
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 100) throw ApiError.fields([{ field: 'limit', message: 'must be an integer from 1 to 100' }]);
    limit = n;
  }
  return { limit, after: stringParam(p, 'after'), before: stringParam(p, 'before') };
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
