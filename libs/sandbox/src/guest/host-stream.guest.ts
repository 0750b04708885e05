import { jsonStringify } from './guest-intrinsics.guest';
import type { HostBindings } from './host-bindings.guest';
import { current, nextRequestId, StreamSink } from './invocation-scope.guest';
import { bytesToLatin1 } from './web-encoding.guest';
import { fetchFailure } from './web-fetch.guest';

/** The global symbol under which the Node `http`/`https` shims find {@link StreamedRequestHook}. */
export const STREAMED_REQUEST_HOOK = Symbol.for('sluice.streamedRequest');

/** Requests in flight per invocation, fetches and streamed ones together (the host has the same cap). */
const MAX_CONCURRENT_REQUESTS = 50;

/** One request as the shims describe it. */
export interface StreamedRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | null;
}

/**
 * What the shim does with the answer. `end(error)` before any `head` is the request's failure
 * (refused by the egress guard, network, timeout).
 */
export type StreamedHandlers = StreamSink;

/** Control of one streamed request. */
export interface StreamedRequestControl {
  /** The reader drained its buffer: the host may send more. */
  resume(): void;
  /** Drop the request and its body; no handler is called afterwards. */
  cancel(): void;
}

/** Starts a request whose body streams in; throws when no run is in progress or too many are in flight. */
export type StreamedRequestHook = (request: StreamedRequest, handlers: StreamedHandlers) => StreamedRequestControl;

/**
 * Node-style requests over the host: the host performs them through the egress guard (the same
 * as `fetch`, redirects never followed by the host) and relays the body as it arrives. Only
 * plain data crosses: the request as JSON and bytes as latin1 text.
 */
export function createStreamedRequest(host: Pick<HostBindings, 'fetchStart' | 'streamControl'>): StreamedRequestHook {
  return (request, handlers) => {
    const scope = current.scope;
    if (!scope || scope.loading) throw new TypeError('requests are not available while the component is loading');
    if (scope.fetches.size + scope.streams.size >= MAX_CONCURRENT_REQUESTS) {
      throw new TypeError(`request failed: more than ${MAX_CONCURRENT_REQUESTS} requests in flight`);
    }
    const id = nextRequestId();
    let open = true;
    scope.usedHost = true;
    scope.streams.set(id, {
      head: (status, statusText, headers) => {
        if (open) handlers.head(status, statusText, headers);
      },
      chunk: (bytes) => (open ? handlers.chunk(bytes) : false),
      end: (error) => {
        if (!open) return;
        open = false;
        scope.streams.delete(id);
        handlers.end(error);
      },
    });
    const meta = jsonStringify({ url: request.url, method: request.method, headers: request.headers, hasBody: request.body !== null, stream: true });
    host.fetchStart(scope.seq, id, meta, request.body ? bytesToLatin1(request.body) : '');
    return {
      resume: () => {
        if (open && current.scope === scope) host.streamControl(scope.seq, id, 'resume');
      },
      cancel: () => {
        if (!open) return;
        open = false;
        scope.streams.delete(id);
        if (current.scope === scope) host.streamControl(scope.seq, id, 'cancel');
      },
    };
  };
}

/** A streamed body's failure as the host reported it. */
export function streamFailure(message: string, code: string): Error {
  const error = fetchFailure(message, code);
  error.message = error.message.replace(/^fetch failed: /, 'request failed: ');
  return error;
}
