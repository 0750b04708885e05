import * as http from 'node:http';
import * as https from 'node:https';
import { performance } from 'node:perf_hooks';
import { EgressError, EgressPolicy, OutboundBodyHandlers, OutboundRequest, OutboundResponse, OutboundStreamResponse } from './delivery.types';
import { CheckedDestination, EgressGuard, pinnedLookup } from './egress-guard';
import { closeIdleLeanConnections, leanPost, LeanPostTarget, networkError } from './lean-http.client';

/** Response bytes kept when a request does not say (1 MiB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

const AGENT_OPTIONS: http.AgentOptions = {
  keepAlive: true,
  maxSockets: 256,
  maxFreeSockets: 64,
  // LIFO reuses the most recently active socket, the one least likely to have been closed by the
  // server's keep-alive timer; idle sockets are closed after the agent timeout.
  scheduling: 'lifo',
  timeout: 30_000,
};

// One pool per protocol for the whole process: connection reuse is what keeps thousands of
// deliveries a second to the same receivers cheap.
const httpAgent = new http.Agent(AGENT_OPTIONS);
const httpsAgent = new https.Agent(AGENT_OPTIONS);

const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const MAX_GUARDS = 32;
const guards = new Map<string, EgressGuard>();

interface Target {
  url: URL;
  client: typeof http | typeof https;
  agent: http.Agent;
  hostname: string;
  port: number;
  /** The lean client's view of it, made at its first POST (see {@link leanTargetOf}). */
  lean?: LeanPostTarget;
}

/**
 * Performs one HTTP request through the SSRF guard. Guarantees: the connection goes only to an
 * address the guard checked; redirects are not followed (a 3xx is returned as is); `timeoutMs`
 * bounds everything from name resolution to the last body byte; at most `maxResponseBytes` of the
 * body are kept (the connection is dropped rather than read further). Rejects with EgressError
 * `invalid_url`, `egress_denied`, `timeout` or `network`; an invalid method or header value
 * rejects with the TypeError Node raises.
 *
 * Guard decisions are cached per host for 5 s, keyed by the policy's allow list.
 */
export async function performOutbound(request: OutboundRequest, policy: EgressPolicy): Promise<OutboundResponse> {
  const { target, destination, startedAt, deadline } = await checked(request, policy);
  return exchange(target, destination, request, { startedAt, deadline, mayRetryStaleSocket: true });
}

/**
 * A POST through the same guard, with the same guarantees and answer as {@link performOutbound},
 * for callers that want its status and headers and little of its body (webhook deliveries). It
 * goes through the lean client of `lean-http.client.ts`, which costs a fraction of Node's per
 * request.
 */
