import { METHODS, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { EndpointAnswer } from './endpoint-answer';

/** The head of a request the lean server reads itself: HTTP/1.1, a plain `/e/` target, one value per header. */
export interface LeanRequestHead {
  method: string;
  /** The request target as sent (path and query). */
  url: string;
  /** Lower-cased names, each once, values without surrounding whitespace (as Node gives them). */
  headers: IncomingHttpHeaders;
  contentLength: number;
}

/** What the lean server asks of the endpoints: whether to take a request, and its answer. */
export interface LeanEndpointHandler<T> {
  /**
   * Decides from the head alone. Undefined hands the connection, this request's bytes included,
   * to Node's HTTP server, which then serves it and every later request on it.
   */
  take(head: LeanRequestHead): T | undefined;
  /** The answer once the body is read; must not reject. */
  answer(taken: T, head: LeanRequestHead, body: Buffer): Promise<EndpointAnswer>;
}

export interface LeanServerLimits {
  /** From a request's first byte to the end of its head (ms); then 408 and close. */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body (ms); then 408 and close. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long (ms). */
  keepAliveTimeoutMs: number;
  /** How often the timeouts are looked at (ms), as Node's `connectionsCheckingInterval`. */
  checkIntervalMs: number;
  /** A head longer than this goes to Node's server, which answers 431. */
  maxHeadBytes: number;
}

/**
 * Counts, for tests and the bench: requests answered here, requests passed to Node's server on a
 * connection the lean server keeps (`laned`), and connections given to Node's server for good.
 */
export interface LeanServerStats {
  served: number;
  laned: number;
  handedOff: number;
}

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** A request line of HTTP/1.1 with a target of visible ASCII. */
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([!-~]+) HTTP\/1\.1$/;
/** The methods answered here. HEAD, OPTIONS and the rest go to Node (a HEAD's answer has no body). */
const LEAN_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** The methods Node's parser knows, but CONNECT (a tunnel, Node's to handle on the socket itself). */
const NODE_METHODS = new Set(METHODS.filter((m) => m !== 'CONNECT'));
/** `name: value`: a token, a colon right after it, optional whitespace, a value of tab, visible ASCII, space and obs-text (no CR, LF, NUL or other control). */
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[\t ]*([\t\x20-\x7e\x80-\xff]*?)[\t ]*$/;
const DIGITS = /^[0-9]{1,15}$/;
/** Node's default `server.maxHeadersCount`. */
const NODE_MAX_HEADERS = 2000;
const NOT_ASCII = /[^\x00-\x7f]/;
/** Bytes read ahead (a pipelined request) while an answer is awaited, beyond which the socket stops reading. */
const READ_AHEAD_BYTES = 64 * 1024;

enum Phase {
  /** Between requests, or reading a head (`pending` holds its bytes). */
  Head,
  Body,
  /** The request is read; its answer is awaited. Later bytes wait in `pending`. */
  Answering,
  /** A request passed to Node's server on the connection's lane (`NodeLane`); later bytes wait in `pending`. */
  Node,
}

/**
 * A small HTTP/1.1 server for source endpoints (`/e/<key>`), in front of Node's (issue 10: Node's
 * `IncomingMessage`, `ServerResponse` and their streams were about a tenth of the server's main
 * thread at 200 events/s). Every connection starts here. A request is read here only when its head
 * is of the plainest kind, where there is nothing to interpret: `HTTP/1.1`, a method among GET,
 * POST, PUT, PATCH and DELETE, a target under `/e/` of visible ASCII, CRLF line ends, each header
 * once (2,000 at most, Node's `maxHeadersCount`), a `Host`, a decimal `Content-Length` or none, `Connection` only `keep-alive` or `close`, and
 * no `Transfer-Encoding`, `Expect` or `Upgrade`, and the handler takes it. A request whose head is
 * as plain but that the handler does not take (an API call, another method, an unknown key) is
 * passed to Node's server whole, its head and exactly `Content-Length` bytes of body, through the
 * connection's lane (`NodeLane`, a stream Node's server reads as a connection), and the lean server
 * reads the next request once Node's answer has been written: a client or a proxy that sends API
 * calls and events over one keep-alive connection keeps the lean path for its events. At the first
 * request that is anything else (a bare LF, a folded line, a chunked body, a too-long head...) the
 * connection goes to Node's server at that request's first byte, unread as far as Node can tell
 * (`socket.unshift`), and stays there: Node parses it as it would have, with its own errors. So no
 * request is ever read two ways (request smuggling needs two readers that disagree on where a
 * request ends; a body here, and a request on a lane, is only ever framed by one unambiguous
 * `Content-Length`, which Node's parser reads the same way).
 *
 * Requests on one connection are answered in order, one at a time; pipelined bytes wait (at most
 * `READ_AHEAD_BYTES` are read ahead). The head, whole-request and keep-alive timeouts are Node's
 * (408 and close for the first two), checked every `checkIntervalMs` while connections are open;
 * Node's own check of the connections it holds runs on the same interval.
 */
