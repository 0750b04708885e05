/** Methods an `http_request` prop may use. */
export const HTTP_REQUEST_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const AUTH_TYPES = ['none', 'basic', 'bearer'];
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MAX_PAIRS = 100;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks a name/value list (`headers`, `params`): an object of strings, or an array of
 * `{name, value}` as request builders store them. Returns the first problem, or undefined.
 */
function checkPairs(value: unknown, what: 'headers' | 'params'): string | undefined {
  const pairs: Array<[unknown, unknown]> = Array.isArray(value)
    ? value.map((item) => (isPlainObject(item) ? [item.name, item.value] : [undefined, undefined]))
    : isPlainObject(value)
      ? Object.entries(value)
      : [];
  if (!Array.isArray(value) && !isPlainObject(value)) return `${what} must be an object of strings or an array of {name, value}`;
  if (pairs.length > MAX_PAIRS) return `${what} may have at most ${MAX_PAIRS} entries`;
  for (const [name, v] of pairs) {
    if (typeof name !== 'string' || name === '') return `${what} entries need a non-empty string name`;
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return `${what}.${name} must be a string, number or boolean`;
    if (what === 'headers') {
      if (!TOKEN.test(name)) return `headers: "${name}" is not a valid header name`;
      if (/[\r\n\0]/.test(String(v))) return `headers.${name} must not contain line breaks`;
    }
  }
  return undefined;
}

/**
 * Validates the configured value of an `http_request` prop: `{url, method?, headers?, params?,
 * body?, auth?}` with an absolute http(s) URL, a known method, header and parameter lists, any
 * JSON body (a string is sent as is, anything else as JSON) and `auth` of type none, basic
 * (`username`, `password`) or bearer (`token`). Returns the first problem, or undefined. Where
 * the request may go is decided when it runs, by the component egress guard.
 */
export function checkHttpRequestValue(value: unknown): string | undefined {
  if (!isPlainObject(value)) return 'must be an object {url, method, headers, params, body, auth}';
  const known = new Set(['url', 'method', 'headers', 'params', 'body', 'auth']);
  const unknown = Object.keys(value).find((k) => !known.has(k));
  if (unknown !== undefined) return `has an unknown field "${unknown}" (allowed: url, method, headers, params, body, auth)`;
  if (typeof value.url !== 'string' || value.url === '') return 'needs a url';
  let url: URL;
  try {
    url = new URL(value.url);
  } catch {
    return 'url must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must be an http or https URL';
  if (value.method !== undefined && (typeof value.method !== 'string' || !(HTTP_REQUEST_METHODS as readonly string[]).includes(value.method.toUpperCase()))) {
    return `method must be one of ${HTTP_REQUEST_METHODS.join(', ')}`;
  }
  for (const what of ['headers', 'params'] as const) {
    if (value[what] === undefined) continue;
    const problem = checkPairs(value[what], what);
    if (problem) return problem;
  }
  if (value.body !== undefined && value.method !== undefined && ['GET', 'HEAD'].includes(String(value.method).toUpperCase())) {
    return `a ${String(value.method).toUpperCase()} request cannot have a body`;
  }
  if (value.auth !== undefined) {
    const auth = value.auth;
    if (!isPlainObject(auth)) return 'auth must be an object {type, username, password, token}';
    const type = auth.type ?? 'none';
    if (typeof type !== 'string' || !AUTH_TYPES.includes(type)) return `auth.type must be one of ${AUTH_TYPES.join(', ')}`;
    if (type === 'basic' && (typeof auth.username !== 'string' || (auth.password !== undefined && typeof auth.password !== 'string'))) {
      return 'auth of type basic needs a string username (and a string password)';
    }
    if (type === 'bearer' && (typeof auth.token !== 'string' || auth.token === '')) return 'auth of type bearer needs a token';
  }
  return undefined;
}

/** The credential fields of an `http_request` value's `auth`, encrypted at rest like secret props. */
const AUTH_SECRETS = ['password', 'token'] as const;

type Sealer = { seal(plain: string): unknown };
type Opener = { open(sealed: { $sealed: string }): string };

function isSealedValue(v: unknown): v is { $sealed: string } {
  return isPlainObject(v) && typeof v.$sealed === 'string';
}

/** A validated `http_request` value as stored: `auth.password` and `auth.token` sealed by the box. */
export function sealHttpRequestValue(value: Record<string, unknown>, box: Sealer): Record<string, unknown> {
  if (!isPlainObject(value.auth)) return value;
  const auth: Record<string, unknown> = { ...value.auth };
  for (const key of AUTH_SECRETS) if (typeof auth[key] === 'string') auth[key] = box.seal(auth[key] as string);
  return { ...value, auth };
}

/** A stored value with its sealed `auth` credentials opened (for the run), or as is. */
export function openHttpRequestAuth(value: unknown, box: Opener): unknown {
  if (!isPlainObject(value) || !isPlainObject(value.auth) || !AUTH_SECRETS.some((k) => isSealedValue((value.auth as Record<string, unknown>)[k]))) return value;
  const auth: Record<string, unknown> = { ...value.auth };
  for (const key of AUTH_SECRETS) if (isSealedValue(auth[key])) auth[key] = box.open(auth[key] as { $sealed: string });
  return { ...value, auth };
}

/** A stored value as the API shows it: sealed `auth` credentials left out, or as is. */
export function hideHttpRequestAuth(value: unknown): unknown {
  if (!isPlainObject(value) || !isPlainObject(value.auth) || !AUTH_SECRETS.some((k) => isSealedValue((value.auth as Record<string, unknown>)[k]))) return value;
  const auth: Record<string, unknown> = { ...value.auth };
  for (const key of AUTH_SECRETS) if (isSealedValue(auth[key])) delete auth[key];
  return { ...value, auth };
}
