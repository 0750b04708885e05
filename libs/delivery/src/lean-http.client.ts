import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import * as tls from 'node:tls';
import { EgressError, OutboundResponse } from './delivery.types';
import type { CheckedDestination } from './egress-guard';

/**
 * A lean HTTP/1.1 client, over TCP or TLS, for the one request Sluice makes most: a webhook
 * delivery's POST. Node's `http.request` builds a ClientRequest, an IncomingMessage stream and a
 * dozen listeners per request, and at saturation that client was a fifth of the server's CPU
 * (more than answering the requests that led to the deliveries). This one writes the request in
 * one `write` and reads the answer with a small parser that keeps only the status and the
 * headers and counts the body's bytes. Connections are kept alive and reused per destination
 * (scheme, addresses, port, host name), most recently used first, like the agent it replaces.
 * Over TLS the server's certificate is verified as Node's `https` does (its default CAs, plus
 * `NODE_EXTRA_CA_CERTS`), against the URL's host name.
 *
 * What it reads: a status line, headers (at most {@link MAX_HEAD_BYTES}), then a body framed by
 * `content-length`, by chunked transfer coding, or by the end of the connection; interim 1xx
 * answers are skipped. Anything else is a `network` failure. A connection is reused only when its
 * answer was HTTP/1.1, complete, framed by a length or chunks, not `connection: close`, and
 * nothing followed it.
 */

/** Bytes of a response head (status line and headers) accepted, as Node's default. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Bytes of a chunk-size line accepted (the size, its extensions, the line end). */
const MAX_CHUNK_LINE_BYTES = 4096;
/** Connections in use at once per destination; requests past it wait for one (as the agent's maxSockets). */
const MAX_ACTIVE_PER_DESTINATION = 256;
/** Idle connections kept per destination. */
const MAX_IDLE_PER_DESTINATION = 64;
/** An idle connection is closed after this long (ms). */
const IDLE_TIMEOUT_MS = 30_000;

/** A header name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Characters a header value may hold (as Node checks them): no control characters but tab. */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
const NON_ASCII = /[^\x00-\x7f]/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;

/** Where a POST goes: the checked addresses to connect to, and what the request names. */
export interface LeanPostTarget {
  /** HTTPS: TLS, the certificate verified against `hostname`. */
  secure: boolean;
  /** The URL's host name (no brackets), for the `host` header, the certificate and the pool's key. */
  hostname: string;
  port: number;
  /** Path and query. */
  path: string;
  /** `user:password` from the URL, already decoded, or undefined. */
  auth?: string;
}

/** One POST's deadline and limits. */
export interface LeanPostOptions {
  timeoutMs: number;
  deadline: number;
  startedAt: number;
  maxResponseBytes: number;
}

interface Connection {
  socket: net.Socket;
  pool: DestinationPool;
  /** True once it carried an exchange to the end (a failure on it may be a stale keep-alive). */
  reused: boolean;
  /** The exchange reading from it now, or null while it is idle. */
  exchange: Exchange | null;
}

interface DestinationPool {
  key: string;
  idle: Connection[];
  active: number;
  /** Requests waiting for a connection; each returns false if it no longer needs one. */
  waiting: (() => boolean)[];
}

const pools = new Map<string, DestinationPool>();

/**
 * POSTs `body` to `target` through one of `destination`'s checked addresses and resolves with
 * the status, the headers and at most `maxResponseBytes` of the body (the connection is dropped
 * rather than read further). Rejects with EgressError `timeout` or `network`, or with a TypeError
 * for a header name or value that cannot be sent (as Node's client does).
 */
