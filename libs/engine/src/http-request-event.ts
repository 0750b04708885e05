import type { HttpRequestReceived } from '@app/domain';
/** The `event` an HTTP source's run receives, as recorded in its inbox. */
export interface HttpRequestEvent {
  method: string;
  /** The path after the endpoint (`/hello/world`, `/` for the endpoint itself): never the endpoint key. */
  path: string;
  /** The full public URL: SLUICE_PUBLIC_URL + `/e/<key>` + path + query string. */
  url: string;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  bodyRaw: string;
  body: unknown;
}

/**
 * The JSON text of a request's recorded data, `{ sourceId, requestId, ...event }`, made from the
 * event's own text (`JSON.stringify(event)`), which the run's invocation carries too: the request
 * is serialised once for the log and the sandbox. Equal to `JSON.stringify` of that object, since
 * an event has neither key and a member's text does not depend on what surrounds it. The
 * pending-requests read model reads the two ids from the start of this text (`requestKeysOf`):
 * keep them first.
 */
export function requestDataJson(sourceId: string, requestId: string, eventJson: string): string {
  return `{"sourceId":${JSON.stringify(sourceId)},"requestId":${JSON.stringify(requestId)}${eventJson.length > 2 ? `,${eventJson.slice(1)}` : '}'}`;
}

/**
 * A number token (after `:`, `[`, `,` or at the start) that is negative zero (serialised as `0`)
 * or has an exponent, or a run of 309 digits (numbers past a double become `null` once
 * serialised). Text inside strings may match too (a date's `-0`, "x: 1e5"): that only sends the
 * body the old way.
 */
const NUMBER_NOT_AS_IS = /(?:^|[:[,])\s*(?:-0|-?[0-9]+(?:\.[0-9]+)?[eE])|[0-9]{309}/;

/**
 * Whether JSON text's parse could differ from the parse of its re-serialisation: keys the
 * server's parse drops (`__proto__`, `constructor`, `prototype`, or `\\u` escapes that could
 * spell them), and the numbers of {@link NUMBER_NOT_AS_IS}. Otherwise it parses, wherever it is
 * parsed, to the value the event's `JSON.stringify` would have carried. (The names by `includes`,
 * then one expression: a third of the cost of one expression for all, on 64 KB.)
 */
function notAsIs(text: string): boolean {
  return text.includes('__proto__') || text.includes('constructor') || text.includes('prototype') || text.includes('\\u') || NUMBER_NOT_AS_IS.test(text);
}

/** The texts of a request's event: what its run's invocation carries, and its record's data. */
export interface RequestTexts {
  /** The event's JSON, without `body` when `bodyFromRaw`. */
  eventJson: string;
  /** `body` is `JSON.parse(bodyRaw)`, left out of both texts (`SandboxInvocation.bodyFromRaw`). */
  bodyFromRaw: boolean;
  /** The record's data, `{ sourceId, requestId, ...event }` (`body` replaced by `bodyFromRaw: true` when so), */
  data: HttpRequestReceived;
  /** and its JSON (`requestDataJson`). */
  dataJson: string;
}

/**
 * The texts of a request's event. `jsonBody`: its `body` is the server's JSON parse of its
 * `bodyRaw`. Then, unless the body holds text that parse could read otherwise (`notAsIs`), the
 * body is not serialised again: the run's invocation and the request's record leave it out and
 * say `bodyFromRaw` (the guest parses `bodyRaw`, and so does a recovery reading the record,
 * `httpEventFromRecord`). A JSON body used to cross to the sandbox worker twice (raw, and
 * re-serialised) and be written twice in the log; with bodies of 64 KB the texts passed 128 KB,
 * past which V8 allocates every string in its large-object space, at 70 times the cost per byte,
 * and CPU per request went up fourfold (docs/architecture.md, "Large bodies").
 */
export function requestTexts(sourceId: string, requestId: string, event: HttpRequestEvent, jsonBody: boolean): RequestTexts {
  const raw = event.bodyRaw;
  if (!jsonBody || raw.length === 0 || notAsIs(raw)) {
    const eventJson = JSON.stringify(event);
    return { eventJson, bodyFromRaw: false, data: { sourceId, requestId, ...event }, dataJson: requestDataJson(sourceId, requestId, eventJson) };
  }
  const { method, path, url, query, headers } = event;
  const eventJson = JSON.stringify({ method, path, url, query, headers, bodyRaw: raw });
  const data: HttpRequestReceived = { sourceId, requestId, method, path, url, query, headers, bodyRaw: raw, bodyFromRaw: true };
  return { eventJson, bodyFromRaw: true, data, dataJson: requestDataJson(sourceId, requestId, `${eventJson.slice(0, -1)},"bodyFromRaw":true}`) };
}

/** The endpoint prefix `/e/<key>` of a raw request target, and what follows it. */
const ENDPOINT_TARGET = /^(\/e\/[^/?#]*)([^?#]*)(\?[^#]*)?/;

/**
 * `path` and `url` of a request to an endpoint, from its raw target (`/e/<key>/hello?x=1`) and
 * the public base URL. Nothing is decoded: the run sees what was sent.
 */
export function endpointLocation(target: string, publicUrl: string): { path: string; url: string } {
  const m = ENDPOINT_TARGET.exec(target);
  if (!m) return { path: target || '/', url: `${publicUrl}${target}` };
  const [, endpoint, rest, search = ''] = m;
  return { path: rest || '/', url: `${publicUrl}${endpoint}${rest}${search}` };
}

/**
 * The run's event from a recorded `source.http_request_received.v1`, identical to the one the
 * live run got. Records written before `url` existed carry the endpoint in `path`; their path
 * and url are derived the same way as for a live request.
 */
export function httpEventFromRecord(data: HttpRequestReceived, publicUrl: string): HttpRequestEvent {
  let { path, url } = data;
  if (url === undefined) {
    const query = new URLSearchParams(data.query as Record<string, string>).toString();
    ({ path, url } = endpointLocation(`${path ?? '/'}${query ? `?${query}` : ''}`, publicUrl));
  }
  return {
    method: data.method,
    path: path ?? '/',
    url,
    query: data.query ?? {},
    headers: data.headers ?? {},
    bodyRaw: data.bodyRaw ?? '',
    // Parsed as the live run's guest parsed it: the text passed `notAsIs`, so no reviver is needed.
    body: data.bodyFromRaw === true ? JSON.parse(data.bodyRaw) : data.body,
  };
}