export class LeanEndpointServer<T> {
  readonly stats: LeanServerStats = { served: 0, laned: 0, handedOff: 0 };
  private readonly connections = new Set<LeanConnection<T>>();
  private checker: NodeJS.Timeout | undefined;
  /** Node's own check of its connections' timeouts, once taken over ({@link takeOverNodeChecks}). */
  private nodeCheck: (() => void) | undefined;
  /** Connections let go to Node's server and still open (counted once Node's check is taken over). */
  private heldByNode = 0;
  private closing = false;
  private dateSecond = -1;
  private dateText = '';
  /** `Keep-Alive: timeout=N` as Node sends it. */
  readonly keepAliveHeader: string;

  constructor(
    private readonly handOff: (socket: Socket) => void,
    readonly handler: LeanEndpointHandler<T>,
    readonly limits: LeanServerLimits,
  ) {
    this.keepAliveHeader = `Keep-Alive: timeout=${Math.floor(limits.keepAliveTimeoutMs / 1000)}\r\n`;
  }

  /**
   * Puts a lean server in front of `server` (before it listens): every new connection starts with
   * it, and goes to Node's own connection handling when the lean server lets it go.
   */
  static inFront<T>(server: Server, handler: LeanEndpointHandler<T>, limits: LeanServerLimits): LeanEndpointServer<T> {
    const listeners = server.listeners('connection') as ((socket: Socket) => void)[];
    const node = listeners.find((l) => l.name === 'connectionListener');
    if (!node) throw new Error('Node\'s HTTP connection listener was not found on the server');
    server.removeListener('connection', node);
    const lean = new LeanEndpointServer((socket) => node.call(server, socket), handler, limits);
    server.prependListener('connection', (socket: Socket) => lean.adopt(socket));
    // A lane learns from its request's answer when the connection is the lean server's again.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.socket instanceof NodeLane) req.socket.track(res);
    });
    // After Node's own 'listening' listener, which starts its checking interval.
    server.on('listening', () => lean.takeOverNodeChecks(server));
    return lean;
  }

  /**
   * Node's server checks the head and request timeouts of its connections on an interval that
   * runs from `listen` to `close`, connections or not: on this machine an idle server woke up
   * every second for it (`connectionsCheckingInterval`), about 1.3 ms of CPU each time after a
   * long sleep. Every connection starts here, so the lean server knows which ones Node holds (those
   * it let go): Node's check runs on the lean server's interval, only while Node holds one. When
   * this Node's interval is not where Node 20 keeps it, it is left running.
   */
  takeOverNodeChecks(server: Server): void {
    const key = Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connectionsCheckingInterval');
    const interval = key === undefined ? undefined : (server as unknown as Record<symbol, unknown>)[key];
    const check = (interval as { _onTimeout?: unknown } | undefined)?._onTimeout;
    if (typeof check !== 'function') return;
    clearInterval(interval as NodeJS.Timeout);
    this.nodeCheck = check as () => void;
  }

  /** True while the timeouts' interval runs: the lean server or Node's holds a connection. */
  get checking(): boolean {
    return this.checker !== undefined;
  }

  /** Takes a new connection. */
  adopt(socket: Socket): void {
    if (this.closing) {
      this.release(socket, undefined);
      return;
    }
    const connection = new LeanConnection(this, socket);
    this.connections.add(connection);
    this.startChecking();
  }

  private startChecking(): void {
    if (this.checker) return;
    this.checker = setInterval(() => this.check(), this.limits.checkIntervalMs);
    this.checker.unref();
  }

  private stopCheckingWhenDone(): void {
    if (this.connections.size === 0 && this.heldByNode === 0 && this.checker) {
      clearInterval(this.checker);
      this.checker = undefined;
    }
  }

  /** Hands `socket` to Node's server, `unread` first (a request's first bytes): from here Node reads it. */
  release(socket: Socket, unread: Buffer | undefined): void {
    this.stats.handedOff++;
    this.heldUntilClosed(socket);
    socket.pause();
    if (unread && unread.length > 0) socket.unshift(unread);
    this.handOff(socket);
    socket.resume();
  }

  /** Gives Node's server a lane (a connection of its own, as far as it can tell). */
  openLane(lane: NodeLane): void {
    this.heldUntilClosed(lane);
    this.handOff(lane as unknown as Socket);
  }

  /** Counts a connection Node's server holds until it closes: Node's check runs while any does. */
  private heldUntilClosed(connection: Socket | NodeLane): void {
    if (!this.nodeCheck) return;
    this.heldByNode++;
    connection.once('close', () => {
      this.heldByNode--;
      this.stopCheckingWhenDone();
    });
    this.startChecking();
  }

  forget(connection: LeanConnection<T>): void {
    this.connections.delete(connection);
    this.stopCheckingWhenDone();
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * The server is closing: idle connections are closed now, one awaiting an answer after it (with
   * `Connection: close`), and a request that starts on one still open goes to Node's server
   * (whose closing answer is Fastify's 503).
   */
  close(): void {
    this.closing = true;
    for (const connection of [...this.connections]) connection.closeIfIdle();
  }

  /** Node's `Date` header value, made once a second. */
  date(): string {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      this.dateText = new Date(now).toUTCString();
    }
    return this.dateText;
  }

  private check(): void {
    const now = Date.now();
    for (const connection of [...this.connections]) connection.checkTimeouts(now);
    if (this.heldByNode > 0) this.nodeCheck?.();
  }

  /** For tests: the connections the lean server holds now. */
  get openConnections(): number {
    return this.connections.size;
  }
}

