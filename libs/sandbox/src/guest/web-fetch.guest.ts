import { jsonParse, jsonStringify } from './guest-intrinsics.guest';
import type { HostBindings } from './host-bindings.guest';
import { current, HostResponse, nextRequestId } from './invocation-scope.guest';
import { bytesToLatin1, latin1ToBytes, toBytes, utf8Decode, utf8Encode } from './web-encoding.guest';
import type { AbortSignal } from './web-events.guest';
import type { UrlClass } from './web-url.guest';
import { URLSearchParams } from './web-url.guest';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MAX_REDIRECTS = 20;
const MAX_CONCURRENT_FETCHES = 50;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

function headerName(name: unknown): string {
  const n = String(name);
  if (!TOKEN.test(n)) throw new TypeError(`Invalid header name: "${n}"`);
  return n.toLowerCase();
}

function headerValue(value: unknown): string {
  const v = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (/[\0\r\n]/.test(v)) throw new TypeError(`Invalid header value: "${v}"`);
  return v;
}

/** The web Headers: case-insensitive, iterated in name order, `set-cookie` kept line by line. */
export class Headers {
  #values = new Map<string, string>();
  #cookies: string[] = [];

  constructor(init?: unknown) {
    if (init === undefined || init === null) return;
    if (init instanceof Headers) {
      for (const [n, v] of init) this.append(n, v);
    } else if (typeof (init as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function') {
      for (const pair of init as Iterable<unknown>) {
        const items = [...(pair as Iterable<unknown>)];
        if (items.length !== 2) throw new TypeError('Each header pair must be an iterable [name, value] tuple');
        this.append(items[0], items[1]);
      }
    } else if (typeof init === 'object') {
      for (const key of Object.keys(init)) this.append(key, (init as Record<string, unknown>)[key]);
    } else {
      throw new TypeError('Headers init must be an object, an iterable of pairs or a Headers');
    }
  }

  append(name: unknown, value: unknown): void {
    const n = headerName(name);
    const v = headerValue(value);
    if (n === 'set-cookie') this.#cookies.push(v);
    else this.#values.set(n, this.#values.has(n) ? `${this.#values.get(n)}, ${v}` : v);
  }

  delete(name: unknown): void {
    const n = headerName(name);
    if (n === 'set-cookie') this.#cookies = [];
    else this.#values.delete(n);
  }

  get(name: unknown): string | null {
    const n = headerName(name);
    if (n === 'set-cookie') return this.#cookies.length ? this.#cookies.join(', ') : null;
    return this.#values.get(n) ?? null;
  }

  getSetCookie(): string[] {
    return [...this.#cookies];
  }

  has(name: unknown): boolean {
    const n = headerName(name);
    return n === 'set-cookie' ? this.#cookies.length > 0 : this.#values.has(n);
  }

  set(name: unknown, value: unknown): void {
    const n = headerName(name);
    const v = headerValue(value);
    if (n === 'set-cookie') this.#cookies = [v];
    else this.#values.set(n, v);
  }

  forEach(callback: (value: string, name: string, headers: Headers) => void, thisArg?: unknown): void {
    for (const [n, v] of this) callback.call(thisArg, v, n, this);
  }

  *entries(): IterableIterator<[string, string]> {
    const names = [...this.#values.keys()];
    if (this.#cookies.length) names.push('set-cookie');
    names.sort();
    for (const n of names) {
      if (n === 'set-cookie') for (const c of this.#cookies) yield [n, c];
      else yield [n, this.#values.get(n) as string];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [n] of this.entries()) yield n;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** A body held either as text or as bytes; each form is derived from the other on demand. */
interface BodyData {
  text?: string;
  bytes?: Uint8Array;
  contentType?: string;
}

function extractBody(body: unknown): BodyData | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return { text: body, contentType: 'text/plain;charset=UTF-8' };
  if (body instanceof URLSearchParams) return { text: body.toString(), contentType: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { bytes: toBytes(body).slice() };
  const tag = Object.prototype.toString.call(body);
  if (tag === '[object Blob]' || tag === '[object FormData]' || tag === '[object ReadableStream]') {
    throw new TypeError(`${tag.slice(8, -1)} bodies are not available in the sandbox`);
  }
  return { text: String(body), contentType: 'text/plain;charset=UTF-8' };
}

function bodyBytes(data: BodyData | null): Uint8Array {
  if (!data) return new Uint8Array(0);
  return data.bytes ? data.bytes.slice() : utf8Encode(data.text as string);
}

function bodyText(data: BodyData | null): string {
  if (!data) return '';
  const text = data.text !== undefined ? data.text : utf8Decode(data.bytes as Uint8Array, false, false).text;
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** What Request and Response share: a body readable once as text, JSON or bytes. */
abstract class Body {
  #data: BodyData | null;
  #used = false;

  protected constructor(data: BodyData | null) {
    this.#data = data;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  protected bodyData(): BodyData | null {
    return this.#data;
  }

  #consume(): BodyData | null {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    return this.#data;
  }

  async text(): Promise<string> {
    return bodyText(this.#consume());
  }

  async json(): Promise<unknown> {
    return jsonParse(bodyText(this.#consume()));
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return bodyBytes(this.#consume()).buffer as ArrayBuffer;
  }

  async bytes(): Promise<Uint8Array> {
    return bodyBytes(this.#consume());
  }

  async blob(): Promise<never> {
    throw new TypeError('Blob is not available in the sandbox');
  }

  async formData(): Promise<never> {
    throw new TypeError('FormData is not available in the sandbox');
  }
}

interface RequestInit {
  method?: string;
  headers?: unknown;
  body?: unknown;
  signal?: AbortSignal | null;
  redirect?: 'follow' | 'manual' | 'error';
}

/** The web Request, enough to describe one fetch. */
export class Request extends Body {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly signal: AbortSignal | null;
  readonly redirect: 'follow' | 'manual' | 'error';

  constructor(input: unknown, init: RequestInit = {}) {
    const base = input instanceof Request ? input : null;
    const data = init.body !== undefined ? extractBody(init.body) : base ? base.bodyData() : null;
    super(data);
    const url = base ? base.url : String(input);
    const method = init.method !== undefined ? String(init.method) : base ? base.method : 'GET';
    if (!TOKEN.test(method)) throw new TypeError(`Invalid method: "${method}"`);
    const upper = method.toUpperCase();
    this.method = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH'].includes(upper) ? upper : method;
    if (data && (this.method === 'GET' || this.method === 'HEAD')) throw new TypeError('Request with GET/HEAD method cannot have body');
    this.url = url;
    this.headers = new Headers(init.headers !== undefined ? init.headers : base ? base.headers : undefined);
    if (data?.contentType && !this.headers.has('content-type')) this.headers.set('content-type', data.contentType);
    this.signal = init.signal !== undefined ? init.signal : base ? base.signal : null;
    this.redirect = init.redirect ?? (base ? base.redirect : 'follow');
  }

  /** @internal */
  payload(): BodyData | null {
    return this.bodyData();
  }

  clone(): Request {
    if (this.bodyUsed) throw new TypeError('Request body is already used');
    return new Request(this);
  }
}

interface ResponseInit {
  status?: number;
  statusText?: string;
  headers?: unknown;
}

const fromHost = Symbol('fromHost');

/** The web Response. Responses from `fetch` may carry any status the server sent, 3xx included. */
export class Response extends Body {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly type: string = 'basic';
  url = '';
  redirected = false;

  constructor(body?: unknown, init: ResponseInit = {}, internal?: { [fromHost]: BodyData | null }) {
    const data = internal ? internal[fromHost] : extractBody(body);
    super(data);
    const status = init.status === undefined ? 200 : Number(init.status);
    if (!internal && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
      throw new RangeError(`init["status"] must be in the range of 200 to 599, inclusive, got ${String(init.status)}`);
    }
    this.status = status;
    this.statusText = init.statusText === undefined ? '' : String(init.statusText);
    this.headers = new Headers(init.headers);
    if (!internal && data?.contentType && !this.headers.has('content-type')) this.headers.set('content-type', data.contentType);
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  /** @internal Builds the Response of a host answer. */
  static _fromHost(answer: HostResponse, url: string, redirected: boolean): Response {
    const data: BodyData = answer.utf8 ? { text: answer.body } : { bytes: latin1ToBytes(answer.body) };
    const response = new Response(undefined, { status: answer.status, statusText: answer.statusText, headers: answer.headers }, { [fromHost]: data });
    response.url = url;
    response.redirected = redirected;
    return response;
  }

  clone(): Response {
    if (this.bodyUsed) throw new TypeError('Response body is already used');
    const copy = new Response(undefined, { status: this.status, statusText: this.statusText, headers: this.headers }, { [fromHost]: this.bodyData() });
    copy.url = this.url;
    copy.redirected = this.redirected;
    return copy;
  }

  static json(data: unknown, init: ResponseInit = {}): Response {
    const text = jsonStringify(data);
    if (text === undefined) throw new TypeError('Value is not JSON serializable');
    const headers = new Headers(init.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    return new Response(text, { ...init, headers });
  }

  static error(): Response {
    return new Response(undefined, { status: 0 }, { [fromHost]: null });
  }

  static redirect(url: unknown, status = 302): Response {
    if (!REDIRECT_STATUSES.has(status)) throw new RangeError(`Invalid status code ${status}`);
    return new Response(undefined, { status, headers: { location: String(url) } }, { [fromHost]: null });
  }
}

/**
 * The guest's fetch. The host performs each request through the egress guard (private and
 * link-local addresses refused unless allowed) and never follows redirects itself; following them
 * here means every hop passes the guard again.
 */
export function createFetch(host: Pick<HostBindings, 'fetchStart'>, URL: UrlClass): (input: unknown, init?: RequestInit) => Promise<Response> {
  const send = (url: string, method: string, headers: Headers, body: Uint8Array | null, signal: AbortSignal | null): Promise<HostResponse> =>
    new Promise<HostResponse>((resolve, reject) => {
      const scope = current.scope;
      if (!scope || scope.loading) throw new TypeError('fetch is not available while the component is loading');
      if (scope.fetches.size + scope.streams.size >= MAX_CONCURRENT_FETCHES) {
        throw new TypeError(`fetch failed: more than ${MAX_CONCURRENT_FETCHES} requests in flight`);
      }
      if (signal?.aborted) throw signal.reason;
      const id = nextRequestId();
      scope.fetches.set(id, { resolve, reject });
      scope.usedHost = true;
      signal?.addEventListener('abort', () => {
        if (scope.fetches.delete(id)) reject(signal.reason);
      }, { once: true });
      const plainHeaders: Record<string, string> = {};
      for (const [n, v] of headers) plainHeaders[n] = n in plainHeaders ? `${plainHeaders[n]}, ${v}` : v;
      const meta = jsonStringify({ url, method, headers: plainHeaders, hasBody: body !== null });
      host.fetchStart(scope.seq, id, meta, body ? bytesToLatin1(body) : '');
    });

  return async function fetch(input: unknown, init?: RequestInit): Promise<Response> {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    let url = new URL(request.url).href;
    let method = request.method;
    const payload = request.payload();
    let body: Uint8Array | null = payload ? bodyBytes(payload) : null;
    const headers = new Headers(request.headers);
    for (let hop = 0; ; hop++) {
      const answer = await send(url, method, headers, body, request.signal);
      const location = answer.headers.find(([n]) => n.toLowerCase() === 'location')?.[1];
      if (!REDIRECT_STATUSES.has(answer.status) || location === undefined || request.redirect === 'manual') {
        return Response._fromHost(answer, url, hop > 0);
      }
      if (request.redirect === 'error') throw new TypeError(`fetch failed: redirect to ${location} refused (redirect: "error")`);
      if (hop >= MAX_REDIRECTS) throw new TypeError('fetch failed: too many redirects');
      const next = new URL(location, url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new TypeError(`fetch failed: redirect to ${next.protocol} URL`);
      if (answer.status === 303 ? method !== 'HEAD' : (answer.status === 301 || answer.status === 302) && method === 'POST') {
        method = 'GET';
        body = null;
        for (const n of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) headers.delete(n);
      }
      if (new URL(url).origin !== next.origin) {
        for (const n of ['authorization', 'cookie', 'proxy-authorization']) headers.delete(n);
      }
      url = next.href;
    }
  };
}

/** Rejects a request on the host's word: the error becomes the TypeError web code expects. */
export function fetchFailure(message: string, code: string): TypeError {
  const error = new TypeError(`fetch failed: ${message}`);
  (error as { cause?: unknown }).cause = { code, message };
  return error;
}
