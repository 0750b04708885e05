import { defineProperty, jsonParse, jsonStringify, objectKeys } from './guest-intrinsics.guest';
import { bytesToBase64, utf8Encode } from './web-encoding.guest';
import type { Response } from './web-fetch.guest';

type Dict = Record<string, unknown>;
type GuestFetch = (input: unknown, init?: { method?: string; headers?: unknown; body?: unknown }) => Promise<Response>;

let guestFetch: GuestFetch | null = null;

/** Gives `execute()` the runtime's own fetch (captured at install, so a component replacing the global changes nothing). */
export function useFetchForHttpRequests(fetch: GuestFetch): void {
  guestFetch = fetch;
}

/** What `execute()` resolves to: the shape of an axios response, which registry components expect. */
export interface HttpRequestResult {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  /** Parsed JSON when the response says it is JSON, else the text. */
  data: unknown;
}

function pairs(value: unknown): Array<[string, string]> {
  if (Array.isArray(value)) {
    return value
      .filter((item): item is Dict => typeof item === 'object' && item !== null && typeof (item as Dict).name === 'string')
      .map((item) => [String(item.name), String(item.value)]);
  }
  if (typeof value === 'object' && value !== null) return objectKeys(value).map((k) => [k, String((value as Dict)[k])]);
  return [];
}

async function execute(config: Dict): Promise<HttpRequestResult> {
  if (!guestFetch) throw new Error('http_request.execute() is not available here');
  const url = new URL(String(config.url));
  for (const [name, value] of pairs(config.params)) url.searchParams.append(name, value);
  const headers: Record<string, string> = {};
  for (const [name, value] of pairs(config.headers)) headers[name.toLowerCase()] = value;
  const auth = (typeof config.auth === 'object' && config.auth !== null ? config.auth : {}) as Dict;
  if (auth.type === 'basic') headers.authorization = `Basic ${bytesToBase64(utf8Encode(`${String(auth.username)}:${String(auth.password ?? '')}`))}`;
  if (auth.type === 'bearer') headers.authorization = `Bearer ${String(auth.token)}`;
  let body: string | undefined;
  if (config.body !== undefined && config.body !== null) {
    if (typeof config.body === 'string') body = config.body;
    else {
      body = jsonStringify(config.body);
      headers['content-type'] ??= 'application/json';
    }
  }
  const response = await guestFetch(url.href, { method: String(config.method ?? 'GET').toUpperCase(), headers, body });
  const text = await response.text();
  const responseHeaders: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    responseHeaders[name] = value;
  });
  let data: unknown = text;
  if (/\bjson\b/i.test(responseHeaders['content-type'] ?? '') && text !== '') {
    try {
      data = jsonParse(text);
    } catch {
      // Not the JSON it claims to be: the text is the most useful thing to give back.
    }
  }
  return { status: response.status, statusText: response.statusText, headers: responseHeaders, data };
}

/**
 * The value of an `http_request` prop as the component sees it: the configured `{url, method,
 * headers, params, body, auth}` (validated when configured) plus `execute()`, which performs the
 * request through the guest's fetch, so through the host's component egress guard. `execute`
 * is not enumerable: the value still serialises to what was configured.
 */
export function createHttpRequestProp(configured: unknown): Dict {
  const config = (typeof configured === 'object' && configured !== null ? { ...(configured as Dict) } : {}) as Dict;
  defineProperty(config, 'execute', { value: () => execute(config), enumerable: false, configurable: true, writable: true });
  return config;
}