export function performPost(request: Omit<OutboundRequest, 'method'> & { body: string | Buffer }, policy: EgressPolicy): Promise<OutboundResponse> {
  // Rejects, never throws (as the async function it was): a bad timeout, URL, allow list or header.
  try {
    const s = started(request);
    const guard = guardFor(policy);
    // A receiver allowed in the last few seconds (most deliveries): no promise, no deadline timer for the check.
    const known = guard.known(s.target.hostname);
    if (known) return leanPostTo(s, known, request);
    return beforeDeadline(guard.check(s.target.hostname), s.deadline, request.timeoutMs).then((destination) => leanPostTo(s, destination, request));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The lean client's target for a parsed URL: one object per parsed target (kept with it by
 * {@link parseTarget}), so what the client derives from it (the request line, the host header,
 * the pool's key) is made once per webhook, not per POST.
 */
function leanTargetOf(target: Target): LeanPostTarget {
  if (target.lean === undefined) {
    const url = target.url;
    target.lean = {
      secure: target.client === https,
      hostname: target.hostname,
      port: target.port,
      path: url.pathname + url.search,
      auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
    };
  }
  return target.lean;
}

function leanPostTo(s: Started, destination: CheckedDestination, request: Omit<OutboundRequest, 'method'> & { body: string | Buffer }): Promise<OutboundResponse> {
  const { target, startedAt, deadline } = s;
  return leanPost(
    leanTargetOf(target),
    destination,
    request.headers,
    request.body,
    { timeoutMs: request.timeoutMs, deadline, startedAt, maxResponseBytes: request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES },
  );
}

/**
 * Like {@link performOutbound}, but resolves as soon as the response head arrives and hands the
 * body over chunk by chunk, pausing the socket while the reader asks for a pause (backpressure
 * reaches the server through TCP). Guarantees: the same guard and pinned addresses; `timeoutMs`
 * still bounds everything up to the last body byte; a body longer than `maxResponseBytes` fails
 * with EgressError `too_large` (never silently cut) and the connection is dropped.
 */
export async function openOutboundStream(request: OutboundRequest, policy: EgressPolicy): Promise<OutboundStreamResponse> {
  const { target, destination, deadline } = await checked(request, policy);
  return openExchange(target, destination, request, deadline, true);
}

/** An outbound request's timeout checked, its URL parsed, its clock started. */
interface Started {
  target: Target;
  startedAt: number;
  deadline: number;
}

function started(request: { url: string; timeoutMs: number }): Started {
  const startedAt = performance.now();
  // Node turns timer delays above 2^31-1 ms into 1 ms, so a huge timeout would fire at once.
  if (!(request.timeoutMs > 0 && request.timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`timeoutMs must be between 1 and ${MAX_TIMEOUT_MS}, got ${request.timeoutMs}`);
  }
  return { target: parseTarget(request.url), startedAt, deadline: startedAt + request.timeoutMs };
}

/**
 * What every outbound request starts with: its timeout checked, its URL parsed, and the guard's
 * decision on its host (within the request's deadline). Rejects as the callers document.
 */
async function checked(request: { url: string; timeoutMs: number }, policy: EgressPolicy): Promise<Started & { destination: CheckedDestination }> {
  const s = started(request);
  const destination = await beforeDeadline(guardFor(policy).check(s.target.hostname), s.deadline, request.timeoutMs);
  // Not a spread followed by a new member, which gives every result a hidden class of its own in V8 11.
  return Object.assign(s, { destination });
}

/** The request to the checked destination: its addresses pinned, so DNS is not asked again between check and connect. */
function requestOptions(target: Target, destination: CheckedDestination, request: OutboundRequest): http.RequestOptions {
  return {
    hostname: target.hostname,
    port: target.port,
    path: target.url.pathname + target.url.search,
    method: request.method,
    headers: request.headers,
    auth: target.url.username ? `${decodeURIComponent(target.url.username)}:${decodeURIComponent(target.url.password)}` : undefined,
    agent: target.agent,
    lookup: pinnedLookup(destination.addresses),
  };
}

function openExchange(target: Target, destination: CheckedDestination, request: OutboundRequest, deadline: number, mayRetryStaleSocket: boolean): Promise<OutboundStreamResponse> {
  return new Promise<OutboundStreamResponse>((resolve, reject) => {
    const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const outgoing = target.client.request(requestOptions(target, destination, request));
    // Before the head: the promise is pending; after it: the body handlers (once reading).
    let headSettled = false;
    let bodyDone = false;
    let handlers: OutboundBodyHandlers | null = null;
    let pendingFailure: EgressError | null = null;
    const timer = setTimeout(() => failAll(new EgressError(`timed out after ${request.timeoutMs} ms`, 'timeout')), Math.max(0, deadline - performance.now()));
    const finishBody = (action: (h: OutboundBodyHandlers) => void): void => {
      if (bodyDone) return;
      bodyDone = true;
      clearTimeout(timer);
      if (handlers) action(handlers);
    };
    function failAll(error: EgressError): void {
      outgoing.destroy();
      if (!headSettled) {
        headSettled = true;
        bodyDone = true;
        clearTimeout(timer);
        reject(error);
        return;
      }
      if (!handlers) pendingFailure ??= error;
      finishBody((h) => h.error(error));
    }

    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (!headSettled && mayRetryStaleSocket && outgoing.reusedSocket && isStaleSocketError(error)) {
        headSettled = true;
        bodyDone = true;
        clearTimeout(timer);
        openExchange(target, destination, request, deadline, false).then(resolve, reject);
        return;
      }
      failAll(networkError(destination.host, error));
    });

    outgoing.on('response', (response) => {
      if (headSettled) return;
      headSettled = true;
      response.pause();
      let received = 0;
      response.on('data', (chunk: Buffer) => {
        if (bodyDone || !handlers) return;
        received += chunk.length;
        if (received > maxBytes) {
          failAll(new EgressError(`the response body is larger than ${maxBytes} bytes`, 'too_large'));
          return;
        }
        if (!handlers.data(chunk)) response.pause();
      });
      response.on('end', () => finishBody((h) => h.end()));
      response.on('error', (error: Error) => failAll(networkError(destination.host, error)));
      response.on('close', () => {
        if (!response.complete) failAll(new EgressError(`connection to ${destination.host} closed before the response ended`, 'network'));
      });
      resolve({
        status: response.statusCode ?? 0,
        headers: flattenHeaders(response.headers),
        read(bodyHandlers) {
          if (handlers) throw new Error('the body is already being read');
          handlers = bodyHandlers;
          if (pendingFailure) {
            const failure = pendingFailure;
            pendingFailure = null;
            if (bodyDone) bodyHandlers.error(failure);
            return;
          }
          response.resume();
        },
        resume() {
          if (!bodyDone && handlers) response.resume();
        },
        abort() {
          bodyDone = true;
          clearTimeout(timer);
          outgoing.destroy();
        },
      });
    });

    outgoing.end(request.body);
  });
}

/** The same function as {@link performOutbound}, under the name the sandbox's `fetch` bridge uses. */
export const guardedFetch = performOutbound;

