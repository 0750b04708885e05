import type { HttpRequestReceived } from '@app/domain';
import { jsonRequestBody } from '@app/sandbox';
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
  /**
   * The body: for a JSON content type `jsonRequestBody(bodyRaw)`, which the guest makes (the
   * endpoints leave it undefined; see `requestTexts`); form fields, or the raw text, otherwise.
   */
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

/** The texts of a request's event: what its run's invocation carries, and its record's data. */
export interface RequestTexts {
  /** The event's JSON, without `bodyRaw` and `body` when `bodyFromRaw` (the invocation carries `bodyRaw` on its own). */
  eventJson: string;
  /** `body` is `JSON.parse(bodyRaw)`, left out of both texts (`SandboxInvocation.bodyFromRaw`). */
  bodyFromRaw: boolean;
  /** The record's data, `{ sourceId, requestId, ...event }` (`body` replaced by `bodyFromRaw: true` when so), */
  data: HttpRequestReceived;
  /** and its JSON (`requestDataJson`). */
  dataJson: string;
}

/**
 * Whether a request's body is a JSON body, made from its raw text by `jsonRequestBody` (in the
 * guest for a source, on the server for a workflow): a JSON content type and a body.
 */
export function isJsonBody(contentType: string, bodyRaw: string): boolean {
  return bodyRaw !== '' && contentType.includes('json');
}

/**
 * The texts of a request's event. `jsonBody`: the request has a JSON content type, so its `body`
 * is `jsonRequestBody(bodyRaw)`. The body is then not serialised, nor even parsed by the server:
 * the run's invocation and the request's record leave it out and say `bodyFromRaw` (the guest
 * makes it from `bodyRaw`, and so does a recovery reading the record, `httpEventFromRecord`). A
 * JSON body used to cross to the sandbox worker twice (raw, and re-serialised) and be written
 * twice in the log; with bodies of 64 KB the texts passed 128 KB, past which V8 allocates every
 * string in its large-object space, at 70 times the cost per byte, and CPU per request went up
 * fourfold (docs/architecture.md, "Large bodies"). `event.body` is not read on that path (the
 * endpoints leave it undefined).
 */
export function requestTexts(sourceId: string, requestId: string, event: HttpRequestEvent, jsonBody: boolean): RequestTexts {
  const raw = event.bodyRaw;
  if (!jsonBody || raw.length === 0) {
    const eventJson = JSON.stringify(event);
    return { eventJson, bodyFromRaw: false, data: { sourceId, requestId, ...event }, dataJson: requestDataJson(sourceId, requestId, eventJson) };
  }
  const { method, path, url, query, headers } = event;
  // The invocation carries the raw body beside this text (`SandboxInvocation.bodyRaw`), the record within it.
  const eventJson = JSON.stringify({ method, path, url, query, headers });
  const data: HttpRequestReceived = { sourceId, requestId, method, path, url, query, headers, bodyRaw: raw, bodyFromRaw: true };
  return { eventJson, bodyFromRaw: true, data, dataJson: requestDataJson(sourceId, requestId, `${eventJson.slice(0, -1)},"bodyRaw":${JSON.stringify(raw)},"bodyFromRaw":true}`) };
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
    // Made as the live run's guest made it.
    body: data.bodyFromRaw === true ? jsonRequestBody(data.bodyRaw) : data.body,
  };
}
