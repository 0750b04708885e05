import { parseDroppingRiskyKeys } from '@app/sandbox';
import { ApiError } from './api-error';

/** Request parameters: the query string and a JSON object body merged (API.md: either may carry them). */
export type Params = Record<string, unknown>;

/** Merges the query string and the body, the body winning; a body that is not an object is a 400 `invalid_body`. */
export function mergeParams(query: unknown, body: unknown): Params {
  const out: Params = {};
  if (query && typeof query === 'object') Object.assign(out, query);
  if (body !== undefined && body !== null && body !== '') {
    if (typeof body !== 'object' || Array.isArray(body)) throw ApiError.badRequest('the JSON body must be an object', undefined, 'invalid_body');
    Object.assign(out, body);
  }
  return out;
}

/**
 * What is wrong with `url` as an http(s) URL with a host, if anything. The URL is quoted with `$`
 * written `%24`: class-validator reads `$value`, `$property`... in a message as placeholders.
 */
export function httpUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `must be an absolute http or https URL, got "${url.slice(0, 200).replaceAll('$', '%24')}"`;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) return 'must be an http or https URL with a host';
  return undefined;
}

/** Validates an http(s) URL with a host: a 400 naming `field` otherwise. */
export function checkUrl(field: string, url: string): void {
  const problem = httpUrlProblem(url);
  if (problem) throw ApiError.fields([{ field, message: problem }]);
}

/**
 * JSON.parse that drops `__proto__`, `constructor` and `prototype` keys (no prototype pollution
 * downstream): `parseDroppingRiskyKeys`, the parse of guest results and request bodies too.
 */
export function safeJsonParse(text: string): unknown {
  return parseDroppingRiskyKeys(text);
}
