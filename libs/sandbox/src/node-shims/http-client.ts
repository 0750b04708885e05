// Node's HTTP client (`http.request`, `https.request`, `get`, ClientRequest, IncomingMessage) for
// packages bundled into the sandbox, over the host's streamed requests: the host performs each one
// through the egress guard and relays the response body as it arrives. What packages rely on is
// kept: events in Node's order (`socket`, `response`, body `data`/`end`, `close`), backpressure (a
// paused or full response stops the host from reading the socket), `setTimeout`, `abort` and
// `destroy`. There are no sockets: `socket` is a small stand-in that only carries timeouts.
import Stream = require('sluice-node:stream');
import bufferModule = require('./buffer.shim');
import EventEmitter = require('./events.shim');

const { Buffer } = bufferModule;
type Buffer = InstanceType<typeof Buffer>;

/** Installed by the guest runtime (host-stream.guest.ts) on the global under this symbol. */
const STREAMED_REQUEST_HOOK = Symbol.for('sluice.streamedRequest');

interface StreamedRequestControl {
  resume(): void;
  cancel(): void;
}
interface StreamSink {
  head(status: number, statusText: string, headers: [string, string][]): void;
  chunk(bytes: Uint8Array): boolean;
  end(error: Error | null): void;
}
type StreamedRequestHook = (request: { url: string; method: string; headers: Record<string, string>; body: Uint8Array | null }, handlers: StreamSink) => StreamedRequestControl;

/** Request body bytes one request may send (the whole body is handed to the host at `end()`). */
const MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

type AnyFunction = (...args: unknown[]) => unknown;

function hook(): StreamedRequestHook {
  const found = (globalThis as unknown as Record<symbol, unknown>)[STREAMED_REQUEST_HOOK];
  if (typeof found !== 'function') throw new Error('HTTP requests are only available inside the sandbox');
  return found as StreamedRequestHook;
}

function defer(callback: () => void): void {
  queueMicrotask(callback);
}

/** What stands where Node has a net.Socket: timeouts and the calls packages make on it. */
class SocketStandIn extends EventEmitter {
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private idleMs = 0;
  readonly remoteAddress: string | undefined = undefined;
  readonly encrypted: boolean;
  destroyed = false;

  constructor(
    secure: boolean,
    private readonly onDestroy: (error?: Error) => void,
  ) {
    super();
    this.encrypted = secure;
  }

  setTimeout(ms: number, callback?: AnyFunction): this {
    this.idleMs = Number(ms) || 0;
    if (callback) this.once('timeout', callback);
    this.touch();
    return this;
  }

  /** Activity on the request: the idle timeout starts over. */
  touch(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.idleMs > 0 && !this.destroyed) this.idleTimer = setTimeout(() => this.emit('timeout'), this.idleMs);
  }

  stop(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  destroy(error?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.stop();
    this.onDestroy(error);
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  end(): this {
    return this;
  }
}

/** The response: a Readable whose chunks the host sends while the reader keeps up. */
export class IncomingMessage extends Stream.Readable {
  statusCode = 0;
  statusMessage = '';
  httpVersion = '1.1';
  httpVersionMajor = 1;
  httpVersionMinor = 1;
  headers: Record<string, string | string[]> = {};
  headersDistinct: Record<string, string[]> = {};
  rawHeaders: string[] = [];
  trailers: Record<string, string> = {};
  rawTrailers: string[] = [];
  complete = false;
  aborted = false;
  url = '';
  method: string | null = null;
  req: ClientRequest | null = null;
  /** Set by the request: asks the host for more once the buffer drained. */
  wantMore: (() => void) | null = null;
  /** Set by the request: drops the body. */
  dropBody: (() => void) | null = null;

  constructor(readonly socket: SocketStandIn | null) {
    super();
  }

  get connection(): SocketStandIn | null {
    return this.socket;
  }

  override _read(): void {
    this.wantMore?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.complete) this.dropBody?.();
    callback(error);
  }

  setTimeout(ms: number, callback?: AnyFunction): this {
    this.socket?.setTimeout(ms, callback);
    return this;
  }
}