class LeanConnection<T> {
  private phase = Phase.Head;
  /** Bytes read and not yet consumed: the head so far, or (while answering) what followed the request. */
  private pending: Buffer | undefined;
  /** The body's chunks while in `Body`. */
  private bodyChunks: Buffer[] = [];
  private bodyBytes = 0;
  /** When the current phase's clock started: a request's first byte, or the end of the last answer. */
  private since = Date.now();
  private head: LeanRequestHead | undefined;
  private taken: T | undefined;
  private closeAfter = false;
  /** The client ended its side. */
  private ended = false;
  private paused = false;
  /** Node's side of this connection, made at its first request for Node (see `NodeLane`). */
  private lane: NodeLane | undefined;
  /** Bytes of the request in `Node` still to pass to the lane. */
  private laneLeft = 0;
  /** Node's answer to the request in `Node` has been written. */
  private nodeAnswered = false;
  /** The client's end has been passed to the lane (it is passed once). */
  private laneEndPassed = false;
  private readonly onData = (chunk: Buffer): void => this.read(chunk);
  private readonly onEnd = (): void => this.clientEnded();
  private readonly onClose = (): void => {
    this.lean.forget(this);
    this.lane?.destroy();
  };
  private readonly onError = (): void => {
    this.socket.destroy();
  };

  constructor(private readonly lean: LeanEndpointServer<T>, private readonly socket: Socket) {
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('close', this.onClose);
    socket.on('error', this.onError);
  }

  private read(chunk: Buffer): void {
    switch (this.phase) {
      case Phase.Head:
        if (this.pending === undefined) this.since = Date.now();
        this.pending = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
        this.parse();
        return;
      case Phase.Body:
        this.bodyChunks.push(chunk);
        this.bodyBytes += chunk.length;
        this.bodyRead();
        return;
      case Phase.Node:
        if (this.laneLeft > 0) {
          const n = Math.min(this.laneLeft, chunk.length);
          this.laneLeft -= n;
          this.feed(n === chunk.length ? chunk : chunk.subarray(0, n));
          if (n < chunk.length) this.readAhead(chunk.subarray(n));
          // Node answered before the body was whole (an early 413): the connection is free once it is passed.
          if (this.laneLeft === 0 && this.nodeAnswered) this.nodeDone();
          return;
        }
        this.readAhead(chunk);
        return;
      case Phase.Answering:
        this.readAhead(chunk);
        return;
    }
  }