export function leanPost(
  target: LeanPostTarget,
  destination: CheckedDestination,
  headers: Record<string, string>,
  body: string | Buffer,
  options: LeanPostOptions,
): Promise<OutboundResponse> {
  let request: string;
  try {
    request = requestHead(target, headers, typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  } catch (error) {
    return Promise.reject(error);
  }
  const key = poolKey(target, destination);
  let pool = pools.get(key);
  if (!pool) {
    pool = { key, idle: [], active: 0, waiting: [] };
    pools.set(key, pool);
  }
  return new Promise<OutboundResponse>((resolve, reject) => {
    const exchange = new Exchange(request, body, destination, target, options, resolve, reject);
    exchange.begin(pool);
  });
}

/** Closes every idle connection (shutdown, tests); exchanges in progress are untouched. */
export function closeIdleLeanConnections(): void {
  for (const pool of pools.values()) {
    for (const connection of pool.idle.splice(0)) connection.socket.destroy();
    if (pool.active === 0 && pool.waiting.length === 0) pools.delete(pool.key);
  }
}

/** What a target always sends and where it goes, made once per target object (see {@link textOf}). */
interface TargetText {
  /** The request line and the `host` header. */
  start: string;
  /** The `authorization` header the URL's credentials make, or ''. */
  auth: string;
  /** The destination {@link poolKey} was last asked about for this target, and its answer. */
  destination?: CheckedDestination;
  key?: string;
}

const targetTexts = new WeakMap<LeanPostTarget, TargetText>();

/**
 * The parts of a request's head that depend on its target alone. A webhook's target is one
 * object for as long as its parsed URL is kept (outbound-http's `parseTarget`), so this runs once
 * per webhook rather than once per POST.
 */
function textOf(target: LeanPostTarget): TargetText {
  let text = targetTexts.get(target);
  if (text === undefined) {
    const host = net.isIPv6(target.hostname) ? `[${target.hostname}]` : target.hostname;
    const defaultPort = target.secure ? 443 : 80;
    text = {
      start: `POST ${target.path} HTTP/1.1\r\nhost: ${target.port === defaultPort ? host : `${host}:${target.port}`}\r\n`,
      auth: target.auth === undefined ? '' : `authorization: Basic ${Buffer.from(target.auth, 'utf8').toString('base64')}\r\n`,
    };
    targetTexts.set(target, text);
  }
  return text;
}

/** The key of the connection pool for `target` at `destination` (the guard's checked addresses). */
function poolKey(target: LeanPostTarget, destination: CheckedDestination): string {
  const text = textOf(target);
  if (text.destination !== destination || text.key === undefined) {
    text.key = `${target.secure ? 'https' : 'http'}|${destination.addresses.map((a) => a.address).join(',')}|${target.port}|${target.hostname}`;
    text.destination = destination;
  }
  return text.key;
}

/** Lower-cased header names already checked to be HTTP tokens (the few a webhook's POSTs use). */
const checkedNames = new Map<string, string>();
const MAX_CHECKED_NAMES = 1024;

function requestHead(target: LeanPostTarget, headers: Record<string, string>, length: number): string {
  const text = textOf(target);
  let head = text.start;
  let authorized = false;
  for (const name in headers) {
    const value = headers[name];
    let lower = checkedNames.get(name);
    if (lower === undefined) {
      if (!TOKEN.test(name)) throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
      lower = name.toLowerCase();
      if (checkedNames.size >= MAX_CHECKED_NAMES) checkedNames.clear();
      checkedNames.set(name, lower);
    }
    if (BAD_VALUE.test(value)) throw new TypeError(`Invalid character in header content ["${name}"]`);
    // Framing and connection handling are this client's.
    if (lower === 'host' || lower === 'content-length' || lower === 'transfer-encoding' || lower === 'connection') continue;
    if (lower === 'authorization') authorized = true;
    head += `${name}: ${value}\r\n`;
  }
  if (!authorized) head += text.auth;
  return `${head}content-length: ${length}\r\nconnection: keep-alive\r\n\r\n`;
}

type BodyFraming = 'none' | 'length' | 'chunked' | 'close';

/** One POST and the reading of its answer, on a pooled connection or a new one. */
class Exchange {
  private connection: Connection | null = null;
  private timer: NodeJS.Timeout;
  private settled = false;
  /** Response bytes received on this connection for this exchange (0: a stale connection may be retried). */
  private received = 0;
  private mayRetryStale = true;

  // The parser's state.
  private head: Buffer | null = null;
  private status = 0;
  private minor = 1;
  private headers: Record<string, string> = {};
  private framing: BodyFraming = 'none';
  private reusable = false;
  private bodyLeft = 0;
  private kept = 0;
  private bodyChunks: Buffer[] = [];
  private chunkState: 'size' | 'data' | 'dataEnd' | 'trailer' = 'size';
  private line: Buffer | null = null;

  constructor(
    private readonly request: string,
    private readonly body: string | Buffer,
    private readonly destination: CheckedDestination,
    private readonly target: LeanPostTarget,
    private readonly options: LeanPostOptions,
    private readonly resolve: (response: OutboundResponse) => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.timer = setTimeout(() => this.fail(new EgressError(`timed out after ${options.timeoutMs} ms`, 'timeout')), Math.max(0, options.deadline - performance.now()));
  }

  /** Starts the exchange on an idle connection or a new one, or queues it; false once it has settled (timed out while queued). */
  begin(pool: DestinationPool): boolean {
    if (this.settled) return false;
    let idle = pool.idle.pop();
    // A connection closed a moment ago may still be listed until its 'close' event.
    while (idle && idle.socket.destroyed) idle = pool.idle.pop();
    if (idle) {
      pool.active++;
      this.attach(idle);
      return true;
    }
    if (pool.active >= MAX_ACTIVE_PER_DESTINATION) {
      pool.waiting.push(() => this.begin(pool));
      return true;
    }
    pool.active++;
    this.attach(connect(pool, this.destination, this.target, this.options));
    return true;
  }

  /** Writes the request again on `connection`'s new socket (its first address could not be reached). */
  resend(connection: Connection): void {
    if (!this.settled) this.attach(connection);
  }

  private attach(connection: Connection): void {
    this.connection = connection;
    connection.exchange = this;
    const socket = connection.socket;
    socket.ref();
    socket.setTimeout(0);
    if (typeof this.body === 'string' && !NON_ASCII.test(this.request)) {
      socket.write(this.request + this.body);
    } else {
      socket.cork();
      socket.write(this.request, 'latin1');
      socket.write(this.body);
      socket.uncork();
    }
  }

  /** Bytes from the connection. */
  data(chunk: Buffer): void {
    if (this.settled) return;
    this.received += chunk.length;
    let at = 0;
    while (at < chunk.length && !this.settled) {
      const used = this.status === 0 ? this.readHead(chunk, at) : this.readBody(chunk, at);
      if (used < 0) return;
      at = used;
    }
    // Bytes past the end of a complete answer: the connection cannot be trusted with another.
    if (this.settled && at < chunk.length && this.connection) this.reusable = false;
  }

  /** The connection ended (the peer closed it, or an error). */
  ended(error: Error | undefined): void {
    if (this.settled) return;
    const connection = this.connection;
    if (!error && this.status !== 0 && this.framing === 'close') {
      this.reusable = false;
      this.finish();
      return;
    }
    // A kept-alive connection the receiver closed while it sat idle fails before any answer; one
    // retry on a fresh connection (what Node's client did, and browsers do).
    if (connection && connection.reused && this.received === 0 && this.mayRetryStale && isStale(error)) {
      this.mayRetryStale = false;
      const pool = connection.pool;
      // The slot is kept for the retry.
      pool.active++;
      this.release(false);
      this.attach(connect(pool, this.destination, this.target, this.options));
      return;
    }
    const host = this.destination.host;
    if (error) this.fail(networkError(host, error));
    else this.fail(new EgressError(`connection to ${host} closed before the response ended`, 'network'));
  }

  /** Reads head bytes from `chunk` at `at`; returns where the body starts, or -1 once settled or still in the head. */
  private readHead(chunk: Buffer, at: number): number {
    const buffer = this.head ? Buffer.concat([this.head, chunk.subarray(at)]) : chunk.subarray(at);
    const end = buffer.indexOf('\r\n\r\n');
    if ((end < 0 ? buffer.length : end) > MAX_HEAD_BYTES) {
      this.fail(new EgressError(`the response head from ${this.destination.host} is larger than ${MAX_HEAD_BYTES} bytes`, 'network'));
      return -1;
    }
    if (end < 0) {
      this.head = Buffer.from(buffer);
      return -1;
    }
    const consumedBefore = this.head ? this.head.length : 0;
    this.head = null;
    if (!this.parseHead(buffer.toString('latin1', 0, end))) return -1;
    // Where the body starts within `chunk`.
    const next = at + (end + 4 - consumedBefore);
    if (this.status < 200) {
      // An interim answer (100 Continue, 103 Early Hints): the real one follows.
      this.status = 0;
      this.headers = {};
      return next;
    }
    if (this.framing === 'none' || (this.framing === 'length' && this.bodyLeft === 0)) this.finish();
    return next;
  }

  /** Parses the status line and headers; false (and failed) when they are not HTTP/1.x. */
  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const status = STATUS_LINE.exec(lines[0]);
    if (!status) return this.malformed('status line');
    this.minor = Number(status[1]);
    this.status = Number(status[2]);
    if (this.status < 100) return this.malformed('status');
    const headers: Record<string, string> = {};
    let length: number | undefined;
    let chunked = false;
    let encoded = false;
    let close = this.minor === 0;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i];
      const colon = line.indexOf(':');
      if (colon <= 0) return this.malformed('header line');
      const name = line.slice(0, colon).toLowerCase();
      if (!TOKEN.test(name)) return this.malformed('header name');
      const value = line.slice(colon + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value))) return this.malformed('content-length');
        length = Number(value);
      } else if (name === 'transfer-encoding') {
        encoded = true;
        chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
      } else if (name === 'connection') {
        const tokens = value.toLowerCase().split(',').map((t) => t.trim());
        if (tokens.includes('close')) close = true;
        else if (this.minor === 0 && tokens.includes('keep-alive')) close = false;
      }
    }
    if (this.status === 101) return this.malformed('switch of protocols');
    this.headers = headers;
    if (this.status < 200) return true;
    if (this.status === 204 || this.status === 304) this.framing = 'none';
    else if (encoded) this.framing = chunked ? 'chunked' : 'close';
    else if (length !== undefined) {
      this.framing = 'length';
      this.bodyLeft = length;
    } else this.framing = 'close';
    this.reusable = !close && this.framing !== 'close';
    return true;
  }

  private malformed(what: string): false {
    this.fail(new EgressError(`the response from ${this.destination.host} is not valid HTTP/1.1 (${what})`, 'network'));
    return false;
  }

  private malformedAt(what: string): -1 {
    this.malformed(what);
    return -1;
  }

  /** Reads body bytes from `chunk` at `at`; returns the offset after what it used, or -1 once settled. */
  private readBody(chunk: Buffer, at: number): number {
    if (this.framing === 'length') {
      const n = Math.min(this.bodyLeft, chunk.length - at);
      this.keep(chunk, at, at + n);
      this.bodyLeft -= n;
      if (this.bodyLeft === 0) this.finish();
      return this.settled && this.bodyLeft > 0 ? -1 : at + n;
    }
    if (this.framing === 'close') {
      this.keep(chunk, at, chunk.length);
      return this.settled ? -1 : chunk.length;
    }
    return this.readChunked(chunk, at);
  }

  private readChunked(chunk: Buffer, at: number): number {
    while (at < chunk.length && !this.settled) {
      if (this.chunkState === 'data') {
        const n = Math.min(this.bodyLeft, chunk.length - at);
        this.keep(chunk, at, at + n);
        if (this.settled) return -1;
        this.bodyLeft -= n;
        at += n;
        if (this.bodyLeft === 0) this.chunkState = 'dataEnd';
        continue;
      }
      const lineEnd = chunk.indexOf('\n', at);
      const piece = chunk.subarray(at, lineEnd < 0 ? chunk.length : lineEnd + 1);
      const line = this.line ? Buffer.concat([this.line, piece]) : piece;
      if (lineEnd < 0) {
        if (line.length > MAX_CHUNK_LINE_BYTES) return this.malformedAt('chunk line');
        this.line = Buffer.from(line);
        return chunk.length;
      }
      this.line = null;
      at = lineEnd + 1;
      if (line.length > MAX_CHUNK_LINE_BYTES || line[line.length - 2] !== 0x0d) return this.malformedAt('chunk line');
      const text = line.toString('latin1', 0, line.length - 2);
      if (this.chunkState === 'dataEnd') {
        if (text !== '') return this.malformedAt('chunk end');
        this.chunkState = 'size';
      } else if (this.chunkState === 'size') {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(text);
        if (!size) return this.malformedAt('chunk size');
        this.bodyLeft = parseInt(size[1], 16);
        this.chunkState = this.bodyLeft === 0 ? 'trailer' : 'data';
      } else if (text === '') {
        // The empty line after the last chunk's trailers: the answer is complete.
        this.finish();
        return at;
      }
    }
    return this.settled ? -1 : at;
  }

  /** Keeps body bytes up to the cap; past it the answer ends here and the connection is dropped. */
  private keep(chunk: Buffer, from: number, to: number): void {
    const room = this.options.maxResponseBytes - this.kept;
    const n = to - from;
    if (n <= room) {
      if (n > 0) this.bodyChunks.push(chunk.subarray(from, to));
      this.kept += n;
      return;
    }
    if (room > 0) this.bodyChunks.push(chunk.subarray(from, from + room));
    this.kept = this.options.maxResponseBytes;
    // Reading the rest would spend time and bandwidth on bytes that are dropped anyway.
    this.reusable = false;
    this.finish();
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const response: OutboundResponse = {
      status: this.status,
      headers: this.headers,
      body: this.bodyChunks.length === 1 ? Buffer.from(this.bodyChunks[0]) : Buffer.concat(this.bodyChunks, this.kept),
      durationMs: Math.round(performance.now() - this.options.startedAt),
    };
    // Released after the current chunk is read (see `data`), so bytes past the answer are seen.
    queueMicrotask(() => this.release(this.reusable));
    this.resolve(response);
  }

  private fail(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.release(false);
    this.reject(error);
  }

  /** Gives the connection back to its pool (kept idle when `reuse`, else destroyed) and wakes a waiting request. */
  private release(reuse: boolean): void {
    const connection = this.connection;
    if (!connection) return;
    this.connection = null;
    connection.exchange = null;
    const pool = connection.pool;
    pool.active--;
    const socket = connection.socket;
    if (reuse && !socket.destroyed && pool.idle.length < MAX_IDLE_PER_DESTINATION) {
      connection.reused = true;
      socket.setTimeout(IDLE_TIMEOUT_MS);
      socket.unref();
      pool.idle.push(connection);
    } else {
      socket.destroy();
    }
    // The first waiting request that has not timed out meanwhile takes the slot.
    for (let next = pool.waiting.shift(); next; next = pool.waiting.shift()) if (next()) return;
    if (pool.active === 0 && pool.idle.length === 0) pools.delete(pool.key);
  }
}