interface RequestOptions {
  protocol?: string | null;
  host?: string | null;
  hostname?: string | null;
  port?: number | string | null;
  path?: string | null;
  method?: string;
  headers?: Record<string, unknown> | unknown[];
  auth?: string | null;
  timeout?: number;
  signal?: { aborted: boolean; reason?: unknown; addEventListener(type: string, listener: () => void, options?: unknown): void };
  setHost?: boolean;
  [key: string]: unknown;
}

/** The request: a Writable collecting the body; `end()` hands it to the host. */
export class ClientRequest extends Stream.Writable {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly protocol: string;
  readonly url: string;
  readonly reusedSocket = false;
  aborted = false;
  headersSent = false;
  maxHeadersCount: number | null = null;
  res: IncomingMessage | null = null;
  socket: SocketStandIn | null = null;
  private readonly headerValues = new Map<string, { name: string; value: string | string[] }>();
  private readonly bodyChunks: Uint8Array[] = [];
  private bodyBytes = 0;
  private control: StreamedRequestControl | null = null;
  private readonly standIn: SocketStandIn;
  private settled = false;

  constructor(defaultProtocol: 'http:' | 'https:', input: unknown, optionsOrCallback?: unknown, maybeCallback?: unknown) {
    // 'close' is emitted once, by closeOnce, when the exchange is over (as Node's request does).
    super({ decodeStrings: true, emitClose: false });
    let options: RequestOptions;
    let callback = maybeCallback;
    if (typeof input === 'string' || (typeof input === 'object' && input !== null && typeof (input as { href?: unknown }).href === 'string' && typeof (input as { searchParams?: unknown }).searchParams === 'object')) {
      const url = new URL(String(typeof input === 'string' ? input : (input as { href: string }).href));
      options = {
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : null,
      };
      if (typeof optionsOrCallback === 'object' && optionsOrCallback !== null) options = { ...options, ...(optionsOrCallback as RequestOptions) };
      else callback = optionsOrCallback;
    } else {
      options = { ...((input ?? {}) as RequestOptions) };
      callback = optionsOrCallback;
    }
    const protocol = options.protocol ?? defaultProtocol;
    if (protocol !== 'http:' && protocol !== 'https:') throw new TypeError(`Protocol "${protocol}" not supported. Expected "${defaultProtocol}"`);
    this.protocol = protocol;
    const method = (options.method ?? 'GET').toUpperCase();
    if (!TOKEN.test(method)) throw new TypeError(`Method must be a valid HTTP token ["${options.method}"]`);
    this.method = method;
    let hostname = options.hostname ?? (options.host ? String(options.host).replace(/:\d+$/, '') : 'localhost');
    if (hostname.includes(':') && !hostname.startsWith('[')) hostname = `[${hostname}]`;
    const port = options.port !== undefined && options.port !== null && options.port !== '' ? Number(options.port) : null;
    const defaultPort = protocol === 'https:' ? 443 : 80;
    this.host = hostname;
    this.path = options.path ?? '/';
    if (/[\u0000-\u0020]/.test(this.path)) throw new TypeError('Request path contains unescaped characters');
    this.url = `${protocol}//${hostname}${port !== null && port !== defaultPort ? `:${port}` : ''}${this.path.startsWith('/') ? '' : '/'}${this.path}`;
    const headers = options.headers;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) this.setHeader(String(headers[i]), headers[i + 1]);
    } else if (headers) {
      for (const name of Object.keys(headers)) if (headers[name] !== undefined) this.setHeader(name, headers[name]);
    }
    if (options.auth && !this.hasHeader('authorization')) this.setHeader('Authorization', `Basic ${Buffer.from(String(options.auth)).toString('base64')}`);
    this.standIn = new SocketStandIn(protocol === 'https:', (error) => this.destroy(error));
    if (typeof callback === 'function') this.once('response', callback as AnyFunction);
    if (typeof options.timeout === 'number') this.setTimeout(options.timeout);
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) defer(() => this.destroy(abortError(signal.reason)));
      else signal.addEventListener('abort', () => this.destroy(abortError(signal.reason)), { once: true });
    }
    // Node assigns the socket on a later tick; packages attach their 'socket' listeners first.
    defer(() => {
      if (this.settled) return;
      this.socket = this.standIn;
      this.emit('socket', this.standIn);
    });
  }

  get connection(): SocketStandIn | null {
    return this.socket;
  }

  get finished(): boolean {
    return this.writableEnded;
  }

  setHeader(name: string, value: unknown): this {
    if (this.headersSent) throw new Error('Cannot set headers after they are sent to the client');
    if (!TOKEN.test(String(name))) throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
    const text = Array.isArray(value) ? value.map(String) : String(value);
    for (const v of Array.isArray(text) ? text : [text]) if (/[\r\n\0]/.test(v)) throw new TypeError(`Invalid character in header content ["${name}"]`);
    this.headerValues.set(String(name).toLowerCase(), { name: String(name), value: text });
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    return this.headerValues.get(String(name).toLowerCase())?.value;
  }

  hasHeader(name: string): boolean {
    return this.headerValues.has(String(name).toLowerCase());
  }

  removeHeader(name: string): void {
    if (this.headersSent) throw new Error('Cannot remove headers after they are sent to the client');
    this.headerValues.delete(String(name).toLowerCase());
  }

  getHeaders(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = Object.create(null);
    for (const [key, { value }] of this.headerValues) out[key] = value;
    return out;
  }

  getHeaderNames(): string[] {
    return [...this.headerValues.keys()];
  }

  getRawHeaderNames(): string[] {
    return [...this.headerValues.values()].map((h) => h.name);
  }

  flushHeaders(): void {
    // Headers go with the body at end(): the host sends the request in one piece.
  }

  setNoDelay(): void {}

  setSocketKeepAlive(): void {}

  setTimeout(ms: number, callback?: AnyFunction): this {
    if (callback) this.once('timeout', callback);
    this.standIn.setTimeout(ms);
    this.standIn.removeAllListeners('timeout');
    this.standIn.on('timeout', () => this.emit('timeout'));
    return this;
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    defer(() => this.emit('abort'));
    this.destroy();
  }

  override _write(chunk: Uint8Array, _encoding: string, callback: (error?: Error | null) => void): void {
    this.bodyBytes += chunk.length;
    if (this.bodyBytes > MAX_REQUEST_BODY_BYTES) {
      callback(new RangeError(`the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`));
      return;
    }
    this.bodyChunks.push(chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.headersSent = true;
    const headers: Record<string, string> = {};
    for (const [key, { value }] of this.headerValues) headers[key] = Array.isArray(value) ? value.join(', ') : value;
    const body = this.bodyChunks.length > 0 ? Buffer.concat(this.bodyChunks) : null;
    this.bodyChunks.length = 0;
    let response: IncomingMessage | null = null;
    try {
      this.control = hook()({ url: this.url, method: this.method, headers, body }, {
        head: (status, statusText, pairs) => {
          if (this.settled) return;
          response = this.buildResponse(status, statusText, pairs);
          this.standIn.touch();
          this.res = response;
          this.emit('response', response);
        },
        chunk: (bytes) => {
          this.standIn.touch();
          if (!response || response.destroyed) return false;
          return response.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        },
        end: (error) => {
          this.standIn.stop();
          if (!response) {
            this.fail(error ?? new Error('socket hang up'));
            return;
          }
          if (error) {
            response.aborted = true;
            response.emit('aborted');
            response.destroy(error);
          } else {
            response.complete = true;
            response.push(null);
          }
          this.closeOnce();
        },
      });
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.standIn.stop();
    this.control?.cancel();
    if (this.res && !this.res.complete && !this.res.destroyed) {
      this.res.aborted = true;
      this.res.emit('aborted');
      this.res.destroy(error ?? undefined);
    }
    callback(error);
    this.closeOnce();
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.destroy(error);
  }

  private closeOnce(): void {
    if (this.settled) return;
    this.settled = true;
    defer(() => this.emit('close'));
  }

  private buildResponse(status: number, statusText: string, pairs: [string, string][]): IncomingMessage {
    const response = new IncomingMessage(this.standIn);
    response.statusCode = status;
    response.statusMessage = statusText;
    response.req = this;
    for (const [name, value] of pairs) {
      const key = name.toLowerCase();
      response.rawHeaders.push(name, value);
      response.headersDistinct[key] = [...(response.headersDistinct[key] ?? []), value];
      if (key === 'set-cookie') response.headers[key] = [...((response.headers[key] as string[] | undefined) ?? []), value];
      else response.headers[key] = key in response.headers ? `${String(response.headers[key])}, ${value}` : value;
    }
    response.wantMore = () => this.control?.resume();
    response.dropBody = () => this.control?.cancel();
    return response;
  }
}

function abortError(reason: unknown): Error {
  const error = new Error('The operation was aborted');
  error.name = 'AbortError';
  (error as { code?: string }).code = 'ABORT_ERR';
  (error as { cause?: unknown }).cause = reason;
  return error;
}

/** Node's Agent: accepted and kept for its options; connections are the host's business. */
export class Agent extends EventEmitter {
  readonly options: Record<string, unknown>;
  readonly requests = {};
  readonly sockets = {};
  readonly freeSockets = {};
  maxSockets = Infinity;
  maxFreeSockets = 256;
  keepAlive: boolean;

  constructor(options: Record<string, unknown> = {}) {
    super();
    this.options = { ...options };
    this.keepAlive = options.keepAlive === true;
  }

  destroy(): void {}
}

/** STATUS_CODES and METHODS as Node lists them (the common part). */
export const STATUS_CODES: Record<number, string> = {
  100: 'Continue', 101: 'Switching Protocols', 102: 'Processing', 103: 'Early Hints',
  200: 'OK', 201: 'Created', 202: 'Accepted', 203: 'Non-Authoritative Information', 204: 'No Content', 205: 'Reset Content', 206: 'Partial Content', 207: 'Multi-Status',
  300: 'Multiple Choices', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 408: 'Request Timeout', 409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 418: "I'm a Teapot", 422: 'Unprocessable Entity', 425: 'Too Early', 426: 'Upgrade Required', 428: 'Precondition Required', 429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout', 505: 'HTTP Version Not Supported',
};

export const METHODS = ['ACL', 'BIND', 'CHECKOUT', 'CONNECT', 'COPY', 'DELETE', 'GET', 'HEAD', 'LINK', 'LOCK', 'M-SEARCH', 'MERGE', 'MKACTIVITY', 'MKCALENDAR', 'MKCOL', 'MOVE', 'NOTIFY', 'OPTIONS', 'PATCH', 'POST', 'PROPFIND', 'PROPPATCH', 'PURGE', 'PUT', 'REBIND', 'REPORT', 'SEARCH', 'SOURCE', 'SUBSCRIBE', 'TRACE', 'UNBIND', 'UNLINK', 'UNLOCK', 'UNSUBSCRIBE'];

function serverUnavailable(): never {
  throw new Error('http.createServer is not available in the sandbox: components receive requests through their HTTP interface');
}

/** The `http` or `https` module for one default protocol. */
export function clientModule(protocol: 'http:' | 'https:'): Record<string, unknown> {
  const globalAgent = new Agent({ keepAlive: true });
  const request = (input: unknown, options?: unknown, callback?: unknown): ClientRequest => new ClientRequest(protocol, input, options, callback);
  const get = (input: unknown, options?: unknown, callback?: unknown): ClientRequest => {
    const req = request(input, options, callback);
    req.end();
    return req;
  };
  return {
    request,
    get,
    Agent,
    globalAgent,
    ClientRequest,
    IncomingMessage,
    OutgoingMessage: Stream.Writable,
    STATUS_CODES,
    METHODS,
    maxHeaderSize: 16384,
    createServer: serverUnavailable,
    Server: serverUnavailable,
    validateHeaderName(name: string) {
      if (!TOKEN.test(String(name))) throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
    },
    validateHeaderValue(name: string, value: unknown) {
      if (value === undefined || /[\r\n\0]/.test(String(value))) throw new TypeError(`Invalid value "${String(value)}" for header "${name}"`);
    },
  };
}
