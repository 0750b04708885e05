import { inspect } from './console-format.guest';
import { jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { bytesToBase64, toBytes } from './web-encoding.guest';

type Dict = Record<string, unknown>;

function isObject(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null;
}

function responseBody(body: unknown, headers: Record<string, string>, who: string): { body?: string; bodyBase64?: string } {
  if (body === undefined || body === null) return {};
  if (typeof body === 'string') return { body };
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { bodyBase64: bytesToBase64(toBytes(body)) };
  let json: string | undefined;
  try {
    json = jsonStringify(body);
  } catch (error) {
    throw new TypeError(`${who}: the body must be JSON-serialisable: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (json === undefined) throw new TypeError(`${who}: the body must be JSON-serialisable, got a ${typeof body}`);
  if (!objectKeys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
  return { body: json };
}

/**
 * Checks the argument of a source's `this.http.respond()` or an action's `$.respond()` and returns
 * the response as JSON text (`{status, headers, body | bodyBase64}`). `who` names the call in errors.
 * Both take the same shape, so a component moved from a source to a workflow step answers the same.
 */
export function httpResponseJson(response: unknown, who: string, extra: Dict = {}): string {
  if (!isObject(response)) throw new TypeError(`${who} takes an object {status, headers, body}`);
  // Registry components pass numeric strings ("200"); COMPONENTS.md accepts them.
  const status = typeof response.status === 'string' && /^\d{3}$/.test(response.status) ? Number(response.status) : response.status;
  if (typeof status === 'number' && status >= 100 && status < 200) {
    throw new RangeError(`${who}: status ${status} is informational (1xx); the response must be final, from 200 to 599`);
  }
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new RangeError(`${who}: status must be an integer from 200 to 599, got ${inspect(response.status, 0)}`);
  }
  const headers: Record<string, string> = {};
  if (response.headers !== undefined && response.headers !== null) {
    if (!isObject(response.headers)) throw new TypeError(`${who}: headers must be an object`);
    for (const name of objectKeys(response.headers)) {
      const value = response.headers[name];
      if (value === undefined || value === null || name === '__proto__') continue;
      headers[name] = Array.isArray(value) ? value.map(String).join(', ') : String(value);
    }
  }
  const body = responseBody(response.body, headers, who);
  return jsonStringify({ status, headers, ...body, ...extra });
}