/** A new connection to the first of the checked addresses (the next ones if it cannot be reached). */
function connect(pool: DestinationPool, destination: CheckedDestination, target: LeanPostTarget, options: LeanPostOptions): Connection {
  const connection: Connection = { socket: open(), pool, reused: false, exchange: null };
  return connection;

  function open(index = 0): net.Socket {
    const address = destination.addresses[index];
    const port = target.port;
    const socket = target.secure
      ? tls.connect({ host: address.address, port, servername: net.isIP(target.hostname) ? undefined : target.hostname })
      : net.connect({ host: address.address, port, family: address.family });
    socket.setNoDelay(true);
    let connected = false;
    socket.once('connect', () => {
      connected = true;
    });
    socket.on('data', (chunk: Buffer) => {
      if (socket !== connection.socket) return;
      if (connection.exchange) connection.exchange.data(chunk);
      // Bytes on an idle connection: it cannot be used again.
      else socket.destroy();
    });
    socket.on('timeout', () => socket.destroy());
    socket.on('error', (error: Error) => {
      if (socket !== connection.socket) return;
      const exchange = connection.exchange;
      if (!connected && exchange && index + 1 < destination.addresses.length && performance.now() < options.deadline) {
        // Not reached at all: the request goes to the next checked address instead.
        connection.socket = open(index + 1);
        exchange.resend(connection);
        socket.destroy();
        return;
      }
      connection.exchange = null;
      exchange?.ended(error);
    });
    socket.on('close', () => {
      if (socket === connection.socket) onClose(connection);
    });
    return socket;
  }
}

function onClose(connection: Connection): void {
  const exchange = connection.exchange;
  connection.exchange = null;
  if (exchange) {
    exchange.ended(undefined);
    return;
  }
  const idle = connection.pool.idle;
  const i = idle.indexOf(connection);
  if (i >= 0) idle.splice(i, 1);
}

function isStale(error: Error | undefined): boolean {
  if (!error) return true;
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/** A failure of the request to `host` as the EgressError callers get (one already is passes as it is). */
export function networkError(host: string, error: Error): EgressError {
  if (error instanceof EgressError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new EgressError(`request to ${host} failed: ${error.message}${code && !error.message.includes(code) ? ` (${code})` : ''}`, 'network');
}