/** Closes idle keep-alive connections (for shutdown and tests); requests in flight are untouched. */
export function closeIdleOutboundConnections(): void {
  closeIdleLeanConnections();
  for (const agent of [httpAgent, httpsAgent]) {
    for (const sockets of Object.values(agent.freeSockets)) {
      for (const socket of sockets ?? []) socket.destroy();
    }
  }
}

function guardFor(policy: EgressPolicy): EgressGuard {
  const key = `${policy.allowVariable ?? ''}\n${policy.allow.join('\n')}`;
  let guard = guards.get(key);
  if (!guard) {
    if (guards.size >= MAX_GUARDS) {
      const oldest = guards.keys().next().value;
      if (oldest !== undefined) guards.delete(oldest);
    }
    guard = new EgressGuard(policy);
    guards.set(key, guard);
  }
  return guard;
}

/**
 * Targets parsed from URLs lately (a webhook's URL is parsed once, not once per delivery). A
 * Target and its URL are shared and never changed, but for the lean client's view of it, added
 * once at its first POST. Bounded: emptied when full.
 */
const parsedTargets = new Map<string, Target>();
const MAX_PARSED_TARGETS = 1024;

function parseTarget(raw: string): Target {
  const known = parsedTargets.get(raw);
  if (known) return known;
  const target = parseTargetAfresh(raw);
  if (parsedTargets.size >= MAX_PARSED_TARGETS) parsedTargets.clear();
  parsedTargets.set(raw, target);
  return target;
}

function parseTargetAfresh(raw: string): Target {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // The URL is not echoed: it may carry credentials, and errors end up in the event log.
    throw new EgressError('invalid URL', 'invalid_url');
  }
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') {
    throw new EgressError(`unsupported URL scheme "${url.protocol}" (only http and https)`, 'invalid_url');
  }
  if (!url.hostname) throw new EgressError('the URL has no host', 'invalid_url');
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return {
    url,
    client: secure ? https : http,
    agent: secure ? httpsAgent : httpAgent,
    hostname,
    port: url.port ? Number(url.port) : secure ? 443 : 80,
  };
}

function beforeDeadline<T>(work: Promise<T>, deadline: number, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new EgressError(`timed out after ${timeoutMs} ms`, 'timeout')),
      Math.max(0, deadline - performance.now()),
    );
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

interface ExchangeTiming {
  startedAt: number;
  deadline: number;
  mayRetryStaleSocket: boolean;
}

function exchange(
  target: Target,
  destination: CheckedDestination,
  request: OutboundRequest,
  timing: ExchangeTiming,
): Promise<OutboundResponse> {
  return new Promise<OutboundResponse>((resolve, reject) => {
    const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const outgoing = target.client.request(requestOptions(target, destination, request));
    let settled = false;
    let responded = false;
    const timer = setTimeout(
      () => fail(new EgressError(`timed out after ${request.timeoutMs} ms`, 'timeout')),
      Math.max(0, timing.deadline - performance.now()),
    );
    const settle = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      action();
    };
    const fail = (error: Error): void =>
      settle(() => {
        outgoing.destroy();
        reject(error);
      });

    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (settled) return;
      // A keep-alive socket the server closed while it sat idle fails on first use before the
      // request reached anyone; Node marks that case with `reusedSocket`, and one retry on a
      // fresh connection is what browsers do too.
      if (timing.mayRetryStaleSocket && outgoing.reusedSocket && !responded && isStaleSocketError(error)) {
        settle(() => exchange(target, destination, request, { ...timing, mayRetryStaleSocket: false }).then(resolve, reject));
        return;
      }
      fail(networkError(destination.host, error));
    });

    outgoing.on('response', (response) => {
      responded = true;
      const chunks: Buffer[] = [];
      let kept = 0;
      const finish = (): void =>
        settle(() =>
          resolve({
            status: response.statusCode ?? 0,
            headers: flattenHeaders(response.headers),
            body: Buffer.concat(chunks, kept),
            durationMs: Math.round(performance.now() - timing.startedAt),
          }),
        );
      response.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = maxBytes - kept;
        if (chunk.length <= room) {
          chunks.push(chunk);
          kept += chunk.length;
          return;
        }
        if (room > 0) {
          chunks.push(chunk.subarray(0, room));
          kept = maxBytes;
        }
        // Reading the rest would spend time and bandwidth on bytes that are dropped anyway.
        finish();
        response.destroy();
      });
      response.on('end', finish);
      response.on('error', (error: Error) => fail(networkError(destination.host, error)));
      response.on('close', () => {
        if (!response.complete) fail(new EgressError(`connection to ${destination.host} closed before the response ended`, 'network'));
      });
    });

    outgoing.end(request.body);
  });
}

function isStaleSocketError(error: NodeJS.ErrnoException): boolean {
  return error.code === 'ECONNRESET' || error.code === 'EPIPE';
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