  /** Keeps bytes that follow the request in hand, and stops reading past `READ_AHEAD_BYTES`. */
  private readAhead(chunk: Buffer): void {
    this.pending = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
    if (this.pending.length > READ_AHEAD_BYTES && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** Reads heads (and whole requests) from `pending` while there are any. */
  private parse(): void {
    while (this.phase === Phase.Head && this.pending !== undefined) {
      const buf = this.pending;
      const end = buf.indexOf(HEAD_END);
      if (end < 0) {
        // A head that cannot end with CRLF CRLF (a bare LF or CR) is Node's to refuse, now.
        if (buf.length > this.lean.limits.maxHeadBytes || hasBareLineEnd(buf)) this.release();
        return;
      }
      if (end > this.lean.limits.maxHeadBytes) return this.release();
      const head = this.lean.isClosing ? undefined : parsePlainHead(buf.toString('latin1', 0, end));
      if (head === undefined) return this.release();
      const taken = isLeanRequest(head) ? this.lean.handler.take(head) : undefined;
      if (taken === undefined) {
        this.toNode(buf, end + 4 + head.contentLength);
        continue;
      }
      this.head = head;
      this.taken = taken;
      this.closeAfter = wantsClose(head.headers.connection);
      const rest = buf.length > end + 4 ? buf.subarray(end + 4) : undefined;
      this.pending = undefined;
      this.phase = Phase.Body;
      this.bodyChunks = [];
      this.bodyBytes = 0;
      if (rest) {
        this.bodyChunks.push(rest);
        this.bodyBytes = rest.length;
      }
      this.bodyRead();
    }
  }

  /**
   * Passes the request at the start of `buf`, `length` bytes with its body, to Node's server on
   * the lane; the rest of its body goes as it arrives, and what follows it waits until Node's answer
   * has been written.
   */
  private toNode(buf: Buffer, length: number): void {
    this.lean.stats.laned++;
    if (this.lane === undefined) {
      this.lane = new NodeLane(this);
      this.lean.openLane(this.lane);
    }
    this.phase = Phase.Node;
    this.nodeAnswered = false;
    const now = Math.min(length, buf.length);
    this.laneLeft = length - now;
    this.pending = buf.length > now ? buf.subarray(now) : undefined;
    this.feed(now === buf.length ? buf : buf.subarray(0, now));
  }

  /**
   * Bytes for the lane; the socket stops reading while Node's server reads no more. A lane already
   * gone (Node ended it after an early answer and the client's end was passed) takes nothing.
   */
  private feed(bytes: Buffer): void {
    const lane = this.lane;
    if (lane === undefined || lane.readableEnded || lane.destroyed) return;
    if (!lane.push(bytes) && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /**
   * The lane asks for more (`NodeLane._read`): reading resumes if it stopped for the lane, with a
   * body still to pass (bytes read ahead beyond a request stay bounded as they are).
   */
  laneDrained(): void {
    if (this.paused && this.phase === Phase.Node && this.laneLeft > 0) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Node has written its answer to the request on the lane (its response's `finish` or `close`). */
  nodeAnswer(): void {
    if (this.phase !== Phase.Node || this.nodeAnswered) return;
    // Node ends or destroys the lane after an answer that closes the connection: the connection
    // stays in `Node` and reads no further request (the rest of a body still goes to the lane).
    if (this.lane === undefined || this.lane.writableEnded || this.lane.destroyed) return;
    this.nodeAnswered = true;
    if (this.laneLeft === 0) this.nodeDone();
  }

  /** The request on the lane is answered and passed whole: the connection reads its next request. */
  private nodeDone(): void {
    this.phase = Phase.Head;
    this.since = Date.now();
    if (this.ended) {
      this.passEndToLane();
      if (this.pending === undefined) this.socket.end();
      else this.socket.destroy();
      return;
    }
    // The server is closing and nothing more was asked: the connection ends here, as after a
    // lean answer (`answered`); left open, the server's close would wait for its keep-alive.
    if (this.lean.isClosing && this.pending === undefined) {
      this.socket.end();
      return;
    }
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    if (this.pending !== undefined) this.parse();
  }

  private passEndToLane(): void {
    if (this.lane === undefined || this.laneEndPassed) return;
    this.laneEndPassed = true;
    this.lane.push(null);
  }

  /** Node's server ended its side of the lane (an answer that closes the connection): the socket ends once written. */
  laneEnded(): void {
    if (this.phase === Phase.Node) this.socket.end();
  }

  /**
   * The lane is gone. Destroyed while Node was reading or answering on it (an error, a body too
   * large to read), so is the connection; ended by Node (`laneEnded`), the socket ends once
   * written; an idle lane Node let go (its server closing idle connections) changes nothing here.
   */
  laneClosed(lane: NodeLane): void {
    if (this.lane !== lane) return;
    this.lane = undefined;
    if (this.phase === Phase.Node && !lane.writableFinished) this.socket.destroy();
  }

  /** Where Node's server writes on the lane. */
  get socketForLane(): Socket {
    return this.socket;
  }

  /** Once the body is whole, asks for the answer; bytes beyond it wait in `pending`. */
  private bodyRead(): void {
    const head = this.head!;
    if (this.bodyBytes < head.contentLength) return;
    const all = this.bodyChunks.length === 1 ? this.bodyChunks[0] : Buffer.concat(this.bodyChunks, this.bodyBytes);
    const body = all.length === head.contentLength ? all : all.subarray(0, head.contentLength);
    this.pending = all.length > head.contentLength ? all.subarray(head.contentLength) : undefined;
    this.bodyChunks = [];
    this.bodyBytes = 0;
    this.phase = Phase.Answering;
    const taken = this.taken!;
    this.taken = undefined;
    void this.lean.handler.answer(taken, head, body).then((answer) => this.answered(answer), () => this.socket.destroy());
  }

  private answered(answer: EndpointAnswer): void {
    if (this.socket.destroyed) return;
    this.lean.stats.served++;
    const close = this.closeAfter || this.ended || this.lean.isClosing;
    try {
      writeAnswer(this.socket, answer, this.lean.date(), close ? undefined : this.lean.keepAliveHeader);
    } catch (error) {
      // Answers are checked before they get here (checkGuestResponse), so this is a bug; as the
      // fast path does, the connection is dropped rather than left waiting.
      console.error('sluice: an endpoint answer could not be written', error);
      this.socket.destroy();
      return;
    }
    if (close) {
      this.socket.end();
      return;
    }
    this.head = undefined;
    this.phase = Phase.Head;
    this.since = Date.now();
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    if (this.pending !== undefined) this.parse();
  }

  private clientEnded(): void {
    this.ended = true;
    // An answer still to come is written, then the socket ended; otherwise nothing more can come.
    if (this.phase === Phase.Answering) return;
    // Node's server sees the end where it would have on a socket of its own: right after the bytes
    // passed to it. With nothing read beyond its request, that is now, while Node still answers:
    // it then aborts the request (a live event stream hears `close` and stops) and ends the
    // connection. Held until the answer was written, a client gone from an answer that never ends
    // (an SSE stream) was noticed only when a keep-alive write failed, 15 to 30 s later, and a
    // graceful stop waited for it. Bytes read ahead (a pipelined request) are passed first, after
    // the answer (`nodeDone`), and the end after them.
    if (this.phase === Phase.Node) {
      if (this.laneLeft > 0 || this.pending === undefined) this.passEndToLane();
      return;
    }
    if (this.phase === Phase.Head && this.pending === undefined) this.socket.end();
    else this.socket.destroy();
  }

  /**
   * Gives the connection to Node's server, the pending request's bytes unread. Only ever between
   * requests (in `Head`), where the socket is not paused: `answered` resumed it before parsing.
   */
  private release(): void {
    const unread = this.pending;
    this.pending = undefined;
    if (this.lane !== undefined) {
      // Idle (this is between requests): Node's server forgets it. Its close is not the socket's:
      // `laneClosed` ignores a lane no longer this connection's, and a destroyed lane never ends.
      this.lane.destroy();
      this.lane = undefined;
    }
    this.socket.removeListener('data', this.onData);
    this.socket.removeListener('end', this.onEnd);
    this.socket.removeListener('close', this.onClose);
    this.socket.removeListener('error', this.onError);
    this.lean.forget(this);
    this.lean.release(this.socket, unread);
  }

  closeIfIdle(): void {
    if (this.phase === Phase.Head && this.pending === undefined) this.socket.destroy();
  }

  checkTimeouts(now: number): void {
    const { limits } = this.lean;
    const elapsed = now - this.since;
    if (this.phase === Phase.Head) {
      if (this.pending === undefined) {
        if (elapsed >= limits.keepAliveTimeoutMs) this.socket.destroy();
      } else if (elapsed >= limits.headersTimeoutMs) {
        this.timedOut();
      }
    } else if (this.phase === Phase.Body && elapsed >= limits.requestTimeoutMs) {
      this.timedOut();
    }
    // A request on the lane is timed by Node's own check, which runs on this interval.
  }

  /** Node's answer to a request too slow to arrive. */
  private timedOut(): void {
    this.phase = Phase.Answering;
    this.pending = undefined;
    this.bodyChunks = [];
    this.socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    this.socket.destroySoon();
  }
}

/**
 * Node's side of a connection the lean server keeps: a stream that Node's HTTP server takes for a
 * connection (as it takes any duplex stream), fed one whole request at a time by its
 * `LeanConnection`. What Node writes on it goes to the socket as it is, so Node's answers keep
 * their order with the lean server's. It has no `setTimeout`, so Node arms no timer on it: the
 * lean server times the keep-alive, and Node's check of its connections (run on the lean server's
 * interval) times a request Node is reading. Its address getters are the socket's, for Node, Fastify
 * and the endpoints (a request's client address).
 */
export class NodeLane extends Duplex {
  private readonly socket: Socket;

  constructor(private readonly connection: { socketForLane: Socket; laneDrained(): void; nodeAnswer(): void; laneEnded(): void; laneClosed(lane: NodeLane): void }) {
    super({ allowHalfOpen: true });
    this.socket = connection.socketForLane;
    this.once('close', () => connection.laneClosed(this));
  }

  /** Called for each request Node's server reads on this lane: its answer, once written, frees the connection. */
  track(res: ServerResponse): void {
    const done = () => this.connection.nodeAnswer();
    res.once('finish', done);
    res.once('close', done);
  }

  override _read(): void {
    this.connection.laneDrained();
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.socket.destroyed) {
      callback(new Error('the connection is closed'));
      return;
    }
    this.socket.write(chunk, encoding, callback);
  }

  override _writev(chunks: { chunk: Buffer; encoding: BufferEncoding }[], callback: (error?: Error | null) => void): void {
    if (this.socket.destroyed) {
      callback(new Error('the connection is closed'));
      return;
    }
    this.socket.cork();
    for (let i = 0; i < chunks.length - 1; i++) this.socket.write(chunks[i].chunk, chunks[i].encoding);
    this.socket.write(chunks[chunks.length - 1].chunk, chunks[chunks.length - 1].encoding, callback);
    this.socket.uncork();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.connection.laneEnded();
    callback();
  }

  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  get remoteFamily(): string | undefined {
    return this.socket.remoteFamily;
  }

  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  get localPort(): number | undefined {
    return this.socket.localPort;
  }

  address(): ReturnType<Socket['address']> {
    return this.socket.address();
  }
}

/** A LF without CR before it, or a CR followed by anything but LF. */
function hasBareLineEnd(buf: Buffer): boolean {
  for (let i = buf.indexOf(10); i >= 0; i = buf.indexOf(10, i + 1)) if (i === 0 || buf[i - 1] !== 13) return true;
  for (let i = buf.indexOf(13); i >= 0 && i + 1 < buf.length; i = buf.indexOf(13, i + 1)) if (buf[i + 1] !== 10) return true;
  return false;
}

/**
 * The head, when it is of the plain kind taken here (see `LeanEndpointServer`); undefined for
 * anything else, which Node's server will read instead.
 */
export function parseHead(text: string): LeanRequestHead | undefined {
  const head = parsePlainHead(text);
  return head !== undefined && isLeanRequest(head) ? head : undefined;
}

/** A request the lean server answers itself if the handler takes it: one of the five methods, a target under `/e/`. */
function isLeanRequest(head: LeanRequestHead): boolean {
  return LEAN_METHODS.has(head.method) && head.url.startsWith('/e/');
}

/**
 * A head whose framing is beyond doubt (see `LeanEndpointServer`), of any method Node's parser
 * knows but CONNECT (a tunnel) and any target of visible ASCII: what may go to Node's server on a
 * lane. Undefined for anything else.
 */
export function parsePlainHead(text: string): LeanRequestHead | undefined {
  const lines = text.split('\r\n');
  // Beyond Node's `maxHeadersCount` Node keeps only the first ones: its to do.
  if (lines.length > NODE_MAX_HEADERS + 1) return undefined;
  const line = REQUEST_LINE.exec(lines[0]);
  if (!line || !NODE_METHODS.has(line[1])) return undefined;
  const headers: IncomingHttpHeaders = {};
  let contentLength = 0;
  let host = false;
  for (let i = 1; i < lines.length; i++) {
    const field = HEADER_LINE.exec(lines[i]);
    if (!field) return undefined;
    const name = field[1].toLowerCase();
    const value = field[2];
    if (Object.prototype.hasOwnProperty.call(headers, name) || name === '__proto__') return undefined;
    switch (name) {
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
        return undefined;
      case 'content-length':
        if (!DIGITS.test(value)) return undefined;
        contentLength = Number(value);
        break;
      case 'connection':
        if (!plainConnection(value)) return undefined;
        break;
      case 'host':
        host = true;
        break;
    }
    headers[name] = value;
  }
  if (!host) return undefined;
  return { method: line[1], url: line[2], headers, contentLength };
}

/** `Connection` naming only `keep-alive` and `close`: anything else (`upgrade`, a hop-by-hop header's name) is Node's to interpret. */
function plainConnection(value: string): boolean {
  for (const option of value.split(',')) {
    const o = option.trim().toLowerCase();
    if (o !== 'keep-alive' && o !== 'close') return false;
  }
  return true;
}

function wantsClose(connection: string | string[] | undefined): boolean {
  return typeof connection === 'string' && connection.toLowerCase().includes('close');
}

/**
 * Writes an answer as `writeEndpointAnswer` has Node write it: header names lower-cased (the last
 * of two spellings wins, as with `setHeader`), JSON as `application/json; charset=utf-8`, text
 * and bytes with their default types unless the component named one, a 204 without body, type
 * or length, a 304 with its length but no body; then Node's `Date`, `Connection` and, when the
 * connection stays open, `keepAlive` (the whole `Keep-Alive` line).
 */
function writeAnswer(socket: Socket, answer: EndpointAnswer, date: string, keepAlive: string | undefined): void {
  const status = answer.status;
  const connection = keepAlive === undefined ? 'Connection: close\r\n\r\n' : `Connection: keep-alive\r\n${keepAlive}\r\n`;
  if (answer.headers === undefined && answer.raw === undefined && status !== 204 && status !== 304) {
    // The common answer (an endpoint's 200 with its request id, the errors): a JSON body and no
    // headers of its own, so the head is the same lines in the same order as below, without the
    // map of headers and the check for bytes a header cannot carry (every line here is ASCII).
    const json = JSON.stringify(answer.json);
    if (json !== undefined) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\ncontent-type: application/json; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(json)}\r\nDate: ${date}\r\n${connection}${json}`,
      );
      return;
    }
  }
  const headers = new Map<string, string>();
  for (const [k, v] of Object.entries(answer.headers ?? {})) headers.set(k.toLowerCase(), v);
  let body: string | Buffer | undefined;
  if (status === 204) {
    headers.delete('content-type');
  } else {
    if (answer.raw === undefined) {
      body = JSON.stringify(answer.json);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json; charset=utf-8');
    } else {
      body = answer.raw;
      if (!headers.has('content-type')) headers.set('content-type', typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream');
    }
    headers.set('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
    if (status === 304) body = undefined;
  }
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
  head += `Date: ${date}\r\n`;
  head += connection;
  if (typeof body === 'string' && !NOT_ASCII.test(head)) {
    socket.write(head + body);
    return;
  }
  // Header values are bytes (latin1), a text body is UTF-8: two writes, one syscall.
  socket.cork();
  socket.write(head, 'latin1');
  if (body !== undefined && body.length > 0) socket.write(body);
  socket.uncork();
}
